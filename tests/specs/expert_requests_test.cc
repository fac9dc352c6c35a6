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
