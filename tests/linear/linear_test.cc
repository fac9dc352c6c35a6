// Linear end to end on the bundled checkpoints: load dense and fused layers of the example and its
// sharded / static variants with each spec, run Forward, and compare with the double-precision
// reference read straight from the checkpoint, at every CPU level this machine has.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>

#include "quantpath/linear.h"
#include "quantpath/numeric.h"
#include "tests/kernels/cpu_levels.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

using testing::TestSpec;

const std::string kExample = std::string(QUANTPATH_SOURCE_DIR) + "/examples/llama-tiny-fp8";
const std::string kSharded =
    std::string(QUANTPATH_TEST_DATA) + "/checkpoints/llama-tiny-fp8-sharded";
const std::string kStatic = std::string(QUANTPATH_TEST_DATA) + "/checkpoints/llama-tiny-fp8-static";

// The static variant's scheme: per-tensor weights and activations.
QuantScheme StaticScheme() {
  QuantScheme s;
  s.weight = testing::Fp8Quant(Granularity::kPerTensor);
  s.weight.load.layout = SourceLayout::kFp8Scale;
  s.input = testing::Fp8Quant(Granularity::kPerTensor);
  return s;
}

struct Layer {
  std::string path;
  std::vector<std::string> legs;  // prefixes
  std::vector<int64_t> rows;
  int64_t k;
};

const Layer kQkv{"model.layers.0.self_attn.qkv_proj",
                 {"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj",
                  "model.layers.0.self_attn.v_proj"},
                 {256, 128, 128},
                 256};
const Layer kGateUp{"model.layers.0.mlp.gate_up_proj",
                    {"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"},
                    {512, 512},
                    256};
const Layer kDown{"model.layers.0.mlp.down_proj", {"model.layers.0.mlp.down_proj"}, {256}, 512};

// The specs materialize picks for these schemes (the linear stage does not depend on it).
std::unique_ptr<WeightSpec> SpecFor(const QuantScheme& scheme) {
  if (!scheme.quantized()) return TestSpec(kBf16Key);
  if (scheme.weight.granularity == Granularity::kBlock) {
    return TestSpec(Fp8BlockKey(128, 128), {ActMode::kDynamicGroup, 128},
                    scheme.weight.load.layout);
  }
  return TestSpec(kFp8PerTensorKey, {ActMode::kStaticPerTensor, 0}, scheme.weight.load.layout);
}

struct Measured {
  double rel = 0;
  std::string kernel;
};

// Loads `layer` with the spec of `scheme` and compares Forward on m rows with the reference.
Measured Measure(const std::string& dir, const QuantScheme& scheme, const Layer& layer, int64_t m,
                 std::shared_ptr<Dispatcher> dispatcher) {
  Result<Checkpoint> checkpoint = Checkpoint::Open(dir);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status().message();
  std::unique_ptr<WeightSpec> spec = SpecFor(scheme);
  const ActivationQuant act = spec->activation();
  AllocationRequest request;
  request.layer = layer.path;
  request.shape = {0, layer.k};
  for (int64_t rows : layer.rows) request.shape[0] += rows;
  if (layer.rows.size() > 1) request.leg_rows = layer.rows;
  Result<Linear> linear =
      LoadLinear(std::move(spec), request, *checkpoint, layer.legs, std::move(dispatcher));
  EXPECT_TRUE(linear.ok()) << linear.status().message();
  if (!linear.ok()) return {1e9, ""};

  std::mt19937 rng(42);
  const std::vector<float> x = testing::RandomBf16Values(&rng, m * layer.k);
  Result<std::vector<float>> y = linear->Forward(x, m);
  EXPECT_TRUE(y.ok()) << y.status().message();

  Result<ReferenceLayer> ref =
      DequantizeReference(*checkpoint, scheme, layer.path, layer.legs, false);
  EXPECT_TRUE(ref.ok()) << ref.status().message();
  const std::vector<double> xq = QuantizeActivationsReference(
      std::vector<double>(x.begin(), x.end()), m, layer.k, act, ref->input_scale);
  double max_abs = 0, max_ref = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ref->rows; ++j) {
      double acc = 0;
      for (int64_t c = 0; c < layer.k; ++c)
        acc += xq[i * layer.k + c] * ref->weight[j * layer.k + c];
      max_abs = std::max(max_abs, std::fabs((*y)[i * ref->rows + j] - acc));
      max_ref = std::max(max_ref, std::fabs(acc));
    }
  }
  const LinearKernel* kernel = *linear->KernelFor(m, QDType::kFP32, QDType::kFP32);
  return {max_abs / max_ref, std::string(kernel->name())};
}

// Each test runs once per CPU level; at the reference level the reference kernels must be chosen.
class LinearAtLevelTest : public ::testing::TestWithParam<CpuLevel> {
 protected:
  Measured At(const std::string& dir, const QuantScheme& scheme, const Layer& layer, int64_t m) {
    return Measure(
        dir, scheme, layer, m,
        std::make_shared<Dispatcher>(KernelRegistry::Global(), testing::FeaturesAt(GetParam())));
  }
  void ExpectReferenceKernel(const Measured& got, std::string_view name) {
    if (GetParam() == CpuLevel::kReference) {
      EXPECT_EQ(got.kernel, name);
    }
  }
};

TEST_P(LinearAtLevelTest, ExampleBlockLayers) {
  const double tol = ToleranceFor(Fp8BlockKey(128, 128), ActMode::kDynamicGroup);
  for (const Layer& layer : {kQkv, kGateUp, kDown}) {
    for (int64_t m : {1, 7, 40}) {
      const Measured got = At(kExample, testing::Fp8BlockScheme(), layer, m);
      EXPECT_LE(got.rel, tol) << layer.path << " m " << m;
      ExpectReferenceKernel(got, "GemmFp8Block_Ref");
    }
  }
}

TEST_P(LinearAtLevelTest, ShardedQkvSpansBothShards) {
  const Measured got = At(kSharded, testing::Fp8BlockScheme(), kQkv, 4);
  EXPECT_LE(got.rel, ToleranceFor(Fp8BlockKey(128, 128), ActMode::kDynamicGroup));
}

TEST_P(LinearAtLevelTest, StaticPerTensorFusedLegs) {
  for (const Layer& layer : {kQkv, kGateUp, kDown}) {
    const Measured got = At(kStatic, StaticScheme(), layer, 5);
    EXPECT_LE(got.rel, ToleranceFor(kFp8PerTensorKey, ActMode::kStaticPerTensor)) << layer.path;
    ExpectReferenceKernel(got, "GemmFp8Row_Ref");
  }
}

TEST_P(LinearAtLevelTest, UnquantizedHead) {
  const Layer head{"lm_head", {"lm_head"}, {512}, 256};
  const Measured got = At(kExample, QuantScheme{}, head, 3);
  EXPECT_LE(got.rel, ToleranceFor(kBf16Key, ActMode::kNone));
  ExpectReferenceKernel(got, "GemmW16A16_Ref");
}

// A process loads layers one after another through one dispatcher: an fp16 layer of a bf16
// layer's shape must not run on the kernel chosen for the bf16 one (the packed bf16 kernels read
// their weights as bf16).
TEST_P(LinearAtLevelTest, Fp16LayerAfterABf16LayerOfItsShape) {
  constexpr int64_t kN = 16, kK = 64, kM = 2;
  std::vector<float> w(kN * kK);
  std::vector<float> x(kM * kK);
  // Small integers: exact in bf16 and fp16, and so is every dot product in fp32.
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
  std::vector<float> expected(kM * kN);
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      for (int64_t c = 0; c < kK; ++c) expected[i * kN + j] += x[i * kK + c] * w[j * kK + c];
    }
  }
  const Checkpoint checkpoint =
      testing::OpenTestCheckpoint({testing::Bf16Tensor("bf16.weight", {kN, kK}, w),
                                   testing::F16Tensor("fp16.weight", {kN, kK}, w)});
  auto dispatcher =
      std::make_shared<Dispatcher>(KernelRegistry::Global(), testing::FeaturesAt(GetParam()));
  for (const auto& [name, dtype] : {std::pair{"bf16", QDType::kBF16}, {"fp16", QDType::kFP16}}) {
    AllocationRequest request;
    request.layer = name;
    request.shape = {kN, kK};
    request.params_dtype = dtype;
    Result<Linear> linear = LoadLinear(TestSpec(kBf16Key), request, checkpoint, {name}, dispatcher);
    ASSERT_TRUE(linear.ok()) << linear.status().message();
    Result<std::vector<float>> y = linear->Forward(x, kM);
    ASSERT_TRUE(y.ok()) << y.status().message();
    EXPECT_EQ(*y, expected) << name << " on "
                            << (*linear->KernelFor(kM, QDType::kFP32, QDType::kFP32))->name();
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, LinearAtLevelTest,
                         ::testing::ValuesIn(testing::SupportedCpuLevels()),
                         testing::CpuLevelTestName);

TEST(LinearTest, CreateAndForwardErrors) {
  AllocationRequest request;
  request.layer = "tiny";
  request.shape = {2, 2};
  std::unique_ptr<WeightSpec> spec = TestSpec(kBf16Key);
  Result<LinearParams> params = spec->Allocate(request);
  auto dispatcher = std::make_shared<Dispatcher>(KernelRegistry::Global(), CpuFeatures{});
  Result<Linear> unprocessed = Linear::Create(TestSpec(kBf16Key), std::move(*params), dispatcher);
  ASSERT_FALSE(unprocessed.ok());
  EXPECT_NE(unprocessed.status().message().find("tiny: parameters were not loaded and processed"),
            std::string::npos);

  Checkpoint checkpoint =
      testing::OpenTestCheckpoint({testing::Bf16Tensor("tiny.weight", {2, 2}, {1, 2, 3, 4})});
  Result<Linear> linear = LoadLinear(TestSpec(kBf16Key), request, checkpoint, {"tiny"}, dispatcher);
  ASSERT_TRUE(linear.ok()) << linear.status().message();
  EXPECT_EQ(*linear->Forward(std::vector<float>{1, 1}, 1), (std::vector<float>{3, 7}));
  EXPECT_FALSE(linear->Forward(std::vector<float>{1, 1, 1}, 1).ok());
  std::vector<float> y(4);
  const float x[] = {1, 0, 0, 1};
  Status mismatch = linear->Forward(ConstMatrix{QDType::kFP32, x, 2, 2},
                                    MutableMatrix{QDType::kFP32, y.data(), 1, 2});
  EXPECT_NE(mismatch.message().find("does not fit W [2, 2]"), std::string::npos);
  // bf16 in and out take the same path.
  const uint16_t xb[] = {FloatToBf16(1), FloatToBf16(-1)};
  uint16_t yb[2];
  ASSERT_TRUE(
      linear->Forward(ConstMatrix{QDType::kBF16, xb, 1, 2}, MutableMatrix{QDType::kBF16, yb, 1, 2})
          .ok());
  EXPECT_EQ(Bf16ToFloat(yb[0]), -1.0f);
  EXPECT_EQ(Bf16ToFloat(yb[1]), -1.0f);
  // Forwards of M 20 and 100 share the 128 bucket; M 3 has its own.
  ASSERT_TRUE(linear->Forward(std::vector<float>(40, 1.0f), 20).ok());
  ASSERT_TRUE(linear->Forward(std::vector<float>(200, 1.0f), 100).ok());
  // (1, bf16) and (512, bf16) from Create, which prepares the decode and prefill kernels; (1,
  // fp32) and (128, fp32).
  EXPECT_EQ(dispatcher->stats().entries, 4);
}

}  // namespace
}  // namespace quantpath
