// NVFP4 MoE experts on the Qwen3-MoE checkpoints llmcompressor wrote
// (tests/data/producers/ct_qwen3moe_nvfp4a16, ct_qwen3moe_nvfp4; SOURCES.md: 2 layers × 4
// experts, gate, up and down [128, 128]) and the globals vLLM's FusedMoE NVFP4 methods share
// (nvfp4_family.h):
//   1. every expert's up_proj runs with its gate_proj's weight multiplier, and W4A4 experts
//      quantize X against one divisor for every expert's gate and up and one for every expert's
//      down: the smallest stored input_global_scale of each group, read here from the files;
//   2. an expert whose up_proj global is doubled keeps gate's in the kernel while the reference
//      keeps up's own, so up comes out twice the truth: the error measured is the one the ratio
//      predicts;
//   3. llmcompressor calibrates every down_proj on its own input, so their input globals differ:
//      the shared divisor against each expert's own, on the same X, is the error the engines'
//      rule adds (0 for the expert whose own is the shared one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "fmt/format.h"
#include "quantpath/pipeline.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kProducers = std::string(QUANTPATH_TEST_DATA) + "/producers/";
const std::string kLayer = "model.layers.0.mlp.experts";
constexpr int64_t kExperts = 4;
constexpr int64_t kM = 5;

Result<Model> Open(const std::string& dir) {
  QP_ASSIGN_OR_RETURN(OpenOptions options, OpenOptions::Parse("native", "", "cpu"));
  return OpenModel(dir, options);
}

std::string Prefix(int64_t expert, std::string_view projection) {
  return fmt::format("{}.{}.{}", kLayer, expert, projection);
}

// The one F32 value of `name`.
float Stored(const Checkpoint& checkpoint, const std::string& name) {
  Result<TensorView> view = checkpoint.Get(name);
  EXPECT_TRUE(view.ok()) << view.status().message();
  float value = 0;
  if (view.ok()) std::memcpy(&value, view->bytes.data(), 4);
  return value;
}

// X' · Wᵀ in double, X quantized as `act` says against the reference's input divisor.
std::vector<double> Product(const ReferenceLayer& ref, const ActivationQuant& act,
                            const std::vector<double>& x) {
  const std::vector<double> xq =
      QuantizeActivationsReference(x, kM, ref.cols, act, ref.input_scale);
  std::vector<double> y(static_cast<size_t>(kM * ref.rows), 0.0);
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t n = 0; n < ref.rows; ++n) {
      for (int64_t c = 0; c < ref.cols; ++c) {
        y[i * ref.rows + n] += xq[i * ref.cols + c] * ref.weight[n * ref.cols + c];
      }
    }
  }
  return y;
}

TEST(Nvfp4MoeGlobals, UpTakesGatesGlobalAndW4A4ExpertsShareOneInputGlobal) {
  for (const char* folder : {"ct_qwen3moe_nvfp4a16", "ct_qwen3moe_nvfp4"}) {
    SCOPED_TRACE(folder);
    Result<Model> model = Open(kProducers + folder);
    ASSERT_TRUE(model.ok()) << model.status().message();
    Result<LoadedExperts> loaded = LoadExperts(*model, kLayer);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    ASSERT_EQ(static_cast<int64_t>(loaded->experts.size()), kExperts);
    const bool w4a4 = loaded->activation.mode != ActMode::kNone;
    float w13_input = INFINITY;
    float w2_input = INFINITY;
    for (int64_t e = 0; e < kExperts; ++e) {
      const float gate = Stored(loaded->checkpoint, Prefix(e, "gate_proj.weight_global_scale"));
      for (size_t p = 0; p < 3; ++p) {
        const LinearParams& params = loaded->experts[e].projections[p].params();
        const std::string_view name = p == 0 ? "gate_proj" : p == 1 ? "up_proj" : "down_proj";
        const float own =
            Stored(loaded->checkpoint, Prefix(e, std::string(name) + ".weight_global_scale"));
        // compressed-tensors' global divides: the multiplier is its inverse, up's gate's.
        EXPECT_EQ(LoadFloat(params.tensor(Slot::kWeightGlobalScale), 0),
                  1.0f / (p == 1 ? gate : own))
            << e << " " << name;
        if (!w4a4) continue;
        float& group = p < 2 ? w13_input : w2_input;
        group = std::min(group, Stored(loaded->checkpoint,
                                       Prefix(e, std::string(name) + ".input_global_scale")));
      }
    }
    if (!w4a4) continue;
    for (int64_t e = 0; e < kExperts; ++e) {
      for (size_t p = 0; p < 3; ++p) {
        const LinearParams& params = loaded->experts[e].projections[p].params();
        EXPECT_EQ(LoadFloat(params.tensor(Slot::kInputScale), 0), p < 2 ? w13_input : w2_input)
            << e << " " << p;
      }
    }
  }
}

TEST(Nvfp4MoeGlobals, AnUpGlobalUnlikeGatesComesOutScaledByTheirRatio) {
  const std::string up = Prefix(1, "up_proj.weight_global_scale");
  const std::filesystem::path dir =
      testing::MutatedFixture(kProducers + "ct_qwen3moe_nvfp4a16", [&](testing::TestTensor* t) {
        if (t->name == up) {
          float v;
          std::memcpy(&v, t->bytes.data(), 4);
          v *= 2.0f;
          std::memcpy(t->bytes.data(), &v, 4);
        }
        return true;
      });
  Result<Model> original = Open(kProducers + "ct_qwen3moe_nvfp4a16");
  Result<Model> model = Open(dir.string());
  ASSERT_TRUE(original.ok() && model.ok());
  Result<LoadedExperts> before = LoadExperts(*original, kLayer);
  Result<LoadedExperts> after = LoadExperts(*model, kLayer);
  ASSERT_TRUE(before.ok() && after.ok());
  Result<ExpertsRun> base = RunExpertsSeeded(*before, kM, 7, 1);
  Result<ExpertsRun> run = RunExpertsSeeded(*after, kM, 7, 1);
  ASSERT_TRUE(base.ok() && run.ok());
  ASSERT_TRUE(base->w13.pass()) << base->w13.rel;
  // The kernel runs up with gate's global, which did not change.
  ASSERT_EQ(run->w13.y, base->w13.y);
  // up's own global now divides by twice as much: the truth is half the kernel's up rows.
  const size_t half = base->w13.y.size() / 2;  // [gate (kM × I), up (kM × I)]
  double error = 0;
  double truth = 0;
  for (size_t i = 0; i < base->w13.y.size(); ++i) {
    const double y = base->w13.y[i];
    truth = std::max(truth, std::fabs(i < half ? y : y / 2));
    if (i >= half) error = std::max(error, std::fabs(y / 2));
  }
  const double predicted = error / truth;
  EXPECT_FALSE(run->w13.pass());
  EXPECT_NEAR(run->w13.rel, predicted, 0.01 * predicted);
  EXPECT_TRUE(run->w2.pass()) << run->w2.rel;
  std::printf("expert 1's up_proj global doubled: w13 rel %.3g (predicted %.3g, tol %.3g)\n",
              run->w13.rel, predicted, run->w13.tol);
}

TEST(Nvfp4MoeGlobals, TheSharedInputGlobalAgainstEachExpertsOwn) {
  Result<Model> model = Open(kProducers + "ct_qwen3moe_nvfp4");
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<LoadedExperts> loaded = LoadExperts(*model, kLayer);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  std::vector<std::string> downs;
  for (int64_t e = 0; e < kExperts; ++e) downs.push_back(Prefix(e, "down_proj"));
  std::mt19937 rng(3);
  std::vector<double> x;
  for (float v : testing::RandomBf16Values(&rng, kM * 128)) x.push_back(v);
  int differ = 0;
  for (int64_t e = 0; e < kExperts; ++e) {
    Result<ReferenceLayer> own =
        DequantizeReference(loaded->checkpoint, loaded->scheme, "own", {downs[e]}, false);
    Result<ReferenceLayer> shared = DequantizeExpertReference(loaded->checkpoint, loaded->scheme,
                                                              "shared", downs[e], downs, false);
    ASSERT_TRUE(own.ok() && shared.ok());
    ASSERT_TRUE(own->input_scale && shared->input_scale);
    EXPECT_EQ(own->weight, shared->weight);
    const std::vector<double> y_own = Product(*own, loaded->activation, x);
    const std::vector<double> y_shared = Product(*shared, loaded->activation, x);
    double diff = 0;
    double top = 0;
    for (size_t i = 0; i < y_own.size(); ++i) {
      diff = std::max(diff, std::fabs(y_shared[i] - y_own[i]));
      top = std::max(top, std::fabs(y_own[i]));
    }
    const double rel = diff / top;
    if (*own->input_scale == *shared->input_scale) {
      EXPECT_EQ(rel, 0.0) << e;
    } else {
      ++differ;
      // Another grid for X, of the size of X's own rounding error (a wrong divisor, not a grid,
      // would be off by O(1)); it can exceed the tolerance the shared reference is held to.
      EXPECT_GT(rel, 0.0) << e;
      EXPECT_LT(rel, 0.2) << e;
    }
    std::printf("expert %lld down_proj: own input divisor %g, shared %g, rel %.3g\n",
                static_cast<long long>(e), *own->input_scale, *shared->input_scale, rel);
  }
  EXPECT_EQ(differ, kExperts - 1);  // every expert's down has its own divisor
}

}  // namespace
}  // namespace quantpath
