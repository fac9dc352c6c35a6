// The fallback for unknown architectures: sites inferred from checkpoint tensor names, with a
// warning; and no known architecture of the corpus ever takes that path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include <unistd.h>

#include "fmt/format.h"
#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::LinearModulePaths;
using models_test::SitesFromCorpus;
using ::testing::HasSubstr;

const Dialect kNative = *ParseDialect("native");

Result<ModelSites> SitesFromFolder(const std::filesystem::path& dir) {
  QP_ASSIGN_OR_RETURN(ConfigSources sources, ConfigSources::Load(dir));
  return BuildModelSites(sources, kNative);
}

bool HasInferredWarning(const ModelSites& m) {
  return std::any_of(m.warnings.begin(), m.warnings.end(),
                     [](const std::string& w) { return w.find("inferred") != std::string::npos; });
}

// A scratch model folder: a config.json naming an unknown architecture, and optionally a copy of
// a corpus index.
class ScratchFolder {
 public:
  explicit ScratchFolder(std::string_view name, std::string_view index_from = "") {
    // The process id keeps concurrent test processes apart.
    dir_ = std::filesystem::temp_directory_path() /
           fmt::format("quantpath-inferred-{}-{}", name, getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "config.json")
        << R"({"architectures": ["NotARealForCausalLM"], "torch_dtype": "bfloat16"})";
    if (!index_from.empty()) {
      std::filesystem::copy_file(std::string(QUANTPATH_TEST_DATA) + "/corpus/" +
                                     std::string(index_from) + "/model.safetensors.index.json",
                                 dir_ / "model.safetensors.index.json");
    }
  }
  ~ScratchFolder() { std::filesystem::remove_all(dir_); }
  void WriteIndex(std::string_view text) const {
    std::ofstream(dir_ / "model.safetensors.index.json") << text;
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

TEST(InferredSites, UnknownArchitectureFallsBackToTensorNames) {
  const std::string folder =
      std::string(QUANTPATH_TEST_DATA) + "/models/unknown-arch-qwen3-14b-mlx";
  auto r = SitesFromFolder(folder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(m.architecture, "RenamedQwen3ForCausalLM");
  ASSERT_TRUE(HasInferredWarning(m));
  const std::string& warning = m.warnings.back();
  EXPECT_THAT(warning, HasSubstr("config.json#/architectures/0"));
  EXPECT_THAT(warning, HasSubstr("\"RenamedQwen3ForCausalLM\""));
  EXPECT_THAT(warning, HasSubstr("model.safetensors.index.json"));
  EXPECT_THAT(warning, HasSubstr("shape null and params 0"));
  for (const LayerSite& s : m.sites) {
    EXPECT_FALSE(s.shape.has_value()) << s.path;
    EXPECT_EQ(s.params, 0) << s.path;
  }
  EXPECT_EQ(m.TotalParams(), 0);

  // The index is Qwen3-14B's: the inferred linear sites are exactly the modules behind the Qwen3
  // builder's linear sites and legs; norms are left out.
  auto known = SitesFromCorpus("Qwen__Qwen3-14B-MLX-4bit");
  ASSERT_TRUE(known.ok()) << known.status().message();
  const std::vector<std::string> expected = LinearModulePaths(*known);
  std::vector<std::string> inferred;
  for (const LayerSite& s : m.sites) {
    if (s.kind == SiteKind::kLinear) inferred.push_back(s.path);
  }
  EXPECT_EQ(std::set<std::string>(inferred.begin(), inferred.end()),
            std::set<std::string>(expected.begin(), expected.end()));
  EXPECT_EQ(inferred.size(), static_cast<size_t>(40 * 7));
  EXPECT_EQ(m.Find("model.embed_tokens")->kind, SiteKind::kEmbedding);
  EXPECT_EQ(m.Find("lm_head")->kind, SiteKind::kLmHead);
  EXPECT_EQ(m.sites.size(), inferred.size() + 2);
  // Natural order: layer 2 before layer 10.
  const auto index_of = [&](std::string_view path) {
    return std::find_if(m.sites.begin(), m.sites.end(),
                        [&](const LayerSite& s) { return s.path == path; }) -
           m.sites.begin();
  };
  EXPECT_LT(index_of("model.layers.2.self_attn.q_proj"),
            index_of("model.layers.10.self_attn.q_proj"));
  // The norms are other tensors, named as the Qwen3 builder names them; the index gives no shapes
  // (so no other_params), and they come in natural order too.
  std::vector<std::string> other_names;
  for (const OtherTensor& t : m.other_tensors) {
    EXPECT_TRUE(t.shape.empty()) << t.name;
    other_names.push_back(t.name);
  }
  std::vector<std::string> known_names;
  for (const OtherTensor& t : known->other_tensors) known_names.push_back(t.name);
  EXPECT_EQ(std::set<std::string>(other_names.begin(), other_names.end()),
            std::set<std::string>(known_names.begin(), known_names.end()));
  EXPECT_EQ(other_names.size(), static_cast<size_t>(40 * 4 + 1));
  const auto other_at = [&](std::string_view name) {
    return std::find(other_names.begin(), other_names.end(), name) - other_names.begin();
  };
  EXPECT_LT(other_at("model.layers.2.input_layernorm.weight"),
            other_at("model.layers.10.input_layernorm.weight"));
}

TEST(InferredSites, FusedExpertsRoutersAndLoneParameters) {
  ScratchFolder folder("gpt-oss", "openai__gpt-oss-20b");
  auto r = SitesFromFolder(folder.dir());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const LayerSite* experts = r->Find("model.layers.0.mlp.experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->kind, SiteKind::kMoe);
  ASSERT_EQ(experts->legs.size(), 2u);
  EXPECT_EQ(experts->legs[0].name, "down_proj");
  EXPECT_EQ(experts->legs[1].name, "gate_up_proj");
  const LayerSite* router = r->Find("model.layers.0.mlp.router");
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->kind, SiteKind::kRouter);
  EXPECT_TRUE(router->bias);
  EXPECT_TRUE(r->Find("model.layers.0.self_attn.q_proj")->bias);
  // self_attn holds only `sinks`: not a site.
  EXPECT_EQ(r->Find("model.layers.0.self_attn"), nullptr);
  EXPECT_EQ(r->Find("model.norm"), nullptr);
}

TEST(InferredSites, BitsandbytesStateAndNumberedNames) {
  ScratchFolder folder("molmo", "reubzdubz__Molmo7B_D_NF4Quant");
  auto r = SitesFromFolder(folder.dir());
  ASSERT_TRUE(r.ok()) << r.status().message();
  // `att_proj.weight.absmax`, `.quant_map` and `.quant_state.*` are the weight's state.
  const LayerSite* att = r->Find("model.transformer.blocks.0.att_proj");
  ASSERT_NE(att, nullptr);
  EXPECT_EQ(att->kind, SiteKind::kLinear);
  EXPECT_TRUE(att->bias);
  EXPECT_EQ(r->Find("model.transformer.blocks.0.att_proj.weight"), nullptr);
  EXPECT_EQ(r->Find("model.transformer.wte")->kind, SiteKind::kEmbedding);
  EXPECT_EQ(r->Find("model.transformer.blocks.0.attn_norm"), nullptr);
}

TEST(InferredSites, WithoutAnIndexTheArchitectureIsUnsupported) {
  ScratchFolder folder("no-index");
  auto r = SitesFromFolder(folder.dir());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_THAT(r.status().message(), HasSubstr("\"NotARealForCausalLM\" is not supported"));
  EXPECT_THAT(r.status().message(), HasSubstr("no model.safetensors.index.json"));
}

TEST(InferredSites, MalformedIndexIsAnErrorNamingIt) {
  ScratchFolder folder("malformed");
  folder.WriteIndex(R"({"metadata": {}, "weight_map": ["lm_head.weight"]})");
  auto wrong_type = SitesFromFolder(folder.dir());
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_EQ(wrong_type.status().code(), ErrorCode::kInvalidInput);
  EXPECT_THAT(wrong_type.status().message(), HasSubstr("model.safetensors.index.json"));
  EXPECT_THAT(wrong_type.status().message(), HasSubstr("\"weight_map\""));
  folder.WriteIndex(R"({"weight_map": {"lm_head.weight": "a", "lm_head.weight": "b"}})");
  auto duplicate = SitesFromFolder(folder.dir());
  ASSERT_FALSE(duplicate.ok());
  EXPECT_THAT(duplicate.status().message(), HasSubstr("model.safetensors.index.json"));
  // Names without a module, or with numbers where experts would be, never crash.
  folder.WriteIndex(R"({"weight_map": {"weight": "a", "experts.7.weight": "a", ".weight": "a",
      "x.experts..weight": "a", "experts.weight.absmax": "a"}})");
  auto odd = SitesFromFolder(folder.dir());
  ASSERT_TRUE(odd.ok()) << odd.status().message();
  EXPECT_TRUE(HasInferredWarning(*odd));
}

// With the shards present the shapes come from the safetensors headers: tests/data/models/
// unknown-arch-tiny (tools/fixtures/write_tiny_fixtures.py) stores fp8 weights [N, K], an f16
// embedding, LM head and router, two numbered experts and one MLX-packed module.
TEST(InferredSites, ShapesFromTheShardHeaders) {
  auto r = SitesFromFolder(std::string(QUANTPATH_TEST_DATA) + "/models/unknown-arch-tiny");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  using Shape = std::optional<std::array<int64_t, 2>>;
  const LayerSite* qkv = m.Find("model.blocks.0.attn.wqkv");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->shape, (Shape{{96, 32}}));
  EXPECT_TRUE(qkv->bias);
  EXPECT_EQ(qkv->params, 96 * 32 + 96);
  EXPECT_EQ(m.Find("model.blocks.0.attn.wo")->shape, (Shape{{32, 32}}));
  EXPECT_EQ(m.Find("model.embed_tokens")->shape, (Shape{{64, 32}}));
  EXPECT_EQ(m.Find("lm_head")->shape, (Shape{{64, 32}}));
  const LayerSite* router = m.Find("model.blocks.0.moe.gate");
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->kind, SiteKind::kRouter);
  EXPECT_EQ(router->shape, (Shape{{2, 32}}));
  // One expert's [intermediate, hidden] (the leg reading the embedding's width); every expert's
  // legs counted.
  const LayerSite* experts = m.Find("model.blocks.0.moe.experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->experts, 2);
  EXPECT_EQ(experts->shape, (Shape{{48, 32}}));
  EXPECT_EQ(experts->params, 2 * (48 * 32 + 32 * 48));
  ASSERT_EQ(experts->legs.size(), 2u);
  EXPECT_EQ(experts->legs[0].name, "w_down");
  EXPECT_EQ(experts->legs[0].rows, 32);
  EXPECT_EQ(experts->legs[1].rows, 48);
  EXPECT_EQ(m.Find("model.blocks.0.moe.experts.0.w_up"), nullptr);
  // MLX packs eight 4-bit values per U32: the header alone does not give K, so the shape is
  // unknown and the warning names the site instead of a [0, 0] shape.
  const LayerSite* packed = m.Find("model.blocks.0.packed_proj");
  ASSERT_NE(packed, nullptr);
  EXPECT_FALSE(packed->shape.has_value());
  EXPECT_EQ(packed->params, 0);
  ASSERT_TRUE(HasInferredWarning(m));
  EXPECT_THAT(m.warnings.back(), HasSubstr("the logical shape of model.blocks.0.packed_proj is "
                                           "unknown"));
  EXPECT_THAT(m.warnings.back(),
              HasSubstr("with their shapes where the stored layout states them"));
  // Norms are other tensors (attn_norm and the final norm, 32 each), with their header shapes;
  // fp8 scales are their sites'.
  ASSERT_EQ(m.other_tensors.size(), 2u);
  EXPECT_EQ(m.other_tensors[0].name, "model.blocks.0.attn_norm.weight");
  EXPECT_EQ(m.other_tensors[0].shape, (std::vector<int64_t>{32}));
  EXPECT_EQ(m.other_tensors[1].name, "model.norm.weight");
  EXPECT_EQ(m.other_tensors[1].shape, (std::vector<int64_t>{32}));
  EXPECT_EQ(m.other_params, 2 * 32);
}

// GPTQ and AWQ store the packed axis differently; both state N and K with their scales (and GPTQ
// with g_idx). The GPTQ fixture's architecture is known, so it is read as an unknown one here.
TEST(InferredSites, GptqShapesFromQweightScalesAndGIdx) {
  ScratchFolder folder("gptq-shapes");
  const std::filesystem::path tiny =
      std::filesystem::path(QUANTPATH_TEST_DATA) / "checkpoints/llama-tiny-gptq";
  for (const char* file : {"model.safetensors.index.json", "model-00001-of-00002.safetensors",
                           "model-00002-of-00002.safetensors"}) {
    std::filesystem::copy_file(tiny / file, folder.dir() / file);
  }
  auto r = SitesFromFolder(folder.dir());
  ASSERT_TRUE(r.ok()) << r.status().message();
  using Shape = std::optional<std::array<int64_t, 2>>;
  EXPECT_EQ(r->Find("model.layers.1.self_attn.k_proj")->shape, (Shape{{16, 32}}));
  EXPECT_EQ(r->Find("model.layers.1.mlp.down_proj")->shape, (Shape{{32, 64}}));
  EXPECT_EQ(r->Find("model.layers.0.mlp.down_proj")->shape, (Shape{{32, 64}}));  // plain f16
  for (const LayerSite& s : r->sites) EXPECT_TRUE(s.shape.has_value()) << s.path;
}

// Every corpus copy whose architecture has a builder is built by it, never inferred.
TEST(InferredSites, KnownArchitecturesNeverFallBack) {
  const std::vector<std::string> supported = SupportedArchitectures();
  std::set<std::string> seen;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(QUANTPATH_TEST_DATA) + "/corpus")) {
    if (!std::filesystem::exists(entry.path() / "config.json")) continue;
    auto config = ReadJsonFile(entry.path() / "config.json");
    ASSERT_TRUE(config.ok()) << config.status().message();
    const Json* archs = config->Find("architectures");
    if (archs == nullptr || !archs->is_array() || archs->items().empty()) continue;
    const std::string& arch = archs->items()[0].string_value();
    if (std::find(supported.begin(), supported.end(), arch) == supported.end()) continue;
    auto r = SitesFromFolder(entry.path());
    ASSERT_TRUE(r.ok()) << entry.path() << ": " << r.status().message();
    EXPECT_FALSE(HasInferredWarning(*r)) << entry.path();
    EXPECT_GT(r->TotalParams(), 0) << entry.path();
    seen.insert(arch);
  }
  for (const char* arch :
       {"GptOssForCausalLM", "QWenLMHeadModel", "GPTBigCodeForCausalLM", "PhiForCausalLM",
        "Glm4MoeForCausalLM", "Qwen3_5ForConditionalGeneration", "MolmoForCausalLM",
        "DeepseekV3ForCausalLM", "Qwen3ForCausalLM", "LlamaForCausalLM"}) {
    EXPECT_TRUE(seen.contains(arch)) << arch;
  }
}

}  // namespace
}  // namespace quantpath
