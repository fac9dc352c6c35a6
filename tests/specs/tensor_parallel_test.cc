// Tensor-parallel slices: every rank's parameters are the matching slice of the unsplit ones, for
// each spec, with column and row splits, fused legs and biases.
#include <gtest/gtest.h>

#include <random>

#include "quantpath/specs.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

using testing::Bf16Tensor;
using testing::F32Tensor;
using testing::Fp8Tensor;
using testing::RandomFp8;
using testing::TestSpec;

// Two legs (gate: 256 rows, up: 256 rows) × K 512, with every tensor a spec may read.
Checkpoint MakeCheckpoint() {
  std::mt19937 rng(11);
  std::vector<testing::TestTensor> tensors;
  for (const char* leg : {"mlp.gate_proj", "mlp.up_proj"}) {
    const std::string p = leg;
    tensors.push_back(Fp8Tensor(p + ".weight", {256, 512}, RandomFp8(&rng, 256 * 512)));
    tensors.push_back(F32Tensor(p + ".weight_scale_inv", {2, 4}, testing::RandomScales(&rng, 8)));
    tensors.push_back(F32Tensor(p + ".bias", {256}, testing::RandomScales(&rng, 256)));
  }
  return testing::OpenTestCheckpoint(tensors);
}

LinearParams LoadRank(const WeightSpec& spec, const Checkpoint& checkpoint, Parallel parallel,
                      int rank, int size) {
  AllocationRequest request;
  request.layer = "mlp.gate_up_proj";
  request.shape = {512, 512};
  request.leg_rows = {256, 256};
  request.bias = true;
  request.parallel = parallel;
  request.tp_rank = rank;
  request.tp_size = size;
  Result<LinearParams> params = spec.Allocate(request);
  EXPECT_TRUE(params.ok()) << params.status().message();
  Status status = spec.Load(checkpoint, {"mlp.gate_proj", "mlp.up_proj"}, &*params);
  EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_TRUE(spec.ProcessAfterLoading(&*params).ok());
  return std::move(params).value();
}

// Element (r, c) of a float / byte parameter.
float At(const ParamTensor& t, int64_t r, int64_t c) {
  if (t.dtype() == QDType::kFP8E4M3) return t.data<uint8_t>()[r * t.cols() + c];
  return LoadFloat(t, r * t.cols() + c);
}

TEST(TensorParallelTest, ColumnSplitTakesEachLegsRows) {
  Checkpoint checkpoint = MakeCheckpoint();
  const auto spec = TestSpec(Fp8BlockKey(128, 128), {});
  LinearParams full = LoadRank(*spec, checkpoint, Parallel::kReplicated, 0, 1);
  LinearParams rank1 = LoadRank(*spec, checkpoint, Parallel::kColumn, 1, 2);
  ASSERT_EQ(rank1.rows, 256);
  ASSERT_EQ(rank1.leg_rows, (std::vector<int64_t>{128, 128}));
  // Rank 1 holds gate rows [128, 256) then up rows [128, 256), i.e. full rows 128.. and 384...
  for (int64_t r = 0; r < 256; ++r) {
    const int64_t src = r < 128 ? 128 + r : 256 + 128 + (r - 128);
    for (int64_t c = 0; c < 512; c += 37) {
      ASSERT_EQ(At(rank1.tensor(Slot::kWeight), r, c), At(full.tensor(Slot::kWeight), src, c))
          << r << "," << c;
    }
    ASSERT_EQ(At(rank1.tensor(Slot::kBias), r, 0), At(full.tensor(Slot::kBias), src, 0)) << r;
    for (int64_t j = 0; j < 4; ++j) {
      ASSERT_EQ(At(rank1.tensor(Slot::kWeightScale), r / 128, j),
                At(full.tensor(Slot::kWeightScale), src / 128, j));
    }
  }
}

TEST(TensorParallelTest, RowSplitTakesColumnsAndKeepsTheBiasOnRankZero) {
  Checkpoint checkpoint = MakeCheckpoint();
  const auto spec = TestSpec(Fp8BlockKey(128, 128), {});
  LinearParams full = LoadRank(*spec, checkpoint, Parallel::kReplicated, 0, 1);
  LinearParams rank0 = LoadRank(*spec, checkpoint, Parallel::kRow, 0, 2);
  LinearParams rank1 = LoadRank(*spec, checkpoint, Parallel::kRow, 1, 2);
  EXPECT_FALSE(rank0.tensor(Slot::kBias).empty());
  EXPECT_TRUE(rank1.tensor(Slot::kBias).empty());
  ASSERT_EQ(rank1.cols, 256);
  ASSERT_EQ(rank1.tensor(Slot::kWeightScale).cols(), 2);
  for (int64_t r = 0; r < 512; r += 7) {
    for (int64_t c = 0; c < 256; ++c) {
      ASSERT_EQ(At(rank1.tensor(Slot::kWeight), r, c), At(full.tensor(Slot::kWeight), r, 256 + c));
    }
    for (int64_t j = 0; j < 2; ++j) {
      ASSERT_EQ(At(rank1.tensor(Slot::kWeightScale), r / 128, j),
                At(full.tensor(Slot::kWeightScale), r / 128, 2 + j));
    }
  }
}

TEST(TensorParallelTest, DenseColumnSplit) {
  std::mt19937 rng(2);
  const std::vector<float> gate = testing::RandomBf16Values(&rng, 8 * 4);
  const std::vector<float> up = testing::RandomBf16Values(&rng, 8 * 4);
  Checkpoint dense = testing::OpenTestCheckpoint(
      {Bf16Tensor("g.weight", {8, 4}, gate), Bf16Tensor("u.weight", {8, 4}, up)});
  const auto spec = TestSpec(kBf16Key);
  AllocationRequest request;
  request.layer = "gate_up";
  request.shape = {16, 4};
  request.leg_rows = {8, 8};
  request.parallel = Parallel::kColumn;
  request.tp_size = 4;
  request.tp_rank = 3;
  Result<LinearParams> params = spec->Allocate(request);
  ASSERT_TRUE(spec->Load(dense, {"g", "u"}, &*params).ok());
  // Rank 3 of 4: gate rows 6..7, up rows 6..7.
  for (int64_t c = 0; c < 4; ++c) {
    EXPECT_EQ(At(params->tensor(Slot::kWeight), 0, c), gate[6 * 4 + c]);
    EXPECT_EQ(At(params->tensor(Slot::kWeight), 1, c), gate[7 * 4 + c]);
    EXPECT_EQ(At(params->tensor(Slot::kWeight), 2, c), up[6 * 4 + c]);
    EXPECT_EQ(At(params->tensor(Slot::kWeight), 3, c), up[7 * 4 + c]);
  }
}

TEST(TensorParallelTest, SplitsMustDivide) {
  const auto spec = TestSpec(kBf16Key);
  AllocationRequest request;
  request.layer = "o_proj";
  request.shape = {8, 6};
  request.parallel = Parallel::kRow;
  request.tp_size = 4;
  Result<LinearParams> params = spec->Allocate(request);
  ASSERT_FALSE(params.ok());
  EXPECT_NE(params.status().message().find("o_proj: K = 6 is not divisible by tensor-parallel "
                                           "size 4"),
            std::string::npos);
}

TEST(TensorParallelTest, ReplicatedKvHeadsFollowTheRanksLegRows) {
  // q: 4 heads of 1 row, k and v: 2 heads of 1 row, at --tp 4: one q head per rank and each KV
  // head on two consecutive ranks (vLLM's QKVParallelLinear with fewer KV heads than ranks).
  std::mt19937 rng(3);
  const std::vector<float> q = testing::RandomBf16Values(&rng, 4 * 2);
  const std::vector<float> k = testing::RandomBf16Values(&rng, 2 * 2);
  const std::vector<float> v = testing::RandomBf16Values(&rng, 2 * 2);
  Checkpoint checkpoint = testing::OpenTestCheckpoint({Bf16Tensor("q.weight", {4, 2}, q),
                                                       Bf16Tensor("k.weight", {2, 2}, k),
                                                       Bf16Tensor("v.weight", {2, 2}, v)});
  const auto spec = TestSpec(kBf16Key);
  for (int rank = 0; rank < 4; ++rank) {
    AllocationRequest request;
    request.layer = "qkv_proj";
    request.shape = {8, 2};
    request.leg_rows = {4, 2, 2};
    request.rank_leg_rows = {1, 1, 1};
    request.parallel = Parallel::kColumn;
    request.tp_size = 4;
    request.tp_rank = rank;
    Result<LinearParams> params = spec->Allocate(request);
    ASSERT_TRUE(params.ok()) << params.status().message();
    ASSERT_TRUE(spec->Load(checkpoint, {"q", "k", "v"}, &*params).ok());
    const int kv = rank / 2;
    for (int64_t c = 0; c < 2; ++c) {
      EXPECT_EQ(At(params->tensor(Slot::kWeight), 0, c), q[rank * 2 + c]) << rank;
      EXPECT_EQ(At(params->tensor(Slot::kWeight), 1, c), k[kv * 2 + c]) << rank;
      EXPECT_EQ(At(params->tensor(Slot::kWeight), 2, c), v[kv * 2 + c]) << rank;
    }
    Result<RankSlice> slice = RankSliceOf(request);
    ASSERT_TRUE(slice.ok());
    EXPECT_EQ(slice->rows, (std::vector<int64_t>{rank, 4 + kv, 6 + kv}));
  }
  // Three KV heads cannot be shared evenly by four ranks.
  AllocationRequest odd;
  odd.layer = "qkv_proj";
  odd.shape = {10, 2};
  odd.leg_rows = {4, 3, 3};
  odd.leg_names = {"q_proj", "k_proj", "v_proj"};
  odd.rank_leg_rows = {1, 1, 1};
  odd.parallel = Parallel::kColumn;
  odd.tp_size = 4;
  EXPECT_EQ(spec->Allocate(odd).status().message(),
            "qkv_proj: N = 3 of leg k_proj is not divisible by tensor-parallel size 4");
}

TEST(TensorParallelTest, BlockGridsArePerLeg) {
  // q/k/v of 128 + 64 + 64 rows with 128 × 128 blocks: three grids of one row each, though the
  // legs together are two block rows.
  std::mt19937 rng(4);
  std::vector<testing::TestTensor> tensors;
  std::vector<std::vector<float>> scales;
  for (const auto& [leg, rows] : {std::pair{"q", 128}, std::pair{"k", 64}, std::pair{"v", 64}}) {
    const std::string p = leg;
    tensors.push_back(Fp8Tensor(p + ".weight", {rows, 256}, RandomFp8(&rng, rows * 256)));
    scales.push_back(testing::RandomScales(&rng, 2));
    tensors.push_back(F32Tensor(p + ".weight_scale_inv", {1, 2}, scales.back()));
  }
  Checkpoint checkpoint = testing::OpenTestCheckpoint(tensors);
  const auto spec = TestSpec(Fp8BlockKey(128, 128), {});
  AllocationRequest request;
  request.layer = "qkv_proj";
  request.shape = {256, 256};
  request.leg_rows = {128, 64, 64};
  Result<LinearParams> params = spec->Allocate(request);
  ASSERT_TRUE(params.ok()) << params.status().message();
  ASSERT_TRUE(spec->Load(checkpoint, {"q", "k", "v"}, &*params).ok());
  const ParamTensor& grid = params->tensor(Slot::kWeightScale);
  ASSERT_EQ(grid.rows(), 3);
  for (int64_t leg = 0; leg < 3; ++leg) {
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(At(grid, leg, j), scales[leg][j]) << leg;
  }
  EXPECT_EQ(*spec->StorageBytes(request), 256 * 256 + 3 * 2 * 4);
  EXPECT_EQ(*spec->StorageBytes(request), params->WeightBytes());
  // At --tp 2 q's 64 rows per rank are half a block.
  request.parallel = Parallel::kColumn;
  request.tp_size = 2;
  request.rank_leg_rows = {64, 64, 64};
  EXPECT_NE(spec->Allocate(request).status().message().find("and leg 0 is not a multiple of the "
                                                            "block's 128 rows"),
            std::string::npos);
}

}  // namespace
}  // namespace quantpath
