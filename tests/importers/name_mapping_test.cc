// HF→engine name mappers applied to quantization descriptions (src/importers/name_mapping.h).
#include "src/importers/name_mapping.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace quantpath {
namespace {

Dialect D(std::string_view name) { return *ParseDialect(name); }

// Qwen2.5-VL's prefix rules, in declaration order.
NameMapper Qwen(NameRewriteOrder order) {
  using K = NameRewriteKind;
  NameMapper m{"test", {}, order};
  if (order == NameRewriteOrder::kLongestMatchOnly) {
    m.rules.push_back({K::kSubstring, "attn.qkv", "attn.qkv_proj"});
  }
  m.rules.push_back({K::kPrefix, "model.language_model.", "language_model.model."});
  m.rules.push_back({K::kPrefix, "model.visual.", "visual."});
  m.rules.push_back({K::kPrefix, "lm_head.", "language_model.lm_head."});
  m.rules.push_back({K::kPrefix, "model.", "language_model.model."});
  return m;
}

ConfigSources WithQuantizationConfig(std::string_view quantization_config) {
  Result<Json> root =
      ParseJson(std::string(R"({"architectures": ["Qwen2_5_VLForConditionalGeneration"],
                      "quantization_config": )") +
                    std::string(quantization_config) + "}",
                "config.json");
  EXPECT_TRUE(root.ok()) << root.status().message();
  std::vector<SourceFile> files;
  files.push_back({"config.json", {}, root.ok() ? *root : Json::Object()});
  return ConfigSources::FromMemory(std::move(files));
}

std::vector<std::string> Strings(const Json& list) {
  std::vector<std::string> out;
  for (const Json& item : list.items()) out.push_back(item.string_value());
  return out;
}

TEST(MapName, VllmAppliesEveryMatchingRuleInOrder) {
  NameMapper m = Qwen(NameRewriteOrder::kEveryInOrder);
  EXPECT_EQ(MapName(m, "model.language_model.layers.0.mlp"), "language_model.model.layers.0.mlp");
  EXPECT_EQ(MapName(m, "model.visual.blocks.0"), "visual.blocks.0");
  EXPECT_EQ(MapName(m, "model.layers.1"), "language_model.model.layers.1");
  EXPECT_EQ(MapName(m, "lm_head"), "lm_head");  // "lm_head." needs the dot
  // Each rule sees the previous result; SGLang stops after the first (longest) hit.
  NameMapper chain{"chain",
                   {{NameRewriteKind::kPrefix, "a.", "b."}, {NameRewriteKind::kPrefix, "b.", "c."}},
                   NameRewriteOrder::kEveryInOrder};
  EXPECT_EQ(MapName(chain, "a.x"), "c.x");
  chain.order = NameRewriteOrder::kLongestMatchOnly;
  EXPECT_EQ(MapName(chain, "a.x"), "b.x");
}

TEST(MapName, SglangAppliesOnlyTheLongestMatchOfEachKind) {
  NameMapper m = Qwen(NameRewriteOrder::kLongestMatchOnly);
  EXPECT_EQ(MapName(m, "model.visual.blocks.0.attn.qkv"), "visual.blocks.0.attn.qkv_proj");
  EXPECT_EQ(MapName(m, "model.model.x"), "language_model.model.model.x");
  NameMapper suffix{
      "s", {{NameRewriteKind::kSuffix, ".w", ".weight"}}, NameRewriteOrder::kLongestMatchOnly};
  EXPECT_EQ(MapName(suffix, "a.w.w"), "a.w.weight");  // the last occurrence
}

TEST(ApplyNameMapper, VllmModelOptSplitsStarEntriesBeforeMapping) {
  ConfigSources sources = WithQuantizationConfig(
      R"({"quant_method": "modelopt", "quant_algo": "FP8",
          "ignore": ["model.visual*", "model.layers.*", "lm_head"]})");
  std::vector<std::string> notes;
  ConfigSources mapped = ApplyNameMapper(sources, "modelopt", D("vllm@0.33"),
                                         Qwen(NameRewriteOrder::kEveryInOrder), &notes);
  const Json& ignore = *mapped.Embedded()->value->Find("ignore");
  EXPECT_EQ(Strings(ignore),
            (std::vector<std::string>{"language_model.model.visual", "visual.*",
                                      "language_model.model.layers.*", "lm_head"}));
  // Both halves of the split keep the pointer of the entry the file wrote.
  EXPECT_EQ(ignore.items()[1].pointer(), "/quantization_config/ignore/0");
  EXPECT_EQ(notes.size(), 2u);
}

TEST(ApplyNameMapper, SglangModelOptAddsACopyWithoutLanguageModel) {
  ConfigSources sources = WithQuantizationConfig(
      R"({"quant_method": "modelopt", "quant_algo": "FP8",
          "ignore": ["model.language_model.layers.0.self_attn*", "model.layers.0.self_attn*"]})");
  std::vector<std::string> notes;
  ConfigSources mapped = ApplyNameMapper(sources, "modelopt", D("sglang@0.5.23"),
                                         Qwen(NameRewriteOrder::kLongestMatchOnly), &notes);
  EXPECT_EQ(Strings(*mapped.Embedded()->value->Find("ignore")),
            (std::vector<std::string>{"language_model.model.layers.0.self_attn*",
                                      "model.layers.0.self_attn*"}));
}

TEST(ApplyNameMapper, VllmCompressedTensorsMapsOnlyDottedNonRegexEntries) {
  ConfigSources sources = WithQuantizationConfig(
      R"({"quant_method": "compressed-tensors",
          "config_groups": {"group_0": {"targets": ["Linear", "model.layers.0.mlp.down_proj"]}},
          "ignore": ["lm_head", "re:model.visual.*", "model.language_model.layers.0.mlp"]})");
  std::vector<std::string> notes;
  ConfigSources mapped = ApplyNameMapper(sources, "compressed-tensors", D("vllm@0.33"),
                                         Qwen(NameRewriteOrder::kEveryInOrder), &notes);
  const Json& q = *mapped.Embedded()->value;
  EXPECT_EQ(Strings(*q.Find("ignore")),
            (std::vector<std::string>{"lm_head", "re:model.visual.*",
                                      "language_model.model.layers.0.mlp"}));
  EXPECT_EQ(Strings(*q.Find("config_groups")->Find("group_0")->Find("targets")),
            (std::vector<std::string>{"Linear", "language_model.model.layers.0.mlp.down_proj"}));
}

TEST(ApplyNameMapper, SglangFp8MapsBothModelPrefixVariants) {
  ConfigSources sources = WithQuantizationConfig(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "ignored_layers": ["model.layers.0.mlp.down_proj", "model.visual.merger.mlp.0"]})");
  std::vector<std::string> notes;
  ConfigSources mapped = ApplyNameMapper(sources, "fp8", D("sglang@0.5.23"),
                                         Qwen(NameRewriteOrder::kLongestMatchOnly), &notes);
  EXPECT_EQ(Strings(*mapped.Embedded()->value->Find("ignored_layers")),
            (std::vector<std::string>{"layers.0.mlp.down_proj",
                                      "language_model.model.layers.0.mlp.down_proj",
                                      "visual.merger.mlp.0"}));
}

TEST(ApplyNameMapper, ModelOptQuantizedLayersKeysFollowDictSemantics) {
  ConfigSources sources = WithQuantizationConfig(
      R"({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
          "quantized_layers": {"model.layers.0.mlp": {"quant_algo": "FP8"},
                               "model.language_model.layers.0.mlp": {"quant_algo": "NVFP4"}}})");
  std::vector<std::string> notes;
  ConfigSources mapped = ApplyNameMapper(sources, "modelopt", D("vllm@0.33"),
                                         Qwen(NameRewriteOrder::kEveryInOrder), &notes);
  const Json& table = *mapped.Embedded()->value->Find("quantized_layers");
  ASSERT_EQ(table.members().size(), 1u);  // both keys map to one: the later value wins
  EXPECT_EQ(table.members()[0].first, "language_model.model.layers.0.mlp");
  EXPECT_EQ(table.members()[0].second.Find("quant_algo")->string_value(), "NVFP4");
}

TEST(ApplyNameMapper, EachListIsMappedOnce) {
  // A rule that hits its own result shows a second pass: "layers.0" would become
  // "model.model.layers.0".
  ConfigSources sources = WithQuantizationConfig(
      R"({"quant_method": "auto-round", "modules_to_not_convert": ["layers.0.mlp"]})");
  NameMapper substring{"substring",
                       {{NameRewriteKind::kSubstring, "layers", "model.layers"}},
                       NameRewriteOrder::kEveryInOrder};
  std::vector<std::string> notes;
  ConfigSources mapped = ApplyNameMapper(sources, "auto-round", D("vllm@0.33"), substring, &notes);
  EXPECT_EQ(Strings(*mapped.Embedded()->value->Find("modules_to_not_convert")),
            (std::vector<std::string>{"model.layers.0.mlp"}));
  EXPECT_EQ(notes.size(), 1u);
}

TEST(ApplyNameMapper, FormatsTheEngineDoesNotMapAreUnchanged) {
  ConfigSources sources = WithQuantizationConfig(
      R"({"quant_method": "bitsandbytes", "llm_int8_skip_modules": ["model.visual"]})");
  std::vector<std::string> notes;
  ConfigSources mapped = ApplyNameMapper(sources, "bitsandbytes", D("vllm@0.33"),
                                         Qwen(NameRewriteOrder::kEveryInOrder), &notes);
  EXPECT_EQ(Strings(*mapped.Embedded()->value->Find("llm_int8_skip_modules")),
            (std::vector<std::string>{"model.visual"}));
  EXPECT_TRUE(notes.empty());
}

}  // namespace
}  // namespace quantpath
