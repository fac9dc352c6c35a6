// ExpertProjectionRequests: an moe request as the plain requests of one expert's projections,
// and the tensor-parallel splits the specs then apply to them.
#include <gtest/gtest.h>

#include "quantpath/specs.h"
#include "src/specs/spec_common.h"

namespace quantpath {
namespace {

AllocationRequest Moe() {
  AllocationRequest r;
  r.layer = "model.layers.3.mlp.experts";
  r.shape = {96, 64};  // one expert's [I, H]
  r.leg_names = {"gate_proj", "up_proj", "down_proj"};
  r.experts = 8;
  r.tp_size = 2;
  r.tp_rank = 1;
  return r;
}

TEST(ExpertProjectionRequests, GateUpAndDownOfOneExpert) {
  Result<std::vector<AllocationRequest>> r = ExpertProjectionRequests(Moe());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  for (size_t leg = 0; leg < 3; ++leg) {
    const AllocationRequest& p = (*r)[leg];
    EXPECT_EQ(p.experts, 0);
    EXPECT_EQ(p.layer, "model.layers.3.mlp.experts");
    EXPECT_EQ(p.leg_names, (std::vector<std::string>{Moe().leg_names[leg]}));
    EXPECT_EQ(p.shape,
              leg < 2 ? (std::array<int64_t, 2>{96, 64}) : (std::array<int64_t, 2>{64, 96}));
    EXPECT_EQ(p.parallel, leg < 2 ? Parallel::kColumn : Parallel::kRow);
  }
  // Rank 1 of 2 holds intermediate rows 48..95 of gate and up, and those columns of down.
  Result<specs_internal::ShardGeometry> up = specs_internal::ComputeGeometry((*r)[1]);
  ASSERT_TRUE(up.ok()) << up.status().message();
  EXPECT_EQ(up->rows, 48);
  EXPECT_EQ(up->leg_src_rows, (std::vector<int64_t>{48}));
  Result<specs_internal::ShardGeometry> down = specs_internal::ComputeGeometry((*r)[2]);
  ASSERT_TRUE(down.ok()) << down.status().message();
  EXPECT_EQ(down->cols, 48);
  EXPECT_EQ(down->src_col, 48);
}

// gpt-oss's experts: gate_up_proj holds both [I, H] halves.
TEST(ExpertProjectionRequests, FusedGateUpCountsBothHalves) {
  AllocationRequest fused = Moe();
  fused.leg_names = {"gate_up_proj", "down_proj"};
  Result<std::vector<AllocationRequest>> r = ExpertProjectionRequests(fused);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[1].leg_names, (std::vector<std::string>{"gate_up_proj"}));
  EXPECT_EQ((*r)[1].shape, (std::array<int64_t, 2>{96, 64}));
  EXPECT_EQ((*r)[2].leg_names, (std::vector<std::string>{"down_proj"}));
}

// Stacked experts (gpt-oss): gate is rows 0::2 of gate_up_proj, up rows 1::2, down all of its
// own; SourceRow counts over [experts, rows] of the stacked tensor.
TEST(ExpertProjectionRequests, StackedExpertsNameTheirRows) {
  AllocationRequest fused = Moe();
  fused.leg_names = {"gate_up_proj", "down_proj"};
  fused.stacked = StackedExpert{.experts = 8};
  Result<std::vector<AllocationRequest>> r = ExpertProjectionRequests(fused);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].stacked, (StackedExpert{8, 0, 2, 0}));
  EXPECT_EQ((*r)[1].stacked, (StackedExpert{8, 0, 2, 1}));
  EXPECT_EQ((*r)[2].stacked, (StackedExpert{8, 0, 1, 0}));
  AllocationRequest up = (*r)[1];
  up.stacked->expert = 5;
  Result<specs_internal::ShardGeometry> g = specs_internal::ComputeGeometry(up);
  ASSERT_TRUE(g.ok()) << g.status().message();
  // Rank 1 of 2: up rows 48..95 of expert 5, whose 192 interleaved rows start at 5 · 192.
  EXPECT_EQ(specs_internal::SourceRowsShape(up, *g, 0), (std::vector<int64_t>{8, 192}));
  EXPECT_EQ(specs_internal::SourceRow(up, *g, 0, 0), 5 * 192 + 2 * 48 + 1);
  EXPECT_EQ(specs_internal::SourceRow(up, *g, 0, 47), 5 * 192 + 2 * 95 + 1);
  up.stacked->expert = 8;
  EXPECT_FALSE(specs_internal::ComputeGeometry(up).ok());
}

// vLLM's gpt-oss loader: ⌈(I / 32) / tp⌉ whole 32-blocks per rank, the last rank the rest.
// gpt-oss-20b's I = 2880 is 90 blocks: at tp 4, 23 blocks (736 rows) on ranks 0-2 and 672 on
// rank 3; at tp 16, 6 blocks per rank would leave rank 15 none.
TEST(ExpertProjectionRequests, WholeBlockSplits) {
  AllocationRequest moe = Moe();
  moe.shape = {2880, 2880};
  moe.split_block = 32;
  moe.bias = true;
  moe.tp_size = 4;
  std::vector<int64_t> rows;
  std::vector<int64_t> firsts;
  for (int rank = 0; rank < 4; ++rank) {
    moe.tp_rank = rank;
    Result<std::vector<AllocationRequest>> r = ExpertProjectionRequests(moe);
    ASSERT_TRUE(r.ok()) << r.status().message();
    Result<RankSlice> gate = RankSliceOf((*r)[0]);
    ASSERT_TRUE(gate.ok()) << gate.status().message();
    Result<RankSlice> down = RankSliceOf((*r)[2]);
    ASSERT_TRUE(down.ok()) << down.status().message();
    rows.push_back(static_cast<int64_t>(gate->rows.size()));
    firsts.push_back(gate->rows.front());
    EXPECT_EQ(down->cols, rows.back());
    EXPECT_EQ(down->first_col, firsts.back());
    EXPECT_EQ(down->bias, rank == 0);
  }
  EXPECT_EQ(rows, (std::vector<int64_t>{736, 736, 736, 672}));
  EXPECT_EQ(firsts, (std::vector<int64_t>{0, 736, 1472, 2208}));
  moe.tp_size = 16;
  moe.tp_rank = 0;
  Result<std::vector<AllocationRequest>> sixteen = ExpertProjectionRequests(moe);
  ASSERT_TRUE(sixteen.ok());
  Result<RankSlice> gate = RankSliceOf((*sixteen)[0]);
  ASSERT_FALSE(gate.ok());
  EXPECT_EQ(gate.status().message(),
            "model.layers.3.mlp.experts: N of leg gate_proj = 2880 is 90 blocks of 32; ⌈90 / 16⌉ "
            "= 6 per tensor-parallel rank leaves rank 15 without one");
  // vLLM asserts that the size divides I as well.
  moe.tp_size = 7;
  Result<std::vector<AllocationRequest>> seven = ExpertProjectionRequests(moe);
  ASSERT_TRUE(seven.ok());
  EXPECT_FALSE(RankSliceOf((*seven)[2]).ok());
}

TEST(ExpertProjectionRequests, Errors) {
  AllocationRequest odd = Moe();
  odd.leg_names = {"w1", "w2", "w3", "w4"};
  EXPECT_FALSE(ExpertProjectionRequests(odd).ok());
  AllocationRequest dense = Moe();
  dense.experts = 0;
  EXPECT_FALSE(ExpertProjectionRequests(dense).ok());
  // A whole moe request is not something a spec allocates.
  Result<specs_internal::ShardGeometry> whole = specs_internal::ComputeGeometry(Moe());
  ASSERT_FALSE(whole.ok());
  EXPECT_NE(whole.status().message().find("ExpertProjectionRequests"), std::string::npos);
}

}  // namespace
}  // namespace quantpath
