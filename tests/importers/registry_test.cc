// The importer registry: detection order, the --quantization override, and folders without a
// quantization description.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/importers.h"

namespace quantpath {
namespace {

Dialect Native() { return *ParseDialect("native"); }

ConfigSources FromConfigJson(std::string_view text) {
  Result<Json> root = ParseJson(text, "config.json");
  EXPECT_TRUE(root.ok()) << root.status().message();
  std::vector<SourceFile> files;
  files.push_back({"config.json", {}, root.ok() ? *root : Json::Object()});
  return ConfigSources::FromMemory(std::move(files));
}

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
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
  Dialect vllm = *ParseDialect("vllm");
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

TEST(Registry, OverrideWithoutAMatchingDescriptionNamesTheFormatAndFiles) {
  Result<QuantPlan> plan = ImportPlan(FromConfigJson(R"({"architectures": ["LlamaForCausalLM"]})"),
                                      Native(), std::string("fp8"));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(plan.status().message(), "--quantization fp8")) << plan.status().message();
  EXPECT_TRUE(Contains(plan.status().message(), "config.json")) << plan.status().message();
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
                 *ParseDialect("vllm"));
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(
      Contains(plan.status().message(), "config.json#/quantization_config/activation_scheme"))
      << plan.status().message();
}

}  // namespace
}  // namespace quantpath
