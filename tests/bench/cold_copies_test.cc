// A cold benchmark row cycles distinct copies of its weights that together hold at least 4× the
// last-level cache (bench.h), so that each call finds its copy evicted: the fewest such copies,
// never fewer than 2; a warm row has one.
#include <gtest/gtest.h>

#include <cstdint>

#include "quantpath/bench.h"

namespace quantpath {
namespace {

TEST(ColdCopies, TheFewestThatHoldFourTimesTheCache) {
  constexpr int64_t kLlc = int64_t{32} << 20;
  EXPECT_EQ(ColdCopies(int64_t{8} << 20, kLlc), 16);        // divides exactly
  EXPECT_EQ(ColdCopies((int64_t{8} << 20) + 1, kLlc), 16);  // 15 copies hold less than 4×
  EXPECT_EQ(ColdCopies(int64_t{100} << 20, kLlc), 2);       // larger than 4× alone: still 2
  EXPECT_EQ(ColdCopies(int64_t{1} << 30, kLlc), 2);
  for (int64_t bytes : {int64_t{1000}, int64_t{3} << 20, int64_t{29} << 20}) {
    const int64_t copies = ColdCopies(bytes, kLlc);
    EXPECT_GE(copies * bytes, 4 * kLlc) << bytes;
    EXPECT_LT((copies - 1) * bytes, 4 * kLlc) << bytes;
  }
}

TEST(ColdCopies, BenchWeightsMakeThatManyColdAndOneWarm) {
  MachineLimits limits;
  limits.llc_bytes = int64_t{1} << 20;
  Result<BenchWeights> cold = BenchWeights::Make("int8_channel", 256, 512, true, limits);
  ASSERT_TRUE(cold.ok()) << cold.status().message();
  const int64_t bytes = cold->weight_bytes();
  EXPECT_EQ(static_cast<int64_t>(cold->copies().size()), ColdCopies(bytes, limits.llc_bytes));
  EXPECT_GE(static_cast<int64_t>(cold->copies().size()) * bytes, 4 * limits.llc_bytes);
  Result<BenchWeights> warm = BenchWeights::Make("int8_channel", 256, 512, false, limits);
  ASSERT_TRUE(warm.ok()) << warm.status().message();
  EXPECT_EQ(warm->copies().size(), 1u);
}

}  // namespace
}  // namespace quantpath
