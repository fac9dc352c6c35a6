// The KV-cache scale tensors an attention site owns, and the name each engine release loads them
// as: vLLM's get_cache_scale_mapper (base_config.py, 0.33 and 0.34) and SGLang 0.5.23's
// maybe_remap_kv_scale_name, which only some of its models call. Fused attention is where they
// part: ModelOpt's qkv_proj.k_scale, and compressed-tensors' scales on an attention module named
// `attn` (Qwen's c_attn), whose name vLLM's last pattern leaves alone.
#include "src/pipeline/kv_scales.h"

#include <gtest/gtest.h>

namespace quantpath::pipeline_internal {
namespace {

LayerSite Attention(const std::string& path) {
  LayerSite site;
  site.kind = SiteKind::kAttention;
  site.path = path;
  site.checkpoint_path = path;
  return site;
}

std::optional<std::string> NotLoaded(std::string_view engine, std::string_view architecture,
                                     const std::string& attention, const std::string& tensor,
                                     std::string_view importer = "compressed-tensors") {
  const std::optional<Dialect> dialect = ParseDialect(engine);
  EXPECT_TRUE(dialect.has_value()) << engine;
  return KvScaleNotLoaded(*dialect, architecture, importer, Attention(attention), tensor);
}

constexpr char kLlama[] = "LlamaForCausalLM";
constexpr char kAttn[] = "model.layers.0.self_attn.attn";

TEST(KvScalesTest, TheFormsProducersWrite) {
  for (const char* rest :
       {"k_scale", "v_scale", "q_scale", "kv_scale", "k_proj.k_scale", "v_proj.v_scale",
        "qkv_proj.k_scale", "c_attn.v_scale", "k_proj.output_scale", "q_proj.output_scale"}) {
    EXPECT_TRUE(IsKvScaleName(rest)) << rest;
  }
  for (const char* rest : {"k_proj.weight_scale", "k_proj.input_scale", "o_proj.output_scale",
                           "k_proj.k_scale.x", "scale", ".k_scale", "qkv_proj.weight"}) {
    EXPECT_FALSE(IsKvScaleName(rest)) << rest;
  }
  EXPECT_EQ(KvScaleModule(Attention(kAttn)), "model.layers.0.self_attn");
}

TEST(KvScalesTest, CompressedTensorsAndModelOptScalesOfLlamaReachEveryRelease) {
  for (const char* engine : {"native", "vllm@0.33", "vllm@0.34", "sglang@0.5.23"}) {
    for (const char* tensor :
         {"model.layers.0.self_attn.k_scale", "model.layers.0.self_attn.v_scale",
          "model.layers.0.self_attn.k_proj.k_scale", "model.layers.0.self_attn.v_proj.v_scale",
          "model.layers.0.self_attn.kv_scale"}) {
      EXPECT_EQ(NotLoaded(engine, kLlama, kAttn, tensor), std::nullopt) << engine << " " << tensor;
    }
  }
}

TEST(KvScalesTest, FusedQkvProjScalesReachVllmButNotSglang) {
  const std::string tensor = "model.layers.0.self_attn.qkv_proj.k_scale";
  EXPECT_EQ(NotLoaded("vllm@0.34", kLlama, kAttn, tensor), std::nullopt);
  EXPECT_EQ(NotLoaded("vllm@0.33", kLlama, kAttn, tensor), std::nullopt);
  EXPECT_EQ(NotLoaded("sglang@0.5.23", kLlama, kAttn, tensor),
            "sglang@0.5.23 reads it as model.layers.0.self_attn.qkv_proj.attn.k_scale "
            "(maybe_remap_kv_scale_name), not as the attention's "
            "model.layers.0.self_attn.attn.k_scale: the layer's KV cache does not get this scale");
  EXPECT_EQ(NotLoaded("native", kLlama, kAttn, tensor), std::nullopt);
}

TEST(KvScalesTest, ScalesOnAnAttentionModuleNamedAttnReachNoRelease) {
  // Qwen (c_attn): compressed-tensors hooks the attention module transformer.h.0.attn; the engines
  // build their attention inside it as transformer.h.0.attn.attn.
  const std::string attention = "transformer.h.0.attn.attn";
  const std::string tensor = "transformer.h.0.attn.k_scale";
  EXPECT_EQ(NotLoaded("vllm@0.34", "QWenLMHeadModel", attention, tensor),
            "vllm@0.34 looks it up as transformer.h.0.attn.k_scale (its quantization config's "
            "get_cache_scale_mapper renames no such name), not as the attention's "
            "transformer.h.0.attn.attn.k_scale: the layer's KV cache does not get this scale");
  EXPECT_EQ(NotLoaded("sglang@0.5.23", "QWenLMHeadModel", attention, tensor),
            "sglang@0.5.23 looks it up as transformer.h.0.attn.k_scale (its QWenLMHeadModel "
            "loader, which renames no such name), not as the attention's "
            "transformer.h.0.attn.attn.k_scale: the layer's KV cache does not get this scale");
  EXPECT_EQ(NotLoaded("native", "QWenLMHeadModel", attention, tensor), std::nullopt);
}

TEST(KvScalesTest, OutputScalesReachVllmThroughFp8ConfigOnly) {
  const std::string tensor = "model.layers.0.self_attn.v_proj.output_scale";
  EXPECT_EQ(NotLoaded("vllm@0.34", kLlama, kAttn, tensor, "fp8"), std::nullopt);
  EXPECT_EQ(NotLoaded("vllm@0.34", kLlama, kAttn, tensor),
            "vllm@0.34 looks it up as model.layers.0.self_attn.v_proj.output_scale (its "
            "quantization config's get_cache_scale_mapper renames no such name), not as the "
            "attention's model.layers.0.self_attn.attn.v_scale: the layer's KV cache does not "
            "get this scale");
  EXPECT_EQ(NotLoaded("sglang@0.5.23", kLlama, kAttn, tensor), std::nullopt);
  // Qwen2's SGLang loader renames none.
  EXPECT_NE(
      NotLoaded("sglang@0.5.23", "Qwen2ForCausalLM", kAttn, "model.layers.0.self_attn.k_scale"),
      std::nullopt);
  EXPECT_EQ(
      NotLoaded("sglang@0.5.23", "Qwen3ForCausalLM", kAttn, "model.layers.0.self_attn.k_scale"),
      std::nullopt);
}

}  // namespace
}  // namespace quantpath::pipeline_internal
