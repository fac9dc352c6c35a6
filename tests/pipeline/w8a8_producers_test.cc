// The W8A8 int8 specs on checkpoints written by llmcompressor / compressed-tensors
// (tests/data/producers/ct_*_w8a8_int8_*) and on the ModelSlim ones written from its
// documentation (tests/data/documented/, no producer), through the pipeline:
//   1. the fp64 reference, rounded to the saved dequantization's dtype, equals it exactly;
//   2. a seeded run (int8 activations) is within the family's tolerance, and within 1e-6 of the
//      reference, since the reference rounds X with the kernel's own fp32 arithmetic;
//   3. errors: a missing tensor, a wrong dtype, a wrong shape name the tensor and the layer.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "quantpath/pipeline.h"
#include "src/specs/int_family.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kData = std::string(QUANTPATH_TEST_DATA) + "/";

Result<Model> Open(const std::string& dir) {
  Result<OpenOptions> options = OpenOptions::Parse("native", "", "cpu");
  if (!options.ok()) return options.status();
  return OpenModel(dir, *options);
}

struct Fixture {
  std::string folder;
  ActMode mode;
  bool symmetric;
  int layers;  // quantized linear sites with a Forward (qkv, o, gate_up, down per layer)
  std::string spec_id = "int8_channel";
};

void PrintTo(const Fixture& f, std::ostream* os) { *os << f.folder; }

class W8a8FixturesTest : public ::testing::TestWithParam<Fixture> {};

TEST_P(W8a8FixturesTest, MatchesTheDequantizationAndRuns) {
  const Fixture& f = GetParam();
  const std::string dir = kData + f.folder;
  Result<testing::ProducerFolder> folder = testing::OpenProducerFolder(dir);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  const Model& model = *folder->model;

  int checked = 0;
  for (const LayerDecision& decision : folder->layers) {
    if (decision.site->kind != SiteKind::kLinear || !decision.spec ||
        !IsIntFamily(decision.spec->family)) {
      continue;
    }
    const std::string& path = decision.site->path;
    SCOPED_TRACE(path);
    EXPECT_EQ(decision.spec->ToId(), f.spec_id);
    EXPECT_TRUE(decision.kernel_available);
    Result<LoadedLayer> loaded = LoadLayer(model, path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->activation.mode, f.mode);
    EXPECT_EQ(loaded->activation.dtype, QDType::kINT8);
    EXPECT_EQ(loaded->activation.symmetric, f.symmetric);
    Result<ReferenceLayer> ref = LoadReference(*loaded);
    ASSERT_TRUE(ref.ok()) << ref.status().message();

    testing::ExpectLegsMatchSaved(*folder->saved, loaded->leg_prefixes, *ref);
    EXPECT_EQ(ref->input_scale.has_value(), f.mode == ActMode::kStaticPerTensor);
    // Dynamic zero points are per token, computed at run time: none in the checkpoint.
    EXPECT_EQ(ref->input_zero_point.has_value(),
              !f.symmetric && f.mode == ActMode::kStaticPerTensor);

    for (uint64_t seed : {3u, 11u}) {
      Result<LayerRun> run = RunSeeded(*loaded, 7, seed);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_TRUE(run->pass()) << "rel " << run->rel << " tol " << run->tol;
      EXPECT_EQ(run->tol, 1e-2);
      EXPECT_LT(run->rel, 1e-6) << "the kernel and the reference round X alike";
      // The W8A8 int8 kernel this CPU dispatches to: the reference, or a vpdpbusd one.
      EXPECT_EQ(run->kernel.rfind("GemmW8A8Int8", 0), 0u) << run->kernel;
    }
    ++checked;
  }
  EXPECT_EQ(checked, f.layers);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, W8a8FixturesTest,
    ::testing::Values(
        Fixture{"producers/ct_llama_w8a8_int8_dynamic", ActMode::kDynamicPerToken, true, 8},
        Fixture{"producers/ct_llama_w8a8_int8_static", ActMode::kStaticPerTensor, true, 8},
        Fixture{"producers/ct_llama_w8a8_int8_static_asym", ActMode::kStaticPerTensor, false, 8},
        Fixture{"producers/ct_llama_w8a8_int8_dynamic_asym", ActMode::kDynamicPerToken, false, 8},
        // Per-tensor weight scales that differ between the fused legs (q, k, v; gate, up).
        Fixture{"producers/ct_llama_w8a8_int8_tensor", ActMode::kDynamicPerToken, true, 8,
                "int8_tensor"},
        Fixture{"documented/modelslim_llama_w8a8", ActMode::kStaticPerTensor, false, 4},
        Fixture{"documented/modelslim_llama_w8a8_fp16", ActMode::kStaticPerTensor, false, 4},
        Fixture{"documented/modelslim_llama_w8a8_dynamic", ActMode::kDynamicPerToken, true, 4}),
    [](const ::testing::TestParamInfo<Fixture>& info) {
      std::string name = info.param.folder.substr(info.param.folder.find('/') + 1);
      return name;
    });

// The attention layers of the MoE fixture (its experts are the MoE loader's). Leg names resolve
// to their fused site where the model description fuses q, k and v.
TEST(W8a8Qwen3Moe, AttentionLayersRun) {
  Result<Model> model = Open(kData + "producers/ct_qwen3moe_w8a8_int8_dynamic");
  ASSERT_TRUE(model.ok()) << model.status().message();
  for (const char* path : {"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj",
                           "model.layers.1.self_attn.o_proj"}) {
    Result<LoadedLayer> loaded = LoadLayer(*model, path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->key.ToId(), "int8_channel");
    Result<LayerRun> run = RunSeeded(*loaded, 5, 1);
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_LT(run->rel, 1e-6) << path;
  }
}

// SGLang's w8a8_int8 reads the tensors llmcompressor's W8A8 preset writes (`weight` I8,
// `weight_scale` [N, 1]); the published w8a8_int8 checkpoints are such folders with a
// hand-written `{"quant_method": "w8a8_int8", "is_dynamic": true, "ignore": [...]}`. So the
// producer's dynamic folder, with that config, under the SGLang dialect.
TEST(W8a8SglangInt8, LoadsTheCompressedTensorsFolder) {
  const std::filesystem::path src = kData + "producers/ct_llama_w8a8_int8_dynamic";
  const std::filesystem::path dir = testing::FreshDir();
  std::filesystem::copy_file(src / "model.safetensors", dir / "model.safetensors");
  std::ifstream in(src / "config.json");
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t begin = config.find("\"quantization_config\"");
  ASSERT_NE(begin, std::string::npos);
  size_t end = config.find('{', begin);
  for (int depth = 0; end < config.size(); ++end) {
    if (config[end] == '{') ++depth;
    if (config[end] == '}' && --depth == 0) break;
  }
  config.replace(begin, end + 1 - begin,
                 R"("quantization_config": {"quant_method": "w8a8_int8", "is_dynamic": true, )"
                 R"("ignore": ["lm_head"]})");
  std::ofstream(dir / "config.json") << config;
  Result<OpenOptions> options = OpenOptions::Parse("sglang@0.5.23", "", "cpu");
  ASSERT_TRUE(options.ok()) << options.status().message();
  Result<Model> model = OpenModel(dir.string(), *options);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<std::vector<LayerDecision>> layers = DecideAll(*model);
  ASSERT_TRUE(layers.ok()) << layers.status().message();
  int checked = 0;
  for (const LayerDecision& decision : *layers) {
    if (!decision.spec || decision.spec->family != kIntChannelFamily) continue;
    SCOPED_TRACE(decision.site->path);
    Result<LoadedLayer> loaded = LoadLayer(*model, decision.site->path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->activation.mode, ActMode::kDynamicPerToken);
    Result<LayerRun> run = RunSeeded(*loaded, 4, 5);
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_LT(run->rel, 1e-6);
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

// SGLang's w8a8_fp8 (documented/sglang_llama_w8a8_fp8, written from the method's
// create_weights): fp8 e4m3 weights with per-channel F32 scales, dynamic per-token fp8
// activations, into the fp8_per_channel spec.
TEST(W8a8SglangFp8, LoadsTheDocumentedFolderIntoTheFp8Spec) {
  const std::string dir = kData + "documented/sglang_llama_w8a8_fp8";
  Result<testing::ProducerFolder> folder = testing::OpenProducerFolder(dir, "sglang@0.5.23");
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  const Model& model = *folder->model;
  int checked = 0;
  for (const LayerDecision& decision : folder->layers) {
    if (decision.site->kind != SiteKind::kLinear) continue;
    SCOPED_TRACE(decision.site->path);
    ASSERT_TRUE(decision.spec.has_value()) << decision.spec_note;
    EXPECT_EQ(decision.spec->ToId(), "fp8_per_channel");
    EXPECT_TRUE(decision.kernel_available);
    Result<LoadedLayer> loaded = LoadLayer(model, decision.site->path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->activation.mode, ActMode::kDynamicPerToken);
    EXPECT_EQ(loaded->activation.dtype, QDType::kFP8E4M3);
    Result<ReferenceLayer> ref = LoadReference(*loaded);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    testing::ExpectLegsMatchSaved(*folder->saved, loaded->leg_prefixes, *ref);
    Result<LayerRun> run = RunSeeded(*loaded, 7, 3);
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_TRUE(run->pass()) << "rel " << run->rel << " tol " << run->tol;
    ++checked;
  }
  EXPECT_EQ(checked, 4);  // qkv, o, gate_up, down
}

// A copy of a fixture folder with one tensor changed (or dropped, when `edit` returns false).
template <typename Edit>
std::filesystem::path Mutated(const std::string& folder, Edit edit) {
  const std::filesystem::path src = kData + folder;
  const std::filesystem::path dir = testing::FreshDir();
  for (const char* name : {"config.json", "quant_model_description.json"}) {
    if (std::filesystem::exists(src / name)) std::filesystem::copy_file(src / name, dir / name);
  }
  Result<std::shared_ptr<const SafetensorsFile>> file =
      SafetensorsFile::Open(src / "model.safetensors");
  EXPECT_TRUE(file.ok());
  std::vector<testing::TestTensor> tensors;
  for (const TensorInfo& info : (*file)->tensors()) {
    const TensorView view = (*file)->View(info);
    testing::TestTensor t{info.name, std::string(StDtypeName(info.dtype)), info.shape,
                          std::vector<uint8_t>(view.bytes.size())};
    std::memcpy(t.bytes.data(), view.bytes.data(), view.bytes.size());
    if (edit(&t)) tensors.push_back(std::move(t));
  }
  testing::WriteSafetensors(dir / "model.safetensors", tensors);
  return dir;
}

std::string LoadError(const std::filesystem::path& dir, const std::string& layer) {
  Result<Model> model = Open(dir.string());
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<LoadedLayer> loaded = LoadLayer(*model, layer);
  EXPECT_FALSE(loaded.ok());
  return loaded.ok() ? "" : std::string(loaded.status().message());
}

TEST(W8a8Errors, NameTheTensorAndTheLayer) {
  const std::string qkv = "model.layers.0.self_attn.qkv_proj";
  const std::string k_proj = "model.layers.0.self_attn.k_proj";
  struct Case {
    std::string folder;
    std::string tensor;
    std::string what;  // "drop", "dtype", "shape"
    std::string expect;
  };
  for (const Case& c : {
           Case{"producers/ct_llama_w8a8_int8_static_asym", k_proj + ".input_zero_point", "drop",
                "is not in the checkpoint"},
           Case{"producers/ct_llama_w8a8_int8_static_asym", k_proj + ".input_scale", "drop",
                "is not in the checkpoint"},
           Case{"producers/ct_llama_w8a8_int8_dynamic", k_proj + ".weight", "dtype",
                "has dtype U8, expected I8"},
           Case{"producers/ct_llama_w8a8_int8_dynamic", k_proj + ".weight_scale", "shape",
                "expected [64, 1]"},
           Case{"documented/modelslim_llama_w8a8", k_proj + ".quant_bias", "drop",
                "is not in the checkpoint"},
           Case{"documented/modelslim_llama_w8a8", k_proj + ".deq_scale", "dtype",
                "expected F32 or I64"},
           Case{"documented/modelslim_llama_w8a8", k_proj + ".weight", "shape",
                "expected [32, 64]"},
       }) {
    SCOPED_TRACE(c.folder + " " + c.tensor + " " + c.what);
    const std::filesystem::path dir = Mutated(c.folder, [&](testing::TestTensor* t) {
      if (t->name != c.tensor) return true;
      if (c.what == "drop") return false;
      if (c.what == "dtype") {
        t->dtype = t->dtype == "I8" ? "U8" : "I32";  // same width: I8 → U8, F32 → I32
        return true;
      }
      t->shape[0] /= 2;  // half the rows
      t->bytes.resize(t->bytes.size() / 2);
      return true;
    });
    const std::string message = LoadError(dir, qkv);
    EXPECT_NE(message.find(qkv), std::string::npos) << message;
    EXPECT_NE(message.find(c.tensor), std::string::npos) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
}

// ModelSlim's fused legs quantize X once: different input scales are an error naming the leg.
TEST(W8a8Errors, ModelSlimLegsMustShareTheirInputGrid) {
  const std::string v_scale = "model.layers.0.self_attn.v_proj.input_scale";
  const std::filesystem::path dir =
      Mutated("documented/modelslim_llama_w8a8", [&](testing::TestTensor* t) {
        if (t->name == v_scale) t->bytes[1] ^= 0x01;  // the bf16 exponent's low bit: ×2 or ÷2
        return true;
      });
  const std::string message = LoadError(dir, "model.layers.0.self_attn.qkv_proj");
  EXPECT_NE(message.find(v_scale), std::string::npos) << message;
  EXPECT_NE(message.find("one input_scale and input_offset"), std::string::npos) << message;
}

// deq_scale is checked against input_scale × weight_scale, row by row.
TEST(W8a8Errors, ModelSlimDeqScaleMustBeTheScalesProduct) {
  const std::string deq = "model.layers.0.mlp.down_proj.deq_scale";
  const std::filesystem::path dir =
      Mutated("documented/modelslim_llama_w8a8", [&](testing::TestTensor* t) {
        if (t->name == deq) t->bytes[4 * 3] ^= 0x01;  // row 3's lowest mantissa bit
        return true;
      });
  const std::string message = LoadError(dir, "model.layers.0.mlp.down_proj");
  EXPECT_NE(message.find(deq + " holds"), std::string::npos) << message;
  EXPECT_NE(message.find("at row 3"), std::string::npos) << message;
}

}  // namespace
}  // namespace quantpath
