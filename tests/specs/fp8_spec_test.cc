// Fp8Spec: allocation shapes and bytes, fused legs (per-leg scales, broadcast), the block
// alignment rule, tensor-parallel slices, and errors naming the tensor and the layer.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

using testing::F32Tensor;
using testing::Fp8Tensor;
using testing::OpenTestCheckpoint;
using testing::RandomFp8;
using testing::TestSpec;
using testing::TestTensor;

const SpecKey kPerTensor = kFp8PerTensorKey;
const SpecKey kPerChannel = kFp8PerChannelKey;
const SpecKey kBlock128 = Fp8BlockKey(128, 128);
const ActivationQuant kStatic{ActMode::kStaticPerTensor, 0};

AllocationRequest Request(std::string layer, int64_t k, std::vector<int64_t> legs,
                          std::vector<std::string> names = {}) {
  AllocationRequest r;
  r.layer = std::move(layer);
  int64_t n = 0;
  for (int64_t rows : legs) n += rows;
  r.shape = {n, k};
  if (legs.size() > 1) r.leg_rows = std::move(legs);
  r.leg_names = std::move(names);
  return r;
}

TEST(Fp8SpecTest, AllocatesCanonicalShapes) {
  const AllocationRequest request = Request("layers.0.qkv_proj", 256, {256, 128, 128});
  Result<LinearParams> tensor = TestSpec(kPerTensor, kStatic)->Allocate(request);
  ASSERT_TRUE(tensor.ok()) << tensor.status().message();
  EXPECT_EQ(tensor->key.ToId(), "fp8_per_tensor");
  EXPECT_EQ(tensor->tensor(Slot::kWeight).dtype(), QDType::kFP8E4M3);
  EXPECT_EQ(tensor->tensor(Slot::kWeight).rows(), 512);
  EXPECT_EQ(tensor->tensor(Slot::kWeight).cols(), 256);
  EXPECT_EQ(tensor->tensor(Slot::kWeightScale).rows(), 512);  // broadcast to rows after loading
  EXPECT_EQ(tensor->tensor(Slot::kWeightScale).cols(), 1);
  EXPECT_EQ(tensor->tensor(Slot::kInputScale).elements(), 1);
  EXPECT_EQ(tensor->leg_weight_scales.size(), 3u);

  Result<LinearParams> block = TestSpec(kBlock128, {})->Allocate(Request("x", 200, {168}));
  ASSERT_TRUE(block.ok());
  EXPECT_EQ(block->key.ToId(), "fp8_block_128_128");
  EXPECT_EQ(block->tensor(Slot::kWeightScale).rows(), 2);
  EXPECT_EQ(block->tensor(Slot::kWeightScale).cols(), 2);
  EXPECT_TRUE(block->tensor(Slot::kInputScale).empty());
}

TEST(Fp8SpecTest, StorageBytesMatchAllocation) {
  std::vector<AllocationRequest> requests = {Request("a", 256, {168}), Request("b", 200, {128, 40}),
                                             Request("c", 256, {256, 256, 256})};
  requests[1].bias = true;
  requests[2].tp_size = 2;
  requests[2].tp_rank = 1;
  requests[2].parallel = Parallel::kColumn;
  for (const SpecKey& key : {kPerTensor, kPerChannel, kBlock128}) {
    const auto spec = TestSpec(key, kStatic);
    for (const AllocationRequest& request : requests) {
      Result<LinearParams> params = spec->Allocate(request);
      Result<int64_t> bytes = spec->StorageBytes(request);
      ASSERT_TRUE(params.ok()) << key.ToId() << " " << request.layer;
      ASSERT_TRUE(bytes.ok());
      EXPECT_EQ(*bytes, params->WeightBytes()) << key.ToId() << " " << request.layer;
    }
  }
  EXPECT_EQ(*TestSpec(kBlock128, {})->StorageBytes(Request("q", 256, {128, 40})), 43024);
}

TEST(Fp8SpecTest, BlockLegsKeepTheirOwnGrids) {
  const auto spec = TestSpec(kBlock128, {});
  // DeepSeek's fused_qkv_a_proj, 1536 + 576: 12 + 5 grid rows, as one shared grid would have.
  EXPECT_EQ(*spec->StorageBytes(Request("fused_qkv_a_proj", 7168, {1536, 576})),
            2112 * 7168 + (12 + 5) * 56 * 4);
  // 576 + 1536: the first leg ends inside its fifth block row, and q_a_proj's grid starts on a
  // row of its own (5 + 12).
  EXPECT_EQ(*spec->StorageBytes(
                Request("fused_qkv_a_proj", 7168, {576, 1536}, {"kv_a_proj_with_mqa", "q_a_proj"})),
            2112 * 7168 + (5 + 12) * 56 * 4);
  // qkv with 64-row k_proj and v_proj: three grids.
  Result<LinearParams> qkv = spec->Allocate(
      Request("layers.0.qkv_proj", 256, {256, 64, 64}, {"q_proj", "k_proj", "v_proj"}));
  ASSERT_TRUE(qkv.ok()) << qkv.status().message();
  EXPECT_EQ(qkv->tensor(Slot::kWeightScale).rows(), 2 + 1 + 1);
  EXPECT_EQ(qkv->tensor(Slot::kWeightScale).cols(), 2);
}

TEST(Fp8SpecTest, BlockTensorParallelRules) {
  const auto spec = TestSpec(kBlock128, {});
  AllocationRequest column = Request("gate_up_proj", 256, {256, 256});
  column.tp_size = 2;
  column.parallel = Parallel::kColumn;
  EXPECT_TRUE(spec->StorageBytes(column).ok());
  column = Request("gate_up_proj", 256, {256, 128});  // 128 / 2 = 64 rows per rank
  column.tp_size = 2;
  column.parallel = Parallel::kColumn;
  Result<int64_t> bad_column = spec->StorageBytes(column);
  ASSERT_FALSE(bad_column.ok());
  EXPECT_NE(bad_column.status().message().find("tensor-parallel size 2"), std::string::npos);

  AllocationRequest row = Request("down_proj", 384, {256});
  row.tp_size = 2;
  row.parallel = Parallel::kRow;
  Result<int64_t> bad_row = spec->StorageBytes(row);  // 192 columns per rank
  ASSERT_FALSE(bad_row.ok());
  EXPECT_NE(bad_row.status().message().find("192"), std::string::npos);
  row.shape = {256, 512};
  EXPECT_TRUE(spec->StorageBytes(row).ok());
}

TEST(Fp8SpecTest, RejectsInconsistentRequests) {
  const auto spec = TestSpec(kPerChannel, {});
  AllocationRequest legs = Request("x", 16, {8, 8});
  legs.shape[0] = 15;
  EXPECT_FALSE(spec->Allocate(legs).ok());
  AllocationRequest tp = Request("x", 16, {8});
  tp.tp_size = 2;
  tp.tp_rank = 2;
  EXPECT_FALSE(spec->Allocate(tp).ok());
  AllocationRequest moe = Request("experts", 16, {8});
  moe.experts = 4;
  EXPECT_EQ(spec->Allocate(moe).status().code(), ErrorCode::kUnsupported);
  AllocationRequest dtype = Request("x", 16, {8});
  dtype.params_dtype = QDType::kINT8;
  EXPECT_FALSE(spec->Allocate(dtype).ok());
}

// Three legs of [rows, 32] with per-tensor scales 0.5, 0.25, 2 and input scales 0.1, 0.3, 0.2.
struct PerTensorFixture {
  std::vector<std::vector<uint8_t>> weights;
  std::optional<Checkpoint> checkpoint;
};

PerTensorFixture MakePerTensor() {
  std::mt19937 rng(7);
  const std::vector<std::pair<std::string, int64_t>> legs = {{"q", 8}, {"k", 4}, {"v", 4}};
  const float scales[] = {0.5f, 0.25f, 2.0f};
  const float inputs[] = {0.1f, 0.3f, 0.2f};
  PerTensorFixture fixture;
  std::vector<TestTensor> tensors;
  for (size_t i = 0; i < legs.size(); ++i) {
    const auto& [name, rows] = legs[i];
    fixture.weights.push_back(RandomFp8(&rng, rows * 32));
    tensors.push_back(Fp8Tensor("l." + name + ".weight", {rows, 32}, fixture.weights.back()));
    tensors.push_back(F32Tensor("l." + name + ".weight_scale", {}, {scales[i]}));
    tensors.push_back(F32Tensor("l." + name + ".input_scale", {1}, {inputs[i]}));
  }
  fixture.checkpoint = OpenTestCheckpoint(tensors);
  return fixture;
}

TEST(Fp8SpecTest, PerTensorFusedLegsKeepTheirScales) {
  PerTensorFixture fixture = MakePerTensor();
  const auto spec = TestSpec(kPerTensor, kStatic);
  Result<LinearParams> params = spec->Allocate(Request("l.qkv", 32, {8, 4, 4}));
  ASSERT_TRUE(params.ok());
  ASSERT_TRUE(spec->Load(*fixture.checkpoint, {"l.q", "l.k", "l.v"}, &*params).ok());
  EXPECT_EQ(params->leg_weight_scales, (std::vector<float>{0.5f, 0.25f, 2.0f}));
  ASSERT_TRUE(spec->ProcessAfterLoading(&*params).ok());
  EXPECT_FALSE(spec->ProcessAfterLoading(&*params).ok());  // once only
  EXPECT_TRUE(params->leg_weight_scales.empty());
  const float* s = params->tensor(Slot::kWeightScale).data<float>();
  for (int r = 0; r < 16; ++r) EXPECT_EQ(s[r], r < 8 ? 0.5f : r < 12 ? 0.25f : 2.0f) << r;
  EXPECT_EQ(params->tensor(Slot::kInputScale).data<float>()[0], 0.3f);  // the max over legs
  // Weights are stacked in leg order, byte for byte.
  const uint8_t* w = params->tensor(Slot::kWeight).data<uint8_t>();
  EXPECT_EQ(std::vector<uint8_t>(w, w + 8 * 32), fixture.weights[0]);
  EXPECT_EQ(std::vector<uint8_t>(w + 8 * 32, w + 12 * 32), fixture.weights[1]);
  EXPECT_EQ(std::vector<uint8_t>(w + 12 * 32, w + 16 * 32), fixture.weights[2]);
}

TEST(Fp8SpecTest, PerChannelAcceptsBothScaleShapes) {
  std::mt19937 rng(3);
  const std::vector<float> s0 = testing::RandomScales(&rng, 4);
  const std::vector<float> s1 = testing::RandomScales(&rng, 2);
  Checkpoint checkpoint = OpenTestCheckpoint({
      Fp8Tensor("m.gate_proj.weight", {4, 16}, RandomFp8(&rng, 64)),
      F32Tensor("m.gate_proj.weight_scale", {4, 1}, s0),
      Fp8Tensor("m.up_proj.weight", {2, 16}, RandomFp8(&rng, 32)),
      F32Tensor("m.up_proj.weight_scale", {2}, s1),
  });
  const auto spec = TestSpec(kPerChannel, {ActMode::kDynamicPerToken, 0});
  Result<LinearParams> params = spec->Allocate(Request("m.gate_up_proj", 16, {4, 2}));
  ASSERT_TRUE(spec->Load(checkpoint, {"m.gate_proj", "m.up_proj"}, &*params).ok());
  ASSERT_TRUE(spec->ProcessAfterLoading(&*params).ok());
  const float* s = params->tensor(Slot::kWeightScale).data<float>();
  EXPECT_EQ(std::vector<float>(s, s + 4), s0);
  EXPECT_EQ(std::vector<float>(s + 4, s + 6), s1);
}

TEST(Fp8SpecTest, BlockFusedLegsShareTheGrid) {
  // legs [128, 40] × K 200: each leg has its own 1 × 2 grid; the fused grid is 2 × 2.
  std::mt19937 rng(5);
  const std::vector<float> a = {1, 2}, b = {3, 4};
  Checkpoint checkpoint = OpenTestCheckpoint({
      Fp8Tensor("attn.q_a_proj.weight", {128, 200}, RandomFp8(&rng, 128 * 200)),
      F32Tensor("attn.q_a_proj.weight_scale_inv", {1, 2}, a),
      Fp8Tensor("attn.kv_a_proj_with_mqa.weight", {40, 200}, RandomFp8(&rng, 40 * 200)),
      F32Tensor("attn.kv_a_proj_with_mqa.weight_scale_inv", {1, 2}, b),
  });
  const auto spec = TestSpec(kBlock128, {ActMode::kDynamicGroup, 128});
  Result<LinearParams> params = spec->Allocate(Request("attn.fused_qkv_a_proj", 200, {128, 40}));
  ASSERT_TRUE(params.ok());
  Status status = spec->Load(checkpoint, {"attn.q_a_proj", "attn.kv_a_proj_with_mqa"}, &*params);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_TRUE(spec->ProcessAfterLoading(&*params).ok());
  const float* s = params->tensor(Slot::kWeightScale).data<float>();
  EXPECT_EQ(std::vector<float>(s, s + 4), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Fp8SpecTest, BlockScaleNamesComeFromTheSourceLayout) {
  std::mt19937 rng(5);
  std::vector<uint8_t> w = RandomFp8(&rng, 16 * 16);
  auto load = [&](SourceLayout layout, std::vector<TestTensor> tensors) -> Result<LinearParams> {
    const auto spec = TestSpec(Fp8BlockKey(8, 8), {}, layout);
    Checkpoint checkpoint = OpenTestCheckpoint(tensors);
    Result<LinearParams> params = spec->Allocate(Request("layer.x", 16, {16}));
    QP_RETURN_IF_ERROR(spec->Load(checkpoint, {"p"}, &*params));
    return params;
  };
  const TestTensor weight = Fp8Tensor("p.weight", {16, 16}, w);
  // DeepSeek's layout reads weight_scale_inv, compressed-tensors' weight_scale; a checkpoint with
  // both is read by its layout's name, never by which name happens to exist.
  const TestTensor inv = F32Tensor("p.weight_scale_inv", {2, 2}, {1, 2, 3, 4});
  const TestTensor plain = F32Tensor("p.weight_scale", {2, 2}, {5, 6, 7, 8});
  Result<LinearParams> deepseek = load(SourceLayout::kFp8ScaleInv, {weight, inv, plain});
  ASSERT_TRUE(deepseek.ok()) << deepseek.status().message();
  EXPECT_EQ(deepseek->tensor(Slot::kWeightScale).data<float>()[0], 1.0f);
  Result<LinearParams> ct = load(SourceLayout::kCtFloatQuantized, {weight, inv, plain});
  ASSERT_TRUE(ct.ok()) << ct.status().message();
  EXPECT_EQ(ct->tensor(Slot::kWeightScale).data<float>()[0], 5.0f);
  Result<LinearParams> wrong = load(SourceLayout::kFp8Scale, {weight, inv});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(wrong.status().message().find("p.weight_scale is not in the checkpoint"),
            std::string::npos)
      << wrong.status().message();
  Result<LinearParams> none = load(SourceLayout::kFp8ScaleInv, {weight});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("layer.x"), std::string::npos);
  Result<LinearParams> shape = load(
      SourceLayout::kFp8ScaleInv, {weight, F32Tensor("p.weight_scale_inv", {1, 4}, {1, 1, 1, 1})});
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("p.weight_scale_inv has shape [1, 4], expected [2, 2]"),
            std::string::npos)
      << shape.status().message();
  // A layout the fp8 families do not read is refused by name.
  Result<LinearParams> gptq = load(SourceLayout::kGptqV1, {weight, inv});
  ASSERT_FALSE(gptq.ok());
  EXPECT_NE(gptq.status().message().find("source layout gptq-v1"), std::string::npos)
      << gptq.status().message();
}

TEST(Fp8SpecTest, ErrorsNameTheTensorAndTheLayer) {
  const auto spec = TestSpec(kPerTensor, kStatic);
  auto load = [&](std::vector<TestTensor> tensors) {
    Checkpoint checkpoint = OpenTestCheckpoint(tensors);
    Result<LinearParams> params = spec->Allocate(Request("model.o_proj", 4, {2}));
    return spec->Load(checkpoint, {"p"}, &*params);
  };
  const std::vector<uint8_t> ok_bits = {0x38, 0x40, 0xB8, 0x00, 0x01, 0x02, 0x03, 0x04};
  const TestTensor scale = F32Tensor("p.weight_scale", {}, {1});
  const TestTensor input = F32Tensor("p.input_scale", {}, {1});
  EXPECT_TRUE(load({Fp8Tensor("p.weight", {2, 4}, ok_bits), scale, input}).ok());

  Status dtype = load({F32Tensor("p.weight", {2, 4}, std::vector<float>(8, 1.0f)), scale, input});
  EXPECT_NE(dtype.message().find("model.o_proj: tensor p.weight is F32"), std::string::npos)
      << dtype.message();
  std::vector<uint8_t> nan_bits = ok_bits;
  nan_bits[5] = 0xFF;
  Status nan = load({Fp8Tensor("p.weight", {2, 4}, nan_bits), scale, input});
  EXPECT_NE(nan.message().find("fp8 NaN (0xFF) at row 1, column 1"), std::string::npos)
      << nan.message();
  Status shape = load({Fp8Tensor("p.weight", {4, 2}, ok_bits), scale, input});
  EXPECT_NE(shape.message().find("p.weight has shape [4, 2], expected [2, 4]"), std::string::npos);
  Status scales = load(
      {Fp8Tensor("p.weight", {2, 4}, ok_bits), F32Tensor("p.weight_scale", {2}, {1, 1}), input});
  EXPECT_NE(scales.message().find("p.weight_scale has shape [2]"), std::string::npos);
  Status inf = load(
      {Fp8Tensor("p.weight", {2, 4}, ok_bits), F32Tensor("p.weight_scale", {}, {INFINITY}), input});
  EXPECT_NE(inf.message().find("non-finite scale"), std::string::npos);
  Status zero_input =
      load({Fp8Tensor("p.weight", {2, 4}, ok_bits), scale, F32Tensor("p.input_scale", {}, {0})});
  EXPECT_NE(zero_input.message().find("must be positive"), std::string::npos);
  Status missing = load({Fp8Tensor("p.weight", {2, 4}, ok_bits), scale});
  EXPECT_EQ(missing.code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.message().find("p.input_scale"), std::string::npos);
}

TEST(Fp8SpecTest, ProcessBeforeLoadIsAnError) {
  const auto spec = TestSpec(kPerTensor, {});
  Result<LinearParams> params = spec->Allocate(Request("x", 4, {2}));
  EXPECT_FALSE(spec->ProcessAfterLoading(&*params).ok());
  Checkpoint checkpoint = OpenTestCheckpoint({});
  Status legs = spec->Load(checkpoint, {"a", "b"}, &*params);
  EXPECT_NE(legs.message().find("2 checkpoint prefixes given for 1 fused legs"), std::string::npos);
}

}  // namespace
}  // namespace quantpath
