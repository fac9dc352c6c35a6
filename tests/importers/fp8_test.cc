// The fp8 importer: real corpus configs, every field error, the exclusion list each dialect reads,
// and each dialect's matcher semantics (checked rule by rule; decisions are in
// fp8_decisions_test.cc).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "quantpath/importers.h"
#include "src/importers/importer_list.h"
#include "tests/importers/gptq_family_test_util.h"

namespace quantpath {
namespace {

using family_test::Contains;
using family_test::Embedded;

Dialect D(std::string_view name) { return *ParseDialect(name); }

Result<QuantPlan> Build(std::string_view quantization_config, std::string_view dialect) {
  return Fp8Importer()->BuildPlan(Embedded(quantization_config), D(dialect));
}

bool AnyNoteContains(const QuantPlan& plan, std::string_view needle) {
  for (const std::string& note : plan.notes) {
    if (Contains(note, needle)) return true;
  }
  return false;
}

// The first rule of the "exclude" group that hits `path` for a site of `kind`, looked up the way
// the planner looks at one path; nullptr when none hits.
const Rule* FirstHit(const QuantPlan& plan, std::string_view path,
                     SiteKind kind = SiteKind::kLinear) {
  for (const RuleGroup& group : plan.groups) {
    if (group.name != "exclude") continue;
    for (const Rule& rule : group.rules) {
      if ((rule.kinds & KindBit(kind)) == 0) continue;
      Result<bool> hit = rule.matcher.Matches(path);
      EXPECT_TRUE(hit.ok()) << hit.status().message();
      if (hit.ok() && *hit) return &rule;
    }
  }
  return nullptr;
}

bool Skips(const QuantPlan& plan, std::string_view path, SiteKind kind = SiteKind::kLinear) {
  return FirstHit(plan, path, kind) != nullptr;
}

const RuleGroup& Exclude(const QuantPlan& plan) {
  EXPECT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups.at(0).name, "exclude");
  return plan.groups.at(0);
}

constexpr std::string_view kDeepSeek =
    R"({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
        "weight_block_size": [128, 128]})";

// ---------------------------------------------------------------------------------------------
// Real configs (copies in tests/data/corpus, see SOURCES.md there).

class Fp8Corpus : public testing::TestWithParam<const char*> {};

TEST_P(Fp8Corpus, BlockSchemeInEveryDialect) {
  Result<ConfigSources> sources =
      ConfigSources::Load(std::string(QUANTPATH_TEST_DATA) + "/corpus/" + GetParam());
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  EXPECT_TRUE(Fp8Importer()->Detect(*sources));
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    SCOPED_TRACE(dialect);
    Result<QuantPlan> plan = ImportPlan(*sources, D(dialect));
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_EQ(plan->quant_method, "fp8");
    EXPECT_EQ(plan->importer, "fp8");
    ASSERT_EQ(plan->sources.size(), 1u);
    EXPECT_EQ(plan->sources[0].ToString(), "config.json#/quantization_config");

    ASSERT_EQ(plan->default_action.kind, ActionKind::kQuantize);
    const QuantScheme& s = *plan->default_action.scheme;
    EXPECT_EQ(s.CanonicalName(), "w8a8-fp8-block128x128-dyn");
    EXPECT_EQ(s.weight.dtype, QDType::kFP8E4M3);
    EXPECT_EQ(s.weight.granularity, Granularity::kBlock);
    EXPECT_EQ(s.weight.block_shape, (std::array<int64_t, 2>{128, 128}));
    EXPECT_EQ(s.weight.dynamic, Dynamic::kStatic);
    EXPECT_EQ(s.weight.load.layout, SourceLayout::kFp8ScaleInv);
    ASSERT_TRUE(s.input.has_value());
    EXPECT_EQ(s.input->dtype, QDType::kFP8E4M3);
    EXPECT_EQ(s.input->granularity, Granularity::kGroup);
    EXPECT_EQ(s.input->group_size, 128);
    EXPECT_EQ(s.input->dynamic, Dynamic::kDynamic);
    EXPECT_EQ(plan->default_action.message, "fp8 applies to every linear layer");

    EXPECT_TRUE(Exclude(*plan).rules.empty());
    EXPECT_EQ(plan->linear, KindPolicy::kRules);
    EXPECT_EQ(plan->moe, KindPolicy::kRules);
    EXPECT_EQ(plan->router, KindPolicy::kUnquantized);
    EXPECT_EQ(plan->embedding, KindPolicy::kUnquantized);
    // No list in the config: transformers' default skips keep lm_head; the engines never give
    // ParallelLMHead an fp8 method.
    EXPECT_EQ(plan->lm_head, KindPolicy::kUnquantized);
    // The config names no KV-cache scheme; the engines still attach Fp8KVCacheMethod.
    EXPECT_FALSE(plan->kv_cache.has_value());
    EXPECT_EQ(plan->attention.has_value(), dialect != "native");
    EXPECT_TRUE(AnyNoteContains(*plan, "fmt e4m3"));
  }
}

INSTANTIATE_TEST_SUITE_P(DeepSeekStyle, Fp8Corpus,
                         testing::Values("deepseek-ai__DeepSeek-R1",
                                         "deepseek-ai__DeepSeek-V3-Base",
                                         "moonshotai__Kimi-K2-Instruct"));

TEST(Fp8Detect, OnlyAnEmbeddedFp8Description) {
  EXPECT_TRUE(Fp8Importer()->Detect(Embedded(kDeepSeek)));
  // vLLM and SGLang lower-case quant_method before choosing the config class.
  EXPECT_TRUE(Fp8Importer()->Detect(Embedded(R"({"quant_method": "FP8"})")));
  EXPECT_FALSE(Fp8Importer()->Detect(Embedded(R"({"quant_method": "fbgemm_fp8"})")));
  EXPECT_FALSE(Fp8Importer()->Detect(Embedded(R"({"quant_method": "awq"})")));
  EXPECT_FALSE(Fp8Importer()->Detect(Embedded(R"({"bits": 4})")));
  EXPECT_FALSE(Fp8Importer()->Detect(Embedded(R"("fp8")")));
  // A standalone file alone is not read for fp8 (Fp8Config.get_config_filenames() is empty).
  Result<Json> standalone = ParseJson(R"({"quant_method": "fp8"})", "quant_config.json");
  ASSERT_TRUE(standalone.ok());
  std::vector<SourceFile> files;
  files.push_back({"quant_config.json", {}, *standalone});
  EXPECT_FALSE(Fp8Importer()->Detect(ConfigSources::FromMemory(std::move(files))));
}

// ---------------------------------------------------------------------------------------------
// Schemes.

TEST(Fp8Scheme, PerTensorWeightsWithDynamicPerTokenInput) {
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    Result<QuantPlan> plan =
        Build(R"({"quant_method": "fp8", "activation_scheme": "dynamic"})", dialect);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    const QuantScheme& s = *plan->default_action.scheme;
    EXPECT_EQ(s.CanonicalName(), "w8a8-fp8-tensor-dyn");
    EXPECT_EQ(s.weight.granularity, Granularity::kPerTensor);
    EXPECT_EQ(s.weight.load.layout, SourceLayout::kFp8Scale);
    EXPECT_FALSE(s.weight.block_shape.has_value());
    EXPECT_EQ(s.input->granularity, Granularity::kPerToken);
    EXPECT_EQ(s.input->dynamic, Dynamic::kDynamic);
  }
}

TEST(Fp8Scheme, StaticActivationsArePerTensorWithCheckpointScales) {
  Result<QuantPlan> plan =
      Build(R"({"quant_method": "fp8", "activation_scheme": "static", "weight_block_size": null})",
            "vllm@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const QuantScheme& s = *plan->default_action.scheme;
  EXPECT_EQ(s.CanonicalName(), "w8a8-fp8-tensor-static");
  EXPECT_EQ(s.weight.granularity, Granularity::kPerTensor);
  EXPECT_EQ(s.input->granularity, Granularity::kPerTensor);
  EXPECT_EQ(s.input->dynamic, Dynamic::kStatic);
  EXPECT_EQ(s.input->load.layout, SourceLayout::kFp8Scale);
}

TEST(Fp8Scheme, InputGroupFollowsTheBlockColumns) {
  Result<QuantPlan> plan = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [64, 32]})",
      "sglang@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const QuantScheme& s = *plan->default_action.scheme;
  EXPECT_EQ(s.weight.block_shape, (std::array<int64_t, 2>{64, 32}));
  EXPECT_EQ(s.input->group_size, 32);
  EXPECT_EQ(s.CanonicalName(), "w8a8-fp8-block64x32-dyn");
}

TEST(Fp8Scheme, FmtNeverChangesTheWeightDtype) {
  Result<QuantPlan> plan = Build(
      R"({"quant_method": "fp8", "fmt": "e5m2", "activation_scheme": "dynamic",
          "weight_block_size": [128, 128]})",
      "native");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->default_action.scheme->weight.dtype, QDType::kFP8E4M3);
  EXPECT_TRUE(AnyNoteContains(*plan, "config.json#/quantization_config/fmt: warning: fmt e5m2"));
}

TEST(Fp8Scheme, NativeDefaultsAndNotes) {
  // transformers defaults activation_scheme to dynamic and lower-cases it; quantpath keeps the
  // engines' reading of an absent weight_block_size and says so.
  Result<QuantPlan> plan = Build(R"({"quant_method": "fp8", "scale_fmt": "ue8m0"})", "native");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->default_action.scheme->CanonicalName(), "w8a8-fp8-tensor-dyn");
  EXPECT_TRUE(AnyNoteContains(*plan, "defaults it to dynamic"));
  EXPECT_TRUE(AnyNoteContains(*plan, "would assume [128, 128]"));
  EXPECT_TRUE(AnyNoteContains(*plan, "does not interpret: scale_fmt"));
  Result<QuantPlan> upper =
      Build(R"({"quant_method": "fp8", "activation_scheme": "Static"})", "native");
  ASSERT_TRUE(upper.ok()) << upper.status().message();
  EXPECT_EQ(upper->default_action.scheme->input->dynamic, Dynamic::kStatic);
}

TEST(Fp8Scheme, KvCacheMethodOnlyInTheEngineDialects) {
  for (std::string_view dialect : {"vllm@helpers", "sglang@helpers"}) {
    Result<QuantPlan> plan = Build(kDeepSeek, dialect);
    ASSERT_TRUE(plan.ok());
    EXPECT_FALSE(plan->kv_cache.has_value());
    ASSERT_TRUE(plan->attention.has_value());
    EXPECT_EQ(plan->attention->kind, ActionKind::kQuantize);
    EXPECT_EQ(plan->attention->detail, "Fp8KVCacheMethod");
    EXPECT_TRUE(Contains(plan->attention->message, "--kv-cache-dtype fp8"));
  }
  Result<QuantPlan> native = Build(kDeepSeek, "native");
  ASSERT_TRUE(native.ok());
  EXPECT_FALSE(native->kv_cache.has_value());
  EXPECT_FALSE(native->attention.has_value());
}

// ---------------------------------------------------------------------------------------------
// Errors: each names config.json and the JSON pointer; the engine dialects quote the engine.

void ExpectError(std::string_view config, std::string_view dialect,
                 const std::vector<std::string_view>& parts) {
  Result<QuantPlan> plan = Build(config, dialect);
  ASSERT_FALSE(plan.ok()) << "expected an error for " << config << " in " << dialect;
  EXPECT_EQ(plan.status().code(), ErrorCode::kInvalidInput);
  for (std::string_view part : parts) {
    EXPECT_TRUE(Contains(plan.status().message(), part))
        << "missing \"" << part << "\" in: " << plan.status().message();
  }
}

TEST(Fp8Errors, UnknownActivationScheme) {
  constexpr std::string_view kConfig =
      R"({"quant_method": "fp8", "activation_scheme": "per_token", "weight_block_size": [128, 128]})";
  ExpectError(kConfig, "vllm@helpers",
              {"config.json#/quantization_config/activation_scheme",
               "ValueError: Unsupported activation scheme per_token"});
  ExpectError(kConfig, "sglang@helpers",
              {"config.json#/quantization_config/activation_scheme",
               "SGLang raises ValueError: Unsupported activation scheme"});
  ExpectError(kConfig, "native",
              {"config.json#/quantization_config/activation_scheme", "found \"per_token\""});
  // The engines compare exactly; transformers lower-cases first.
  ExpectError(R"({"quant_method": "fp8", "activation_scheme": "Dynamic"})", "vllm@helpers",
              {"Unsupported activation scheme Dynamic"});
  ExpectError(R"({"quant_method": "fp8", "activation_scheme": 1})", "native",
              {"config.json#/quantization_config/activation_scheme", "found integer"});
  ExpectError(
      R"({"quant_method": "fp8", "activation_scheme": null})", "vllm@helpers",
      {"config.json#/quantization_config/activation_scheme", "Unsupported activation scheme None"});
}

TEST(Fp8Errors, MissingActivationSchemeInTheEngineDialects) {
  for (std::string_view dialect : {"vllm@helpers", "sglang@helpers"}) {
    ExpectError(R"({"quant_method": "fp8", "weight_block_size": [128, 128]})", dialect,
                {"config.json#/quantization_config: activation_scheme is required",
                 "Cannot find any of ['activation_scheme'] in the model's quantization config."});
  }
}

TEST(Fp8Errors, BlockSizeWithStaticActivations) {
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    ExpectError(
        R"({"quant_method": "fp8", "activation_scheme": "static", "weight_block_size": [128, 128]})",
        dialect,
        {"config.json#/quantization_config/weight_block_size",
         "needs activation_scheme \"dynamic\""});
  }
  ExpectError(
      R"({"quant_method": "fp8", "activation_scheme": "static", "weight_block_size": [128, 128]})",
      "vllm@helpers",
      {"The block-wise quantization only supports dynamic activation scheme for now, but got "
       "static activation scheme."});
}

TEST(Fp8Errors, BlockSizeMustHaveTwoDimensions) {
  ExpectError(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128]})",
      "vllm@helpers",
      {"config.json#/quantization_config/weight_block_size", "found 1 entries",
       "must have 2 dimensions, but got 1 dimensions"});
  ExpectError(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [1, 128, 128]})",
      "sglang@helpers",
      {"config.json#/quantization_config/weight_block_size", "found 3 entries",
       "but got 3 dimensions"});
  ExpectError(R"({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": []})",
              "native", {"config.json#/quantization_config/weight_block_size", "found 0 entries"});
  ExpectError(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": 128})",
      "native", {"config.json#/quantization_config/weight_block_size", "found integer"});
  ExpectError(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": "128x128"})",
      "vllm@helpers", {"config.json#/quantization_config/weight_block_size", "found string"});
}

TEST(Fp8Errors, BlockSizeEntriesMustBePositiveIntegers) {
  struct Case {
    std::string_view block;
    std::string_view pointer;
    std::string_view found;
  };
  for (const Case& c : std::vector<Case>{{"[128, 128.0]", "/weight_block_size/1", "found 128.0"},
                                         {"[\"128\", 128]", "/weight_block_size/0", "string"},
                                         {"[128, 0]", "/weight_block_size/1", "found 0"},
                                         {"[-128, 128]", "/weight_block_size/0", "found -128"},
                                         {"[true, 128]", "/weight_block_size/0", "boolean"},
                                         {"[null, 128]", "/weight_block_size/0", "null"}}) {
    std::string config = R"({"quant_method": "fp8", "activation_scheme": "dynamic", )"
                         R"("weight_block_size": )" +
                         std::string(c.block) + "}";
    std::string pointer = "config.json#/quantization_config" + std::string(c.pointer);
    ExpectError(config, "vllm@helpers", {pointer, "positive integers", c.found});
  }
}

TEST(Fp8Errors, ExclusionListsMustBeListsOfStrings) {
  ExpectError(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": "lm_head"})",
      "vllm@helpers", {"config.json#/quantization_config/ignored_layers", "found string"});
  ExpectError(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "modules_to_not_convert": ["lm_head", 3]})",
      "native", {"config.json#/quantization_config/modules_to_not_convert/1", "found integer"});
}

TEST(Fp8Errors, InvalidRegexKeyInTheNativeDialect) {
  // transformers builds re.match(f"(?:{key})…") from every key, so a broken one raises re.error.
  ExpectError(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "modules_to_not_convert": ["lm_head", "model.layers.[0"]})",
      "native", {"config.json#/quantization_config/modules_to_not_convert/1"});
  // vLLM and SGLang never read entries as regexes.
  Result<QuantPlan> vllm = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "modules_to_not_convert": ["model.layers.[0"]})",
      "vllm@helpers");
  EXPECT_TRUE(vllm.ok()) << vllm.status().message();
}

TEST(Fp8Errors, DescriptionMustBeAnObject) {
  ExpectError(R"(["fp8"])", "native", {"config.json#/quantization_config", "found array"});
}

// ---------------------------------------------------------------------------------------------
// Which list each dialect reads.

TEST(Fp8Lists, VllmFallsBackToModulesToNotConvertWhenIgnoredLayersIsEmpty) {
  Result<QuantPlan> plan = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": [],
          "modules_to_not_convert": ["model.layers.0.mlp.down_proj"]})",
      "vllm@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const Rule* hit = FirstHit(*plan, "model.layers.0.mlp.down_proj");
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->source.ToString(), "config.json#/quantization_config/modules_to_not_convert/0");
  EXPECT_EQ(hit->action.kind, ActionKind::kSkip);
  EXPECT_EQ(hit->action.detail, "UnquantizedLinearMethod");
}

TEST(Fp8Lists, VllmPrefersANonEmptyIgnoredLayers) {
  Result<QuantPlan> plan = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": ["a.q_proj"],
          "modules_to_not_convert": ["a.o_proj"]})",
      "vllm@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(Skips(*plan, "a.q_proj"));
  EXPECT_FALSE(Skips(*plan, "a.o_proj"));
  EXPECT_TRUE(AnyNoteContains(*plan, "/quantization_config/modules_to_not_convert: not read"));
}

TEST(Fp8Lists, OnlyTheListADialectReadsIsValidated) {
  // vLLM never looks at modules_to_not_convert when ignored_layers is non-empty.
  Result<QuantPlan> vllm = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": ["a.q_proj"],
          "modules_to_not_convert": "oops"})",
      "vllm@helpers");
  EXPECT_TRUE(vllm.ok()) << vllm.status().message();
  // SGLang reads ignored_layers whenever the key exists.
  ExpectError(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": [1],
          "modules_to_not_convert": ["a.q_proj"]})",
      "sglang@helpers", {"config.json#/quantization_config/ignored_layers/0"});
}

TEST(Fp8Lists, SglangReadsTheFirstKeyPresentEvenWhenNull) {
  Result<QuantPlan> plan = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": null,
          "modules_to_not_convert": ["a.o_proj"]})",
      "sglang@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(Exclude(*plan).rules.empty());
  EXPECT_TRUE(AnyNoteContains(*plan, "modules_to_not_convert: not read"));
  Result<QuantPlan> fallback = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "modules_to_not_convert": ["a.o_proj"]})",
      "sglang@helpers");
  ASSERT_TRUE(fallback.ok()) << fallback.status().message();
  EXPECT_TRUE(Skips(*fallback, "a.o_proj"));
}

TEST(Fp8Lists, NativePrefersModulesToNotConvertAndTakesIgnoredLayersAsAnAlias) {
  Result<QuantPlan> both = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": ["x.q_proj"],
          "modules_to_not_convert": ["x.o_proj"]})",
      "native");
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_TRUE(Skips(*both, "x.o_proj"));
  EXPECT_FALSE(Skips(*both, "x.q_proj"));
  EXPECT_TRUE(AnyNoteContains(*both, "ignored_layers: not read"));
  Result<QuantPlan> alias = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": ["x.q_proj"]})",
      "native");
  ASSERT_TRUE(alias.ok()) << alias.status().message();
  EXPECT_TRUE(Skips(*alias, "x.q_proj"));
  EXPECT_EQ(FirstHit(*alias, "x.q_proj")->source.ToString(),
            "config.json#/quantization_config/ignored_layers/0");
}

TEST(Fp8Lists, NativeLmHeadFollowsTransformersDefaultSkips) {
  // No list → the quantizer's default skips (output embedding) keep lm_head.
  Result<QuantPlan> none = Build(kDeepSeek, "native");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->lm_head, KindPolicy::kUnquantized);
  EXPECT_TRUE(AnyNoteContains(*none, "keeps lm_head unquantized by default"));
  // A list, even an empty one, replaces them: lm_head is converted unless an entry reaches it.
  for (std::string_view list : {R"([])", R"(["model.layers.0.mlp.gate"])"}) {
    Result<QuantPlan> plan = Build(
        R"({"quant_method": "fp8", "activation_scheme": "dynamic", "modules_to_not_convert": )" +
            std::string(list) + "}",
        "native");
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_EQ(plan->lm_head, KindPolicy::kRules);
    EXPECT_FALSE(Skips(*plan, "lm_head", SiteKind::kLmHead));
    EXPECT_TRUE(AnyNoteContains(*plan, "modules_to_not_convert: replaces transformers' default"));
  }
  Result<QuantPlan> listed = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "modules_to_not_convert": ["lm_head"]})",
      "native");
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(Skips(*listed, "lm_head", SiteKind::kLmHead));
  // The engines never quantize ParallelLMHead under fp8, list or not.
  Result<QuantPlan> vllm =
      Build(R"({"quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": ["x"]})",
            "vllm@helpers");
  ASSERT_TRUE(vllm.ok());
  EXPECT_EQ(vllm->lm_head, KindPolicy::kUnquantized);
}

// ---------------------------------------------------------------------------------------------
// Matcher semantics per dialect, on one path at a time.

TEST(Fp8Matching, VllmIsExactWithReversedExpertsEntries) {
  Result<QuantPlan> plan = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128],
          "ignored_layers": ["self_attn", "mlp", "model.layers.0.mlp.down_proj",
                             "model.layers.1.mlp.experts.0.gate_proj", "mlp.experts",
                             "model.layers.3.mlp.shared_experts.down_proj"]})",
      "vllm@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Exclude(*plan).fused, FusedPolicy::kLegsMustAgree);
  EXPECT_TRUE(Contains(Exclude(*plan).disagree_message, "Detected some but not all shards of"));
  EXPECT_TRUE(Skips(*plan, "model.layers.0.mlp.down_proj"));
  EXPECT_FALSE(
      Skips(*plan, "model.layers.0.self_attn.o_proj"));  // "self_attn" is not a substring test
  EXPECT_FALSE(Skips(*plan, "model.layers.1.mlp.down_proj"));
  // Experts: the layer path must be contained in an entry that mentions experts.
  EXPECT_TRUE(Skips(*plan, "model.layers.1.mlp.experts", SiteKind::kMoe));
  EXPECT_FALSE(Skips(*plan, "model.layers.2.mlp.experts", SiteKind::kMoe));
  EXPECT_EQ(FirstHit(*plan, "model.layers.1.mlp.experts", SiteKind::kMoe)->action.detail,
            "UnquantizedFusedMoEMethod");
  EXPECT_TRUE(Skips(*plan, "model.layers.3.mlp.shared_experts.down_proj"));
  // The lm_head kind is never reached by these rules (the plan keeps it unquantized).
  EXPECT_FALSE(Skips(*plan, "mlp", SiteKind::kLmHead));
}

TEST(Fp8Matching, SglangMatchesWholeDottedSegments) {
  Result<QuantPlan> plan = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "ignored_layers": ["self_attn", "mlp.gate", "model.layers.1", "layers.2.mlp.",
                             "model.layers.5.mlp.experts.0.down_proj"]})",
      "sglang@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Exclude(*plan).fused, FusedPolicy::kLegsMustAgree);
  EXPECT_TRUE(Skips(*plan, "model.layers.0.self_attn.o_proj"));
  EXPECT_FALSE(Skips(*plan, "model.layers.0.cross_self_attn_x.o_proj"));
  EXPECT_TRUE(Skips(*plan, "model.layers.3.mlp.gate"));
  EXPECT_FALSE(Skips(*plan, "model.layers.3.mlp.gate_up_proj"));
  EXPECT_TRUE(Skips(*plan, "model.layers.1.mlp.down_proj"));
  EXPECT_FALSE(Skips(*plan, "model.layers.10.mlp.down_proj"));
  EXPECT_TRUE(Skips(*plan, "model.layers.2.mlp.down_proj"));  // trailing dot stripped
  // Entries are kept with and without a leading "model.".
  EXPECT_TRUE(Skips(*plan, "language_model.layers.1.mlp.down_proj"));
  EXPECT_TRUE(Skips(*plan, "model.layers.5.mlp.experts", SiteKind::kMoe));
  EXPECT_FALSE(Skips(*plan, "model.layers.6.mlp.experts", SiteKind::kMoe));
}

TEST(Fp8Matching, NativeFollowsTransformersShouldConvertModule) {
  Result<QuantPlan> plan = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "modules_to_not_convert": ["model.layers.1", "model.layers.*.self_attn.kv_b_proj",
                                     "mlp.gate", "lm_head", "fc1"]})",
      "native");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Exclude(*plan).fused, FusedPolicy::kLegsMustAgree);
  // (a) regex from the start, ending at a module boundary.
  EXPECT_TRUE(Skips(*plan, "model.layers.1.mlp.down_proj"));
  EXPECT_FALSE(Skips(*plan, "model.layers.10.mlp.down_proj"));
  EXPECT_TRUE(Skips(*plan, "model.layers.7.self_attn.kv_b_proj"));
  EXPECT_FALSE(Skips(*plan, "model.layers.7.self_attn.q_b_proj"));
  EXPECT_TRUE(Skips(*plan, "lm_head", SiteKind::kLmHead));
  EXPECT_TRUE(Skips(*plan, "model.layers.1.mlp.experts", SiteKind::kMoe));
  // (b) a plain suffix: "mlp.gate" reaches the router path but not gate_up_proj; "fc1" is not
  // aligned to segments.
  EXPECT_TRUE(Skips(*plan, "model.layers.3.mlp.gate"));
  EXPECT_FALSE(Skips(*plan, "model.layers.3.mlp.gate_up_proj"));
  EXPECT_TRUE(Skips(*plan, "model.decoder.layers.23.xfc1"));
  EXPECT_FALSE(Skips(*plan, "model.decoder.layers.23.fc2"));
}

TEST(Fp8Matching, NativeSuffixIsLiteral) {
  // The suffix test is str.endswith, so regex characters in the key are literal there.
  Result<QuantPlan> plan = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "modules_to_not_convert": ["o.proj"]})",
      "native");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(Skips(*plan, "x.o.proj"));
  EXPECT_FALSE(Skips(*plan, "x.o_proj"));
  // …while the start-anchored regex part reads '.' as any character.
  EXPECT_TRUE(Skips(*plan, "o_proj.y"));
}

TEST(Fp8Matching, ProvenanceNamesTheListEntry) {
  Result<QuantPlan> plan = Build(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic",
          "ignored_layers": ["a.q_proj", "model.b.o_proj"]})",
      "sglang@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const Rule* hit = FirstHit(*plan, "model.b.o_proj");
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->source.ToString(), "config.json#/quantization_config/ignored_layers/1");
  EXPECT_TRUE(Contains(hit->action.message, "ignored_layers"));
}

}  // namespace
}  // namespace quantpath
