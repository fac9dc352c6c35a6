// DeepseekV3ForCausalLM sites on small synthetic configs: MLA projections, dense and MoE layers,
// MTP layers, per-dialect names. Expected numbers are computed here from the config's fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "fmt/format.h"
#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::Paths;
using models_test::SiteModules;
using models_test::SitesFromCorpus;
using models_test::SitesFromText;
using models_test::UnderModule;

struct Dims {
  int64_t hidden = 256;
  int64_t layers = 3;
  int64_t heads = 4;
  int64_t vocab = 512;
  int64_t intermediate = 512;
  int64_t q_lora = 128;  // 0: written as null
  int64_t kv_lora = 32;
  int64_t nope = 16;
  int64_t rope = 8;
  int64_t v_head = 16;
  int64_t experts = 8;
  int64_t moe_intermediate = 64;
  int64_t shared = 1;
  int64_t first_dense = 1;
  int64_t freq = 1;
  int64_t mtp = 1;
};

std::string Config(const Dims& d, std::string_view extra = "") {
  return fmt::format(
      R"({{"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": {}, "num_hidden_layers": {},
          "num_attention_heads": {}, "vocab_size": {}, "intermediate_size": {},
          "q_lora_rank": {}, "kv_lora_rank": {}, "qk_nope_head_dim": {}, "qk_rope_head_dim": {},
          "v_head_dim": {}, "n_routed_experts": {}, "moe_intermediate_size": {},
          "n_shared_experts": {}, "first_k_dense_replace": {}, "moe_layer_freq": {},
          "num_nextn_predict_layers": {}, "torch_dtype": "bfloat16" {}}})",
      d.hidden, d.layers, d.heads, d.vocab, d.intermediate,
      d.q_lora ? std::to_string(d.q_lora) : "null", d.kv_lora, d.nope, d.rope, d.v_head, d.experts,
      d.moe_intermediate, d.shared, d.first_dense, d.freq, d.mtp, extra);
}

// Site params of one decoder layer's attention.
int64_t AttentionParams(const Dims& d) {
  const int64_t kv_a = d.kv_lora + d.rope;
  const int64_t q = d.q_lora ? d.hidden * d.q_lora + d.q_lora * d.heads * (d.nope + d.rope)
                             : d.hidden * d.heads * (d.nope + d.rope);
  return q + d.hidden * kv_a + d.kv_lora * d.heads * (d.nope + d.v_head) +
         d.hidden * d.heads * d.v_head;
}

bool IsMoe(const Dims& d, int64_t i) { return i >= d.first_dense && i % d.freq == 0; }

int64_t MlpParams(const Dims& d, int64_t i) {
  if (!IsMoe(d, i)) return 3 * d.hidden * d.intermediate;
  return d.experts * d.hidden +                           // router
         d.experts * 3 * d.hidden * d.moe_intermediate +  // routed experts
         3 * d.hidden * d.shared * d.moe_intermediate;    // shared experts
}

// Norms and router biases of one layer.
int64_t LayerOther(const Dims& d, int64_t i) {
  return (d.q_lora ? d.q_lora : 0) + d.kv_lora + 2 * d.hidden + (IsMoe(d, i) ? d.experts : 0);
}

std::vector<std::string> LayerPaths(const Dims& d, int64_t i, std::string_view fused,
                                    std::vector<std::string_view> attn) {
  const std::string p = fmt::format("model.layers.{}.", i);
  std::vector<std::string> paths;
  if (d.q_lora) {
    paths.push_back(p + "self_attn." + std::string(fused));
    paths.push_back(p + "self_attn.q_b_proj");
  } else {
    paths.push_back(p + "self_attn.kv_a_proj_with_mqa");
    paths.push_back(p + "self_attn.q_proj");
  }
  paths.push_back(p + "self_attn.kv_b_proj");
  paths.push_back(p + "self_attn.o_proj");
  for (std::string_view a : attn) paths.push_back(p + "self_attn." + std::string(a));
  if (IsMoe(d, i)) {
    paths.push_back(p + "mlp.gate");
    if (d.shared) {
      paths.push_back(p + "mlp.shared_experts.gate_up_proj");
      paths.push_back(p + "mlp.shared_experts.down_proj");
    }
    paths.push_back(p + "mlp.experts");
  } else {
    paths.push_back(p + "mlp.gate_up_proj");
    paths.push_back(p + "mlp.down_proj");
  }
  return paths;
}

std::vector<std::string> ExpectedPaths(const Dims& d, std::string_view fused = "fused_qkv_a_proj",
                                       std::vector<std::string_view> attn = {"attn"}) {
  std::vector<std::string> paths = {"model.embed_tokens"};
  auto append = [&](std::vector<std::string> more) {
    paths.insert(paths.end(), more.begin(), more.end());
  };
  for (int64_t i = 0; i < d.layers; ++i) append(LayerPaths(d, i, fused, attn));
  paths.push_back("lm_head");
  for (int64_t j = 0; j < d.mtp; ++j) {
    const int64_t i = d.layers + j;
    const std::string p = fmt::format("model.layers.{}.", i);
    paths.push_back(p + "embed_tokens");
    paths.push_back(p + "eh_proj");
    append(LayerPaths(d, i, fused, attn));
    paths.push_back(p + "shared_head.head");
  }
  return paths;
}

TEST(DeepseekV3, SitesNamesAndParams) {
  Dims d;
  auto r = SitesFromText(Config(d));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(m.architecture, "DeepseekV3ForCausalLM");
  EXPECT_EQ(Paths(m), ExpectedPaths(d));

  const LayerSite* fused = m.Find("model.layers.0.self_attn.fused_qkv_a_proj");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->module_class, "MergedColumnParallelLinear");
  ASSERT_EQ(fused->legs.size(), 2u);
  EXPECT_EQ(fused->legs[0].name, "q_a_proj");
  EXPECT_EQ(fused->legs[0].rows, d.q_lora);
  EXPECT_EQ(fused->legs[1].name, "kv_a_proj_with_mqa");
  EXPECT_EQ(fused->legs[1].rows, d.kv_lora + d.rope);
  EXPECT_EQ(*fused->shape, (std::array<int64_t, 2>{d.q_lora + d.kv_lora + d.rope, d.hidden}));
  EXPECT_EQ(fused->LegPath(1), "model.layers.0.self_attn.kv_a_proj_with_mqa");

  EXPECT_EQ(*m.Find("model.layers.0.self_attn.q_b_proj")->shape,
            (std::array<int64_t, 2>{d.heads * (d.nope + d.rope), d.q_lora}));
  EXPECT_EQ(*m.Find("model.layers.0.self_attn.kv_b_proj")->shape,
            (std::array<int64_t, 2>{d.heads * (d.nope + d.v_head), d.kv_lora}));
  EXPECT_EQ(*m.Find("model.layers.0.self_attn.o_proj")->shape,
            (std::array<int64_t, 2>{d.hidden, d.heads * d.v_head}));
  const LayerSite* attn = m.Find("model.layers.0.self_attn.attn");
  EXPECT_EQ(attn->kind, SiteKind::kAttention);
  EXPECT_EQ(attn->module_class, "MLAAttention");
  EXPECT_FALSE(attn->shape.has_value());

  // Layer 0 is dense (first_k_dense_replace = 1); layer 1 has experts.
  EXPECT_EQ(*m.Find("model.layers.0.mlp.gate_up_proj")->shape,
            (std::array<int64_t, 2>{2 * d.intermediate, d.hidden}));
  const LayerSite* gate = m.Find("model.layers.1.mlp.gate");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->kind, SiteKind::kRouter);
  EXPECT_EQ(gate->module_class, "ReplicatedLinear");
  EXPECT_EQ(*gate->shape, (std::array<int64_t, 2>{d.experts, d.hidden}));
  const LayerSite* experts = m.Find("model.layers.1.mlp.experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->kind, SiteKind::kMoe);
  EXPECT_EQ(experts->experts, d.experts);
  EXPECT_EQ(*experts->shape, (std::array<int64_t, 2>{d.moe_intermediate, d.hidden}));
  ASSERT_EQ(experts->legs.size(), 3u);
  EXPECT_EQ(experts->legs[0].name, "gate_proj");
  EXPECT_EQ(experts->legs[1].name, "up_proj");
  EXPECT_EQ(experts->legs[2].name, "down_proj");
  EXPECT_EQ(experts->params, d.experts * 3 * d.hidden * d.moe_intermediate);
  EXPECT_EQ(experts->ExpertLegPath(5, 2), "model.layers.1.mlp.experts.5.down_proj");
  EXPECT_EQ(experts->ExpertLegPath(d.experts, 0), "");
  EXPECT_EQ(*m.Find("model.layers.1.mlp.shared_experts.down_proj")->shape,
            (std::array<int64_t, 2>{d.hidden, d.shared * d.moe_intermediate}));

  int64_t sites = 2 * d.vocab * d.hidden;  // embed_tokens, lm_head
  int64_t other = d.hidden;                // model.norm
  for (int64_t i = 0; i < d.layers; ++i) {
    sites += AttentionParams(d) + MlpParams(d, i);
    other += LayerOther(d, i);
  }
  // MTP: its own embedding and head, eh_proj, a full layer; enorm, hnorm, shared_head.norm.
  for (int64_t i = d.layers; i < d.layers + d.mtp; ++i) {
    sites +=
        2 * d.vocab * d.hidden + 2 * d.hidden * d.hidden + AttentionParams(d) + MlpParams(d, i);
    other += LayerOther(d, i) + 3 * d.hidden;
  }
  EXPECT_EQ(m.SiteParams(), sites);
  EXPECT_EQ(m.other_params, other);

  ASSERT_EQ(m.packed_modules_mapping.size(), 2u);
  EXPECT_EQ(m.packed_modules_mapping[0].first, "gate_up_proj");
  EXPECT_EQ(m.packed_modules_mapping[1].first, "fused_qkv_a_proj");
  EXPECT_EQ(m.packed_modules_mapping[1].second,
            (std::vector<std::string>{"q_a_proj", "kv_a_proj_with_mqa"}));
}

TEST(DeepseekV3, MtpLayersAreLastAndMarked) {
  Dims d;
  d.mtp = 2;
  auto r = SitesFromText(Config(d));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  EXPECT_EQ(Paths(m), ExpectedPaths(d));
  bool seen_mtp = false;
  for (const LayerSite& s : m.sites) {
    const bool in_mtp_layer = s.path.starts_with(fmt::format("model.layers.{}.", d.layers)) ||
                              s.path.starts_with(fmt::format("model.layers.{}.", d.layers + 1));
    EXPECT_EQ(s.mtp, in_mtp_layer) << s.path;
    if (s.mtp) seen_mtp = true;
    if (seen_mtp) {
      EXPECT_TRUE(s.mtp) << s.path << " follows an MTP site";
    }
  }
  const LayerSite* eh = m.Find(fmt::format("model.layers.{}.eh_proj", d.layers));
  ASSERT_NE(eh, nullptr);
  EXPECT_EQ(*eh->shape, (std::array<int64_t, 2>{d.hidden, 2 * d.hidden}));
  EXPECT_EQ(m.Find(fmt::format("model.layers.{}.embed_tokens", d.layers))->kind,
            SiteKind::kEmbedding);
  const LayerSite* head = m.Find(fmt::format("model.layers.{}.shared_head.head", d.layers + 1));
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->kind, SiteKind::kLmHead);
  EXPECT_EQ(head->params, d.vocab * d.hidden);
}

// What an engine dialect lists of the native paths without speculative decoding: no router
// (built without a quantization config), no MTP layer, and SGLang's embedding without a call;
// SGLang builds the shared experts after the routed ones (8 routed experts: no fusion).
std::vector<std::string> EnginePaths(const Dims& d, bool sglang) {
  Dims main = d;
  main.mtp = 0;
  std::vector<std::string> paths;
  for (std::string& path :
       sglang ? ExpectedPaths(main, "fused_qkv_a_proj_with_mqa", {"attn_mqa", "attn_mha"})
              : ExpectedPaths(main)) {
    if (path.ends_with(".mlp.gate") || (sglang && path == "model.embed_tokens")) continue;
    paths.push_back(std::move(path));
  }
  if (sglang) {
    for (size_t i = 0; i + 2 < paths.size(); ++i) {
      if (paths[i].ends_with("shared_experts.gate_up_proj")) {
        std::rotate(paths.begin() + static_cast<std::ptrdiff_t>(i),
                    paths.begin() + static_cast<std::ptrdiff_t>(i) + 2,
                    paths.begin() + static_cast<std::ptrdiff_t>(i) + 3);
        i += 2;
      }
    }
  }
  return paths;
}

TEST(DeepseekV3, SglangNamesTheFusedProjectionAndAttentionsItsWay) {
  Dims d;
  auto r = SitesFromText(Config(d), "sglang@helpers");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Paths(*r), EnginePaths(d, /*sglang=*/true));
  EXPECT_EQ(r->Find("model.layers.0.self_attn.attn_mqa")->module_class, "RadixAttention");
  EXPECT_EQ(r->packed_modules_mapping[1].first, "fused_qkv_a_proj_with_mqa");

  auto v = SitesFromText(Config(d), "vllm@helpers");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(Paths(*v), EnginePaths(d, /*sglang=*/false));
  // The dialect changes names and which modules are rows, never the checkpoint's total.
  auto native = SitesFromText(Config(d));
  ASSERT_TRUE(native.ok());
  EXPECT_EQ(r->TotalParams(), native->TotalParams());
  EXPECT_EQ(v->TotalParams(), native->TotalParams());
}

TEST(DeepseekV3, WithoutQLoraQProjReadsHidden) {
  Dims d;
  d.q_lora = 0;
  d.mtp = 0;
  auto r = SitesFromText(Config(d));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Paths(*r), ExpectedPaths(d));
  const LayerSite* kv_a = r->Find("model.layers.0.self_attn.kv_a_proj_with_mqa");
  ASSERT_NE(kv_a, nullptr);
  EXPECT_TRUE(kv_a->legs.empty());
  EXPECT_EQ(*kv_a->shape, (std::array<int64_t, 2>{d.kv_lora + d.rope, d.hidden}));
  EXPECT_EQ(*r->Find("model.layers.0.self_attn.q_proj")->shape,
            (std::array<int64_t, 2>{d.heads * (d.nope + d.rope), d.hidden}));
  ASSERT_EQ(r->packed_modules_mapping.size(), 1u);  // no fused MLA projection
  EXPECT_EQ(r->Find("model.layers.0.self_attn.fused_qkv_a_proj"), nullptr);
}

TEST(DeepseekV3, MoeLayerFrequencyAndNoSharedExperts) {
  Dims d;
  d.layers = 6;
  d.first_dense = 1;
  d.freq = 2;  // MoE at layers 2 and 4 only
  d.shared = 0;
  d.mtp = 0;
  auto r = SitesFromText(Config(d));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Paths(*r), ExpectedPaths(d));
  for (int64_t i = 0; i < d.layers; ++i) {
    const bool moe = r->Find(fmt::format("model.layers.{}.mlp.experts", i)) != nullptr;
    EXPECT_EQ(moe, i == 2 || i == 4) << i;
  }
  EXPECT_EQ(r->Find("model.layers.2.mlp.shared_experts.gate_up_proj"), nullptr);
}

TEST(DeepseekV3, RouterBiasOnlyForNoauxTc) {
  Dims d;
  d.mtp = 0;
  auto noaux = SitesFromText(Config(d, R"(, "topk_method": "noaux_tc")"));
  auto greedy = SitesFromText(Config(d, R"(, "topk_method": "greedy")"));
  ASSERT_TRUE(noaux.ok()) << noaux.status().message();
  ASSERT_TRUE(greedy.ok()) << greedy.status().message();
  const int64_t moe_layers = d.layers - d.first_dense;
  EXPECT_EQ(noaux->other_params - greedy->other_params, moe_layers * d.experts);
}

// The tensors of no site of DeepSeek-R1 (its corpus config.json) by their checkpoint names,
// against the two listings of DeepSeek-V3/R1 tensors the corpus holds: the first 16,000
// characters of an AWQ export's index (kvcache-ai__sglang_awq__DeepSeek-AWQ, the same 61-layer
// model, whose layers 0–2 it lists whole; not valid JSON, so its names are read line by line)
// and the modules TensorRT-LLM's NVFP4 export keeps unquantized (its exclude_modules).
TEST(DeepseekV3, OtherTensorsOfR1ByCheckpointName) {
  auto r = SitesFromCorpus("deepseek-ai__DeepSeek-R1");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::map<std::string, std::vector<int64_t>, std::less<>> others;
  for (const OtherTensor& t : r->other_tensors) others.emplace(t.name, t.shape);
  // A dense layer's MLA norms and layer norms, a MoE layer's router bias, the MTP layer's own
  // norms, the final norm.
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"model.layers.0.self_attn.q_a_layernorm.weight", {1536}},
      {"model.layers.0.self_attn.kv_a_layernorm.weight", {512}},
      {"model.layers.0.input_layernorm.weight", {7168}},
      {"model.layers.0.post_attention_layernorm.weight", {7168}},
      {"model.layers.3.mlp.gate.e_score_correction_bias", {256}},
      {"model.layers.61.enorm.weight", {7168}},
      {"model.layers.61.hnorm.weight", {7168}},
      {"model.layers.61.shared_head.norm.weight", {7168}},
      {"model.layers.61.mlp.gate.e_score_correction_bias", {256}},
      {"model.norm.weight", {7168}}};
  for (const auto& [name, shape] : expected) {
    auto it = others.find(name);
    ASSERT_NE(it, others.end()) << name;
    EXPECT_EQ(it->second, shape) << name;
  }
  // Four norms in each of the 62 layers, a router bias in each MoE layer (3–61), the MTP layer's
  // three norms, the final norm.
  EXPECT_EQ(r->other_tensors.size(), 62u * 4 + 59 + 3 + 1);

  std::ifstream excerpt(std::string(QUANTPATH_TEST_DATA) +
                        "/corpus/kvcache-ai__sglang_awq__DeepSeek-AWQ/"
                        "model.safetensors.index.excerpt.json");
  ASSERT_TRUE(excerpt.good());
  std::set<std::string, std::less<>> modules;
  for (const LayerSite& s : r->sites) {
    for (const std::string& module : SiteModules(s)) modules.insert(module);
  }
  const auto whole = [](std::string_view name) {
    return name.starts_with("model.layers.0.") || name.starts_with("model.layers.1.") ||
           name.starts_with("model.layers.2.");
  };
  std::set<std::string> listed;
  for (std::string line; std::getline(excerpt, line);) {
    // `    "model.layers.0.input_layernorm.weight": "model-00001-of-00074.safetensors",`
    const size_t open = line.find('"');
    const size_t close = line.find("\": \"model-");
    if (open == std::string::npos || close == std::string::npos) continue;
    const std::string name = line.substr(open + 1, close - open - 1);
    if (!whole(name) || UnderModule(modules, name)) continue;
    listed.insert(name);
    EXPECT_TRUE(others.contains(name)) << name << " belongs to no site and is not an other tensor";
  }
  EXPECT_EQ(listed.size(), 4u * 3);
  for (const OtherTensor& t : r->other_tensors) {
    if (whole(t.name)) {
      EXPECT_TRUE(listed.contains(t.name)) << t.name << " is not in the index";
    }
  }

  auto nvfp4 =
      ReadJsonFile(std::string(QUANTPATH_TEST_DATA) +
                   "/corpus/peaceh-nv__TensorRT-LLM__DeepSeek-R1-NVFP4/hf_quant_config.json");
  ASSERT_TRUE(nvfp4.ok()) << nvfp4.status().message();
  int norms = 0;
  for (const Json& module : nvfp4->Find("quantization")->Find("exclude_modules")->items()) {
    const std::string& name = module.string_value();
    if (name.find("norm") == std::string::npos || name.ends_with("*")) continue;
    ++norms;
    EXPECT_TRUE(others.contains(name + ".weight")) << name;
  }
  EXPECT_GT(norms, 0);
}

TEST(DeepseekV3, TheBundledExampleMatchesDesignNumbers) {
  auto sources = ConfigSources::Load(std::string(QUANTPATH_SOURCE_DIR) + "/examples/deepseek-tiny");
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  auto r = BuildModelSites(*sources, *ParseDialect("native"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ModelSites& m = *r;
  // The numbers DESIGN.md's `plan --json` example shows.
  const LayerSite* embed = m.Find("model.embed_tokens");
  EXPECT_EQ(*embed->shape, (std::array<int64_t, 2>{512, 256}));
  EXPECT_EQ(embed->params, 131072);
  const LayerSite* fused = m.Find("model.layers.0.self_attn.fused_qkv_a_proj");
  EXPECT_EQ(*fused->shape, (std::array<int64_t, 2>{168, 256}));
  EXPECT_EQ(fused->params, 43008);
  EXPECT_EQ(*m.Find("model.layers.1.mlp.gate")->shape, (std::array<int64_t, 2>{8, 256}));
  const LayerSite* experts = m.Find("model.layers.1.mlp.experts");
  EXPECT_EQ(*experts->shape, (std::array<int64_t, 2>{64, 256}));
  EXPECT_EQ(experts->experts, 8);
  EXPECT_EQ(m.Find("model.layers.0.self_attn.attn")->params, 0);
  EXPECT_EQ(*m.Find("lm_head")->shape, (std::array<int64_t, 2>{512, 256}));
  EXPECT_NE(m.Find("model.layers.0.mlp.gate_up_proj"), nullptr);  // first_k_dense_replace 1
  EXPECT_TRUE(m.Find("model.layers.3.shared_head.head")->mtp);    // num_nextn_predict_layers 1
  EXPECT_EQ(m.sites.back().path, "model.layers.3.shared_head.head");
  EXPECT_EQ(m.torch_dtype, QDType::kBF16);
  EXPECT_TRUE(m.warnings.empty());
}

}  // namespace
}  // namespace quantpath
