// CheckFolder on the fixtures: every producer- and documentation-written folder checks clean, and
// copies of them with exactly one defect each give exactly that finding, naming the file, the
// tensor and the layer:
//   missing tensor (the weight scale of one layer, once per source layout), tensor no layer
//   consumes, layer stored quantized that the plan leaves unquantized (the LM head) and the
//   reverse (o_proj in bf16), dense shape, missing and misshapen non-layer parameter, a tensor the
//   engines skip (warning), index ↔ shard disagreement, decisions per engine (bitsandbytes experts
//   that vLLM leaves unquantized), fused legs the config quantizes differently, and a folder
//   without weights.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "fmt/format.h"
#include "quantpath/pipeline.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kData = std::string(QUANTPATH_TEST_DATA) + "/";

Result<CheckReport> Check(const std::string& dir, const std::string& engine = "native",
                          int64_t tp = 1) {
  QP_ASSIGN_OR_RETURN(OpenOptions options, testing::FixtureOptions(dir, tp));
  if (engine != "native") {
    QP_ASSIGN_OR_RETURN(options, OpenOptions::Parse(engine, "", "cpu", "auto", tp));
  }
  return CheckFolder(dir, options);
}

std::string Describe(const CheckReport& report) {
  std::string text;
  for (const Finding& f : report.findings) text += "\n  " + f.message;
  return text;
}

// The single error finding of checking `dir`, which must be of `kind`.
Finding OnlyError(const std::filesystem::path& dir, FindingKind kind,
                  const std::string& engine = "native") {
  Result<CheckReport> report = Check(dir.string(), engine);
  EXPECT_TRUE(report.ok()) << report.status().message();
  if (!report.ok()) return {};
  EXPECT_EQ(report->errors, 1) << Describe(*report);
  for (const Finding& f : report->findings) {
    if (!f.error) continue;
    EXPECT_EQ(f.kind, kind) << f.message;
    return f;
  }
  return {};
}

void ExpectNames(const Finding& f, const std::string& tensor, const std::string& layer) {
  EXPECT_EQ(f.tensor, tensor);
  EXPECT_EQ(f.layer, layer);
  EXPECT_NE(f.message.find(tensor), std::string::npos) << f.message;
  EXPECT_NE(f.message.find(".safetensors"), std::string::npos) << f.message;  // the file
  if (!layer.empty()) {
    EXPECT_NE(f.message.find(layer), std::string::npos) << f.message;
  }
}

TEST(CheckTest, EveryFixtureChecksClean) {
  for (const std::string& fixture : testing::FixtureFolders()) {
    SCOPED_TRACE(fixture);
    Result<CheckReport> report = Check(kData + fixture);
    ASSERT_TRUE(report.ok()) << report.status().message();
    EXPECT_EQ(report->errors, 0) << Describe(*report);
    EXPECT_GT(report->tensors, 0);
  }
}

// One folder per source layout: one layer's weight scale (or global) removed.
TEST(CheckTest, AMissingScaleIsNamedInEveryLayout) {
  struct Case {
    std::string folder;
    std::string tensor;
    std::string layer;
  };
  const std::string o = "model.layers.0.self_attn.o_proj";
  const Case kCases[] = {
      {"producers/ct_llama_fp8_block", o + ".weight_scale", o},
      {"producers/mo_llama_fp8", o + ".weight_scale", o},
      {"producers/ar_llama_auto_awq_w4g64_asym", o + ".scales", o},
      {"producers/gm_llama_gptq_w4g64_sym_desc_act", o + ".scales", o},
      {"producers/ct_llama_w4a16_g64_sym", o + ".weight_scale", o},
      {"producers/ct_llama_w8a8_int8_static", o + ".weight_scale", o},
      {"producers/ct_llama_nvfp4", o + ".weight_global_scale", o},
      {"producers/mo_llama_nvfp4", o + ".weight_scale_2", o},
      {"producers/ct_llama_mxfp4", o + ".weight_scale", o},
      {"producers/mo_llama_w4a8_awq", o + ".weight_scale", o},
      {"producers/bnb_llama_nf4_dq", o + ".weight.absmax", o},
      {"producers/bnb_llama_int8", o + ".SCB", o},
      {"documented/modelslim_llama_w8a8", o + ".input_scale", o},  // static: the spec holds it
      {"documented/modelslim_llama_w4a8_mxfp", o + ".weight_scale", o},
      {"documented/gptoss_mxfp4", "model.layers.0.mlp.experts.down_proj_scales",
       "model.layers.0.mlp.experts"},
      {"producers/ct_qwen3moe_w4a16_g64_sym", "model.layers.1.mlp.experts.2.up_proj.weight_scale",
       "model.layers.1.mlp.experts"}};
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.folder);
    const std::filesystem::path dir = testing::MutatedFixture(
        kData + c.folder, [&](testing::TestTensor* t) { return t->name != c.tensor; });
    ExpectNames(OnlyError(dir, FindingKind::kMissingTensor), c.tensor, c.layer);
  }
}

TEST(CheckTest, ATensorNoLayerConsumes) {
  const std::string extra = "model.layers.0.mlp.shared_gate.weight";
  const std::filesystem::path dir = testing::MutatedFixture(
      kData + "producers/ct_llama_w4a16_g64_sym", [](testing::TestTensor*) { return true; },
      {testing::Bf16Tensor(extra, {2}, {1.0f, 2.0f})});
  ExpectNames(OnlyError(dir, FindingKind::kUnconsumed), extra, "");
}

// The head the config ignores stored packed; o_proj, which it quantizes, stored in bf16.
TEST(CheckTest, StoredQuantizedAndStoredUnquantized) {
  const std::string src = kData + "producers/ct_llama_w4a16_g64_sym";
  const std::filesystem::path head = testing::MutatedFixture(src, [](testing::TestTensor* t) {
    if (t->name == "lm_head.weight") {
      t->name = "lm_head.weight_packed";
      t->dtype = "I32";
      t->shape = {128, 16};
      t->bytes.resize(128 * 16 * 4);
    }
    return true;
  });
  ExpectNames(OnlyError(head, FindingKind::kStoredQuantized), "lm_head.weight_packed", "lm_head");

  const std::string o = "model.layers.1.self_attn.o_proj";
  const std::filesystem::path dense = testing::MutatedFixture(
      src, [&](testing::TestTensor* t) { return !t->name.starts_with(o + "."); },
      {testing::Bf16Tensor(o + ".weight", {128, 128}, std::vector<float>(128 * 128, 0.5f))});
  ExpectNames(OnlyError(dense, FindingKind::kStoredUnquantized), o + ".weight", o);
}

TEST(CheckTest, ADenseWeightOfTheWrongShape) {
  const std::filesystem::path dir =
      testing::MutatedFixture(kData + "producers/bf16_llama", [](testing::TestTensor* t) {
        if (t->name == "model.layers.0.self_attn.k_proj.weight") t->shape = {128, 64};
        return true;
      });
  const Finding f = OnlyError(dir, FindingKind::kShape);
  ExpectNames(f, "model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.qkv_proj");
  EXPECT_EQ(f.expected, "[64, 128]");
  EXPECT_EQ(f.found, "[128, 64]");
}

// A copy of `src` where `tensor` has `shape` (its bytes resized to match, so that only the shape
// is wrong) and, where `dtype` is given, that dtype.
std::filesystem::path Reshaped(const std::string& src, const std::string& tensor,
                               std::vector<int64_t> shape, const std::string& dtype = "") {
  return testing::MutatedFixture(kData + src, [&](testing::TestTensor* t) {
    if (t->name != tensor) return true;
    int64_t before = 1, after = 1;
    for (int64_t d : t->shape) before *= d;
    for (int64_t d : shape) after *= d;
    const size_t element = t->bytes.size() / static_cast<size_t>(before);
    const size_t width = dtype == "I16" || dtype == "BF16"  ? 2
                         : dtype == "I32" || dtype == "F32" ? 4
                                                            : element;
    t->shape = shape;
    if (!dtype.empty()) t->dtype = dtype;
    t->bytes.assign(static_cast<size_t>(after) * width, 0);
    return true;
  });
}

// One quantized tensor per source layout given a shape its layout and the config rule out.
TEST(CheckTest, AMisshapenQuantizedTensorIsNamedInEveryLayout) {
  struct Case {
    std::string folder;
    std::string tensor;
    std::vector<int64_t> shape;
    std::string layer;
  };
  const std::string o = "model.layers.0.self_attn.o_proj";
  const std::string qkv = "model.layers.0.self_attn.qkv_proj";
  const std::string k = "model.layers.0.self_attn.k_proj";
  const Case kCases[] = {
      {"producers/ct_llama_fp8_block", o + ".weight_scale", {1, 2}, o},
      {"producers/mo_llama_fp8", o + ".weight_scale", {2}, o},
      {"producers/ar_llama_auto_awq_w4g64_asym", o + ".qzeros", {2, 8}, o},
      {"producers/gm_llama_gptq_w4g64_sym_desc_act", o + ".qweight", {8, 128}, o},
      {"producers/gm_llama_gptq_w4g64_sym_desc_act", o + ".g_idx", {64}, o},
      {"producers/ct_llama_w4a16_g64_sym", k + ".weight_packed", {64, 8}, qkv},
      {"producers/ct_llama_w4a16_g64_sym", o + ".weight_scale", {128, 4}, o},
      {"producers/ct_llama_w8a8_int8_static", o + ".weight", {128, 64}, o},
      {"producers/ct_llama_nvfp4", o + ".weight_scale", {128, 4}, o},
      {"producers/mo_llama_nvfp4", o + ".weight_scale_2", {2}, o},
      {"producers/ct_llama_mxfp4", o + ".weight_scale", {128, 2}, o},
      {"producers/ct_llama_mxfp8", o + ".weight", {128, 64}, o},
      {"producers/mo_llama_w4a8_awq", o + ".weight", {128, 32}, o},
      {"producers/bnb_llama_nf4_dq", o + ".weight.quant_map", {8}, o},
      {"producers/bnb_llama_int8", o + ".SCB", {64}, o},
      {"documented/modelslim_llama_w8a8", o + ".weight", {128, 64}, o},
      {"documented/gptoss_mxfp4",
       "model.layers.0.mlp.experts.down_proj_blocks",
       {2, 64, 2, 16},
       "model.layers.0.mlp.experts"},
      {"producers/ct_qwen3moe_w4a16_g64_sym",
       "model.layers.1.mlp.experts.2.up_proj.weight_packed",
       {64, 8},
       "model.layers.1.mlp.experts"}};
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.folder + " " + c.tensor);
    const Finding f = OnlyError(Reshaped(c.folder, c.tensor, c.shape), FindingKind::kShape);
    ExpectNames(f, c.tensor, c.layer);
    EXPECT_NE(f.found.find(std::to_string(c.shape.front())), std::string::npos) << f.found;
  }
}

// The loaders hold a layer's tensors to the same rules: loading the layer refuses the defect
// check reports, in the same words.
TEST(CheckTest, TheLoaderRefusesWhatCheckFinds) {
  const std::string o = "model.layers.0.self_attn.o_proj";
  const std::pair<std::string, std::string> kCases[] = {
      {"producers/gm_llama_gptq_w4g64_sym_desc_act", o + ".qweight"},
      {"producers/ar_llama_auto_awq_w4g64_asym", o + ".qzeros"},
      {"producers/ct_llama_w4a16_g64_sym", o + ".weight_scale"},
      {"producers/ct_llama_fp8_block", o + ".weight_scale"}};
  for (const auto& [folder, tensor] : kCases) {
    SCOPED_TRACE(tensor);
    const std::filesystem::path dir = Reshaped(folder, tensor, {2, 4});
    const Finding f = OnlyError(dir, FindingKind::kShape);
    Result<OpenOptions> options = testing::FixtureOptions(kData + folder, 1);
    ASSERT_TRUE(options.ok()) << options.status().message();
    const std::string error = testing::LayerLoadError(OpenModel(dir.string(), *options), o);
    EXPECT_NE(error.find(tensor), std::string::npos) << error;
    EXPECT_NE(error.find("expected " + f.expected), std::string::npos) << error << "\n"
                                                                       << f.message;
  }
}

// Packed words stored as int16, scales as int32: the dtypes the layout refuses.
TEST(CheckTest, AQuantizedTensorOfTheWrongDtype) {
  const std::string o = "model.layers.1.self_attn.o_proj";
  const std::string src = "producers/gm_llama_gptq_w4g64_sym_desc_act";
  for (const auto& [tensor, dtype] :
       {std::pair<std::string, std::string>{o + ".qweight", "I16"}, {o + ".scales", "I32"}}) {
    SCOPED_TRACE(tensor);
    Result<std::shared_ptr<const SafetensorsFile>> file =
        SafetensorsFile::Open(kData + src + "/model.safetensors");
    ASSERT_TRUE(file.ok()) << file.status().message();
    const TensorInfo* info = (*file)->Find(tensor);
    ASSERT_NE(info, nullptr);
    const Finding f = OnlyError(Reshaped(src, tensor, info->shape, dtype), FindingKind::kDtype);
    ExpectNames(f, tensor, o);
    EXPECT_EQ(f.found, dtype);
  }
}

TEST(CheckTest, NonLayerParametersByName) {
  const std::string src = kData + "producers/ct_qwen3moe_w4a16_g64_sym";
  const std::string norm = "model.layers.1.post_attention_layernorm.weight";
  const std::filesystem::path missing =
      testing::MutatedFixture(src, [&](testing::TestTensor* t) { return t->name != norm; });
  ExpectNames(OnlyError(missing, FindingKind::kMissingTensor), norm, "");
  const std::filesystem::path misshapen = testing::MutatedFixture(src, [&](testing::TestTensor* t) {
    if (t->name == "model.layers.0.self_attn.q_norm.weight") t->shape = {32, 2};
    return true;
  });
  const Finding f = OnlyError(misshapen, FindingKind::kShape);
  ExpectNames(f, "model.layers.0.self_attn.q_norm.weight", "");
  EXPECT_EQ(f.expected, "[64]");
}

TEST(CheckTest, ARotaryTableIsAWarning) {
  const std::string table = "model.layers.0.self_attn.rotary_emb.inv_freq";
  const std::filesystem::path dir = testing::MutatedFixture(
      kData + "producers/ct_llama_fp8_dynamic", [](testing::TestTensor*) { return true; },
      {testing::F32Tensor(table, {32}, std::vector<float>(32, 1.0f))});
  Result<CheckReport> report = Check(dir.string());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->errors, 0) << Describe(*report);
  ASSERT_EQ(report->warnings, 1) << Describe(*report);
  EXPECT_EQ(report->findings[0].kind, FindingKind::kSkipped);
  EXPECT_EQ(report->findings[0].tensor, table);
}

// The fixture as two shards whose index places one tensor in the wrong shard.
TEST(CheckTest, IndexAndShardDisagreementsAreFindings) {
  const std::filesystem::path src = kData + "producers/ct_llama_w4a16_g64_sym";
  const std::filesystem::path dir = testing::FreshDir();
  std::filesystem::copy_file(src / "config.json", dir / "config.json");
  Result<std::shared_ptr<const SafetensorsFile>> file =
      SafetensorsFile::Open(src / "model.safetensors");
  ASSERT_TRUE(file.ok()) << file.status().message();
  std::vector<testing::TestTensor> shards[2];
  std::string map;
  const std::string moved = "model.layers.0.mlp.down_proj.weight_packed";
  for (size_t i = 0; i < (*file)->tensors().size(); ++i) {
    const TensorInfo& info = (*file)->tensors()[i];
    const TensorView view = (*file)->View(info);
    const auto* bytes = reinterpret_cast<const uint8_t*>(view.bytes.data());
    shards[i % 2].push_back({info.name, std::string(StDtypeName(info.dtype)), info.shape,
                             std::vector<uint8_t>(bytes, bytes + view.bytes.size())});
    const size_t listed = info.name == moved ? 1 - i % 2 : i % 2;
    map += fmt::format("{}\"{}\": \"shard-{}.safetensors\"", map.empty() ? "" : ",", info.name,
                       listed);
  }
  testing::WriteSafetensors(dir / "shard-0.safetensors", shards[0]);
  testing::WriteSafetensors(dir / "shard-1.safetensors", shards[1]);
  std::ofstream(dir / "model.safetensors.index.json") << "{\"weight_map\": {" << map << "}}";
  Result<CheckReport> report = Check(dir.string());
  ASSERT_TRUE(report.ok()) << report.status().message();
  // The shard that holds it is not the one listed, which lacks it. Planned from what the headers
  // hold, every layer is checked: the one whose tensor the index misplaces is named by it, and
  // no other layer has a finding.
  std::vector<std::string> kinds;
  for (const Finding& f : report->findings) kinds.emplace_back(f.KindName());
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"indexed-elsewhere", "not-in-shard", "missing-tensor"}))
      << Describe(*report);
  EXPECT_EQ(report->findings[0].tensor, moved);
  EXPECT_EQ(report->findings[2].tensor, moved);
  EXPECT_EQ(report->findings[2].layer, "model.layers.0.mlp.down_proj");
  EXPECT_EQ(report->errors, 3);
  EXPECT_TRUE(report->layers_not_checked.empty()) << report->layers_not_checked;
  EXPECT_GT(report->bytes_read, 0u);  // the other layers' values were read
}

// Under each engine the fixtures it plans check clean: its own sites, the modules it builds
// without a quantization config (SGLang's gpt-oss attention, stored as q/k/v legs), its renames.
TEST(CheckTest, FixturesCheckCleanUnderTheEngines) {
  const std::pair<std::string, std::string> kCases[] = {
      {"documented/gptoss_mxfp4", "sglang@helpers"},
      {"documented/gptoss_mxfp4", "vllm@helpers"},
      {"producers/ct_qwen3moe_w4a16_g64_sym", "vllm@helpers"},
      {"producers/ct_qwen3moe_w4a16_g64_sym", "vllm@0.33"},
      {"producers/ct_qwen3moe_nvfp4", "sglang@0.5.23"},
      {"producers/bf16_llama", "vllm@helpers"},
      {"producers/mo_qwen3moe_nvfp4", "sglang@helpers"},
      {"documented/modelslim_qwen3moe_w8a8_mxfp8", "sglang@0.5.23"}};
  for (const auto& [folder, engine] : kCases) {
    SCOPED_TRACE(folder + " --engine " + engine);
    Result<CheckReport> report = Check(kData + folder, engine);
    ASSERT_TRUE(report.ok()) << report.status().message();
    EXPECT_EQ(report->errors, 0) << Describe(*report);
  }
}

// vLLM gives bitsandbytes experts no method: for --engine vllm they are stored quantized.
TEST(CheckTest, FindingsFollowTheEnginesDecisions) {
  const std::string dir = kData + "producers/bnb_qwen3moe_nf4";
  Result<CheckReport> native = Check(dir);
  ASSERT_TRUE(native.ok()) << native.status().message();
  EXPECT_EQ(native->errors, 0) << Describe(*native);
  Result<CheckReport> vllm = Check(dir, "vllm@helpers");
  ASSERT_TRUE(vllm.ok()) << vllm.status().message();
  int experts = 0;
  for (const Finding& f : vllm->findings) {
    if (!f.error) continue;  // dequant.safetensors beside the weights: an ignored file
    EXPECT_EQ(f.kind, FindingKind::kStoredQuantized) << f.message;
    experts += f.layer.ends_with(".mlp.experts");
  }
  EXPECT_EQ(experts, 2 * 4 * 3);  // every projection of every expert of both layers
}

// A config that ignores k_proj alone quantizes one fused layer in two precisions: every engine
// refuses the layer, and the finding names the layer, its file and its first tensor.
TEST(CheckTest, FusedLegsThatDisagreeAreADecidedError) {
  const std::filesystem::path dir = testing::MutatedFixture(
      kData + "producers/ct_llama_fp8_dynamic", [](testing::TestTensor*) { return true; });
  std::string config;
  {
    std::ifstream in(dir / "config.json");
    config.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t ignore = config.find("\"lm_head\"");
  ASSERT_NE(ignore, std::string::npos);
  config.insert(ignore, "\"re:.*self_attn.k_proj\", ");
  std::ofstream(dir / "config.json", std::ios::trunc) << config;
  for (const char* engine : {"native", "vllm@helpers", "sglang@helpers"}) {
    SCOPED_TRACE(engine);
    Result<CheckReport> report = Check(dir.string(), engine);
    ASSERT_TRUE(report.ok()) << report.status().message();
    std::vector<std::string> layers;
    for (const Finding& f : report->findings) {
      if (!f.error) continue;
      EXPECT_EQ(f.kind, FindingKind::kDecidedError) << f.message;
      ExpectNames(f, f.layer.substr(0, f.layer.rfind('.')) + ".q_proj.weight", f.layer);
      layers.push_back(f.layer);
    }
    EXPECT_EQ(layers, (std::vector<std::string>{"model.layers.0.self_attn.qkv_proj",
                                                "model.layers.1.self_attn.qkv_proj"}));
  }
}

// A bf16 Llama with 4 heads of 32, 2 KV heads, intermediate 384 and vocabulary 192 splits at 1, 2
// and 4 only: 3 and 8 break the heads (and 3 nothing else would: 384 and 192 divide by 3).
TEST(CheckTest, TensorParallelSizesOfASyntheticLlama) {
  const std::filesystem::path dir = testing::FreshDir();
  std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"],
      "model_type": "llama", "hidden_size": 128, "intermediate_size": 384,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
      "num_hidden_layers": 1, "vocab_size": 192, "torch_dtype": "bfloat16",
      "tie_word_embeddings": false})";
  std::vector<testing::TestTensor> tensors;
  const auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    tensors.push_back(
        testing::Bf16Tensor(name, std::move(shape), std::vector<float>(static_cast<size_t>(n))));
  };
  add("model.embed_tokens.weight", {192, 128});
  const std::string l = "model.layers.0.";
  add(l + "self_attn.q_proj.weight", {128, 128});
  add(l + "self_attn.k_proj.weight", {64, 128});
  add(l + "self_attn.v_proj.weight", {64, 128});
  add(l + "self_attn.o_proj.weight", {128, 128});
  add(l + "mlp.gate_proj.weight", {384, 128});
  add(l + "mlp.up_proj.weight", {384, 128});
  add(l + "mlp.down_proj.weight", {128, 384});
  add(l + "input_layernorm.weight", {128});
  add(l + "post_attention_layernorm.weight", {128});
  add("model.norm.weight", {128});
  add("lm_head.weight", {192, 128});
  testing::WriteSafetensors(dir / "model.safetensors", tensors);
  Result<CheckReport> report = Check(dir.string());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->errors, 0) << Describe(*report);
  EXPECT_EQ(report->loadable_tp, (std::vector<int64_t>{1, 2, 4}));
  for (int64_t tp : {3, 8}) {
    SCOPED_TRACE(tp);
    Result<CheckReport> at = Check(dir.string(), "native", tp);
    ASSERT_TRUE(at.ok()) << at.status().message();
    ASSERT_GE(at->errors, 1) << Describe(*at);
    const Finding& qkv = at->findings.front();
    EXPECT_EQ(qkv.kind, FindingKind::kTensorParallel);
    EXPECT_EQ(qkv.layer, "model.layers.0.self_attn.qkv_proj");
    EXPECT_NE(qkv.message.find("4 attention heads"), std::string::npos) << qkv.message;
    EXPECT_NE(qkv.message.find("legal --tp: 1, 2, 4"), std::string::npos) << qkv.message;
  }
}

// int4 groups of 64 on the producers' Llama: o_proj's 128 input columns split into whole groups
// at 2 but not at 4 (32 columns a rank), where the 2 heads break qkv_proj too.
TEST(CheckTest, AGroupThatARankCutsIsATensorParallelFinding) {
  Result<CheckReport> report = Check(kData + "producers/ct_llama_w4a16_g64_sym", "native", 4);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->loadable_tp, (std::vector<int64_t>{1, 2}));
  std::vector<std::string> layers;
  for (const Finding& f : report->findings) {
    if (!f.error) continue;  // dequant.safetensors beside the weights: an ignored file
    EXPECT_EQ(f.kind, FindingKind::kTensorParallel) << f.message;
    EXPECT_NE(f.message.find("legal --tp: 1, 2"), std::string::npos) << f.message;
    layers.push_back(f.layer);
  }
  EXPECT_EQ(layers, (std::vector<std::string>{
                        "model.layers.0.self_attn.qkv_proj", "model.layers.0.self_attn.o_proj",
                        "model.layers.1.self_attn.qkv_proj", "model.layers.1.self_attn.o_proj"}));
}

TEST(CheckTest, AFolderWithoutWeightsCannotBeChecked) {
  const std::filesystem::path dir = testing::FreshDir();
  std::filesystem::copy_file(kData + "producers/ct_llama_w4a16_g64_sym/config.json",
                             dir / "config.json");
  Result<CheckReport> report = Check(dir.string());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(report.status().message().find("no weights to check"), std::string::npos);
}

}  // namespace
}  // namespace quantpath
