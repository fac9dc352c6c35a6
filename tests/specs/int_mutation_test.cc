// 400 seeded mutations of an integer checkpoint in each source layout (reshaped tensors, same-width
// dtype swaps, flipped bytes — g_idx, weight_shape and zero points included — dropped tensors, a
// layer of another shape): loading and the fp64 reference never crash, every failure names the
// layer, and whenever both succeed they agree exactly, since they decode the same bytes apart.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include "quantpath/specs.h"
#include "src/specs/int_family.h"
#include "tests/specs/int_writers.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

using testing::IntLeg;
using testing::TestTensor;

struct Layout {
  std::string name;
  std::string spec_id;
  SourceLayout layout;
  int bits;
  int64_t n, k, group;
  bool symmetric, act_order;
};

QuantScheme SchemeOf(const Layout& l) {
  QuantScheme s;
  s.weight.dtype = IntCodeDtype(l.bits);
  s.weight.granularity = Granularity::kGroup;
  s.weight.group_size = l.group;
  s.weight.symmetric = l.symmetric;
  s.weight.load.layout = l.layout;
  s.weight.load.zero_point = l.layout == SourceLayout::kGptqV1
                                 ? ZeroPointConvention::kStoredMinusOne
                                 : ZeroPointConvention::kStored;
  s.weight.load.act_order = l.act_order;
  return s;
}

std::vector<TestTensor> Write(const Layout& l, const IntLeg& leg) {
  if (l.layout == SourceLayout::kAwqGemm) return testing::AwqTensors(leg, "m");
  if (l.layout == SourceLayout::kCtPackQuantized) {
    return testing::CtTensors(leg, "m", l.symmetric, l.act_order);
  }
  return testing::GptqTensors(leg, "m", l.layout == SourceLayout::kGptqV1);
}

// One mutation of `tensors`, chosen by `rng`; returns the layer's K (changed by some).
int64_t Mutate(std::mt19937* rng, std::vector<TestTensor>* tensors, int64_t k) {
  auto pick = [&](size_t count) {
    return std::uniform_int_distribution<size_t>(0, count - 1)(*rng);
  };
  TestTensor& t = (*tensors)[pick(tensors->size())];
  switch (pick(5)) {
    case 0: {  // the same elements in another shape
      int64_t elements = 1;
      for (int64_t d : t.shape) elements *= d;
      std::vector<int64_t> divisors;
      for (int64_t d = 1; d <= elements; ++d) {
        if (elements % d == 0) divisors.push_back(d);
      }
      const int64_t first = divisors[pick(divisors.size())];
      t.shape = pick(3) == 0 ? std::vector<int64_t>{elements}
                             : std::vector<int64_t>{first, elements / first};
      break;
    }
    case 1: {  // another dtype of the same width
      const int bytes = t.dtype == "F16" || t.dtype == "BF16" || t.dtype == "I16" ? 2
                        : t.dtype == "I64"                                        ? 8
                                                                                  : 4;
      const std::vector<std::string> same =
          bytes == 2   ? std::vector<std::string>{"F16", "BF16", "I16"}
          : bytes == 8 ? std::vector<std::string>{"I64", "F64", "U64"}
                       : std::vector<std::string>{"I32", "F32", "U32"};
      t.dtype = same[pick(same.size())];
      break;
    }
    case 2:  // flipped bytes
      for (int i = 0; i < 4 && !t.bytes.empty(); ++i) {
        t.bytes[pick(t.bytes.size())] ^= static_cast<uint8_t>(1u << pick(8));
      }
      break;
    case 3:  // a tensor dropped
      tensors->erase(tensors->begin() + static_cast<std::ptrdiff_t>(pick(tensors->size())));
      break;
    default:  // a layer of another width
      return k + (pick(2) ? 32 : -32);
  }
  return k;
}

TEST(IntMutationTest, LoadAndReferenceNeverCrashAndAgree) {
  const std::vector<Layout> layouts = {
      {"gptq_v1_int3_zp", "int3_group_32_zp", SourceLayout::kGptqV1, 3, 32, 64, 32, false, false},
      {"gptq_v2_int4_actorder", "int4_group_16_actorder", SourceLayout::kGptqV2, 4, 16, 64, 16,
       true, true},
      {"awq_int4_zp", "int4_group_32_zp", SourceLayout::kAwqGemm, 4, 16, 64, 32, false, false},
      {"ct_int4_zp", "int4_group_32_zp", SourceLayout::kCtPackQuantized, 4, 12, 64, 32, false,
       false},
      {"ct_int8_actorder", "int8_group_16_actorder", SourceLayout::kCtPackQuantized, 8, 8, 32, 16,
       true, true},
  };
  const std::filesystem::path dir = testing::FreshDir();
  int loaded = 0, agreed = 0;
  for (const Layout& l : layouts) {
    SCOPED_TRACE(l.name);
    std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>()(l.name)));
    const IntLeg leg =
        testing::RandomIntLeg(&rng, l.bits, l.n, l.k, l.group, l.symmetric, l.act_order);
    LoadFacts facts = SchemeOf(l).weight.load;
    Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(*ParseSpecId(l.spec_id), {}, facts);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    for (int round = 0; round < 400; ++round) {
      std::vector<TestTensor> tensors = Write(l, leg);
      const int64_t k = Mutate(&rng, &tensors, l.k);
      const std::filesystem::path file = dir / (l.name + ".safetensors");
      testing::WriteSafetensors(file, tensors);
      Result<std::shared_ptr<const SafetensorsFile>> opened = SafetensorsFile::Open(file);
      if (!opened.ok()) continue;  // a mutation the safetensors layer already refuses
      Result<Checkpoint> checkpoint = Checkpoint::Open(dir);
      if (!checkpoint.ok()) continue;
      AllocationRequest request;
      request.layer = "layer.m";
      request.shape = {l.n, k};
      Result<LinearParams> params = (*spec)->Allocate(request);
      if (!params.ok()) continue;
      const Status load = (*spec)->Load(*checkpoint, {"m"}, &*params);
      Result<ReferenceLayer> ref =
          DequantizeReference(*checkpoint, SchemeOf(l), "layer.m", {"m"}, false);
      if (!load.ok()) {
        EXPECT_NE(load.message().find("layer.m"), std::string::npos) << load.message();
        continue;
      }
      ++loaded;
      ASSERT_TRUE((*spec)->ProcessAfterLoading(&*params).ok());
      if (!ref.ok() || ref->rows != params->rows || ref->cols != params->cols) continue;
      // Both decoded the same bytes: the dequantized weights must be the same.
      const ParamTensor& w = params->tensor(Slot::kWeight);
      const ParamTensor& s = params->tensor(Slot::kWeightScale);
      const ParamTensor& z = params->tensor(Slot::kWeightZero);
      const ParamTensor& perm = params->tensor(Slot::kGIdx);
      int64_t differ = 0;
      for (int64_t r = 0; r < params->rows; ++r) {
        for (int64_t j = 0; j < params->cols; ++j) {
          const int64_t gi = j / l.group;
          const int zero =
              z.empty()
                  ? 1 << (l.bits - 1)
                  : static_cast<int>(ReadCode(z.data<uint8_t>() + r * z.row_bytes(), gi, l.bits));
          const double v =
              (static_cast<int>(ReadCode(w.data<uint8_t>() + r * w.row_bytes(), j, l.bits)) -
               zero) *
              double{LoadFloat(s, r * s.cols() + gi)};
          const int64_t col = perm.empty() ? j : perm.data<int32_t>()[j];
          // NaN scales are refused at load, so == is exact here.
          if (v != ref->weight[r * params->cols + col]) ++differ;
        }
      }
      EXPECT_EQ(differ, 0) << "round " << round;
      ++agreed;
    }
  }
  // The unmutated cases and harmless mutations load: the comparison is not vacuous.
  EXPECT_GT(loaded, 100);
  EXPECT_GT(agreed, 100);
}

// weight_shape is two numbers the file states: a K far beyond the packed words (and a group the
// config states) is a mismatch naming the layer, never an overflow in the size checks
// (a fuzz_ct_pack_loader input).
TEST(IntReference, CtWeightShapeBeyondThePackedWordsIsAnError) {
  std::mt19937 rng(7);
  const IntLeg leg = testing::RandomIntLeg(&rng, 4, 8, 64, 32, true);
  std::vector<TestTensor> tensors = testing::CtTensors(leg, "m", true, false);
  for (TestTensor& t : tensors) {
    if (t.name != "m.weight_shape") continue;
    const int64_t shape[2] = {8, int64_t{3242591731706757248}};
    std::memcpy(t.bytes.data(), shape, sizeof(shape));
  }
  const Checkpoint checkpoint = testing::OpenTestCheckpoint(tensors);
  for (int64_t group : {int64_t{32}, std::numeric_limits<int64_t>::max()}) {
    QuantScheme scheme =
        SchemeOf({"ct", "", SourceLayout::kCtPackQuantized, 4, 8, 64, group, true, false});
    Result<ReferenceLayer> ref = DequantizeReference(checkpoint, scheme, "layer.m", {"m"}, false);
    ASSERT_FALSE(ref.ok());
    EXPECT_NE(ref.status().message().find("layer.m"), std::string::npos) << ref.status().message();
  }
}

}  // namespace
}  // namespace quantpath
