// The ModelOpt importer: the hf_quant_config.json shell and the flat embedded form, every
// algorithm, MIXED_PRECISION quantized_layers, and each dialect's exclusion semantics and errors,
// decided with DecideSite on hand-built sites.
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

// Sources holding `text` as `file` ("hf_quant_config.json", or "config.json" whose
// quantization_config is `text`).
ConfigSources Sources(std::string_view text, std::string_view file = "hf_quant_config.json") {
  std::string body = file == "config.json" ? "{\"quantization_config\": " + std::string(text) + "}"
                                           : std::string(text);
  Result<Json> root = ParseJson(body, file);
  EXPECT_TRUE(root.ok()) << root.status().message();
  std::vector<SourceFile> files;
  files.push_back({std::string(file), {}, root.ok() ? *root : Json::Object()});
  return ConfigSources::FromMemory(std::move(files));
}

Result<QuantPlan> Build(std::string_view text, std::string_view dialect,
                        std::string_view file = "hf_quant_config.json") {
  return ModelOptImporter()->BuildPlan(Sources(text, file), D(dialect));
}

Result<QuantPlan> BuildFile(const std::string& relative, std::string_view dialect) {
  Result<std::string> text = ReadFile(std::filesystem::path(QUANTPATH_TEST_DATA) / relative);
  EXPECT_TRUE(text.ok()) << text.status().message();
  return Build(*text, dialect);
}

// A shell with `algo` and `exclude` (a JSON list).
std::string Shell(std::string_view algo, std::string_view exclude, std::string_view kv = "null") {
  return "{\"producer\": {\"name\": \"modelopt\", \"version\": \"0.29.0\"}, \"quantization\": "
         "{\"quant_algo\": \"" +
         std::string(algo) + "\", \"kv_cache_quant_algo\": " + std::string(kv) +
         ", \"exclude_modules\": " + std::string(exclude) + "}}";
}

LayerSite Site(std::string path, std::vector<std::string> legs = {},
               SiteKind kind = SiteKind::kLinear) {
  LayerSite s;
  s.path = std::move(path);
  s.kind = kind;
  s.module_class = "RowParallelLinear";
  for (std::string& leg : legs) s.legs.push_back({std::move(leg), 0});
  return s;
}
LayerSite Qkv(std::string layer) {
  return Site(layer + ".self_attn.qkv_proj", {"q_proj", "k_proj", "v_proj"});
}
LayerSite GateUp(std::string layer) {
  return Site(layer + ".mlp.gate_up_proj", {"gate_proj", "up_proj"});
}
LayerSite Experts(std::string layer) { return Site(layer + ".mlp.experts", {}, SiteKind::kMoe); }
LayerSite Attn(std::string layer) {
  return Site(layer + ".self_attn.attn", {}, SiteKind::kAttention);
}

std::string Kind(const QuantPlan& plan, const LayerSite& site) {
  return std::string(DecisionKindName(DecideSite(plan, site).kind));
}

// ---------------------------------------------------------------------------------------------
// Corpus.

TEST(ModelOptCorpus, DeepSeekR1Nvfp4) {
  Result<QuantPlan> plan =
      BuildFile("corpus/peaceh-nv__TensorRT-LLM__DeepSeek-R1-NVFP4/hf_quant_config.json", "native");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Decision down = DecideSite(*plan, Site("model.layers.5.mlp.shared_experts.down_proj"));
  ASSERT_EQ(down.kind, DecisionKind::kQuantized);
  EXPECT_EQ(down.scheme->weight.dtype, QDType::kNVFP4);
  EXPECT_EQ(*down.scheme->weight.group_size, 16);
  EXPECT_EQ(down.scheme->weight.load.layout, SourceLayout::kModelOptNvfp4);
  EXPECT_EQ(Kind(*plan, Experts("model.layers.5")), "quantized");
  EXPECT_EQ(Kind(*plan, Site("model.layers.0.self_attn.kv_b_proj")), "unquantized");
  EXPECT_EQ(Kind(*plan, Site("model.layers.3.mlp.gate")), "unquantized");
  // "model.layers.61*" reaches the MTP layer (fnmatch's * crosses dots) but not layer 6.
  EXPECT_EQ(Kind(*plan, Site("model.layers.61.mlp.shared_experts.down_proj")), "unquantized");
  EXPECT_EQ(Kind(*plan, Site("model.layers.6.mlp.shared_experts.down_proj")), "quantized");
  EXPECT_EQ(Kind(*plan, Attn("model.layers.0")), "unquantized");  // kv_cache_quant_algo null
  // The file excludes kv_a_proj_with_mqa but not q_a_proj: the fused MLA projection cannot be
  // both, in quantpath and in the engines (shards that disagree raise there too).
  LayerSite fused =
      Site("model.layers.0.self_attn.fused_qkv_a_proj", {"q_a_proj", "kv_a_proj_with_mqa"});
  EXPECT_EQ(Kind(*plan, fused), "error");
  Result<QuantPlan> vllm = BuildFile(
      "corpus/peaceh-nv__TensorRT-LLM__DeepSeek-R1-NVFP4/hf_quant_config.json", "vllm@helpers");
  ASSERT_TRUE(vllm.ok()) << vllm.status().message();
  Decision engine = DecideSite(*vllm, fused);
  EXPECT_EQ(engine.kind, DecisionKind::kError);
  EXPECT_EQ(engine.detail,
            "ValueError: Detected some but not all shards of "
            "model.layers.0.self_attn.fused_qkv_a_proj are quantized. All shards of fused layers "
            "to have the same precision.");
}

TEST(ModelOptCorpus, ReconstructedWildcardsMidPath) {
  Result<QuantPlan> plan = BuildFile(
      "importers/modelopt/pcuenq__nvidia-nano-clone.reconstructed.hf_quant_config.json", "native");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Kind(*plan, Site("model.layers.7.mixer.conv1d")), "unquantized");
  EXPECT_EQ(Kind(*plan, Site("model.layers.mlp1.0")), "unquantized");
  EXPECT_EQ(Kind(*plan, Site("model.layers.7.mixer.in_proj")), "quantized");
}

TEST(ModelOptCorpus, ReconstructedNvfp4WithFp8KvCache) {
  Result<QuantPlan> plan = BuildFile(
      "importers/modelopt/"
      "vipertsniper__DeepSeek-R1-Distill-Qwen-32B-NVFP4.reconstructed.hf_quant_config.json",
      "native");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Decision attn = DecideSite(*plan, Attn("model.layers.0"));
  ASSERT_EQ(attn.kind, DecisionKind::kQuantized);
  EXPECT_EQ(attn.scheme->weight.dtype, QDType::kFP8E4M3);
  EXPECT_EQ(DecideSite(*plan, Qkv("model.layers.0")).scheme->input->dynamic, Dynamic::kLocal);
}

TEST(ModelOptCorpus, ReconstructedShellWithoutProducer) {
  Result<QuantPlan> plan = BuildFile(
      "importers/modelopt/tencent__Hunyuan-1.8B-Instruct-FP8.reconstructed.hf_quant_config.json",
      "native");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Decision d = DecideSite(*plan, Qkv("model.layers.0"));
  ASSERT_EQ(d.kind, DecisionKind::kQuantized);
  EXPECT_EQ(d.scheme->weight.granularity, Granularity::kPerTensor);
  EXPECT_EQ(d.scheme->input->dynamic, Dynamic::kStatic);
}

// ---------------------------------------------------------------------------------------------
// Algorithms and reading.

TEST(ModelOptAlgos, EverySchemeNatively) {
  struct Case {
    std::string_view algo;
    QDType weight;
    Granularity granularity;
    bool has_input;
  };
  for (const Case& c :
       {Case{"FP8", QDType::kFP8E4M3, Granularity::kPerTensor, true},
        Case{"FP8_PER_CHANNEL_PER_TOKEN", QDType::kFP8E4M3, Granularity::kPerChannel, true},
        Case{"FP8_PB_WO", QDType::kFP8E4M3, Granularity::kBlock, false},
        Case{"NVFP4", QDType::kNVFP4, Granularity::kTensorGroup, true},
        Case{"W4A8_AWQ", QDType::kINT4, Granularity::kGroup, true}}) {
    Result<QuantPlan> plan = Build(Shell(c.algo, "[]"), "native");
    ASSERT_TRUE(plan.ok()) << c.algo << ": " << plan.status().message();
    Decision d = DecideSite(*plan, Site("model.layers.0.mlp.down_proj"));
    ASSERT_EQ(d.kind, DecisionKind::kQuantized) << c.algo;
    EXPECT_EQ(d.scheme->weight.dtype, c.weight) << c.algo;
    EXPECT_EQ(d.scheme->weight.granularity, c.granularity) << c.algo;
    EXPECT_EQ(d.scheme->input.has_value(), c.has_input) << c.algo;
  }
  Result<QuantPlan> awq = Build(Shell("W4A8_AWQ", "[]"), "native");
  EXPECT_EQ(*DecideSite(*awq, Site("x.down_proj")).scheme->weight.group_size, 128);
  EXPECT_FALSE(Build(Shell("INT8_SQ", "[]"), "native").ok());
  EXPECT_FALSE(
      Build(R"({"quantization": {"quant_algo": "NVFP4", "group_size": 32}})", "native").ok());
}

TEST(ModelOptAlgos, FlatFormEmbeddedInConfigJson) {
  constexpr std::string_view kFlat = R"({"quant_method": "modelopt", "quant_algo": "FP8",
      "ignore": ["lm_head", "model.layers.0.mlp*"],
      "kv_cache_scheme": {"type": "float", "num_bits": 8, "dynamic": false}})";
  for (std::string_view dialect : {"native", "vllm@helpers", "sglang@helpers"}) {
    Result<QuantPlan> plan = Build(kFlat, dialect, "config.json");
    ASSERT_TRUE(plan.ok()) << dialect << ": " << plan.status().message();
    EXPECT_EQ(Kind(*plan, Site("model.layers.0.mlp.down_proj")), "unquantized") << dialect;
    EXPECT_EQ(Kind(*plan, Site("model.layers.1.mlp.down_proj")), "quantized") << dialect;
    // vLLM attaches its KV method always; SGLang and native follow kv_cache_scheme here.
    EXPECT_EQ(Kind(*plan, Attn("model.layers.0")), "quantized") << dialect;
  }
  EXPECT_TRUE(ModelOptImporter()->Detect(Sources(kFlat, "config.json")));
  EXPECT_FALSE(ModelOptImporter()->Detect(
      Sources(R"({"quant_method": "fp8", "activation_scheme": "dynamic"})", "config.json")));
}

TEST(ModelOptAlgos, VllmFromConfigErrors) {
  auto error = [](std::string_view text) {
    Result<QuantPlan> plan = Build(text, "vllm@helpers");
    return plan.ok() ? std::string("ok") : plan.status().message();
  };
  EXPECT_EQ(error(R"({"quantization": {"kv_cache_quant_algo": "FP8"}})"),
            "ValueError: Missing 'quant_algo' in quantization config");
  EXPECT_EQ(error(Shell("FP8", "[]", "8")),
            "ValueError: kv_cache_quant_algo must be a string, got <class 'int'>");
  EXPECT_EQ(error(Shell("FP8", "\"lm_head\"")),
            "ValueError: exclude_modules must be a list, got <class 'str'>");
  EXPECT_EQ(error(R"({"quantization": {"quant_algo": "FP8", "group_size": "sixteen"}})"),
            "ValueError: group_size must be an integer, got <class 'str'>");
  EXPECT_EQ(error(Shell("MIXED_PRECISION", "[]")),
            "ValueError: ModelOpt currently only supports: ['FP8', 'FP8_PER_CHANNEL_PER_TOKEN', "
            "'FP8_PB_WO', 'NVFP4'] quantizations in vLLM. Please check the "
            "`hf_quant_config.json` file for your model's quant configuration.");
  EXPECT_EQ(error(Shell("fp8", "[]")), "ok");  // upper-cased first
}

TEST(ModelOptAlgos, SglangFromConfigErrors) {
  auto error = [](std::string_view text) {
    Result<QuantPlan> plan = Build(text, "sglang@helpers");
    return plan.ok() ? std::string("ok") : plan.status().message();
  };
  EXPECT_EQ(error(R"({"quantization": {"kv_cache_quant_algo": "FP8"}})"),
            "ValueError: Cannot find 'quant_algo' in the model's quantization config. ");
  const std::string fp8_only =
      "ValueError: ModelOptFp8Config only supports static FP8 quantization in SGLang. For FP4 "
      "quantization, use ModelOptFp4Config. Check the quantization config for your model's "
      "configuration.";
  EXPECT_EQ(error(Shell("W4A8_AWQ", "[]")), fp8_only);
  EXPECT_EQ(error(Shell("fp8", "[]")), fp8_only);  // "FP8" is a case-sensitive substring
  EXPECT_EQ(error(Shell("NVFP4", "[]")), "ok");
  EXPECT_EQ(error(Shell("FP8", "[]", "8")), "ok");  // the kv algorithm is not validated
}

TEST(ModelOptAlgos, AttentionPerDialect) {
  std::string no_kv = Shell("FP8", "[]");
  EXPECT_EQ(Kind(*Build(no_kv, "native"), Attn("l")), "unquantized");
  Decision vllm = DecideSite(*Build(no_kv, "vllm@helpers"), Attn("l"));
  EXPECT_EQ(vllm.kind, DecisionKind::kQuantized);
  EXPECT_EQ(vllm.detail, "ModelOptFp8KVCacheMethod");
  EXPECT_EQ(Kind(*Build(no_kv, "sglang@helpers"), Attn("l")), "unquantized");
  EXPECT_EQ(Kind(*Build(Shell("FP8", "[]", "\"FP8\""), "sglang@helpers"), Attn("l")), "quantized");
}

// ---------------------------------------------------------------------------------------------
// Exclusion semantics (ENGINES.md section 4).

TEST(ModelOptExclude, DottedFragmentsAndBareComponents) {
  std::string text = Shell("FP8", R"(["mlp.gate", "o_proj"])");
  LayerSite gate = Site("model.layers.0.mlp.gate");
  LayerSite o_proj = Site("model.layers.0.self_attn.o_proj");
  // vLLM: substring → mlp.gate also reaches gate_up_proj.
  Result<QuantPlan> vllm = Build(text, "vllm@helpers");
  EXPECT_EQ(Kind(*vllm, gate), "unquantized");
  EXPECT_EQ(Kind(*vllm, GateUp("model.layers.0")), "unquantized");
  EXPECT_EQ(Kind(*vllm, o_proj), "unquantized");
  // SGLang: whole prefix or one dotted part → "mlp.gate" reaches nothing, "o_proj" its part.
  Result<QuantPlan> sglang = Build(text, "sglang@helpers");
  EXPECT_EQ(Kind(*sglang, gate), "quantized");
  EXPECT_EQ(Kind(*sglang, GateUp("model.layers.0")), "quantized");
  EXPECT_EQ(Kind(*sglang, o_proj), "unquantized");
  // Native: fnmatch of the whole name → neither fragment matches a full path.
  Result<QuantPlan> native = Build(text, "native");
  EXPECT_EQ(Kind(*native, gate), "quantized");
  EXPECT_EQ(Kind(*native, o_proj), "quantized");
}

TEST(ModelOptExclude, MtpGlobAndVisionTower) {
  std::string text = Shell("FP8", R"(["mtp*"])");
  LayerSite mtp = Site("model.mtp.layers.0.mlp.down_proj");
  LayerSite vision = Site("model.vision_tower.encoder.layers.0.fc1");
  EXPECT_EQ(Kind(*Build(text, "vllm@helpers"), mtp), "quantized");
  EXPECT_EQ(Kind(*Build(text, "sglang@helpers"), mtp), "unquantized");
  EXPECT_EQ(Kind(*Build(text, "native"), mtp), "quantized");
  EXPECT_EQ(Kind(*Build(text, "vllm@helpers"), vision), "unquantized");  // vLLM's vision_tower rule
  EXPECT_EQ(Kind(*Build(text, "sglang@helpers"), vision), "quantized");
}

TEST(ModelOptExclude, SglangMlaTailIgnoresTheLayerIndex) {
  std::string text = Shell("FP8", R"(["model.layers.3.self_attn.kv_a_proj_with_mqa",
                                      "model.layers.3.self_attn.q_b_proj"])");
  Result<QuantPlan> sglang = Build(text, "sglang@helpers");
  EXPECT_EQ(Kind(*sglang, Site("model.layers.9.self_attn.q_b_proj")), "unquantized");
  EXPECT_EQ(Kind(*sglang, Site("model.layers.9.self_attn.fused_qkv_a_proj_with_mqa",
                               {"q_a_proj", "kv_a_proj_with_mqa"})),
            "unquantized");
  Result<QuantPlan> vllm = Build(text, "vllm@helpers");
  EXPECT_EQ(Kind(*vllm, Site("model.layers.9.self_attn.q_b_proj")), "quantized");
}

TEST(ModelOptExclude, LanguageModelPrefixAndExperts) {
  std::string text =
      Shell("FP8", R"(["model.layers.0.self_attn*", "model.layers.1.mlp.experts.0.down_proj"])");
  LayerSite wrapped = Qkv("language_model.model.layers.0");
  EXPECT_EQ(Kind(*Build(text, "vllm@helpers"), wrapped), "quantized");
  EXPECT_EQ(Kind(*Build(text, "sglang@helpers"), wrapped), "unquantized");
  // vLLM's is_layer_skipped: an experts entry that contains the MoE prefix skips it.
  Decision moe = DecideSite(*Build(text, "vllm@helpers"), Experts("model.layers.1"));
  EXPECT_EQ(moe.kind, DecisionKind::kUnquantized);
  EXPECT_EQ(moe.detail, "get_quant_method returned None");
  EXPECT_EQ(DecideSite(*Build(text, "sglang@helpers"), Experts("model.layers.0")).detail,
            "ModelOptFp8MoEMethod");
}

TEST(ModelOptExclude, NativeFusedLegsMustAgree) {
  std::string text = Shell("FP8", R"(["*.q_proj"])");
  Decision d = DecideSite(*Build(text, "native"), Qkv("model.layers.0"));
  EXPECT_EQ(d.kind, DecisionKind::kError);
  EXPECT_NE(d.detail.find("q_proj → skip"), std::string::npos) << d.detail;
  EXPECT_EQ(Kind(*Build(Shell("FP8", R"(["*_proj"])"), "native"), Qkv("model.layers.0")),
            "unquantized");
}

// ---------------------------------------------------------------------------------------------
// MIXED_PRECISION.

constexpr std::string_view kMixed = R"({"quantization": {
  "quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": "FP8",
  "exclude_modules": ["lm_head"],
  "quantized_layers": {
    "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
    "model.layers.0.self_attn.k_proj": {"quant_algo": "FP8"},
    "model.layers.0.self_attn.v_proj": {"quant_algo": "FP8"},
    "model.layers.1.self_attn.q_proj": {"quant_algo": "FP8"},
    "model.layers.1.self_attn.k_proj": {"quant_algo": "NVFP4", "group_size": 16},
    "model.layers.1.self_attn.v_proj": {"quant_algo": "FP8"},
    "model.layers.0.mlp.experts": {"quant_algo": "NVFP4", "group_size": 16},
    "model.layers.1.mlp.experts.0.gate_proj": {"quant_algo": "W4A8_AWQ"},
    "model.layers.1.mlp.experts.1.gate_proj": {"quant_algo": "W4A8_AWQ"},
    "model.layers.2.mlp.experts.0.gate_proj": {"quant_algo": "FP8"},
    "model.layers.2.mlp.experts.0.up_proj": {"quant_algo": "NVFP4"}}}})";

TEST(ModelOptMixed, TableLookupThroughLegsAndExperts) {
  Result<QuantPlan> plan = Build(kMixed, "native");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Decision qkv = DecideSite(*plan, Qkv("model.layers.0"));
  ASSERT_EQ(qkv.kind, DecisionKind::kQuantized);
  EXPECT_EQ(qkv.scheme->weight.dtype, QDType::kFP8E4M3);
  Decision conflict = DecideSite(*plan, Qkv("model.layers.1"));
  EXPECT_EQ(conflict.kind, DecisionKind::kError);
  EXPECT_NE(conflict.detail.find("k_proj → quantize w4a4-nvfp4"), std::string::npos)
      << conflict.detail;
  EXPECT_EQ(DecideSite(*plan, Experts("model.layers.0")).scheme->weight.dtype, QDType::kNVFP4);
  EXPECT_EQ(DecideSite(*plan, Experts("model.layers.1")).scheme->weight.dtype, QDType::kINT4);
  Decision experts = DecideSite(*plan, Experts("model.layers.2"));
  EXPECT_EQ(experts.kind, DecisionKind::kError);
  EXPECT_NE(experts.detail.find("model.layers.2.mlp.experts.0.up_proj"), std::string::npos);
  EXPECT_EQ(Kind(*plan, Site("model.layers.0.mlp.down_proj")), "unquantized");  // not listed
  EXPECT_EQ(Kind(*plan, Attn("model.layers.0")), "quantized");
  // The engines' recorded versions reject MIXED_PRECISION.
  EXPECT_FALSE(Build(kMixed, "vllm@helpers").ok());
  EXPECT_FALSE(Build(kMixed, "sglang@helpers").ok());
}

TEST(ModelOptMixed, TableFromTheStandaloneFileAndErrors) {
  std::vector<SourceFile> files;
  files.push_back({"config.json",
                   {},
                   *ParseJson(R"({"quantization_config": {"quant_method": "modelopt",
                                  "quant_algo": "MIXED_PRECISION"}})",
                              "config.json")});
  files.push_back({"hf_quant_config.json", {}, *ParseJson(kMixed, "hf_quant_config.json")});
  Result<QuantPlan> plan =
      ModelOptImporter()->BuildPlan(ConfigSources::FromMemory(std::move(files)), D("native"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Kind(*plan, Qkv("model.layers.0")), "quantized");
  EXPECT_FALSE(Build(R"({"quantization": {"quant_algo": "MIXED_PRECISION"}})", "native").ok());
  EXPECT_FALSE(Build(R"({"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers":
                        {"a.b": {"quant_algo": "INT3"}}}})",
                     "native")
                   .ok());
}

}  // namespace
}  // namespace quantpath
