// The integer kernels against an fp64 oracle: legs written in each source layout by the
// producers' packing loops (tests/specs/int_writers.h), loaded through IntSpec, multiplied by
// every kernel that serves the key at every CPU level here, and compared with X · Wᵀ (+ bias) in
// double, W taken from the codes the writer packed, not from the canonical layout; fp32 X holds
// values bf16 cannot. The AVX2 kernels also give a row of a small batch the same bits alone
// (batch_rows.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "tests/kernels/batch_rows.h"
#include "tests/kernels/cpu_levels.h"
#include "tests/specs/int_writers.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

using testing::IntLeg;
using testing::TestTensor;

struct Case {
  std::string name;
  std::string spec_id;
  SourceLayout layout;
  int bits;
  std::vector<int64_t> legs;
  int64_t k, group, m;
  bool symmetric, act_order, bias;
  QDType in, out;
};

TEST(GemmIntRefTest, EveryKernelWithinToleranceOnEveryLayout) {
  const QDType f32 = QDType::kFP32, bf16 = QDType::kBF16;
  const std::vector<Case> cases = {
      {"gptq_v1_int4_g32_fused",
       "int4_group_32",
       SourceLayout::kGptqV1,
       4,
       {64, 32, 32},
       128,
       32,
       5,
       true,
       false,
       false,
       bf16,
       f32},
      {"gptq_v1_int3_g32_zp",
       "int3_group_32_zp",
       SourceLayout::kGptqV1,
       3,
       {64},
       256,
       32,
       17,
       false,
       false,
       true,
       f32,
       f32},
      {"gptq_v2_int8_g64_actorder",
       "int8_group_64_actorder",
       SourceLayout::kGptqV2,
       8,
       {48, 48},
       192,
       64,
       3,
       true,
       true,
       false,
       bf16,
       bf16},
      {"gptq_v1_int4_g16_zp_actorder",
       "int4_group_16_zp_actorder",
       SourceLayout::kGptqV1,
       4,
       {32},
       64,
       16,
       33,
       false,
       true,
       true,
       f32,
       f32},
      {"awq_int4_g32_zp",
       "int4_group_32_zp",
       SourceLayout::kAwqGemm,
       4,
       {40, 24},
       96,
       32,
       7,
       false,
       false,
       false,
       bf16,
       f32},
      {"ct_int4_g32_zp_ragged",
       "int4_group_32_zp",
       SourceLayout::kCtPackQuantized,
       4,
       {12},
       80,
       32,
       2,
       false,
       false,
       true,
       f32,
       f32},
      // K not a multiple of 8: the fast kernels' column tail, in half a byte of the last word.
      {"ct_int4_g32_odd_k",
       "int4_group_32",
       SourceLayout::kCtPackQuantized,
       4,
       {13},
       100,
       32,
       9,
       true,
       false,
       true,
       bf16,
       bf16},
      {"gptq_v2_int8_g64",
       "int8_group_64",
       SourceLayout::kGptqV2,
       8,
       {24},
       136,
       64,
       16,
       true,
       false,
       false,
       f32,
       f32},
      {"ct_int8_channel",
       "int8_channel",
       SourceLayout::kCtPackQuantized,
       8,
       {24, 8},
       64,
       64,
       4,
       true,
       false,
       false,
       bf16,
       f32},
      {"ct_int4_channel_zp",
       "int4_channel_zp",
       SourceLayout::kCtPackQuantized,
       4,
       {20},
       72,
       72,
       1,
       false,
       false,
       false,
       f32,
       f32},
      // A row longer than the AVX-512 kernels' 512-column tile, with a vector tail (channel), and
      // groups of 128 across tiles with a zero point per group, at a tile of M = 17.
      {"ct_int4_channel_long",
       "int4_channel",
       SourceLayout::kCtPackQuantized,
       4,
       {20},
       1100,
       1100,
       3,
       true,
       false,
       true,
       bf16,
       f32},
      {"ct_int8_g128_zp_long",
       "int8_group_128_zp",
       SourceLayout::kCtPackQuantized,
       8,
       {12},
       640,
       128,
       17,
       false,
       false,
       false,
       bf16,
       f32},
      {"awq_int4_g128_zp_m1",
       "int4_group_128_zp",
       SourceLayout::kAwqGemm,
       4,
       {16},
       512,
       128,
       1,
       false,
       false,
       false,
       bf16,
       bf16},
      {"gptq_v2_int4_g128_m6",
       "int4_group_128",
       SourceLayout::kGptqV2,
       4,
       {8, 8},
       384,
       128,
       6,
       true,
       false,
       true,
       f32,
       bf16},
      {"ct_int4_g64_zp_m18",
       "int4_group_64_zp",
       SourceLayout::kCtPackQuantized,
       4,
       {12},
       192,
       64,
       18,
       false,
       false,
       false,
       bf16,
       f32},
      // Prefill M (the AVX-512 kernels' tiled GEMM): N past a 64-row tile and not a multiple of
      // 4, rows longer than a 256-column tile, groups of 32 and 128 with zero points, channel
      // runs across tiles, fused legs.
      {"ct_int4_g128_zp_m70",
       "int4_group_128_zp",
       SourceLayout::kCtPackQuantized,
       4,
       {70},
       640,
       128,
       70,
       false,
       false,
       true,
       bf16,
       f32},
      {"awq_int4_g32_zp_m64",
       "int4_group_32_zp",
       SourceLayout::kAwqGemm,
       4,
       {24, 24},
       288,
       32,
       64,
       false,
       false,
       false,
       f32,
       bf16},
      {"ct_int8_channel_m66",
       "int8_channel",
       SourceLayout::kCtPackQuantized,
       8,
       {67},
       600,
       600,
       66,
       true,
       false,
       false,
       bf16,
       f32},
      {"ct_int4_channel_zp_m65",
       "int4_channel_zp",
       SourceLayout::kCtPackQuantized,
       4,
       {33},
       1100,
       1100,
       65,
       false,
       false,
       true,
       f32,
       f32},
      {"ct_int4_g16_actorder",
       "int4_group_16_actorder",
       SourceLayout::kCtPackQuantized,
       4,
       {16},
       64,
       16,
       6,
       true,
       true,
       false,
       f32,
       f32},
  };
  for (const CpuLevel level : testing::SupportedCpuLevels()) {
    const CpuFeatures allowed = testing::FeaturesAt(level);
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name + " at " + std::string(CpuLevelName(level)));
      std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>()(c.name)));
      // Fused legs of one act-order layer share one g_idx (one input order).
      std::vector<IntLeg> legs;
      std::vector<TestTensor> tensors;
      std::vector<std::string> prefixes;
      std::vector<double> w;
      for (size_t i = 0; i < c.legs.size(); ++i) {
        IntLeg leg =
            testing::RandomIntLeg(&rng, c.bits, c.legs[i], c.k, c.group, c.symmetric, c.act_order);
        if (i > 0) leg.g_idx = legs[0].g_idx;
        const std::string prefix = "layer.leg" + std::to_string(i);
        std::vector<TestTensor> t =
            c.layout == SourceLayout::kAwqGemm ? testing::AwqTensors(leg, prefix)
            : c.layout == SourceLayout::kCtPackQuantized
                ? testing::CtTensors(leg, prefix, c.symmetric, c.act_order)
                : testing::GptqTensors(leg, prefix, c.layout == SourceLayout::kGptqV1);
        if (c.bias) {
          t.push_back(testing::Bf16Tensor(prefix + ".bias", {leg.n},
                                          testing::RandomBf16Values(&rng, leg.n)));
        }
        tensors.insert(tensors.end(), t.begin(), t.end());
        prefixes.push_back(prefix);
        const std::vector<double> d = leg.Dequantized();
        w.insert(w.end(), d.begin(), d.end());
        legs.push_back(std::move(leg));
      }
      const Checkpoint checkpoint = testing::OpenTestCheckpoint(tensors);
      LoadFacts facts;
      facts.layout = c.layout;
      facts.zero_point = c.layout == SourceLayout::kGptqV1 ? ZeroPointConvention::kStoredMinusOne
                                                           : ZeroPointConvention::kStored;
      Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(*ParseSpecId(c.spec_id), {}, facts);
      ASSERT_TRUE(spec.ok()) << spec.status().message();
      AllocationRequest request;
      request.layer = c.name;
      int64_t n = 0;
      for (int64_t rows : c.legs) n += rows;
      request.shape = {n, c.k};
      if (c.legs.size() > 1) request.leg_rows = c.legs;
      request.bias = c.bias;
      Result<LinearParams> params = (*spec)->Allocate(request);
      ASSERT_TRUE(params.ok()) << params.status().message();
      ASSERT_TRUE((*spec)->Load(checkpoint, prefixes, &*params).ok());
      ASSERT_TRUE((*spec)->ProcessAfterLoading(&*params).ok());

      std::vector<float> x = testing::RandomBf16Values(&rng, c.m * c.k);
      if (c.in == f32) {
        for (float& v : x) v += v * 0x1.1p-12f;  // past bf16's 8 bits: fp32 X that bf16 cannot hold
      }
      std::vector<double> expected(static_cast<size_t>(c.m * n));
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double acc = c.bias ? LoadFloat(params->tensor(Slot::kBias), j) : 0.0;
          for (int64_t col = 0; col < c.k; ++col)
            acc += double{x[i * c.k + col]} * w[j * c.k + col];
          expected[i * n + j] = acc;
        }
      }
      std::vector<uint16_t> x16(x.size());
      for (size_t i = 0; i < x.size(); ++i) x16[i] = FloatToBf16(x[i]);
      const ConstMatrix xm{c.in, c.in == bf16 ? static_cast<const void*>(x16.data()) : x.data(),
                           c.m, c.k};
      const KernelProbe probe{(*spec)->key(), c.m, n, c.k, c.in, c.out, DeviceCaps{}, {}};
      const double tolerance = ToleranceFor((*spec)->key(), ActMode::kNone) +
                               (c.out == bf16 ? std::ldexp(1.0, -8) : 0.0);
      std::vector<const LinearKernel*> tested;
      for (const LinearKernel* kernel : KernelRegistry::Global().kernels()) {
        if (!allowed.Covers(kernel->features()) || !kernel->CanHandle(probe)) continue;
        std::vector<float> y32(static_cast<size_t>(c.m * n));
        std::vector<uint16_t> y16(y32.size());
        const MutableMatrix ym{c.out, c.out == bf16 ? static_cast<void*>(y16.data()) : y32.data(),
                               c.m, n};
        kernel->Apply(*params, {}, xm, ym);
        double max_abs = 0, max_ref = 0;
        for (size_t i = 0; i < expected.size(); ++i) {
          const double got = c.out == bf16 ? Bf16ToFloat(y16[i]) : y32[i];
          max_abs = std::max(max_abs, std::fabs(got - expected[i]));
          max_ref = std::max(max_ref, std::fabs(expected[i]));
        }
        EXPECT_LE(max_abs / max_ref, tolerance) << kernel->name();
        if (testing::PromisesBatchBits(*kernel, {}, c.m)) {
          testing::ExpectRowsAloneAsInBatch(*kernel, *params, {}, xm);
        }
        tested.push_back(kernel);
      }
      ASSERT_FALSE(tested.empty()) << "no kernel handles " << c.name;
      // What the dispatcher picks at this level is among those checked.
      Result<const LinearKernel*> chosen =
          Dispatcher(KernelRegistry::Global(), allowed).Select(probe);
      ASSERT_TRUE(chosen.ok()) << chosen.status().message();
      EXPECT_NE(std::find(tested.begin(), tested.end(), *chosen), tested.end())
          << (*chosen)->name();
    }
  }
}

}  // namespace
}  // namespace quantpath
