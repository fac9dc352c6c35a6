// HF→engine name mappers per model class and dialect.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "quantpath/models.h"

namespace quantpath {
namespace {

Dialect D(std::string_view name) { return *ParseDialect(name); }

TEST(NameMappers, Qwen25VlHasOneMapperPerCurrentEngine) {
  std::optional<NameMapper> vllm =
      FindNameMapper("qwen2_5_vl.Qwen2_5_VLForConditionalGeneration", D("vllm@0.33"));
  ASSERT_TRUE(vllm.has_value());
  EXPECT_EQ(vllm->order, NameRewriteOrder::kEveryInOrder);
  ASSERT_EQ(vllm->rules.size(), 4u);
  EXPECT_EQ(vllm->rules.front().from, "model.language_model.");
  EXPECT_EQ(vllm->rules.back().from, "model.");  // the original layout, last

  std::optional<NameMapper> sglang =
      FindNameMapper("Qwen2_5_VLForConditionalGeneration", D("sglang@0.5.23"));
  ASSERT_TRUE(sglang.has_value());
  EXPECT_EQ(sglang->order, NameRewriteOrder::kLongestMatchOnly);
  EXPECT_EQ(sglang->rules.front().kind, NameRewriteKind::kSubstring);  // attn.qkv → attn.qkv_proj
}

// vLLM 0.33 builds Qwen3.5 under `visual.`, `language_model.model.` and `language_model.lm_head`
// (the sites' paths) and maps config lists onto them; SGLang passes the checkpoint's names.
TEST(NameMappers, Qwen3_5MapsOntoVllmPrefixes) {
  for (const char* model :
       {"Qwen3_5ForConditionalGeneration", "qwen3_5.Qwen3_5MoeForConditionalGeneration"}) {
    std::optional<NameMapper> vllm = FindNameMapper(model, D("vllm@0.33"));
    ASSERT_TRUE(vllm.has_value()) << model;
    EXPECT_EQ(vllm->order, NameRewriteOrder::kEveryInOrder);
    // Qwen3-VL's orig_to_new_prefix; the `mtp.` deletion is no rename and is left out.
    EXPECT_EQ(vllm->rules,
              (std::vector<NameRewrite>{
                  {NameRewriteKind::kPrefix, "model.visual.", "visual."},
                  {NameRewriteKind::kPrefix, "lm_head.", "language_model.lm_head."},
                  {NameRewriteKind::kPrefix, "model.language_model.", "language_model.model."}}));
    EXPECT_FALSE(FindNameMapper(model, D("sglang@0.5.23")));
    EXPECT_FALSE(FindNameMapper(model, D("vllm@helpers")));
  }
}

TEST(NameMappers, NoneForNativeRecordedDialectsAndOtherModels) {
  EXPECT_FALSE(FindNameMapper("Qwen2_5_VLForConditionalGeneration", D("native")));
  EXPECT_FALSE(FindNameMapper("Qwen2_5_VLForConditionalGeneration", D("vllm@helpers")));
  EXPECT_FALSE(FindNameMapper("Qwen2_5_VLForConditionalGeneration", D("sglang@helpers")));
  EXPECT_FALSE(FindNameMapper("llama.LlamaForCausalLM", D("vllm@0.33")));
}

// vLLM's Qwen3.5 classes declare no renames of their own beyond Qwen3-VL's (their "mtp." → None
// is dropped by get_rename_mapper); SGLang's set hf_to_sglang_mapper = None. Recorded:
// releases/vllm-0.33.0/cases/vllm-fp8.json vllm-fp8-qwen3_5-mapper, sglang-fp8.json
// sglang-fp8-qwen3_5-no-mapper.
TEST(NameMappers, Qwen35InheritsQwen3VlsMapperInVllmOnly) {
  std::optional<NameMapper> base =
      FindNameMapper("Qwen3VLForConditionalGeneration", D("vllm@0.33"));
  ASSERT_TRUE(base.has_value());
  for (std::string_view model :
       {"qwen3_5.Qwen3_5ForConditionalGeneration", "qwen3_5.Qwen3_5MoeForConditionalGeneration"}) {
    std::optional<NameMapper> mapper = FindNameMapper(model, D("vllm@0.33"));
    ASSERT_TRUE(mapper.has_value()) << model;
    EXPECT_EQ(mapper->rules, base->rules);
    EXPECT_TRUE(mapper->name.ends_with("ForConditionalGeneration.hf_to_vllm_mapper"));
    EXPECT_FALSE(FindNameMapper(model, D("sglang@0.5.23")).has_value()) << model;
  }
  // qwen3_vl.py: model.visual. → visual., lm_head. → language_model.lm_head.,
  // model.language_model. → language_model.model., in that order.
  ASSERT_EQ(base->rules.size(), 3u);
  EXPECT_EQ(base->rules[0].from, "model.visual.");
  EXPECT_EQ(base->rules[2].to, "language_model.model.");
}

TEST(NameMappers, FromConfigJsonArchitecture) {
  Result<Json> root =
      ParseJson(R"({"architectures": ["Qwen2_5_VLForConditionalGeneration"]})", "config.json");
  ASSERT_TRUE(root.ok());
  std::vector<SourceFile> files;
  files.push_back({"config.json", {}, *root});
  ConfigSources sources = ConfigSources::FromMemory(std::move(files));
  EXPECT_TRUE(FindNameMapper(sources, D("vllm@0.33")).has_value());
  EXPECT_FALSE(FindNameMapper(ConfigSources::FromMemory({}), D("vllm@0.33")).has_value());
}

}  // namespace
}  // namespace quantpath
