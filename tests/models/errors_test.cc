// Untrusted config fields: missing, wrong-typed or out-of-range values are errors naming
// config.json#/<pointer> and the architecture; unknown architectures name the supported ones.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fmt/format.h"
#include "quantpath/models.h"
#include "tests/models/models_test_util.h"

namespace quantpath {
namespace {

using models_test::SitesFromText;
using ::testing::HasSubstr;

constexpr const char* kLlamaFields =
    R"("hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
       "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 100)";

constexpr const char* kDeepseekFields =
    R"("hidden_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 512,
       "intermediate_size": 512, "q_lora_rank": 128, "kv_lora_rank": 32,
       "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16, "n_routed_experts": 8,
       "moe_intermediate_size": 64, "n_shared_experts": 1, "first_k_dense_replace": 1)";

// `fields` with the member `key` replaced by `value` ("" removes it).
std::string With(std::string fields, std::string_view key, std::string_view value) {
  const std::string quoted = fmt::format("\"{}\":", key);
  size_t begin = fields.find(quoted);
  EXPECT_NE(begin, std::string::npos) << key;
  size_t end = fields.find_first_of(",}", begin);
  if (end == std::string::npos) end = fields.size();
  if (value.empty()) {
    // Remove the member and the comma that follows it (or precedes it, for the last member).
    if (end < fields.size() && fields[end] == ',') {
      ++end;
    } else if (size_t comma = fields.rfind(',', begin); comma != std::string::npos) {
      begin = comma;
    }
    fields.erase(begin, end - begin);
  } else {
    fields.replace(begin, end - begin, fmt::format("{} {}", quoted, value));
  }
  return fields;
}

std::string Config(std::string_view arch, const std::string& fields) {
  return fmt::format(R"({{"architectures": ["{}"], {}}})", arch, fields);
}

void ExpectError(const std::string& config, ErrorCode code, std::vector<std::string> parts) {
  auto r = SitesFromText(config);
  ASSERT_FALSE(r.ok()) << config;
  EXPECT_EQ(r.status().code(), code) << r.status().message();
  for (const std::string& part : parts) EXPECT_THAT(r.status().message(), HasSubstr(part));
}

TEST(ModelErrors, MissingRequiredFieldNamesPointerAndArchitecture) {
  for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads",
                          "intermediate_size", "vocab_size"}) {
    ExpectError(Config("LlamaForCausalLM", With(kLlamaFields, key, "")), ErrorCode::kInvalidInput,
                {fmt::format("config.json#/{}", key), "LlamaForCausalLM", "missing"});
  }
  for (const char* key : {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                          "moe_intermediate_size"}) {
    ExpectError(Config("DeepseekV3ForCausalLM", With(kDeepseekFields, key, "")),
                ErrorCode::kInvalidInput,
                {fmt::format("config.json#/{}", key), "DeepseekV3ForCausalLM", "missing"});
  }
}

TEST(ModelErrors, WrongTypesAndRanges) {
  ExpectError(Config("LlamaForCausalLM", With(kLlamaFields, "hidden_size", R"("64")")),
              ErrorCode::kInvalidInput,
              {"config.json#/hidden_size", "LlamaForCausalLM", R"(string "64")"});
  ExpectError(Config("LlamaForCausalLM", With(kLlamaFields, "hidden_size", "64.5")),
              ErrorCode::kInvalidInput, {"config.json#/hidden_size", "number 64.5"});
  ExpectError(Config("LlamaForCausalLM", With(kLlamaFields, "num_hidden_layers", "0")),
              ErrorCode::kInvalidInput, {"config.json#/num_hidden_layers", "integer 0"});
  ExpectError(Config("LlamaForCausalLM", With(kLlamaFields, "num_hidden_layers", "1000000")),
              ErrorCode::kInvalidInput, {"config.json#/num_hidden_layers", "from 1 to 4096"});
  ExpectError(
      Config("LlamaForCausalLM", kLlamaFields + std::string(R"(, "tie_word_embeddings": 1)")),
      ErrorCode::kInvalidInput, {"config.json#/tie_word_embeddings", "a boolean"});
  ExpectError(Config("DeepseekV3ForCausalLM", With(kDeepseekFields, "n_routed_experts", "-8")),
              ErrorCode::kInvalidInput,
              {"config.json#/n_routed_experts", "DeepseekV3ForCausalLM", "integer -8"});
  ExpectError(Config("DeepseekV3ForCausalLM",
                     kDeepseekFields + std::string(R"(, "topk_method": ["noaux_tc"])")),
              ErrorCode::kInvalidInput, {"config.json#/topk_method", "a string", "array"});
  ExpectError(Config("DeepseekV3ForCausalLM", With(kDeepseekFields, "first_k_dense_replace", "-1")),
              ErrorCode::kInvalidInput, {"config.json#/first_k_dense_replace"});
}

TEST(ModelErrors, InconsistentHeads) {
  ExpectError(Config("LlamaForCausalLM", With(kLlamaFields, "num_key_value_heads", "3")),
              ErrorCode::kInvalidInput,
              {"config.json#/num_key_value_heads", "LlamaForCausalLM", "divide"});
  ExpectError(Config("LlamaForCausalLM", With(kLlamaFields, "num_attention_heads", "5")),
              ErrorCode::kInvalidInput, {"config.json#/num_key_value_heads"});
  // Without head_dim, heads must divide hidden_size.
  ExpectError(Config("LlamaForCausalLM", With(With(kLlamaFields, "num_attention_heads", "6"),
                                              "num_key_value_heads", "6")),
              ErrorCode::kInvalidInput, {"config.json#/num_attention_heads", "head_dim"});
}

TEST(ModelErrors, PointerInsideTextConfig) {
  const std::string config =
      fmt::format(R"({{"architectures": ["Qwen3ForCausalLM"], "text_config": {{{}}}}})",
                  With(kLlamaFields, "vocab_size", "null"));
  ExpectError(config, ErrorCode::kInvalidInput,
              {"config.json#/text_config/vocab_size", "Qwen3ForCausalLM", "missing"});
  // The same fields, complete, build from text_config.
  auto r = SitesFromText(fmt::format(
      R"({{"architectures": ["Qwen3ForCausalLM"], "text_config": {{{}}}}})", kLlamaFields));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(r->Find("model.layers.1.self_attn.qkv_proj"), nullptr);
}

TEST(ModelErrors, UnknownArchitectureListsSupportedOnes) {
  std::vector<std::string> parts = {"config.json#/architectures/0", "\"MambaForCausalLM\""};
  for (const std::string& name : SupportedArchitectures()) parts.push_back(name);
  ExpectError(Config("MambaForCausalLM", kLlamaFields), ErrorCode::kUnsupported, parts);
  EXPECT_EQ(SupportedArchitectures(),
            (std::vector<std::string>{
                "LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "DeepseekV3ForCausalLM",
                "GptOssForCausalLM", "QWenLMHeadModel", "GPTBigCodeForCausalLM", "PhiForCausalLM",
                "Glm4MoeForCausalLM", "Qwen3MoeForCausalLM", "Qwen3_5ForConditionalGeneration",
                "Qwen3_5MoeForConditionalGeneration", "MolmoForCausalLM"}));
}

TEST(ModelErrors, ArchitecturesFieldItself) {
  ExpectError(fmt::format("{{{}}}", kLlamaFields), ErrorCode::kInvalidInput,
              {"config.json#/architectures", "missing"});
  ExpectError(fmt::format(R"({{"architectures": "LlamaForCausalLM", {}}})", kLlamaFields),
              ErrorCode::kInvalidInput, {"config.json#/architectures", "list"});
  ExpectError(fmt::format(R"({{"architectures": [], {}}})", kLlamaFields), ErrorCode::kInvalidInput,
              {"config.json#/architectures"});
  ExpectError("[1, 2]", ErrorCode::kInvalidInput, {"config.json", "object"});

  auto two = SitesFromText(
      fmt::format(R"({{"architectures": ["LlamaForCausalLM", "Other"], {}}})", kLlamaFields));
  ASSERT_TRUE(two.ok()) << two.status().message();
  ASSERT_FALSE(two->warnings.empty());
  EXPECT_THAT(two->warnings[0], HasSubstr("first one is used"));
}

TEST(ModelErrors, TorchDtype) {
  auto dtype = [](std::string_view member) {
    return SitesFromText(Config("LlamaForCausalLM", kLlamaFields + std::string(member)));
  };
  EXPECT_EQ(dtype(R"(, "torch_dtype": "float32")")->torch_dtype, QDType::kFP32);
  EXPECT_EQ(dtype(R"(, "dtype": "float16")")->torch_dtype, QDType::kFP16);
  EXPECT_EQ(dtype(R"(, "torch_dtype": "bfloat16")")->torch_dtype, QDType::kBF16);
  auto unknown = dtype(R"(, "torch_dtype": "float8_e4m3fn")");
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->torch_dtype, QDType::kBF16);
  ASSERT_EQ(unknown->warnings.size(), 1u);
  EXPECT_THAT(unknown->warnings[0], HasSubstr("config.json#/torch_dtype"));
  auto missing = dtype("");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->warnings.size(), 1u);
  ExpectError(Config("LlamaForCausalLM", kLlamaFields + std::string(R"(, "torch_dtype": 16)")),
              ErrorCode::kInvalidInput, {"config.json#/torch_dtype", "integer"});
}

TEST(ModelErrors, ParameterOverflowIsAnErrorNotACrash) {
  std::string fields = With(kDeepseekFields, "hidden_size", "16777216");
  fields = With(fields, "moe_intermediate_size", "16777216");
  fields = With(fields, "n_routed_experts", "65536");
  ExpectError(Config("DeepseekV3ForCausalLM", fields), ErrorCode::kInvalidInput,
              {"64 bits", "DeepseekV3ForCausalLM"});
}

TEST(ModelErrors, SourcesWithoutConfigJson) {
  ConfigSources sources = ConfigSources::FromMemory({{"case.json", {}, Json::Object()}});
  auto r = BuildModelSites(sources, *ParseDialect("native"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("config.json"));
}

}  // namespace
}  // namespace quantpath
