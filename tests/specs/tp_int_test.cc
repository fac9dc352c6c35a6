// Tensor-parallel slices of the integer specs: for each source layout written by the producers'
// packing loops (int_writers.h), every rank's canonical layout, read back bit by bit, is its slice
// of the unsplit weight (rows of each fused leg for column splits, columns for row splits,
// act-order included), its bytes are what StorageBytes says, and splits that cut a group or an
// int32 word are errors naming the layer and the dimension.
#include <gtest/gtest.h>

#include <random>

#include "src/specs/int_family.h"
#include "tests/specs/int_writers.h"

namespace quantpath {
namespace {

using testing::IntLeg;
using testing::OpenTestCheckpoint;
using testing::RandomIntLeg;
using testing::TestTensor;

std::unique_ptr<WeightSpec> Spec(std::string_view id, SourceLayout layout,
                                 ZeroPointConvention zeros = ZeroPointConvention::kStored) {
  LoadFacts facts;
  facts.layout = layout;
  facts.zero_point = zeros;
  Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(*ParseSpecId(id), {}, facts);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return spec.ok() ? std::move(*spec) : nullptr;
}

AllocationRequest Request(int64_t k, const std::vector<int64_t>& legs, Parallel parallel, int rank,
                          int size) {
  AllocationRequest r;
  r.layer = "l.fused";
  int64_t n = 0;
  for (int64_t rows : legs) n += rows;
  r.shape = {n, k};
  r.leg_rows = legs;
  r.parallel = parallel;
  r.tp_rank = rank;
  r.tp_size = size;
  return r;
}

int64_t Code(const ParamTensor& t, int64_t row, int64_t i, int bits) {
  return ReadCode(t.data<uint8_t>() + row * t.row_bytes(), i, bits);
}

// The rank's weight from its canonical layout (int_family.h), written out here from the layout's
// description: W[n][perm[j]] = (q[n][j] − z[n][gi]) · s[n][gi], gi = group[j] (act-order) or j / g.
std::vector<double> Canonical(const LinearParams& p) {
  const int bits = p.key.bits;
  const int64_t k = p.cols;
  const ParamTensor& s = p.tensor(Slot::kWeightScale);
  const ParamTensor& z = p.tensor(Slot::kWeightZero);
  const ParamTensor& slot = p.tensor(Slot::kGIdx);
  const int32_t* perm = slot.empty() ? nullptr : slot.data<int32_t>();
  std::vector<double> w(static_cast<size_t>(p.rows * k));
  for (int64_t n = 0; n < p.rows; ++n) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t gi = perm ? perm[k + j] : j / IntGroupOf(p.key, k);
      int64_t zero = int64_t{1} << (bits - 1);
      if (!z.empty()) {
        zero = p.key.family == kIntGroupFamily ? Code(z, n, gi, bits) : Code(z, 0, n, bits);
      }
      const double scale = LoadFloat(s, n * s.cols() + gi);
      w[n * k + (perm ? perm[j] : j)] =
          static_cast<double>(Code(p.tensor(Slot::kWeight), n, j, bits) - zero) * scale;
    }
  }
  return w;
}

struct Layout {
  std::string name;
  std::string id;
  SourceLayout layout;
  ZeroPointConvention zeros;
  bool symmetric;
  bool act_order;
};

std::vector<TestTensor> Write(const Layout& l, const IntLeg& leg, const std::string& prefix) {
  switch (l.layout) {
    case SourceLayout::kGptqV1:
      return testing::GptqTensors(leg, prefix, true);
    case SourceLayout::kGptqV2:
      return testing::GptqTensors(leg, prefix, false);
    case SourceLayout::kAwqGemm:
      return testing::AwqTensors(leg, prefix);
    default:
      return testing::CtTensors(leg, prefix, l.symmetric, l.act_order);
  }
}

class TpIntTest : public ::testing::TestWithParam<Layout> {};

// Two legs of 32 and 64 rows, K 128, groups of 32; --tp 2 and 4, column and row.
TEST_P(TpIntTest, EveryRankHoldsItsSlice) {
  const Layout& l = GetParam();
  std::mt19937 rng(17);
  const int64_t k = 128;
  const std::vector<int64_t> legs = {32, 64};
  // The fused legs share one input order, so act-order legs share g_idx.
  IntLeg gate = RandomIntLeg(&rng, 4, legs[0], k, 32, l.symmetric, l.act_order);
  IntLeg up = RandomIntLeg(&rng, 4, legs[1], k, 32, l.symmetric, false);
  up.g_idx = gate.g_idx;
  std::vector<TestTensor> tensors = Write(l, gate, "l.gate");
  for (TestTensor& t : Write(l, up, "l.up")) tensors.push_back(t);
  const Checkpoint checkpoint = OpenTestCheckpoint(tensors);
  std::vector<double> whole = gate.Dequantized();
  const std::vector<double> up_w = up.Dequantized();
  whole.insert(whole.end(), up_w.begin(), up_w.end());
  const auto spec = Spec(l.id, l.layout, l.zeros);
  for (Parallel parallel : {Parallel::kColumn, Parallel::kRow}) {
    for (int size : {2, 4}) {
      for (int rank = 0; rank < size; ++rank) {
        SCOPED_TRACE(::testing::Message() << (parallel == Parallel::kRow ? "row" : "column")
                                          << " rank " << rank << " of " << size);
        const AllocationRequest request = Request(k, legs, parallel, rank, size);
        Result<LinearParams> p = spec->Allocate(request);
        ASSERT_TRUE(p.ok()) << p.status().message();
        ASSERT_TRUE(spec->Load(checkpoint, {"l.gate", "l.up"}, &*p).ok());
        ASSERT_TRUE(spec->ProcessAfterLoading(&*p).ok());
        EXPECT_EQ(*spec->StorageBytes(request), p->WeightBytes());
        // The expected slice, from the unsplit weight: each leg's rank rows, or the rank's
        // columns.
        std::vector<double> expected;
        if (parallel == Parallel::kColumn) {
          int64_t start = 0;
          for (int64_t rows : legs) {
            const int64_t per = rows / size;
            for (int64_t r = start + rank * per; r < start + (rank + 1) * per; ++r) {
              expected.insert(expected.end(), whole.begin() + r * k, whole.begin() + (r + 1) * k);
            }
            start += rows;
          }
        } else {
          const int64_t per = k / size;
          for (int64_t r = 0; r < 96; ++r) {
            expected.insert(expected.end(), whole.begin() + r * k + rank * per,
                            whole.begin() + r * k + (rank + 1) * per);
          }
        }
        EXPECT_EQ(Canonical(*p), expected);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, TpIntTest,
    ::testing::Values(Layout{"gptq_v1", "int4_group_32_zp", SourceLayout::kGptqV1,
                             ZeroPointConvention::kStoredMinusOne, false, false},
                      Layout{"gptq_v2_actorder", "int4_group_32_actorder", SourceLayout::kGptqV2,
                             ZeroPointConvention::kStored, true, true},
                      Layout{"awq", "int4_group_32_zp", SourceLayout::kAwqGemm,
                             ZeroPointConvention::kStored, false, false},
                      Layout{"ct_asym", "int4_group_32_zp", SourceLayout::kCtPackQuantized,
                             ZeroPointConvention::kStored, false, false},
                      Layout{"ct_actorder", "int4_group_32_actorder",
                             SourceLayout::kCtPackQuantized, ZeroPointConvention::kStored, true,
                             true}),
    [](const ::testing::TestParamInfo<Layout>& info) { return info.param.name; });

std::string AllocateError(std::string_view id, SourceLayout layout, const AllocationRequest& r) {
  Result<LinearParams> p = Spec(id, layout)->Allocate(r);
  return p.ok() ? "" : p.status().message();
}

TEST(TpIntErrorsTest, SplitsKeepWholeGroupsAndWords) {
  // K 128 at --tp 8: slices of 16 columns cut groups of 32.
  EXPECT_EQ(AllocateError("int4_group_32", SourceLayout::kGptqV2,
                          Request(128, {32, 64}, Parallel::kRow, 0, 8)),
            "l.fused: int4_group_32 with tensor-parallel size 8 splits K = 128 into slices of 16 "
            "columns, which is not a multiple of the group size 32");
  // Channel scales have no groups, but GPTQ packs K into int32 words of eight 4-bit codes: 4
  // columns per rank at --tp 32 is half a word.
  EXPECT_NE(AllocateError("int4_channel", SourceLayout::kGptqV2,
                          Request(128, {32, 64}, Parallel::kRow, 0, 32))
                .find("splits K = 128 into slices of 4 columns, which do not fill whole int32 "
                      "words of 4-bit codes (gptq-v2)"),
            std::string::npos);
  // AWQ packs N: 32 rows at --tp 8 give 4 rows of the first leg per rank, half a word.
  EXPECT_EQ(AllocateError("int4_group_32_zp", SourceLayout::kAwqGemm,
                          Request(128, {32, 64}, Parallel::kColumn, 0, 8)),
            "l.fused: int4_group_32_zp with tensor-parallel size 8 splits N = 32 of leg 0 into "
            "slices of 4 rows, which do not fill whole int32 words of 4-bit codes (awq-gemm)");
  // compressed-tensors packs N only for zero points: the symmetric key splits there.
  EXPECT_EQ(AllocateError("int4_group_32", SourceLayout::kCtPackQuantized,
                          Request(128, {32, 64}, Parallel::kColumn, 0, 8)),
            "");
}

}  // namespace
}  // namespace quantpath
