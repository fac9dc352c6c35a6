// The compressed-tensors importer: real corpus configs and synthetic edge cases of every matcher
// path, decided with DecideSite on hand-built sites in each dialect (native = the library's
// matcher, vllm and sglang = the engines' helpers as recorded in oracle/).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "quantpath/importers.h"
#include "quantpath/planner.h"
#include "src/importers/importer_list.h"

namespace quantpath {
namespace {

Dialect D(std::string_view name) { return *ParseDialect(name); }

ConfigSources FromConfigJson(std::string_view text) {
  Result<Json> root = ParseJson(text, "config.json");
  EXPECT_TRUE(root.ok()) << root.status().message();
  std::vector<SourceFile> files;
  files.push_back({"config.json", {}, root.ok() ? *root : Json::Object()});
  return ConfigSources::FromMemory(std::move(files));
}

Result<QuantPlan> Build(std::string_view quantization_config, std::string_view dialect) {
  return CompressedTensorsImporter()->BuildPlan(
      FromConfigJson("{\"quantization_config\": " + std::string(quantization_config) + "}"),
      D(dialect));
}

Result<QuantPlan> BuildFile(const std::string& relative, std::string_view dialect,
                            bool wrap = false) {
  std::filesystem::path path = std::filesystem::path(QUANTPATH_TEST_DATA) / relative;
  Result<std::string> text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status().message();
  if (wrap) return Build(*text, dialect);
  return CompressedTensorsImporter()->BuildPlan(FromConfigJson(*text), D(dialect));
}

LayerSite Site(std::string path, std::string cls = "RowParallelLinear",
               std::vector<std::string> legs = {}, SiteKind kind = SiteKind::kLinear) {
  LayerSite s;
  s.path = std::move(path);
  s.kind = kind;
  s.module_class = std::move(cls);
  for (std::string& leg : legs) s.legs.push_back({std::move(leg), 0});
  return s;
}
LayerSite Qkv(std::string layer) {
  return Site(layer + ".self_attn.qkv_proj", "QKVParallelLinear", {"q_proj", "k_proj", "v_proj"});
}
LayerSite LmHead() { return Site("lm_head", "ParallelLMHead", {}, SiteKind::kLmHead); }

std::string Kind(const QuantPlan& plan, const LayerSite& site) {
  return std::string(DecisionKindName(DecideSite(plan, site).kind));
}

constexpr std::string_view kFp8Linear = R"({
  "quant_method": "compressed-tensors", "format": "float-quantized",
  "config_groups": {"group_0": {"targets": ["Linear"],
    "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
    "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true}}},
  "ignore": IGNORE})";

std::string WithIgnore(std::string_view ignore) {
  std::string text(kFp8Linear);
  text.replace(text.find("IGNORE"), 6, ignore);
  return text;
}

// ---------------------------------------------------------------------------------------------
// Corpus.

TEST(CompressedTensorsCorpus, LibraryExampleInt8NaiveQuantized) {
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    Result<QuantPlan> plan = BuildFile(
        "corpus/_library-example__compressed-tensors/example_quant_config.json", dialect, true);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    Decision d = DecideSite(*plan, Site("model.layers.0.mlp.down_proj"));
    ASSERT_EQ(d.kind, DecisionKind::kQuantized) << dialect;
    EXPECT_EQ(d.scheme->weight.dtype, QDType::kINT8);
    EXPECT_EQ(d.scheme->weight.granularity, Granularity::kPerTensor);
    EXPECT_EQ(d.scheme->weight.load.layout, SourceLayout::kCtNaiveQuantized);
    EXPECT_EQ(d.scheme->input->dynamic, Dynamic::kStatic);  // no "dynamic": static activations
  }
}

TEST(CompressedTensorsCorpus, LibraryExampleInt4PackedAsymmetric) {
  Result<QuantPlan> plan =
      BuildFile("corpus/_library-example__compressed-tensors/int4_config.json", "native", true);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Decision d = DecideSite(*plan, Qkv("model.layers.0"));
  ASSERT_EQ(d.kind, DecisionKind::kQuantized);
  EXPECT_EQ(d.scheme->weight.dtype, QDType::kINT4);
  EXPECT_FALSE(d.scheme->weight.symmetric);
  EXPECT_EQ(d.scheme->weight.load.zero_point, ZeroPointConvention::kStored);
  EXPECT_FALSE(d.scheme->input.has_value());
  // The library's "Linear" class covers the LM head (an nn.Linear there); no ignore here.
  EXPECT_EQ(Kind(*plan, LmHead()), "quantized");
}

TEST(CompressedTensorsCorpus, LibraryExampleMixedPrecisionRegexGroups) {
  Result<QuantPlan> plan = BuildFile(
      "corpus/_library-example__compressed-tensors/mixed_precision_config.json", "native", true);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Decision attn = DecideSite(*plan, Qkv("model.layers.0"));
  ASSERT_EQ(attn.kind, DecisionKind::kQuantized);
  EXPECT_EQ(attn.scheme->weight.dtype, QDType::kFP8E4M3);
  EXPECT_EQ(attn.scheme->weight.granularity, Granularity::kPerChannel);
  Decision mlp = DecideSite(*plan, Site("model.layers.0.mlp.down_proj"));
  ASSERT_EQ(mlp.kind, DecisionKind::kQuantized);
  EXPECT_EQ(mlp.scheme->weight.dtype, QDType::kNVFP4);
  EXPECT_EQ(mlp.scheme->input->dynamic, Dynamic::kLocal);
  EXPECT_EQ(Kind(*plan, LmHead()), "unquantized");
  // No format anywhere: each group's layout comes from its weights, and the plan says so.
  EXPECT_EQ(mlp.scheme->weight.load.layout, SourceLayout::kCtNvfp4PackQuantized);
  bool noted = false;
  for (const std::string& n : plan->notes) noted |= n.find("names no format") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(CompressedTensorsCorpus, Qwen36AwqPackQuantizedWithMtpGroup) {
  for (std::string_view dialect : {"native", "vllm@helpers"}) {
    Result<QuantPlan> plan = BuildFile("corpus/fantasylord__Qwen36/config.json", dialect);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    Decision attn = DecideSite(*plan, Qkv("model.language_model.layers.3"));
    ASSERT_EQ(attn.kind, DecisionKind::kQuantized) << dialect;
    EXPECT_EQ(*attn.scheme->weight.group_size, 128);
    EXPECT_FALSE(attn.scheme->weight.symmetric);
    // group_mtp's regex wins over the class target "Linear" of group_0.
    Decision mtp = DecideSite(*plan, Site("mtp.layers.0.mlp.down_proj"));
    ASSERT_EQ(mtp.kind, DecisionKind::kQuantized) << dialect;
    EXPECT_EQ(*mtp.scheme->weight.group_size, 32);
    EXPECT_EQ(Kind(*plan, Site("model.visual.blocks.0.attn.qkv", "QKVParallelLinear")),
              "unquantized");
    EXPECT_EQ(Kind(*plan, Site("model.language_model.layers.0.linear_attn.in_proj_a",
                               "ColumnParallelLinear")),
              "unquantized");
    EXPECT_EQ(Kind(*plan, Site("mtp.fc", "ReplicatedLinear")), "unquantized");
  }
}

TEST(CompressedTensorsCorpus, ReconstructedStaticAsymmetricInt8) {
  Result<QuantPlan> plan = BuildFile(
      "importers/compressed_tensors/"
      "nm-testing__Meta-Llama-3-8B-Instruct-W8A8-Static-Per-Tensor-Asym.reconstructed.json",
      "native", true);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Decision d = DecideSite(*plan, Site("model.layers.0.self_attn.o_proj"));
  ASSERT_EQ(d.kind, DecisionKind::kQuantized);
  EXPECT_EQ(d.scheme->weight.granularity, Granularity::kPerChannel);
  EXPECT_EQ(d.scheme->input->granularity, Granularity::kPerTensor);
  EXPECT_FALSE(d.scheme->input->symmetric);
  EXPECT_EQ(d.scheme->weight.load.layout, SourceLayout::kCtNaiveQuantized);
  EXPECT_EQ(Kind(*plan, LmHead()), "unquantized");
}

// ---------------------------------------------------------------------------------------------
// ignore.

TEST(CompressedTensorsIgnore, PlainEntriesAreExactInNativeAndVllmSubstringsInSglang) {
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    Result<QuantPlan> plan = Build(WithIgnore(R"(["self_attn", "Down_Proj"])"), dialect);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    std::string expected = dialect == "sglang@helpers" ? "unquantized" : "quantized";
    EXPECT_EQ(Kind(*plan, Site("model.layers.0.self_attn.o_proj")), expected) << dialect;
    EXPECT_EQ(Kind(*plan, Site("model.layers.0.mlp.down_proj")), expected) << dialect;
  }
}

TEST(CompressedTensorsIgnore, RegexIsAnchoredAtTheStartOnly) {
  Result<QuantPlan> plan =
      Build(WithIgnore(R"(["re:o_proj", "re:model.layers.1.*"])"), "vllm@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Kind(*plan, Site("model.layers.0.self_attn.o_proj")), "quantized");
  EXPECT_EQ(Kind(*plan, Site("model.layers.10.self_attn.o_proj")), "unquantized");
}

TEST(CompressedTensorsIgnore, FusedLegsMustAgreeWithTheEngineText) {
  Result<QuantPlan> plan =
      Build(WithIgnore(R"(["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj"])"),
            "vllm@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Decision d = DecideSite(*plan, Qkv("model.layers.0"));
  EXPECT_EQ(d.kind, DecisionKind::kError);
  EXPECT_EQ(d.detail,
            "ValueError: Found a different quantization schemes for ['q_proj', 'k_proj', "
            "'v_proj'] in model.layers.0.self_attn.qkv_proj. vLLM requires all to use the same "
            "scheme.");
  Result<QuantPlan> native =
      Build(WithIgnore(R"(["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj"])"),
            "native");
  EXPECT_EQ(DecideSite(*native, Qkv("model.layers.0")).kind, DecisionKind::kError);
}

TEST(CompressedTensorsIgnore, AListedFusedNameCountsInTheEnginesOnly) {
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    Result<QuantPlan> plan = Build(WithIgnore(R"(["model.layers.0.self_attn.qkv_proj"])"), dialect);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    // The library sees only q_proj, k_proj, v_proj (no module is called qkv_proj there).
    EXPECT_EQ(Kind(*plan, Qkv("model.layers.0")), dialect == "native" ? "quantized" : "unquantized")
        << dialect;
  }
  // A regex naming the fused layer reaches it in no dialect: the shards are looked up.
  Result<QuantPlan> regex = Build(WithIgnore(R"(["re:.*qkv_proj"])"), "vllm@helpers");
  EXPECT_EQ(Kind(*regex, Qkv("model.layers.0")), "quantized");
}

TEST(CompressedTensorsIgnore, NativeClassNamesInIgnore) {
  Result<QuantPlan> plan = Build(WithIgnore(R"(["Embedding", "MixtralSparseMoeBlock"])"), "native");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  bool noted = false;
  for (const std::string& n : plan->notes)
    noted |= n.find("MixtralSparseMoeBlock") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_EQ(
      Kind(*plan, Site("model.embed_tokens", "VocabParallelEmbedding", {}, SiteKind::kEmbedding)),
      "unquantized");
}

// ---------------------------------------------------------------------------------------------
// targets.

constexpr std::string_view kTwoGroups = R"({
  "quant_method": "compressed-tensors", "format": "pack-quantized",
  "config_groups": {
    "group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "group_size": 128}},
    "group_1": {"targets": ["re:.*down_proj", "re:.*self_attn.*"],
                "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
                "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                      "dynamic": true}}},
  "ignore": ["lm_head"]})";

TEST(CompressedTensorsTargets, NameHitsBeatClassHitsOfEarlierGroups) {
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    Result<QuantPlan> plan = Build(kTwoGroups, dialect);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    Decision down = DecideSite(*plan, Site("model.layers.0.mlp.down_proj"));
    ASSERT_EQ(down.kind, DecisionKind::kQuantized) << dialect;
    EXPECT_EQ(down.scheme->weight.dtype, QDType::kFP8E4M3) << dialect;
    Decision up = DecideSite(*plan, Site("model.layers.0.mlp.gate_up_proj",
                                         "MergedColumnParallelLinear", {"gate_proj", "up_proj"}));
    ASSERT_EQ(up.kind, DecisionKind::kQuantized) << dialect;
    EXPECT_EQ(up.scheme->weight.dtype, QDType::kINT4) << dialect;
  }
}

TEST(CompressedTensorsTargets, EngineDetailsNameTargetAndGroup) {
  Result<QuantPlan> vllm = Build(kTwoGroups, "vllm@helpers");
  EXPECT_EQ(DecideSite(*vllm, Site("model.layers.0.mlp.down_proj")).detail,
            "CompressedTensorsLinearMethod[target=re:.*down_proj group=group_1]");
  Result<QuantPlan> sglang = Build(kTwoGroups, "sglang@helpers");
  EXPECT_EQ(DecideSite(*sglang, Qkv("model.layers.0")).detail,
            "helpers: find_matched_target=re:.*self_attn.* (group=group_1)");
}

TEST(CompressedTensorsTargets, NoTargetIsUnquantizedExceptInSglang) {
  constexpr std::string_view kRowOnly = R"({
    "quant_method": "compressed-tensors", "format": "float-quantized",
    "config_groups": {"g": {"targets": ["RowParallelLinear"],
      "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}})";
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    Result<QuantPlan> plan = Build(kRowOnly, dialect);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    Decision qkv = DecideSite(*plan, Qkv("model.layers.0"));
    if (dialect == "sglang@helpers") {
      EXPECT_EQ(qkv.kind, DecisionKind::kError);
      EXPECT_EQ(qkv.detail,
                "ValueError: Unable to find matching target for model.layers.0.self_attn.qkv_proj "
                "in the compressed-tensors config.");
    } else {
      EXPECT_EQ(qkv.kind, DecisionKind::kUnquantized) << dialect;
    }
    // Engines: case-insensitive substring of the vLLM class; native: the library's classes
    // (RowParallelLinear is not a torch class, so nothing matches).
    EXPECT_EQ(Kind(*plan, Site("model.layers.0.self_attn.o_proj")),
              dialect == "native" ? "unquantized" : "quantized")
        << dialect;
  }
}

TEST(CompressedTensorsTargets, FusedLayersThroughTheirShards) {
  constexpr std::string_view kPerLayer = R"({
    "quant_method": "compressed-tensors", "format": "float-quantized",
    "config_groups": {"a": {"targets": ["model.layers.0.self_attn.q_proj",
                                        "model.layers.0.self_attn.k_proj",
                                        "model.layers.0.self_attn.v_proj"],
                            "weights": {"num_bits": 8, "type": "float"}},
                      "b": {"targets": ["model.layers.1.self_attn.q_proj",
                                        "model.layers.1.self_attn.k_proj"],
                            "weights": {"num_bits": 8, "type": "float"}},
                      "c": {"targets": ["model.layers.1.self_attn.v_proj"],
                            "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}})";
  for (std::string_view dialect : {"native", "vllm@helpers"}) {
    Result<QuantPlan> plan = Build(kPerLayer, dialect);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_EQ(Kind(*plan, Qkv("model.layers.0")), "quantized") << dialect;
    // Shards in groups with different schemes: vLLM takes the first shard's target
    // (_match_fused_layer compares no schemes); the library's legs must agree.
    EXPECT_EQ(Kind(*plan, Qkv("model.layers.1")), dialect == "native" ? "error" : "quantized")
        << dialect;
  }
}

TEST(CompressedTensorsTargets, LaterGroupTakesADuplicateTarget) {
  constexpr std::string_view kDup = R"({
    "quant_method": "compressed-tensors", "format": "pack-quantized",
    "config_groups": {"a": {"targets": ["Linear"], "weights": {"num_bits": 8, "group_size": 128}},
                      "b": {"targets": ["Linear"], "weights": {"num_bits": 4, "group_size": 64}}}})";
  Result<QuantPlan> plan = Build(kDup, "vllm@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Decision d = DecideSite(*plan, Site("model.layers.0.mlp.down_proj"));
  EXPECT_EQ(*d.scheme->weight.group_size, 64);
  EXPECT_EQ(d.detail, "CompressedTensorsLinearMethod[target=Linear group=b]");
}

TEST(CompressedTensorsTargets, EnginesGiveFusedMoeTheLinearGroup) {
  Result<QuantPlan> plan = Build(WithIgnore("[]"), "vllm@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Kind(*plan, Site("model.layers.1.mlp.experts", "FusedMoE", {}, SiteKind::kMoe)),
            "quantized");
  EXPECT_EQ(Kind(*plan, LmHead()), "unquantized");  // ParallelLMHead holds no "linear"
}

TEST(CompressedTensorsTargets, AttentionOnlyGroupsAreDroppedByVllm) {
  constexpr std::string_view kAttn = R"({
    "quant_method": "compressed-tensors", "format": "float-quantized",
    "config_groups": {"attn": {"targets": ["LlamaAttention"],
                               "weights": {"num_bits": 8, "type": "float"}},
                      "lin": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float"}}}})";
  Result<QuantPlan> vllm = Build(kAttn, "vllm@helpers");
  ASSERT_TRUE(vllm.ok()) << vllm.status().message();
  bool dropped = false;
  for (const std::string& n : vllm->notes) dropped |= n.find("vLLM drops") != std::string::npos;
  EXPECT_TRUE(dropped);
  Result<QuantPlan> native = Build(kAttn, "native");
  bool noted = false;
  for (const std::string& n : native->notes) noted |= n.find("LlamaAttention") != std::string::npos;
  EXPECT_TRUE(noted);
}

// ---------------------------------------------------------------------------------------------
// kv_cache_scheme, sparsity, transforms, reading errors.

TEST(CompressedTensorsKv, NativeQuantizesTheCacheOnlyWithAScheme) {
  std::string with_kv(kFp8Linear);
  with_kv.replace(
      with_kv.find("IGNORE"), 6,
      R"([], "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor"})");
  LayerSite attn = Site("model.layers.0.self_attn.attn", "Attention", {}, SiteKind::kAttention);
  Result<QuantPlan> native = Build(with_kv, "native");
  ASSERT_TRUE(native.ok()) << native.status().message();
  Decision d = DecideSite(*native, attn);
  ASSERT_EQ(d.kind, DecisionKind::kQuantized);
  EXPECT_EQ(d.scheme->weight.dtype, QDType::kFP8E4M3);
  EXPECT_EQ(Kind(*Build(WithIgnore("[]"), "native"), attn), "unquantized");
  // vLLM attaches CompressedTensorsKVCacheMethod either way.
  Decision bare = DecideSite(*Build(WithIgnore("[]"), "vllm@helpers"), attn);
  EXPECT_EQ(bare.kind, DecisionKind::kQuantized);
  EXPECT_EQ(bare.detail, "CompressedTensorsKVCacheMethod");
}

TEST(CompressedTensorsKv, VllmRejectsUnsupportedKvSchemesAtTheAttentionLayer) {
  std::string bad(kFp8Linear);
  bad.replace(bad.find("IGNORE"), 6,
              R"([], "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "channel",
                  "symmetric": true})");
  Result<QuantPlan> plan = Build(bad, "vllm@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  LayerSite attn = Site("model.layers.0.self_attn.attn", "Attention", {}, SiteKind::kAttention);
  Decision d = DecideSite(*plan, attn);
  EXPECT_EQ(d.kind, DecisionKind::kError);
  EXPECT_NE(d.detail.find("found strategy: QuantizationStrategy.CHANNEL"), std::string::npos)
      << d.detail;
  EXPECT_EQ(Kind(*plan, Site("model.layers.0.mlp.down_proj")), "quantized");
}

TEST(CompressedTensorsSections, SparsityAndTransformsAreRecognised) {
  std::string sparse(kFp8Linear);
  sparse.replace(sparse.find("IGNORE"), 6,
                 R"([], "sparsity_config": {"format": "sparse-24-bitmask", "targets": ["Linear"]},
                     "transform_config": {"config_groups": {"u": {"type": "hadamard"}}})");
  Result<QuantPlan> native = Build(sparse, "native");
  ASSERT_TRUE(native.ok()) << native.status().message();
  int recognised = 0;
  for (const std::string& n : native->notes) {
    recognised += n.find("sparsity_config") != std::string::npos &&
                  n.find("does not support") != std::string::npos;
    recognised += n.find("transform_config is recognised") != std::string::npos;
  }
  EXPECT_EQ(recognised, 2);
  Result<QuantPlan> vllm = Build(sparse, "vllm@helpers");
  ASSERT_FALSE(vllm.ok());
  EXPECT_NE(vllm.status().message().find("Sparsity support has been removed"), std::string::npos);
}

TEST(CompressedTensorsSections, FormatsPerGroupAndErrors) {
  constexpr std::string_view kMixed = R"({
    "quant_method": "compressed-tensors", "format": "mixed-precision",
    "config_groups": {
      "a": {"targets": ["re:.*self_attn.*"], "format": "float-quantized",
            "weights": {"num_bits": 8, "type": "float", "strategy": "block",
                        "block_structure": [128, 128]},
            "input_activations": {"num_bits": 8, "type": "float", "strategy": "group",
                                  "group_size": 128, "dynamic": true}},
      "b": {"targets": ["re:.*mlp.*"], "format": "nvfp4-pack-quantized",
            "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                        "group_size": 16}}}})";
  Result<QuantPlan> plan = Build(kMixed, "native");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Decision attn = DecideSite(*plan, Site("model.layers.0.self_attn.o_proj"));
  EXPECT_EQ(attn.scheme->weight.load.layout, SourceLayout::kCtFloatQuantized);
  EXPECT_EQ(attn.scheme->weight.granularity, Granularity::kBlock);
  Decision mlp = DecideSite(*plan, Site("model.layers.0.mlp.down_proj"));
  EXPECT_EQ(mlp.scheme->weight.load.layout, SourceLayout::kCtNvfp4PackQuantized);
  EXPECT_FALSE(Build(R"({"quant_method": "compressed-tensors", "format": "zip",
                         "config_groups": {"a": {"targets": ["Linear"], "weights": {}}}})",
                     "native")
                   .ok());
  Result<QuantPlan> bad_args =
      Build(R"({"quant_method": "compressed-tensors", "config_groups": {"a": {"targets":
             ["Linear"], "weights": {"strategy": "token"}}}})",
            "vllm@helpers");
  ASSERT_FALSE(bad_args.ok());
  EXPECT_NE(bad_args.status().message().find("config_groups/a/weights"), std::string::npos);
}

TEST(CompressedTensorsDetect, QuantMethodOrBareConfigGroups) {
  const Importer* importer = CompressedTensorsImporter();
  EXPECT_TRUE(importer->Detect(FromConfigJson(R"({"quantization_config":
      {"quant_method": "compressed-tensors", "config_groups": {}}})")));
  EXPECT_TRUE(importer->Detect(FromConfigJson(R"({"compression_config": {"config_groups": {}}})")));
  EXPECT_FALSE(
      importer->Detect(FromConfigJson(R"({"quantization_config": {"quant_method": "fp8"}})")));
  EXPECT_EQ(FindImporter("compressed_tensors"), importer);
}

}  // namespace
}  // namespace quantpath
