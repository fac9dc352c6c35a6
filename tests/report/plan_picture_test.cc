// PlanToSvg and PlanToHtml on fixture plans: one cell per site with its decision and scheme, the
// MoE experts as one cell with their count, errors marked, one legend entry per colour whose
// sites and bytes sum the plan's, and names from the config escaped.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "quantpath/pipeline.h"
#include "quantpath/report.h"

namespace quantpath {
namespace {

const std::string kData = std::string(QUANTPATH_TEST_DATA) + "/";

struct Plan {
  Model model;
  std::vector<LayerDecision> layers;
};

Plan Decided(const std::string& dir, const std::string& engine) {
  Result<OpenOptions> options = OpenOptions::Parse(engine, "", "cpu", "auto", 1);
  EXPECT_TRUE(options.ok()) << options.status().message();
  Result<Model> model = OpenModel(dir, *options);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Plan plan{std::move(*model), {}};
  Result<std::vector<LayerDecision>> layers = DecideAll(plan.model);
  EXPECT_TRUE(layers.ok()) << layers.status().message();
  if (layers.ok()) plan.layers = std::move(*layers);
  return plan;
}

// The values of `attribute` on every element that opens with `open` ("<rect class=\"cell\"").
std::vector<std::string> Attributes(const std::string& svg, const std::string& open,
                                    const std::string& attribute) {
  std::vector<std::string> values;
  for (size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const size_t end = svg.find('>', at);
    const std::string element = svg.substr(at, end - at);
    const size_t a = element.find(" " + attribute + "=\"");
    if (a == std::string::npos) {
      values.emplace_back();
      continue;
    }
    const size_t from = a + attribute.size() + 3;
    values.push_back(element.substr(from, element.find('"', from) - from));
  }
  return values;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// SGLang refuses 8-bit bitsandbytes experts: those two cells are errors.
TEST(PlanPicture, OneCellPerSiteAndALegendEntryPerColour) {
  const Plan plan = Decided(kData + "producers/bnb_qwen3moe_int8", "sglang@helpers");
  const std::string svg = PlanToSvg(plan.model, plan.layers);
  ASSERT_EQ(Count(svg, "<rect class=\"cell\""), plan.layers.size());
  const std::vector<std::string> sites = Attributes(svg, "<g class=\"site\"", "data-site");
  const std::vector<std::string> decisions = Attributes(svg, "<g class=\"site\"", "data-decision");
  const std::vector<std::string> schemes = Attributes(svg, "<g class=\"site\"", "data-scheme");
  ASSERT_EQ(sites.size(), plan.layers.size());
  std::map<std::string, int64_t> sites_per_scheme, bytes_per_scheme;
  int errors = 0;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const LayerDecision& l = plan.layers[i];
    EXPECT_EQ(sites[i], l.site->checkpoint_path);
    EXPECT_EQ(decisions[i], DecisionKindName(l.decision.kind));
    if (l.decision.kind == DecisionKind::kError) {
      ++errors;
      EXPECT_EQ(schemes[i], "error");
    } else if (l.decision.kind == DecisionKind::kUnquantized && !l.kv) {
      EXPECT_EQ(schemes[i], "unquantized");
    } else if (l.decision.scheme) {
      EXPECT_EQ(schemes[i], l.decision.scheme->CanonicalName());
    }
    sites_per_scheme[schemes[i]] += 1;
    bytes_per_scheme[schemes[i]] += l.bytes.value_or(0);
  }
  EXPECT_EQ(errors, 2);  // the experts of both layers
  EXPECT_EQ(Count(svg, "class=\"error-mark\""), 2u);
  // The experts: one cell each, with their count.
  const std::vector<std::string> experts = Attributes(svg, "<g class=\"site\"", "data-experts");
  EXPECT_EQ(std::count(experts.begin(), experts.end(), "4"), 2);
  EXPECT_EQ(Count(svg, "\u00d74</text>"), 2u);

  const std::vector<std::string> legend =
      Attributes(svg, "<g class=\"legend-entry\"", "data-scheme");
  const std::vector<std::string> legend_sites =
      Attributes(svg, "<g class=\"legend-entry\"", "data-sites");
  const std::vector<std::string> legend_bytes =
      Attributes(svg, "<g class=\"legend-entry\"", "data-bytes");
  ASSERT_EQ(legend.size(), sites_per_scheme.size());
  EXPECT_EQ(std::set<std::string>(legend.begin(), legend.end()).size(), legend.size());
  for (size_t i = 0; i < legend.size(); ++i) {
    SCOPED_TRACE(legend[i]);
    EXPECT_EQ(std::stoll(legend_sites[i]), sites_per_scheme[legend[i]]);
    EXPECT_EQ(std::stoll(legend_bytes[i]), bytes_per_scheme[legend[i]]);
  }
  // Rows are the decoder blocks and the sites outside them.
  EXPECT_EQ(Count(svg, "<g class=\"row\">"), 3u);  // 2 blocks, lm_head (no embedding site here)
}

TEST(PlanPicture, TheHtmlPageHoldsThePictureAndTheTable) {
  const Plan plan = Decided(kData + "producers/ct_llama_w4a16_g64_sym", "native");
  const std::string html = PlanToHtml(plan.model, plan.layers);
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(html.find(PlanToSvg(plan.model, plan.layers)), std::string::npos);
  EXPECT_NE(html.find("summary: "), std::string::npos);
  EXPECT_EQ(Count(html, "<script"), 0u);  // self-contained, nothing to fetch or run
  EXPECT_EQ(Count(html, " href="), 0u);
}

// An architecture name is the config's: written as text, never as markup.
TEST(PlanPicture, NamesFromTheConfigAreEscaped) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "quantpath_plan_picture_escape";
  std::filesystem::create_directories(dir);
  std::ifstream in(kData + "producers/bf16_llama/config.json");
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string arch = "\"LlamaForCausalLM\"";
  ASSERT_NE(config.find(arch), std::string::npos);
  config.replace(config.find(arch), arch.size(), "\"LlamaForCausalLM\", \"<b>&x\"");
  std::ofstream(dir / "config.json") << config;
  const Plan plan = Decided(dir.string(), "native");
  const std::string svg = PlanToSvg(plan.model, plan.layers);
  EXPECT_EQ(Count(svg, "<b>"), 0u);
  EXPECT_EQ(Count(svg, "&x"), 0u);
}

}  // namespace
}  // namespace quantpath
