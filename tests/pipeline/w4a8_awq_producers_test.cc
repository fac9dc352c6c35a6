// The ModelOpt W4A8_AWQ spec (int4_group_128_prescaled, static fp8 activations) on the checkpoint
// ModelOpt 0.47.0 exports (tests/data/producers/mo_llama_w4a8_awq), through the pipeline:
//   1. the fp64 reference, rounded to fp32 (the scale dtype), equals the saved dequantization
//      (numpy from the export's layout, SOURCES.md) exactly, and the loaded parameters hold the
//      checkpoint's scales and, on o_proj and down_proj, its pre_quant_scale;
//   2. seeded runs of the dense (o, down) and fused (qkv, gate_up) layers are within tolerance,
//      and o_proj's and down_proj's output equals a product computed here from the saved
//      weights, the stored pre_quant_scale and input_scale, so the prescale is applied before
//      the fp8 rounding, by the kernel and by the reference alike;
//   3. errors name the tensor and the layer, fused legs that disagree on pre_quant_scale
//      included; a row split that cuts a group names the legal sizes.
// Tensor-parallel shards adding up to the whole layer: tp_shards_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "quantpath/pipeline.h"
#include "src/specs/w4a8_awq_family.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kFolder = "producers/mo_llama_w4a8_awq";
const std::string kDir = std::string(QUANTPATH_TEST_DATA) + "/" + kFolder;

Result<Model> Open(const std::string& dir, int64_t tp = 1) {
  QP_ASSIGN_OR_RETURN(OpenOptions options, OpenOptions::Parse("native", "", "cpu", "auto", tp));
  return OpenModel(dir, options);
}

bool HasPrescale(const std::string& path) {
  return path.ends_with("o_proj") || path.ends_with("down_proj");
}

// y = Σ_c e4m3(x[c] · p[c] / s) · s · W[n][c] in double, from the saved dequantization and the
// checkpoint's own pre_quant_scale and input_scale.
std::vector<double> ExpectedOutput(const LoadedLayer& layer, const SafetensorsFile& saved,
                                   const std::vector<float>& x, int64_t m) {
  const std::string& prefix = layer.leg_prefixes.front();
  const TensorInfo* info = saved.Find(prefix + ".weight");
  EXPECT_NE(info, nullptr);
  if (info == nullptr) return {};
  const int64_t n = info->shape[0];
  const int64_t k = info->shape[1];
  const TensorView weight = saved.View(*info);
  Result<TensorView> p = layer.checkpoint.Get(prefix + ".pre_quant_scale");
  Result<TensorView> s = layer.checkpoint.Get(prefix + ".input_scale");
  EXPECT_TRUE(p.ok() && s.ok());
  if (!p.ok() || !s.ok()) return {};
  EXPECT_EQ(p->info->dtype, StDtype::kBF16);
  float scale;
  std::memcpy(&scale, s->bytes.data(), 4);
  std::vector<double> y(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      uint16_t bits;
      std::memcpy(&bits, p->bytes.data() + 2 * c, 2);
      const double scaled = static_cast<double>(x[i * k + c]) * Bf16ToFloat(bits);
      const double q = RoundToE4M3(static_cast<float>(scaled / scale)) * scale;
      for (int64_t j = 0; j < n; ++j) y[i * n + j] += q * testing::SavedValue(weight, j * k + c);
    }
  }
  return y;
}

TEST(W4a8AwqProducer, MatchesTheSavedDequantizationAndRuns) {
  Result<testing::ProducerFolder> folder = testing::OpenProducerFolder(kDir);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  int checked = 0, fused = 0, prescaled = 0;
  for (const LayerDecision& decision : folder->layers) {
    if (decision.site->kind != SiteKind::kLinear) continue;
    const std::string& path = decision.site->path;
    SCOPED_TRACE(path);
    ASSERT_TRUE(decision.spec.has_value());
    EXPECT_EQ(decision.spec->ToId(), "int4_group_128_prescaled");
    EXPECT_TRUE(decision.kernel_available);
    Result<LoadedLayer> loaded = LoadLayer(*folder->model, path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->scheme.weight.load.layout, SourceLayout::kModelOptW4A8Awq);
    EXPECT_EQ(loaded->activation.mode, ActMode::kStaticPerTensor);
    EXPECT_EQ(loaded->activation.dtype, QDType::kFP8E4M3);
    Result<ReferenceLayer> ref = LoadReference(*loaded);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    testing::ExpectLegsMatchSaved(*folder->saved, loaded->leg_prefixes, *ref);

    // The parameters: fp32 scales as stored (the first leg's first row), the prescale where the
    // checkpoint has one, in its bf16, and the largest input_scale of the legs.
    const LinearParams& params = loaded->linear.params();
    const std::string& first = loaded->leg_prefixes.front();
    Result<TensorView> scales = loaded->checkpoint.Get(first + ".weight_scale");
    ASSERT_TRUE(scales.ok());
    ASSERT_EQ(params.tensor(Slot::kWeightScale).cols(), ref->cols / 128);
    EXPECT_EQ(std::memcmp(params.tensor(Slot::kWeightScale).raw(), scales->bytes.data(),
                          4 * static_cast<size_t>(ref->cols / 128)),
              0);
    const ParamTensor& prescale = params.tensor(Slot::kPreQuantScale);
    EXPECT_EQ(prescale.empty(), !HasPrescale(path));
    EXPECT_EQ(ref->input_prescale.empty(), !HasPrescale(path));
    float top = 0;
    for (const std::string& prefix : loaded->leg_prefixes) {
      Result<TensorView> s = loaded->checkpoint.Get(prefix + ".input_scale");
      ASSERT_TRUE(s.ok());
      float v;
      std::memcpy(&v, s->bytes.data(), 4);
      top = std::max(top, v);
    }
    EXPECT_EQ(LoadFloat(params.tensor(Slot::kInputScale), 0), top);

    for (uint64_t seed : {3u, 11u}) {
      Result<LayerRun> run = RunSeeded(*loaded, 7, seed);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_TRUE(run->pass()) << "rel " << run->rel << " tol " << run->tol;
      EXPECT_EQ(run->tol, 2e-2);
      EXPECT_EQ(run->kernel.rfind("GemmW4a8Awq_", 0), 0u) << run->kernel;
      std::printf("%s %s seed %llu: rel %.3g (tol %.3g)\n", kFolder.c_str(), path.c_str(),
                  static_cast<unsigned long long>(seed), run->rel, run->tol);
      if (!HasPrescale(path)) continue;
      std::vector<float> x;
      for (uint16_t bits : SeededInput(*loaded, 7, seed)) x.push_back(Bf16ToFloat(bits));
      const std::vector<double> expected = ExpectedOutput(*loaded, *folder->saved, x, 7);
      ASSERT_EQ(expected.size(), run->y.size());
      double max_diff = 0, max_ref = 0;
      for (size_t i = 0; i < expected.size(); ++i) {
        max_diff = std::max(max_diff, std::fabs(run->y[i] - expected[i]));
        max_ref = std::max(max_ref, std::fabs(expected[i]));
      }
      EXPECT_LE(max_diff / max_ref, run->tol);
      std::printf("  vs the saved weights and stored prescale: rel %.3g\n", max_diff / max_ref);
    }
    if (loaded->leg_prefixes.size() > 1) ++fused;
    if (HasPrescale(path)) ++prescaled;
    ++checked;
  }
  EXPECT_EQ(checked, 8);  // qkv, o, gate_up, down in each of the two layers
  EXPECT_EQ(fused, 4);
  EXPECT_EQ(prescaled, 4);
}

template <typename Edit>
std::filesystem::path Mutated(Edit edit, std::vector<testing::TestTensor> extra = {}) {
  return testing::MutatedFixture(kDir, edit, std::move(extra));
}

std::string LoadError(const std::filesystem::path& dir, const std::string& layer, int64_t tp = 1) {
  return testing::LayerLoadError(Open(dir.string(), tp), layer);
}

testing::TestTensor Prescale(const std::string& name, float value) {
  return testing::Bf16Tensor(name, {128}, std::vector<float>(128, value));
}

TEST(W4a8AwqErrors, NameTheTensorAndTheLayer) {
  const std::string qkv = "model.layers.0.self_attn.qkv_proj";
  const std::string attn = "model.layers.0.self_attn.";
  struct Case {
    std::string tensor;
    std::string what;  // "drop", "dtype", "shape", "zero", "nan"
    std::string expect;
  };
  for (const Case& c : {
           Case{attn + "k_proj.weight_scale", "drop", "is not in the checkpoint"},
           Case{attn + "k_proj.input_scale", "drop", "is not in the checkpoint"},
           Case{attn + "v_proj.weight", "dtype", "expected U8"},
           Case{attn + "v_proj.weight", "shape", "expected [32, 128]"},
           Case{attn + "q_proj.weight_scale", "shape", "expected [128, 1]"},
           Case{attn + "q_proj.input_scale", "zero", "needs a positive scale"},
           Case{attn + "k_proj.weight_scale_2", "zero", "needs a positive scale"},
           Case{attn + "q_proj.weight_scale", "nan", "non-finite scale"},
       }) {
    SCOPED_TRACE(c.tensor + " " + c.what);
    const std::filesystem::path dir = Mutated([&](testing::TestTensor* t) {
      if (t->name != c.tensor) return true;
      if (c.what == "drop") return false;
      if (c.what == "dtype") {
        t->dtype = "F16";
        t->shape[1] /= 2;
      } else if (c.what == "shape") {
        t->shape[0] /= 2;
        t->bytes.resize(t->bytes.size() / 2);
      } else if (c.what == "nan") {
        const float nan = std::nanf("");
        std::memcpy(t->bytes.data() + 4, &nan, 4);
      } else {
        std::fill(t->bytes.begin(), t->bytes.end(), 0);
      }
      return true;
    });
    const std::string message = LoadError(dir, qkv);
    EXPECT_NE(message.find(qkv), std::string::npos) << message;
    EXPECT_NE(message.find(c.tensor), std::string::npos) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
}

// X is scaled once for all legs of a fused layer, so a prescale on one leg only, or legs whose
// prescales differ, cannot load (ModelOpt resmooths fused legs to one prescale and folds it into
// the norm before them); equal prescales on every leg load, and the spec and the reference
// apply them.
TEST(W4a8AwqErrors, FusedLegsMustShareOnePrescale) {
  const std::string qkv = "model.layers.0.self_attn.qkv_proj";
  const std::string attn = "model.layers.0.self_attn.";
  const auto keep = [](testing::TestTensor*) { return true; };
  std::string message =
      LoadError(Mutated(keep, {Prescale(attn + "k_proj.pre_quant_scale", 1)}), qkv);
  EXPECT_NE(message.find(qkv), std::string::npos) << message;
  EXPECT_NE(message.find(attn + "k_proj.pre_quant_scale is in the checkpoint, but " + attn +
                         "q_proj.pre_quant_scale is not"),
            std::string::npos)
      << message;
  message = LoadError(Mutated(keep, {Prescale(attn + "q_proj.pre_quant_scale", 1),
                                     Prescale(attn + "k_proj.pre_quant_scale", 1)}),
                      qkv);
  EXPECT_NE(message.find(attn + "v_proj.pre_quant_scale is not in the checkpoint, but " + attn +
                         "q_proj.pre_quant_scale is"),
            std::string::npos)
      << message;
  message = LoadError(Mutated(keep, {Prescale(attn + "q_proj.pre_quant_scale", 1),
                                     Prescale(attn + "k_proj.pre_quant_scale", 1),
                                     Prescale(attn + "v_proj.pre_quant_scale", 2)}),
                      qkv);
  EXPECT_NE(message.find("differ at column 0 (1 and 2)"), std::string::npos) << message;

  // Every leg with the same prescale 2 (exact in bf16 and a power of two, so it scales X
  // exactly): the layer loads and runs within tolerance, on X twice the unscaled run's.
  const std::filesystem::path dir = Mutated(keep, {Prescale(attn + "q_proj.pre_quant_scale", 2),
                                                   Prescale(attn + "k_proj.pre_quant_scale", 2),
                                                   Prescale(attn + "v_proj.pre_quant_scale", 2)});
  Result<Model> model = Open(dir.string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<LoadedLayer> scaled = LoadLayer(*model, qkv);
  ASSERT_TRUE(scaled.ok()) << scaled.status().message();
  Result<ReferenceLayer> ref = LoadReference(*scaled);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_EQ(ref->input_prescale, std::vector<double>(128, 2.0));
  Result<LayerRun> run = RunSeeded(*scaled, 5, 1);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(run->pass()) << "rel " << run->rel;
  Result<Model> original = Open(kDir);
  ASSERT_TRUE(original.ok());
  Result<LoadedLayer> plain = LoadLayer(*original, qkv);
  ASSERT_TRUE(plain.ok());
  Result<LayerRun> base = RunSeeded(*plain, 5, 1);
  ASSERT_TRUE(base.ok());
  // Twice X is rounded to twice the fp8 values until it saturates at 448 · input_scale.
  double max_diff = 0, max_base = 0;
  for (size_t i = 0; i < base->y.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(run->y[i]) - 2.0 * base->y[i]));
    max_base = std::max(max_base, std::fabs(2.0 * base->y[i]));
  }
  std::printf("qkv with prescale 2 vs twice the unscaled run: rel %.3g\n", max_diff / max_base);
  EXPECT_LE(max_diff / max_base, 2e-2);
}

TEST(W4a8AwqErrors, ARowSplitThatCutsAGroupNamesTheLegalSizes) {
  const std::string o_proj = "model.layers.1.self_attn.o_proj";
  const std::string message = LoadError(kDir, o_proj, 2);
  EXPECT_EQ(message,
            o_proj +
                ": int4_group_128_prescaled with tensor-parallel size 2 splits K = 128 into slices "
                "of 64 columns, which is not a multiple of the group size 128; legal --tp: 1");
}

}  // namespace
}  // namespace quantpath
