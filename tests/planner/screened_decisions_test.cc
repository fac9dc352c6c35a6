// The decisions DecideSites makes through each rule group's index are the per-pattern loop's
// (DecideSite with a trace), on every corpus config under every dialect: same decision, same rule,
// same matched name and leg.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/pipeline.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(QUANTPATH_TEST_DATA) / "corpus";

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Folders whose description needs a config.json from another corpus entry: DeepSeek-R1's
// NVFP4 export (489 exclusion globs), and Llama-2-13B with a GPTQ `dynamic` of 80 regexes.
fs::path Assembled(std::string_view name) {
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("quantpath_screened_{}_{}", getpid(), name);
  fs::create_directories(dir);
  if (name == "r1_nvfp4") {
    Result<Json> config = ParseJson(Read(kCorpus / "deepseek-ai__DeepSeek-R1/config.json"), "r1");
    EXPECT_TRUE(config.ok());
    std::erase_if(config->mutable_members(),
                  [](const Json::Member& m) { return m.first == "quantization_config"; });
    std::ofstream(dir / "config.json") << ToJson(*config, 1);
    fs::copy_file(kCorpus / "peaceh-nv__TensorRT-LLM__DeepSeek-R1-NVFP4/hf_quant_config.json",
                  dir / "hf_quant_config.json", fs::copy_options::overwrite_existing);
  } else {
    std::string config = Read(kCorpus / "TheBloke__Llama-2-13B-chat-GPTQ/config.json");
    std::string rules;
    for (int i = 0; i < 40; ++i) {
      rules += fmt::format(R"("-:model\\.layers\\.{}\\.mlp\\.(?:down|up)_proj": {{}},)", i);
      rules += fmt::format(R"("+:.*layers\\.{}\\.self_attn\\.[qk]_proj": {{"bits": 8}},)", i);
    }
    rules += R"("+:(?i)MODEL\\.LAYERS\\.3\\..*": {"bits": 8})";
    const std::string key = "\"quant_method\": \"gptq\"";
    const size_t at = config.find(key);
    EXPECT_NE(at, std::string::npos);
    config.insert(at + key.size(), fmt::format(",\n    \"dynamic\": {{{}}}", rules));
    std::ofstream(dir / "config.json") << config;
  }
  return dir;
}

std::vector<fs::path> Folders() {
  std::vector<fs::path> folders;
  for (const fs::directory_entry& e : fs::directory_iterator(kCorpus)) {
    if (e.is_directory() && fs::exists(e.path() / "config.json")) folders.push_back(e.path());
  }
  std::sort(folders.begin(), folders.end());
  folders.push_back(Assembled("r1_nvfp4"));
  folders.push_back(Assembled("gptq_dynamic"));
  return folders;
}

TEST(ScreenedDecisions, SameAsThePerPatternLoopOnEveryCorpusConfig) {
  size_t compared = 0;
  size_t models = 0;
  for (const fs::path& dir : Folders()) {
    for (std::string_view engine : DialectNames()) {
      Result<OpenOptions> options = OpenOptions::Parse(engine, "", "cpu");
      ASSERT_TRUE(options.ok());
      Result<Model> model = OpenModel(dir.string(), *options);
      if (!model.ok()) continue;  // a folder this dialect rejects decides nothing
      ++models;
      const std::vector<Decision> screened = DecideSites(model->plan, model->sites.sites);
      ASSERT_EQ(screened.size(), model->sites.sites.size());
      for (size_t i = 0; i < screened.size(); ++i) {
        const LayerSite& site = model->sites.sites[i];
        const Decision loop = DecideSite(model->plan, site, /*record_trace=*/true);
        SCOPED_TRACE(fmt::format("{} --engine {}: {}", dir.filename().string(), engine, site.path));
        EXPECT_EQ(screened[i].kind, loop.kind);
        EXPECT_EQ(screened[i].rule, loop.rule);
        EXPECT_EQ(screened[i].detail, loop.detail);
        EXPECT_EQ(screened[i].rule_hit, loop.rule_hit);
        EXPECT_EQ(screened[i].leg, loop.leg);
        // A leg's subject is the name the site itself gives that leg.
        if (loop.leg) {
          EXPECT_EQ(MatchedName(loop, site), site.kind == SiteKind::kMoe
                                                 ? site.ExpertLegPath(0, *loop.leg)
                                                 : site.LegPath(*loop.leg));
        }
        EXPECT_EQ(screened[i].scheme, loop.scheme);
        EXPECT_TRUE(screened[i].trace.empty());
        ++compared;
      }
    }
  }
  for (std::string_view name : {"r1_nvfp4", "gptq_dynamic"}) {
    fs::remove_all(fs::temp_directory_path() /
                   fmt::format("quantpath_screened_{}_{}", getpid(), name));
  }
  EXPECT_GT(models, 100u);
  EXPECT_GT(compared, 20000u);
}

}  // namespace
}  // namespace quantpath
