// The ModelOpt importer for the engine releases (vllm@0.33, vllm@0.34, sglang@0.5.23): the
// behaviour the recorded releases/*/cases/ files do not reach (config-class choice and validation
// texts, the MIXED_PRECISION lookup corners, the order of resolution and exclusion).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "quantpath/importers.h"
#include "quantpath/planner.h"
#include "src/importers/importer_list.h"

namespace quantpath {
namespace {

// `text` as config.json's quantization_config ("config.json") or as hf_quant_config.json.
Result<QuantPlan> Build(std::string_view text, std::string_view dialect,
                        std::string_view file = "config.json") {
  std::string body = file == "config.json" ? "{\"quantization_config\": " + std::string(text) + "}"
                                           : std::string(text);
  Result<Json> root = ParseJson(body, file);
  EXPECT_TRUE(root.ok()) << root.status().message();
  std::vector<SourceFile> files;
  files.push_back({std::string(file), {}, root.ok() ? *root : Json::Object()});
  return ModelOptImporter()->BuildPlan(ConfigSources::FromMemory(std::move(files)),
                                       *ParseDialect(dialect));
}

LayerSite Site(std::string path, SiteKind kind = SiteKind::kLinear,
               std::vector<std::string> legs = {}) {
  LayerSite s;
  s.path = std::move(path);
  s.kind = kind;
  for (std::string& leg : legs) s.legs.push_back({std::move(leg), 0});
  return s;
}

TEST(ModelOptCurrent, VllmValidationTexts) {
  Result<QuantPlan> unknown =
      Build(R"({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"})", "vllm@0.33");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find(
                "['FP8', 'FP8_PER_CHANNEL_PER_TOKEN', 'FP8_PB_WO', 'NVFP4', 'W4A16_NVFP4', "
                "'MXFP8', 'MIXED_PRECISION']"),
            std::string::npos);
  Result<QuantPlan> mxfp8 =
      Build(R"({"quantization": {"quant_algo": "MXFP8"}})", "vllm@0.33", "hf_quant_config.json");
  ASSERT_FALSE(mxfp8.ok());
  EXPECT_EQ(mxfp8.status().message(),
            "ValueError: MXFP8 quantization requires the following fields in "
            "hf_quant_config.json: ['kv_cache_quant_algo', 'exclude_modules']");
  Result<QuantPlan> mixed = Build(
      R"({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {}})",
      "vllm@0.33");
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("requires a non-empty 'quantized_layers'"),
            std::string::npos);
}

TEST(ModelOptCurrent, VllmFlatFormAndFusedNameListed) {
  // The flat form falls back to exclude_modules when it has no "ignore"; a fused name listed
  // directly is honoured before its shards are looked up; MXFP8 runs through the generic method.
  Result<QuantPlan> plan = Build(R"({"quant_method": "modelopt", "quant_algo": "mxfp8",
      "exclude_modules": ["model.layers.0.self_attn.qkv_proj"]})",
                                 "vllm@0.33");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  LayerSite qkv =
      Site("model.layers.0.self_attn.qkv_proj", SiteKind::kLinear, {"q_proj", "k_proj", "v_proj"});
  EXPECT_EQ(DecideSite(*plan, qkv).kind, DecisionKind::kUnquantized);
  Decision down = DecideSite(*plan, Site("model.layers.0.mlp.down_proj"));
  ASSERT_EQ(down.kind, DecisionKind::kQuantized);
  EXPECT_EQ(down.detail, "ModelOptLinearMethod[algo=MXFP8]");
  EXPECT_EQ(down.scheme->weight.dtype, QDType::kMXFP8);
  EXPECT_EQ(DecideSite(*plan, Site("model.layers.0.mlp.experts", SiteKind::kMoe)).detail,
            "ModelOptMxFp8FusedMoE");
  // vit_large_projector joined the towers vLLM keeps unquantized.
  EXPECT_EQ(DecideSite(*plan, Site("vit_large_projector.linear_1")).kind,
            DecisionKind::kUnquantized);
  // Native reading is unchanged: MXFP8 is not one of the algorithms quantpath reads natively.
  EXPECT_FALSE(Build(R"({"quant_method": "modelopt", "quant_algo": "MXFP8"})", "native").ok());
}

constexpr std::string_view kMixed = R"({"quant_method": "modelopt",
    "quant_algo": "MIXED_PRECISION", "ignore": ["model.layers.0.self_attn*"],
    "kv_cache_scheme": {"type": "float", "num_bits": 8},
    "quantized_layers": {
      "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
      "model.layers.0.self_attn.k_proj": {"quant_algo": "NVFP4"},
      "model.layers.1.mlp.experts.0.gate_proj": {"quant_algo": "FP8_PER_CHANNEL_PER_TOKEN"},
      "vision_tower.blocks.0.fc1": {"quant_algo": "FP8"},
      "lm_head": {"quant_algo": "NVFP4", "group_size": 16}}})";

TEST(ModelOptCurrent, VllmMixedCorners) {
  Result<QuantPlan> plan = Build(kMixed, "vllm@0.33");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  LayerSite qkv =
      Site("model.layers.0.self_attn.qkv_proj", SiteKind::kLinear, {"q_proj", "k_proj", "v_proj"});
  // vLLM tests the exclusion list before resolving, so the conflicting shards never raise.
  EXPECT_EQ(DecideSite(*plan, qkv).kind, DecisionKind::kUnquantized);
  // The mixed config has no method for FP8_PER_CHANNEL_PER_TOKEN experts.
  Decision experts = DecideSite(*plan, Site("model.layers.1.mlp.experts", SiteKind::kMoe));
  EXPECT_EQ(experts.kind, DecisionKind::kUnquantized);
  EXPECT_EQ(experts.detail, "get_quant_method returned None");
  // No vision-tower special case for MIXED_PRECISION.
  EXPECT_EQ(DecideSite(*plan, Site("vision_tower.blocks.0.fc1")).detail,
            "ModelOptLinearMethod[algo=FP8]");
  // The key "lm_head" serves a prefix ending in ".lm_head".
  EXPECT_EQ(DecideSite(*plan, Site("language_model.lm_head", SiteKind::kLmHead)).detail,
            "ModelOptLinearMethod[algo=NVFP4]");
  // MIXED_PRECISION attaches the KV method only with a KV algorithm (the flat kv_cache_scheme).
  EXPECT_EQ(DecideSite(*plan, Site("model.layers.0.self_attn.attn", SiteKind::kAttention)).detail,
            "ModelOptKVCacheMethod");
}

TEST(ModelOptCurrent, SglangMixedResolvesBeforeExcluding) {
  Result<QuantPlan> plan = Build(kMixed, "sglang@0.5.23");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  LayerSite qkv =
      Site("model.layers.0.self_attn.qkv_proj", SiteKind::kLinear, {"q_proj", "k_proj", "v_proj"});
  // Without packed_modules_mapping in the config object, SGLang's lookup sees no shards.
  EXPECT_EQ(DecideSite(*plan, qkv).kind, DecisionKind::kUnquantized);
  std::string with_mapping(kMixed);
  with_mapping.insert(
      with_mapping.size() - 1,
      R"(, "packed_modules_mapping": {"qkv_proj": ["q_proj", "k_proj", "v_proj"]})");
  Result<QuantPlan> mapped = Build(with_mapping, "sglang@0.5.23");
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  // _resolve_quant_algo runs first: the shards' conflict raises although the layer is excluded.
  Decision d = DecideSite(*mapped, qkv);
  ASSERT_EQ(d.kind, DecisionKind::kError);
  EXPECT_EQ(d.detail,
            "ValueError: Mixed quant_algo within fused layer model.layers.0.self_attn.qkv_proj: "
            "{'FP8', 'NVFP4'}. All shards must use the same quantization.");
  // SGLang has no experts-parent fallback, and the block/channel FP8 algorithms it lacks leave
  // the experts without a method.
  EXPECT_EQ(DecideSite(*mapped, Site("model.layers.1.mlp.experts", SiteKind::kMoe)).detail,
            "get_quant_method returned None");
}

TEST(ModelOptCurrent, SglangConfigChoice) {
  // ModelOptFp8Config accepts quant_algo "FP8" only.
  Result<QuantPlan> pcpt =
      Build(R"({"quant_method": "modelopt", "quant_algo": "FP8_PER_CHANNEL_PER_TOKEN"})",
            "sglang@0.5.23");
  ASSERT_FALSE(pcpt.ok());
  EXPECT_EQ(pcpt.status().message(),
            "ValueError: ModelOptFp8Config only supports regular FP8 quantization, but found "
            "'FP8_PER_CHANNEL_PER_TOKEN'. Use the native 'mxfp8' quantization method for MXFP8 "
            "or ModelOptFp4Config for FP4.");
  // The flat FP8 form takes kv_cache_quant_algo when there is no kv_cache_scheme dict.
  Result<QuantPlan> fp8 =
      Build(R"({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"})",
            "sglang@0.5.23");
  ASSERT_TRUE(fp8.ok()) << fp8.status().message();
  EXPECT_EQ(DecideSite(*fp8, Site("model.layers.0.self_attn.attn", SiteKind::kAttention)).kind,
            DecisionKind::kQuantized);
  // W4A16_NVFP4 through ModelOptFp4Config: weight-only NVFP4.
  Result<QuantPlan> a16 =
      Build(R"({"quant_method": "modelopt", "quant_algo": "W4A16_NVFP4", "ignore": []})",
            "sglang@0.5.23");
  ASSERT_TRUE(a16.ok()) << a16.status().message();
  Decision down = DecideSite(*a16, Site("model.layers.0.mlp.down_proj"));
  EXPECT_EQ(down.detail, "ModelOptNvFp4A16LinearMethod");
  EXPECT_FALSE(down.scheme->input.has_value());
}

// vLLM 0.34 reads NVFP4's weight_scale_encoding (flat or in the nested `quantization`); 0.33 does
// not read the key at all.
TEST(ModelOptCurrent, Vllm034ReadsTheScaleEncoding) {
  constexpr std::string_view kFlat =
      R"({"quant_method": "modelopt", "quant_algo": "NVFP4", "weight_scale_encoding": "csf"})";
  Result<QuantPlan> csf = Build(kFlat, "vllm@0.34");
  ASSERT_TRUE(csf.ok()) << csf.status().message();
  bool noted = false;
  for (const std::string& note : csf->notes) {
    noted = noted || note.find("weight_scale_encoding csf") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  constexpr std::string_view kNested =
      R"({"quantization": {"quant_algo": "NVFP4", "group_size": 16, "kv_cache_quant_algo": null,
          "exclude_modules": [], "weight_scale_encoding": 7}})";
  Result<QuantPlan> bad = Build(kNested, "vllm@0.34", "hf_quant_config.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "ValueError: unsupported weight_scale_encoding: 7");
  EXPECT_TRUE(Build(kNested, "vllm@0.33", "hf_quant_config.json").ok());
}

}  // namespace
}  // namespace quantpath
