// The pipeline stage: opening a folder, deciding every site with its spec and bytes, one layer with
// its trace and the name that decided it, and loading a layer against the fp64 reference.
#include <gtest/gtest.h>

#include <filesystem>

#include "quantpath/pipeline.h"

namespace quantpath {
namespace {

const std::string kSource = QUANTPATH_SOURCE_DIR;
const std::string kDeepseekTiny = kSource + "/examples/deepseek-tiny";
const std::string kLlamaTiny = kSource + "/examples/llama-tiny-fp8";

Model OpenOrDie(const std::string& dir, std::string_view engine = "native",
                std::string_view device = "cpu") {
  Result<OpenOptions> options = OpenOptions::Parse(engine, "", device);
  EXPECT_TRUE(options.ok()) << options.status().message();
  Result<Model> model = OpenModel(dir, *options);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return std::move(*model);
}

const LayerDecision* Find(const std::vector<LayerDecision>& layers, std::string_view path) {
  for (const LayerDecision& l : layers) {
    if (l.site->path == path) return &l;
  }
  ADD_FAILURE() << "no layer " << path;
  return nullptr;
}

// A config-only folder: deepseek-tiny's architecture with `quantization` as its description.
std::string DeepseekFolder(const std::string& name, const std::string& quantization) {
  Result<Json> config = ReadJsonFile(kDeepseekTiny + "/config.json");
  EXPECT_TRUE(config.ok()) << config.status().message();
  for (auto& [key, value] : config->mutable_members()) {
    if (key != "quantization_config") continue;
    Result<Json> q = ParseJson(quantization, "quantization_config");
    EXPECT_TRUE(q.ok()) << q.status().message();
    value = *q;
  }
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::create_directories(dir);
  EXPECT_TRUE(WriteFileAtomically(dir / "config.json", ToJson(*config, 1)).ok());
  return dir.string();
}

// compressed-tensors fp8 per channel on named projections (regex targets), with an fp8 KV cache.
constexpr std::string_view kCtByName = R"({
  "quant_method": "compressed-tensors", "format": "float-quantized",
  "config_groups": {"group_0": {
    "targets": ["re:.*q_a_proj$", "re:.*kv_a_proj_with_mqa$", "re:.*o_proj$",
                "re:.*gate_proj$", "re:.*up_proj$", "re:.*down_proj$"],
    "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": true,
                "dynamic": false},
    "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                          "symmetric": true, "dynamic": true}}},
  "ignore": ["lm_head"],
  "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": true,
                      "dynamic": false}})";

TEST(OpenOptions, ParsesTheCommandLineSpellings) {
  Result<OpenOptions> o = OpenOptions::Parse("vllm@0.33", "fp8", "sm90");
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->dialect.id, DialectId::kVllm033);
  EXPECT_EQ(o->quantization, "fp8");
  EXPECT_EQ(o->device.sm, 90);

  Result<OpenOptions> engine = OpenOptions::Parse("tensorrt", "", "cpu");
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("native, vllm, sglang, vllm@helpers, sglang@helpers, "
                                           "vllm@0.33, sglang@0.5.23, vllm@0.34"),
            std::string::npos)
      << engine.status().message();
  Result<OpenOptions> device = OpenOptions::Parse("native", "", "tpu");
  ASSERT_FALSE(device.ok());
  EXPECT_TRUE(device.status().message().starts_with("--device")) << device.status().message();
}

TEST(OpenModel, UnusableFoldersAreErrors) {
  Result<Model> missing = OpenModel("/nonexistent/folder", OpenOptions{});
  EXPECT_FALSE(missing.ok());
  OpenOptions forced;
  forced.quantization = "gptq";
  Result<Model> wrong = OpenModel(kDeepseekTiny, forced);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("fp8"), std::string::npos) << wrong.status().message();
}

ConfigSources InMemory(std::string_view architecture, std::string_view quantization) {
  Result<Json> root =
      ParseJson(std::string(R"({"architectures": [")") + std::string(architecture) +
                    R"("], "quantization_config": )" + std::string(quantization) + "}",
                "config.json");
  EXPECT_TRUE(root.ok()) << root.status().message();
  std::vector<SourceFile> files;
  files.push_back({"config.json", {}, root.ok() ? *root : Json::Object()});
  return ConfigSources::FromMemory(std::move(files));
}

// vLLM 0.33 renames the config's Hugging Face names with the model's hf_to_vllm_mapper
// ("model.visual." → "visual."), so an exclusion written for the checkpoint reaches the engine's
// module; the mapper comes from config.json's architecture or from the engine class given.
TEST(ImportForEngine, AppliesTheModelsNameMapper) {
  constexpr std::string_view kModelOpt =
      R"({"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["model.visual*"]})";
  LayerSite visual;
  visual.path = "visual.blocks.0.attn.proj";
  visual.module_class = "RowParallelLinear";
  const Dialect vllm = DialectAt(DialectId::kVllm033);

  ConfigSources qwen = InMemory("Qwen2_5_VLForConditionalGeneration", kModelOpt);
  Result<QuantPlan> mapped = ImportForEngine(qwen, vllm, std::nullopt);
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  EXPECT_EQ(DecideSite(*mapped, visual).kind, DecisionKind::kUnquantized);
  Result<QuantPlan> unmapped = ImportPlan(qwen, vllm);
  ASSERT_TRUE(unmapped.ok()) << unmapped.status().message();
  EXPECT_EQ(DecideSite(*unmapped, visual).kind, DecisionKind::kQuantized);

  ConfigSources llama = InMemory("LlamaForCausalLM", kModelOpt);
  Result<QuantPlan> by_class =
      ImportForEngine(llama, vllm, std::nullopt, "qwen2_5_vl.Qwen2_5_VLForConditionalGeneration");
  ASSERT_TRUE(by_class.ok()) << by_class.status().message();
  EXPECT_EQ(DecideSite(*by_class, visual).kind, DecisionKind::kUnquantized);
}

// The real Qwen3.6-27B AutoRound-AWQ config (quant_method awq, Qwen3_5ForConditionalGeneration):
// vLLM 0.33 maps modules_to_not_convert with the Qwen3-VL mapper Qwen3.5 inherits, so an entry
// written as model.language_model.layers.19.mlp.down_proj keeps the engine's
// language_model.model.layers.19.mlp.down_proj unquantized (recorded from vLLM building the real
// model class: vllm-qwen3-6-27b-autoround-awq).
TEST(ImportForEngine, Qwen35MapsAutoRoundAwqExclusions) {
  Result<ConfigSources> sources = ConfigSources::Load(
      kSource + "/tests/data/corpus/hualayn__ai-articles__Qwen3.6-27B-AutoRound-AWQ");
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  Result<QuantPlan> plan = ImportForEngine(*sources, DialectAt(DialectId::kVllm033), std::nullopt);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  LayerSite excluded;
  excluded.path = "language_model.model.layers.19.mlp.down_proj";
  excluded.module_class = "RowParallelLinear";
  EXPECT_EQ(DecideSite(*plan, excluded).kind, DecisionKind::kUnquantized);
  LayerSite quantized = excluded;
  quantized.path = "language_model.model.layers.18.mlp.down_proj";
  EXPECT_EQ(DecideSite(*plan, quantized).kind, DecisionKind::kQuantized);
}

// Bytes from DESIGN.md's layout formulas, computed here from the shapes alone.
TEST(DecideAll, EverySiteWithItsSpecAndBytes) {
  const Model model = OpenOrDie(kDeepseekTiny);
  const std::vector<LayerDecision> layers = DecideAll(model).value();
  ASSERT_EQ(layers.size(), model.sites.sites.size());
  EXPECT_EQ(CountErrors(layers), 0);
  for (size_t i = 0; i < layers.size(); ++i) EXPECT_EQ(layers[i].site, &model.sites.sites[i]);

  const LayerDecision* embed = Find(layers, "model.embed_tokens");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->spec->ToId(), "bf16");
  EXPECT_EQ(embed->bytes, 512 * 256 * 2);  // bf16 torch_dtype

  // fused q_a_proj (128) + kv_a_proj_with_mqa (32 + 8) rows over hidden 256, 128×128 fp32 scales.
  const LayerDecision* qkv_a = Find(layers, "model.layers.0.self_attn.fused_qkv_a_proj");
  ASSERT_NE(qkv_a, nullptr);
  EXPECT_EQ(qkv_a->decision.kind, DecisionKind::kQuantized);
  EXPECT_EQ(qkv_a->spec->ToId(), "fp8_block_128_128");
  EXPECT_EQ(qkv_a->kernel_available, true);
  EXPECT_EQ(qkv_a->bytes, 168 * 256 + 2 * 2 * 4);
  EXPECT_FALSE(qkv_a->kv.has_value());

  // 8 experts × (gate + up [64, 256] + down [256, 64]), one 128×128 scale block per projection.
  const LayerDecision* experts = Find(layers, "model.layers.1.mlp.experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->bytes, 8 * (3 * 64 * 256 + 3 * 1 * 2 * 4));

  const LayerDecision* attn = Find(layers, "model.layers.0.self_attn.attn");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->decision.kind, DecisionKind::kUnquantized);
  ASSERT_TRUE(attn->kv.has_value());
  EXPECT_FALSE(attn->kv->scheme.has_value());
  EXPECT_FALSE(attn->kv->engine_method);
  EXPECT_FALSE(attn->spec.has_value());
  EXPECT_FALSE(attn->kernel_available.has_value());
  EXPECT_EQ(attn->bytes, 0);
}

// vLLM attaches Fp8KVCacheMethod to every attention layer under fp8 (the recorded cases count it
// "quantized"), but without a KV scheme the cache keeps the model dtype: the pipeline says
// unquantized and names the attached method.
TEST(DecideAll, AnEngineKvMethodWithoutASchemeIsAnAutoCache) {
  const Model model = OpenOrDie(kDeepseekTiny, "vllm@helpers");
  const std::vector<LayerDecision> layers = DecideAll(model).value();
  const LayerDecision* attn = Find(layers, "model.layers.0.self_attn.attn");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(DecideSite(model.plan, *attn->site).kind, DecisionKind::kQuantized);
  EXPECT_EQ(attn->decision.kind, DecisionKind::kUnquantized);
  EXPECT_FALSE(attn->decision.scheme.has_value());
  ASSERT_TRUE(attn->kv.has_value());
  EXPECT_TRUE(attn->kv->engine_method);
  EXPECT_EQ(attn->kv->engine_method_name, "Fp8KVCacheMethod");
  EXPECT_FALSE(attn->kv->scheme.has_value());
  EXPECT_EQ(attn->kv->dtype, QDType::kBF16);  // config.json's torch_dtype bfloat16
}

TEST(DecideAll, AKvCacheSchemeQuantizesAttention) {
  const Model model = OpenOrDie(DeepseekFolder("ct-kv", std::string(kCtByName)));
  const std::vector<LayerDecision> layers = DecideAll(model).value();
  const LayerDecision* attn = Find(layers, "model.layers.0.self_attn.attn");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->decision.kind, DecisionKind::kQuantized);
  ASSERT_TRUE(attn->kv.has_value() && attn->kv->scheme.has_value());
  EXPECT_EQ(attn->kv->scheme->weight.dtype, QDType::kFP8E4M3);
  EXPECT_EQ(attn->kv->scheme->weight.granularity, Granularity::kPerTensor);
  EXPECT_EQ(attn->kv->dtype, QDType::kFP8E4M3);
}

// vLLM 0.33.0's fp8 and compressed-tensors configs test isinstance(layer, Attention), which
// MLAAttention does not pass: DeepSeek's MLA attention gets no KV-cache method there (recorded:
// releases/vllm-0.33.0/cases/vllm-fp8.json vllm-fp8-kv-per-attention-class), while SGLang's
// RadixAttention does.
TEST(DecideAll, KvCacheMethodsFollowTheAttentionClass) {
  const Model vllm = OpenOrDie(kDeepseekTiny, "vllm@0.33");
  const std::vector<LayerDecision> vllm_layers = DecideAll(vllm).value();
  const LayerDecision* mla = Find(vllm_layers, "model.layers.0.self_attn.attn");
  ASSERT_NE(mla, nullptr);
  EXPECT_EQ(mla->site->module_class, "MLAAttention");
  EXPECT_EQ(mla->decision.kind, DecisionKind::kUnquantized);
  EXPECT_EQ(mla->decision.detail, "get_quant_method returned None");
  ASSERT_TRUE(mla->kv.has_value());
  EXPECT_FALSE(mla->kv->engine_method);

  const Model sglang = OpenOrDie(kDeepseekTiny, "sglang@0.5.23");
  const std::vector<LayerDecision> sglang_layers = DecideAll(sglang).value();
  const LayerDecision* mqa = Find(sglang_layers, "model.layers.0.self_attn.attn_mqa");
  ASSERT_NE(mqa, nullptr);
  ASSERT_TRUE(mqa->kv.has_value());
  EXPECT_TRUE(mqa->kv->engine_method);
  EXPECT_EQ(mqa->kv->engine_method_name, "Fp8KVCacheMethod");

  // A GQA model's Attention still gets the method under vllm@0.33.
  const Model llama = OpenOrDie(kLlamaTiny, "vllm@0.33");
  const std::vector<LayerDecision> llama_layers = DecideAll(llama).value();
  int attention = 0;
  for (const LayerDecision& l : llama_layers) {
    if (l.site->kind != SiteKind::kAttention) continue;
    ++attention;
    ASSERT_TRUE(l.kv.has_value());
    EXPECT_TRUE(l.kv->engine_method) << l.site->path;
  }
  EXPECT_GT(attention, 0);

  // compressed-tensors with a kv_cache_scheme: vLLM leaves the MLA cache alone, SGLang attaches
  // CompressedTensorsKVCacheMethod with the scheme.
  const std::string ct = DeepseekFolder("ct-kv-classes", std::string(kCtByName));
  const Model ct_vllm = OpenOrDie(ct, "vllm@0.33");
  const std::vector<LayerDecision> ct_vllm_layers = DecideAll(ct_vllm).value();
  const LayerDecision* ct_mla = Find(ct_vllm_layers, "model.layers.0.self_attn.attn");
  ASSERT_NE(ct_mla, nullptr);
  EXPECT_EQ(ct_mla->decision.kind, DecisionKind::kUnquantized);
  EXPECT_FALSE(ct_mla->kv->scheme.has_value());
  const Model ct_sglang = OpenOrDie(ct, "sglang@0.5.23");
  const std::vector<LayerDecision> ct_sglang_layers = DecideAll(ct_sglang).value();
  const LayerDecision* ct_mqa = Find(ct_sglang_layers, "model.layers.0.self_attn.attn_mqa");
  ASSERT_NE(ct_mqa, nullptr);
  EXPECT_EQ(ct_mqa->decision.kind, DecisionKind::kQuantized);
  EXPECT_EQ(ct_mqa->kv->engine_method_name, "CompressedTensorsKVCacheMethod");
}

// SGLang 0.5.23's compressed-tensors attaches nothing to RadixAttention without a kv_cache_scheme
// (recorded: releases/sglang-0.5.23/cases/sglang-compressed-tensors.json
// sglang-ct-no-kv-scheme-radix-attention).
TEST(DecideAll, SglangCompressedTensorsWithoutKvSchemeAttachesNothing) {
  std::string no_kv(kCtByName);
  const size_t kv = no_kv.find(R"("kv_cache_scheme")");
  ASSERT_NE(kv, std::string::npos);
  no_kv = no_kv.substr(0, no_kv.rfind(',', kv)) + "}";
  const Model model = OpenOrDie(DeepseekFolder("ct-no-kv", no_kv), "sglang@0.5.23");
  const std::vector<LayerDecision> layers = DecideAll(model).value();
  const LayerDecision* mqa = Find(layers, "model.layers.0.self_attn.attn_mqa");
  ASSERT_NE(mqa, nullptr);
  EXPECT_EQ(mqa->decision.kind, DecisionKind::kUnquantized);
  EXPECT_FALSE(mqa->kv->engine_method);
}

// The spec names the storage on the device; whether this build has a kernel for it is reported
// beside it and never changes it.
TEST(DecideAll, KernelAvailabilityIsReportedNotChosen) {
  const Model cpu = OpenOrDie(kDeepseekTiny, "native", "cpu");
  const Model gpu = OpenOrDie(kDeepseekTiny, "native", "sm90");
  const std::vector<LayerDecision> on_cpu = DecideAll(cpu).value();
  const std::vector<LayerDecision> on_gpu = DecideAll(gpu).value();
  ASSERT_EQ(on_cpu.size(), on_gpu.size());
  for (size_t i = 0; i < on_cpu.size(); ++i) {
    EXPECT_EQ(on_cpu[i].spec, on_gpu[i].spec) << on_cpu[i].site->path;
    EXPECT_EQ(on_cpu[i].bytes, on_gpu[i].bytes) << on_cpu[i].site->path;
    if (!on_cpu[i].spec) continue;
    EXPECT_EQ(on_cpu[i].kernel_available, true) << on_cpu[i].site->path;
    EXPECT_EQ(on_gpu[i].kernel_available,
              KernelRegistry::Global().Supports(*on_gpu[i].spec, gpu.device));
  }
}

TEST(DecideLayer, NamesTheLegOrExpertThatDecided) {
  const std::string dir = DeepseekFolder("ct-by-name", std::string(kCtByName));
  const Model native = OpenOrDie(dir);
  Result<ExplainedLayer> fused = DecideLayer(native, "model.layers.0.self_attn.kv_a_proj_with_mqa");
  ASSERT_TRUE(fused.ok()) << fused.status().message();
  EXPECT_EQ(fused->resolved.site->path, "model.layers.0.self_attn.fused_qkv_a_proj");
  EXPECT_NE(fused->resolved.note.find("leg kv_a_proj_with_mqa"), std::string::npos);
  const Decision& d = fused->layer.decision;
  EXPECT_EQ(d.kind, DecisionKind::kQuantized);
  EXPECT_EQ(d.leg, 0u);  // both legs hit the same group; the first leg's hit is taken
  EXPECT_EQ(MatchedName(d, *fused->resolved.site), "model.layers.0.self_attn.q_a_proj");
  EXPECT_FALSE(d.expert.has_value());
  EXPECT_FALSE(d.trace.empty());

  Result<ExplainedLayer> plain = DecideLayer(native, "model.layers.0.self_attn.o_proj");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(MatchedName(plain->layer.decision, *plain->resolved.site),
            "model.layers.0.self_attn.o_proj");
  EXPECT_FALSE(plain->layer.decision.leg.has_value());
  EXPECT_TRUE(plain->resolved.note.empty());

  // vLLM 0.33 looks experts up through expert 0's checkpoint projections (the recorded vLLM code
  // matched the experts module's own path).
  const Model vllm = OpenOrDie(dir, "vllm@0.33");
  Result<ExplainedLayer> experts = DecideLayer(vllm, "model.layers.1.mlp.experts");
  ASSERT_TRUE(experts.ok()) << experts.status().message();
  const Decision& e = experts->layer.decision;
  EXPECT_EQ(e.kind, DecisionKind::kQuantized) << e.rule << " " << e.detail;
  EXPECT_EQ(e.expert, 0);
  EXPECT_EQ(e.leg, 0u);
  EXPECT_EQ(MatchedName(e, *experts->resolved.site), "model.layers.1.mlp.experts.0.gate_proj");

  // The default action decides fp8 layers: no rule, so nothing matched.
  const Model fp8 = OpenOrDie(kDeepseekTiny);
  Result<ExplainedLayer> by_default = DecideLayer(fp8, "model.layers.0.self_attn.o_proj");
  ASSERT_TRUE(by_default.ok());
  EXPECT_FALSE(by_default->layer.decision.rule_hit);
  EXPECT_TRUE(MatchedName(by_default->layer.decision, *by_default->resolved.site).empty());

  EXPECT_EQ(DecideLayer(fp8, "model.layers.9.nothing").status().code(), ErrorCode::kNotFound);
}

// README's measured error for this layer is 3.1e-7 against a tolerance of 2e-2.
TEST(LoadLayer, AFusedLegRunsWithinToleranceOfTheReference) {
  const Model model = OpenOrDie(kLlamaTiny);
  Result<LoadedLayer> layer = LoadLayer(model, "model.layers.0.self_attn.k_proj");
  ASSERT_TRUE(layer.ok()) << layer.status().message();
  EXPECT_EQ(layer->resolved.site->path, "model.layers.0.self_attn.qkv_proj");
  EXPECT_EQ(layer->key.ToId(), "fp8_block_128_128");
  EXPECT_EQ(layer->activation.mode, ActMode::kDynamicGroup);
  EXPECT_EQ(layer->leg_prefixes.size(), 3u);
  // q: 4 heads × 64, k and v: 2 heads × 64 each.
  EXPECT_EQ(layer->linear.out_features(), 256 + 128 + 128);
  EXPECT_EQ(layer->linear.in_features(), 256);
  Result<ReferenceLayer> ref = LoadReference(*layer);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_EQ(ref->rows, 512);
  EXPECT_EQ(ref->cols, 256);

  Result<LayerRun> run = RunSeeded(*layer, 16, 7);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(run->pass());
  EXPECT_LT(run->rel, 1e-5);
  EXPECT_GT(run->max_abs, 0);  // fp32 accumulation differs from double somewhere
  EXPECT_EQ(run->m, 16);
  EXPECT_FALSE(run->kernel.empty());
  EXPECT_FALSE(RunSeeded(*layer, 0, 7).ok());
}

// DecideAll materializes a scheme once for all its sites, and loading a decided site uses that
// spec and that decision: the loader decides nothing again.
TEST(LoadLayer, LoadsIntoTheSpecOfItsDecision) {
  const Model model = OpenOrDie(kLlamaTiny);
  Result<std::vector<LayerDecision>> layers = DecideAll(model);
  ASSERT_TRUE(layers.ok()) << layers.status().message();
  const LayerDecision* qkv = Find(*layers, "model.layers.0.self_attn.qkv_proj");
  const LayerDecision* down = Find(*layers, "model.layers.0.mlp.down_proj");
  const LayerDecision* head = Find(*layers, "lm_head");
  const LayerDecision* attention = Find(*layers, "model.layers.0.self_attn.attn");
  ASSERT_TRUE(qkv && down && head && attention);
  ASSERT_NE(qkv->weight_spec, nullptr) << qkv->materialized.message();
  EXPECT_EQ(qkv->weight_spec, down->weight_spec);
  EXPECT_EQ(head->weight_spec->key().ToId(), "bf16");
  EXPECT_EQ(attention->weight_spec, nullptr);
  Result<LoadedLayer> loaded = LoadLayer(model, *down);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(&loaded->linear.spec(), down->weight_spec.get());
  EXPECT_EQ(loaded->resolved.site, down->site);
  // A decision of error is the loader's error, whatever the plan said before.
  LayerDecision refused = *down;
  refused.decision.kind = DecisionKind::kError;
  refused.decision.detail = "refused here";
  Result<LoadedLayer> error = LoadLayer(model, refused);
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.status().message().find("decided error: refused here"), std::string::npos)
      << error.status().message();
}

TEST(LoadLayer, SitesWithoutAForwardAndFoldersWithoutWeightsAreErrors) {
  const Model model = OpenOrDie(kLlamaTiny);
  for (const char* path : {"model.layers.0.self_attn.attn", "model.embed_tokens"}) {
    Result<LoadedLayer> layer = LoadLayer(model, path);
    ASSERT_FALSE(layer.ok()) << path;
    EXPECT_NE(layer.status().message().find(path), std::string::npos) << layer.status().message();
  }
  EXPECT_EQ(LoadLayer(model, "model.layers.9.mlp.down_proj").status().code(), ErrorCode::kNotFound);
  const Model config_only = OpenOrDie(kDeepseekTiny);
  EXPECT_FALSE(LoadLayer(config_only, "model.layers.0.self_attn.o_proj").ok());
}

}  // namespace
}  // namespace quantpath
