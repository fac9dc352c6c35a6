// fp8 plans evaluated by the planner: hand-built DeepSeek / Llama sites in every dialect, fused
// layers whose legs disagree, and the recorded vLLM cases (tests/data/oracle/cases/vllm-fp8.json).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "quantpath/importers.h"
#include "quantpath/planner.h"
#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Contains;
using family_test::D;
using family_test::Embedded;

QuantPlan Plan(std::string_view quantization_config, std::string_view dialect) {
  Result<QuantPlan> plan = ImportPlan(Embedded(quantization_config), D(dialect));
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : QuantPlan{};
}

LayerSite Site(std::string path, SiteKind kind, std::vector<std::string> legs = {}) {
  LayerSite site;
  site.path = std::move(path);
  site.kind = kind;
  for (std::string& leg : legs) site.legs.push_back({std::move(leg), 128});
  if (kind == SiteKind::kMoe) {
    site.experts = 8;
    site.legs = {{"gate_proj", 64}, {"up_proj", 64}, {"down_proj", 256}};
  }
  return site;
}

// A DeepSeek-V3 layer with dense and MoE parts, in vLLM's execution names.
std::vector<LayerSite> DeepSeekSites() {
  return {
      Site("model.embed_tokens", SiteKind::kEmbedding),
      Site("model.layers.0.self_attn.fused_qkv_a_proj", SiteKind::kLinear,
           {"q_a_proj", "kv_a_proj_with_mqa"}),
      Site("model.layers.0.self_attn.q_b_proj", SiteKind::kLinear),
      Site("model.layers.0.self_attn.kv_b_proj", SiteKind::kLinear),
      Site("model.layers.0.self_attn.o_proj", SiteKind::kLinear),
      Site("model.layers.0.self_attn.attn", SiteKind::kAttention),
      Site("model.layers.3.mlp.gate", SiteKind::kRouter),
      Site("model.layers.3.mlp.shared_experts.gate_up_proj", SiteKind::kLinear,
           {"gate_proj", "up_proj"}),
      Site("model.layers.3.mlp.shared_experts.down_proj", SiteKind::kLinear),
      Site("model.layers.3.mlp.experts", SiteKind::kMoe),
      Site("lm_head", SiteKind::kLmHead),
  };
}

constexpr std::string_view kDeepSeek =
    R"({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
        "weight_block_size": [128, 128]})";

TEST(Fp8Decisions, DeepSeekInEveryDialect) {
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    SCOPED_TRACE(dialect);
    QuantPlan plan = Plan(kDeepSeek, dialect);
    for (const LayerSite& site : DeepSeekSites()) {
      SCOPED_TRACE(site.path);
      Decision d = DecideSite(plan, site);
      bool quantized = site.kind == SiteKind::kLinear || site.kind == SiteKind::kMoe ||
                       (site.kind == SiteKind::kAttention && dialect != "native");
      EXPECT_EQ(d.kind, quantized ? DecisionKind::kQuantized : DecisionKind::kUnquantized);
      if (site.kind == SiteKind::kLinear || site.kind == SiteKind::kMoe) {
        ASSERT_TRUE(d.scheme.has_value());
        EXPECT_EQ(d.scheme->CanonicalName(), "w8a8-fp8-block128x128-dyn");
        EXPECT_EQ(d.rule, "config.json#/quantization_config: fp8 applies to every linear layer");
      }
      if (site.kind == SiteKind::kAttention && dialect != "native") {
        EXPECT_EQ(d.detail, "Fp8KVCacheMethod");
        EXPECT_FALSE(d.scheme.has_value());
      }
    }
  }
}

TEST(Fp8Decisions, FusedLegsThatDisagreeAreAnError) {
  constexpr std::string_view kOnlyQ =
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "ignored_layers": ["model.layers.0.self_attn.q_proj"]})";
  LayerSite qkv =
      Site("model.layers.0.self_attn.qkv_proj", SiteKind::kLinear, {"q_proj", "k_proj", "v_proj"});
  for (std::string_view dialect : {"vllm@helpers", "sglang@helpers"}) {
    Decision d = DecideSite(Plan(kOnlyQ, dialect), qkv);
    EXPECT_EQ(d.kind, DecisionKind::kError) << dialect;
    EXPECT_TRUE(Contains(d.detail, "Detected some but not all shards of")) << d.detail;
    EXPECT_TRUE(Contains(d.detail, "model.layers.0.self_attn.qkv_proj")) << d.detail;
  }
  // transformers reads ignored_layers as an alias of modules_to_not_convert; q_proj alone stays
  // bf16 there, which one fused layer cannot hold.
  Decision native = DecideSite(Plan(kOnlyQ, "native"), qkv);
  EXPECT_EQ(native.kind, DecisionKind::kError);
  EXPECT_TRUE(Contains(native.detail, "q_proj")) << native.detail;
}

TEST(Fp8Decisions, AllLegsListedSkipTheFusedLayer) {
  QuantPlan plan = Plan(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "ignored_layers": ["model.layers.0.self_attn.q_a_proj",
                             "model.layers.0.self_attn.kv_a_proj_with_mqa"]})",
      "vllm@helpers");
  Decision d = DecideSite(plan, DeepSeekSites()[1]);
  EXPECT_EQ(d.kind, DecisionKind::kUnquantized);
  EXPECT_TRUE(Contains(d.rule, "config.json#/quantization_config/ignored_layers/0")) << d.rule;
  EXPECT_EQ(d.detail, "UnquantizedLinearMethod");
  EXPECT_FALSE(d.trace.empty());
}

TEST(Fp8Decisions, ListingOnlyTheFusedNameChangesNothingInTheEngines) {
  // vllm@1436674bcb (oracle case vllm-fp8-fused-name-listed) looks up only the shards (seed 000
  // describes a newer vLLM that honours the fused name first). SGLang 0.5.23 and transformers never
  // look at the fused name either.
  constexpr std::string_view kFusedName =
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "ignored_layers": ["model.layers.0.self_attn.qkv_proj"]})";
  LayerSite qkv =
      Site("model.layers.0.self_attn.qkv_proj", SiteKind::kLinear, {"q_proj", "k_proj", "v_proj"});
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    EXPECT_EQ(DecideSite(Plan(kFusedName, dialect), qkv).kind, DecisionKind::kQuantized) << dialect;
  }
}

TEST(Fp8Decisions, ExpertEntriesPerDialect) {
  constexpr std::string_view kExpert =
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "modules_to_not_convert": ["model.layers.3.mlp.experts.0.gate_proj"]})";
  LayerSite moe = Site("model.layers.3.mlp.experts", SiteKind::kMoe);
  // The engines reverse the test for experts entries; transformers matches the experts module's
  // own name, which the per-expert entry does not reach.
  EXPECT_EQ(DecideSite(Plan(kExpert, "vllm@helpers"), moe).kind, DecisionKind::kUnquantized);
  EXPECT_EQ(DecideSite(Plan(kExpert, "vllm@helpers"), moe).detail, "UnquantizedFusedMoEMethod");
  EXPECT_EQ(DecideSite(Plan(kExpert, "sglang@helpers"), moe).kind, DecisionKind::kUnquantized);
  EXPECT_EQ(DecideSite(Plan(kExpert, "native"), moe).kind, DecisionKind::kQuantized);
}

TEST(Fp8Decisions, NativeLmHeadIsConvertedWhenAListReplacesTheDefaultSkips) {
  LayerSite head = Site("lm_head", SiteKind::kLmHead);
  EXPECT_EQ(DecideSite(Plan(kDeepSeek, "native"), head).kind, DecisionKind::kUnquantized);
  QuantPlan listed = Plan(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128],
          "modules_to_not_convert": ["model.layers.3.mlp.gate"]})",
      "native");
  EXPECT_EQ(DecideSite(listed, head).kind, DecisionKind::kQuantized);
  QuantPlan with_head = Plan(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128],
          "modules_to_not_convert": ["lm_head"]})",
      "native");
  EXPECT_EQ(DecideSite(with_head, head).kind, DecisionKind::kUnquantized);
  EXPECT_EQ(DecideSite(Plan(R"({"quant_method": "fp8", "activation_scheme": "dynamic",
                                 "ignored_layers": ["x"]})",
                            "vllm@helpers"),
                       head)
                .kind,
            DecisionKind::kUnquantized);
}

TEST(Fp8Decisions, SglangSegmentEntriesReachWholeSubtrees) {
  QuantPlan plan = Plan(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "ignored_layers": ["self_attn", "mlp.gate"]})",
      "sglang@helpers");
  std::vector<LayerSite> sites = DeepSeekSites();
  EXPECT_EQ(DecideSite(plan, sites[1]).kind, DecisionKind::kUnquantized);  // fused_qkv_a_proj
  EXPECT_EQ(DecideSite(plan, sites[4]).kind, DecisionKind::kUnquantized);  // o_proj
  EXPECT_EQ(DecideSite(plan, sites[7]).kind, DecisionKind::kQuantized);    // shared gate_up_proj
  // vLLM reads the same entries as exact names.
  QuantPlan vllm = Plan(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "ignored_layers": ["self_attn", "mlp.gate"]})",
      "vllm@helpers");
  EXPECT_EQ(DecideSite(vllm, sites[4]).kind, DecisionKind::kQuantized);
}

// ---------------------------------------------------------------------------------------------
// Recorded vLLM cases: each case's config as config.json's quantization_config, its layers as
// sites (legs from the case's packed_modules_mapping), every decision compared.

TEST(Fp8Decisions, RecordedVllmCases) {
  Result<std::string> text =
      ReadFile(std::string(QUANTPATH_TEST_DATA) + "/oracle/cases/vllm-fp8.json");
  ASSERT_TRUE(text.ok()) << text.status().message();
  Result<Json> cases = ParseJson(*text, "vllm-fp8.json");
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  int checked = 0;
  for (const Json& c : cases->items()) {
    const std::string& id = c.Find("id")->string_value();
    SCOPED_TRACE(id);
    ConfigSources sources = Embedded(ToJson(*c.Find("config")));
    Result<QuantPlan> plan = ImportPlan(sources, D("vllm@helpers"), std::string("fp8"));
    const Json& layers = *c.Find("layers");
    const Json& expected = *c.Find("expected");
    ASSERT_EQ(layers.items().size(), expected.items().size());
    for (size_t i = 0; i < layers.items().size(); ++i) {
      const Json& layer = layers.items()[i];
      LayerSite site;
      site.path = layer.Find("prefix")->string_value();
      site.kind = *ParseSiteKind(layer.Find("kind")->string_value());
      if (site.kind == SiteKind::kLinear) {
        for (const Json::Member& m : c.Find("packed_modules_mapping")->members()) {
          if (m.first != LastSegment(site.path)) continue;
          for (const Json& leg : m.second.items()) site.legs.push_back({leg.string_value(), 0});
        }
      }
      std::string want = expected.items()[i].Find("decision")->string_value();
      std::string got = plan.ok() ? std::string(DecisionKindName(DecideSite(*plan, site).kind))
                                  : std::string("error");
      EXPECT_EQ(got, want) << site.path << ": expected "
                           << expected.items()[i].Find("detail")->string_value();
      ++checked;
    }
  }
  EXPECT_GT(checked, 80);
}

}  // namespace
}  // namespace quantpath
