// The importer registry: detection order, the --quantization override, folders without a
// quantization description, where each dialect looks for the description, and name mappers.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/importers.h"
#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Contains;

Dialect Native() { return *ParseDialect("native"); }

ConfigSources FromConfigJson(std::string_view text) {
  Result<Json> root = ParseJson(text, "config.json");
  EXPECT_TRUE(root.ok()) << root.status().message();
  std::vector<SourceFile> files;
  files.push_back({"config.json", {}, root.ok() ? *root : Json::Object()});
  return ConfigSources::FromMemory(std::move(files));
}

// A folder of in-memory files, in the order given (the folder's listing order).
ConfigSources FromFiles(const std::vector<std::pair<std::string, std::string>>& named_texts) {
  std::vector<SourceFile> files;
  for (const auto& [name, text] : named_texts) {
    Result<Json> root = ParseJson(text, name);
    EXPECT_TRUE(root.ok()) << root.status().message();
    files.push_back({name, {}, root.ok() ? *root : Json::Object()});
  }
  return ConfigSources::FromMemory(std::move(files));
}

constexpr std::string_view kFp8Config =
    R"({"architectures": ["DeepseekV3ForCausalLM"],
        "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                                "weight_block_size": [128, 128]}})";

TEST(Registry, NamesAreUniqueAndFindable) {
  std::set<std::string_view> seen;
  for (const Importer* importer : Importers()) {
    ASSERT_NE(importer, nullptr);
    EXPECT_TRUE(seen.insert(importer->name()).second) << "duplicate " << importer->name();
    EXPECT_EQ(FindImporter(importer->name()), importer);
    for (std::string_view alias : importer->aliases()) {
      EXPECT_TRUE(seen.insert(alias).second) << "alias " << alias << " names two importers";
      EXPECT_EQ(FindImporter(alias), importer);
    }
  }
  EXPECT_EQ(FindImporter("no-such-format"), nullptr);
}

TEST(Registry, Fp8IsRegistered) {
  ASSERT_NE(FindImporter("fp8"), nullptr);
  EXPECT_EQ(FindImporter("fp8")->name(), "fp8");
}

TEST(Registry, DetectionTakesTheFirstImporterInOrder) {
  ConfigSources sources = FromConfigJson(kFp8Config);
  const Importer* first = nullptr;
  for (const Importer* importer : Importers()) {
    if (importer->Detect(sources)) {
      first = importer;
      break;
    }
  }
  ASSERT_NE(first, nullptr);
  Result<QuantPlan> plan = ImportPlan(sources, Native());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->importer, first->name());
  EXPECT_EQ(plan->importer, "fp8");
  EXPECT_EQ(plan->dialect.engine, Engine::kNative);
}

TEST(Registry, OverrideThatAgreesBuildsThePlan) {
  Dialect vllm = *ParseDialect("vllm@helpers");
  Result<QuantPlan> plan = ImportPlan(FromConfigJson(kFp8Config), vllm, std::string("fp8"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->importer, "fp8");
  EXPECT_EQ(plan->quant_method, "fp8");
  EXPECT_EQ(plan->dialect.engine, Engine::kVllm);
}

TEST(Registry, OverrideThatDisagreesNamesBoth) {
  // Needs a second registered format; until one exists there is nothing to disagree with.
  const Importer* other = nullptr;
  for (const Importer* importer : Importers()) {
    if (importer->name() != "fp8") other = importer;
  }
  if (other == nullptr) GTEST_SKIP() << "only fp8 is registered";
  Result<QuantPlan> plan =
      ImportPlan(FromConfigJson(kFp8Config), Native(), std::string(other->name()));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(plan.status().message(), other->name())) << plan.status().message();
  EXPECT_TRUE(Contains(plan.status().message(), "fp8")) << plan.status().message();
}

// A format the engines cannot build without its description is an error; fp8 is built with its
// defaults, quantizing at load (fp8.cc).
TEST(Registry, OverrideWithoutAMatchingDescriptionNamesTheFormatAndFiles) {
  const ConfigSources plain = FromConfigJson(R"({"architectures": ["LlamaForCausalLM"]})");
  Result<QuantPlan> plan = ImportPlan(plain, Native(), std::string("gptq"));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(plan.status().message(), "--quantization gptq")) << plan.status().message();
  EXPECT_TRUE(Contains(plan.status().message(), "config.json")) << plan.status().message();
  Result<QuantPlan> fp8 = ImportPlan(plain, Native(), std::string("fp8"));
  ASSERT_TRUE(fp8.ok()) << fp8.status().message();
  ASSERT_TRUE(fp8->default_action.scheme.has_value());
  EXPECT_TRUE(fp8->default_action.scheme->online);
  EXPECT_EQ(fp8->importer, "fp8");
}

TEST(Registry, UnknownOverrideListsTheKnownFormats) {
  Result<QuantPlan> plan = ImportPlan(FromConfigJson(kFp8Config), Native(), std::string("fp9"));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(plan.status().message(), "--quantization fp9")) << plan.status().message();
  EXPECT_TRUE(Contains(plan.status().message(), "unknown format")) << plan.status().message();
  EXPECT_TRUE(Contains(plan.status().message(), "fp8")) << plan.status().message();
}

TEST(Registry, NoDescriptionGivesAnUnquantizedPlan) {
  for (std::string_view text :
       {R"({"architectures": ["LlamaForCausalLM"]})",
        R"({"architectures": ["LlamaForCausalLM"], "quantization_config": null})"}) {
    Result<QuantPlan> plan = ImportPlan(FromConfigJson(text), Native());
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_EQ(plan->quant_method, "none");
    EXPECT_EQ(plan->importer, "none");
    EXPECT_TRUE(plan->groups.empty());
    EXPECT_EQ(plan->default_action.kind, ActionKind::kSkip);
    EXPECT_EQ(plan->linear, KindPolicy::kUnquantized);
    EXPECT_EQ(plan->moe, KindPolicy::kUnquantized);
    EXPECT_EQ(plan->lm_head, KindPolicy::kUnquantized);
    EXPECT_FALSE(plan->kv_cache.has_value());
  }
}

TEST(Registry, ErrorsFromTheImporterComeBackUnchanged) {
  Result<QuantPlan> plan =
      ImportPlan(FromConfigJson(R"({"quantization_config": {"quant_method": "fp8",
                                                  "activation_scheme": "per_token"}})"),
                 *ParseDialect("vllm@helpers"));
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(
      Contains(plan.status().message(), "config.json#/quantization_config/activation_scheme"))
      << plan.status().message();
}

constexpr std::string_view kLlama = R"({"architectures": ["LlamaForCausalLM"]})";
constexpr std::string_view kGptq8 =
    R"({"quant_method": "gptq", "bits": 8, "group_size": 128, "desc_act": false, "sym": true})";

TEST(RegistrySearch, EnginesReadTheEmbeddedDescriptionAndNotTheStandaloneCopy) {
  ConfigSources sources =
      FromFiles({{"config.json", R"({"architectures": ["LlamaForCausalLM"], "quantization_config":
          {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false,
           "sym": true}})"},
                 {"quantize_config.json", std::string(kGptq8)}});
  // Native compares both copies: a disagreement on bits is an error naming both files.
  Result<QuantPlan> native = ImportPlan(sources, Native());
  ASSERT_FALSE(native.ok());
  EXPECT_TRUE(Contains(native.status().message(), "quantize_config.json"));
  for (std::string_view engine : {"vllm@helpers", "sglang@helpers", "vllm@0.33", "sglang@0.5.23"}) {
    Result<QuantPlan> plan = ImportPlan(sources, *ParseDialect(engine));
    ASSERT_TRUE(plan.ok()) << engine << ": " << plan.status().message();
    ASSERT_FALSE(plan->sources.empty());
    EXPECT_EQ(plan->sources.front().file, "config.json") << engine;
  }
}

TEST(RegistrySearch, StandaloneFilesAreFoundByTheEndOfTheirName) {
  ConfigSources sources = FromFiles(
      {{"config.json", std::string(kLlama)}, {"my_quantize_config.json", std::string(kGptq8)}});
  Result<QuantPlan> plan = ImportPlan(sources, *ParseDialect("vllm@0.33"), std::string("gptq"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->sources.front().file, "my_quantize_config.json");
}

TEST(RegistrySearch, SeveralCandidateFilesAreAnErrorNamingThem) {
  constexpr std::string_view kAwq =
      R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true,
          "version": "gemm"})";
  ConfigSources sources = FromFiles({{"config.json", std::string(kLlama)},
                                     {"quantize_config.json", std::string(kAwq)},
                                     {"quant_config.json", std::string(kAwq)}});
  Result<QuantPlan> plan = ImportPlan(sources, *ParseDialect("sglang@0.5.23"), std::string("awq"));
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(Contains(plan.status().message(), "quantize_config.json, quant_config.json"))
      << plan.status().message();
}

TEST(RegistrySearch, NoFileForAForcedFormatSaysWhatTheEngineRaises) {
  Result<QuantPlan> plan = ImportPlan(FromFiles({{"config.json", std::string(kLlama)}}),
                                      *ParseDialect("vllm@0.33"), std::string("gptq"));
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(Contains(plan.status().message(), "Cannot find the config file for gptq"))
      << plan.status().message();
}

TEST(RegistrySearch, VllmTakesHfQuantConfigOnlyFromModelOpt) {
  ConfigSources sources = FromFiles({{"config.json", std::string(kLlama)},
                                     {"hf_quant_config.json", R"({"producer": {"name": "other"},
                                    "quantization": {"quant_algo": "FP8"}})"}});
  EXPECT_FALSE(ImportPlan(sources, *ParseDialect("vllm@0.33"), std::string("modelopt")).ok());
  Result<QuantPlan> sglang =
      ImportPlan(sources, *ParseDialect("sglang@0.5.23"), std::string("modelopt"));
  ASSERT_TRUE(sglang.ok()) << sglang.status().message();
  EXPECT_EQ(sglang->importer, "modelopt");
}

TEST(RegistrySearch, VllmMixedPrecisionWithoutTableFallsThroughToTheFile) {
  constexpr std::string_view kEmbedded =
      R"({"architectures": ["LlamaForCausalLM"], "quantization_config":
          {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION"}})";
  Result<QuantPlan> missing =
      ImportPlan(FromFiles({{"config.json", std::string(kEmbedded)}}), *ParseDialect("vllm@0.33"));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "modelopt_mixed")) << missing.status().message();
  ConfigSources sources = FromFiles(
      {{"config.json", std::string(kEmbedded)},
       {"hf_quant_config.json",
        R"({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "MIXED_PRECISION",
            "quantized_layers": {"model.layers.0.mlp.down_proj": {"quant_algo": "FP8"}}}})"}});
  Result<QuantPlan> plan = ImportPlan(sources, *ParseDialect("vllm@0.33"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->sources.front().file, "hf_quant_config.json");
}

TEST(RegistryNameMapper, TheEngineReadsItsListsRewritten) {
  NameMapper mapper{"Qwen2_5_VLForConditionalGeneration.hf_to_vllm_mapper",
                    {{NameRewriteKind::kPrefix, "model.", "language_model.model."}},
                    NameRewriteOrder::kEveryInOrder};
  ConfigSources sources = FromConfigJson(
      R"({"quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                                  "ignored_layers": ["model.layers.0.mlp.down_proj"]}})");
  Result<QuantPlan> plan = ImportPlan(sources, *ParseDialect("vllm@0.33"), std::nullopt, mapper);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  bool mapped_rule = false;
  for (const RuleGroup& group : plan->groups) {
    for (const Rule& rule : group.rules) {
      mapped_rule = mapped_rule ||
                    (rule.matcher.pattern() == "language_model.model.layers.0.mlp.down_proj" &&
                     rule.source.ToString() == "config.json#/quantization_config/ignored_layers/0");
    }
  }
  EXPECT_TRUE(mapped_rule);
  bool noted = false;
  for (const std::string& note : plan->notes) noted = noted || Contains(note, "hf_to_vllm_mapper");
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace quantpath
