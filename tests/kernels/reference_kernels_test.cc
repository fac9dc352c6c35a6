// Every registered kernel, at every CPU level this machine has, against an fp64 oracle: the
// parameters dequantized to double straight from their bytes, X quantized by
// QuantizeActivationsReference, products summed in double. Cases cover each spec family and
// activation mode, fp32 / bf16 in and out, ragged block edges, biases and M in different buckets.
// At each level the kernel the dispatcher picks is one of those checked, the highest priority among
// them. The AVX2 kernels also give a row of a small batch the same bits alone (batch_rows.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <tuple>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "tests/kernels/batch_rows.h"
#include "tests/kernels/cpu_levels.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

using testing::TestSpec;

struct Case {
  std::string name;
  std::string spec_id;
  ActivationQuant act;
  int64_t m, n, k;
  QDType in, out;
  bool bias;
  QDType params = QDType::kBF16;  // the unquantized dtype: the bf16 spec's W is stored in it
  bool bf16_x = true;             // X's values are bf16 values (else fp32 ones that are not)
  bool tiny_scales = false;       // E8M0 scales of 2^-127 among them (products below bf16's range)
};

std::unique_ptr<WeightSpec> SpecFor(const Case& c) {
  return TestSpec(*ParseSpecId(c.spec_id), c.act);
}

// Parameters with random contents, as ProcessAfterLoading leaves them.
LinearParams RandomParams(const Case& c, const WeightSpec& spec, std::mt19937* rng) {
  AllocationRequest request;
  request.layer = c.name;
  request.shape = {c.n, c.k};
  request.bias = c.bias;
  request.params_dtype = c.params;
  LinearParams p = std::move(spec.Allocate(request)).value();
  ParamTensor& w = p.tensor(Slot::kWeight);
  if (w.dtype() == QDType::kFP32 || w.dtype() == QDType::kFP16) {
    const std::vector<float> values = testing::RandomBf16Values(rng, w.elements());
    for (int64_t i = 0; i < w.elements(); ++i) {
      if (w.dtype() == QDType::kFP32) {
        w.data<float>()[i] = values[i];
      } else {
        w.data<uint16_t>()[i] = FloatToFp16(values[i]);
      }
    }
  } else if (w.dtype() == QDType::kFP8E4M3) {
    const std::vector<uint8_t> bits = testing::RandomFp8(rng, p.tensor(Slot::kWeight).elements());
    std::copy(bits.begin(), bits.end(), p.tensor(Slot::kWeight).data<uint8_t>());
  } else if (w.dtype() == QDType::kNVFP4 || w.dtype() == QDType::kMXFP4 ||
             w.dtype() == QDType::kNF4 || w.dtype() == QDType::kFP4 || w.dtype() == QDType::kINT8) {
    std::uniform_int_distribution<int> byte(0, 255);  // every 4-bit pair and int8 is a value
    for (int64_t i = 0; i < w.bytes(); ++i) w.data<uint8_t>()[i] = static_cast<uint8_t>(byte(*rng));
  } else {
    const std::vector<float> values =
        testing::RandomBf16Values(rng, p.tensor(Slot::kWeight).elements());
    for (int64_t i = 0; i < p.tensor(Slot::kWeight).elements(); ++i) {
      p.tensor(Slot::kWeight).data<uint16_t>()[i] = FloatToBf16(values[i]);
    }
  }
  ParamTensor& s = p.tensor(Slot::kWeightScale);
  if (s.dtype() == QDType::kFP8E4M3) {
    // NVFP4 block scales: any e4m3 but NaN, subnormals and signs included.
    const std::vector<uint8_t> bits = testing::RandomFp8(rng, s.elements());
    std::copy(bits.begin(), bits.end(), s.data<uint8_t>());
  } else if (s.dtype() == QDType::kINT8) {
    // E8M0: 2^-10 … 2^8, and 2^-127 (0) now and then where asked.
    std::uniform_int_distribution<int> exponent(kE8M0Bias - 10, kE8M0Bias + 8);
    for (int64_t i = 0; i < s.elements(); ++i) {
      s.data<uint8_t>()[i] =
          c.tiny_scales && i % 97 == 5 ? 0 : static_cast<uint8_t>(exponent(*rng));
    }
  } else {
    const std::vector<float> scales = testing::RandomScales(rng, s.elements());
    std::copy(scales.begin(), scales.end(), s.data<float>());
  }
  if (!p.tensor(Slot::kWeightGlobalScale).empty())
    p.tensor(Slot::kWeightGlobalScale).data<float>()[0] = 0x1.3p-11f;
  // The input divisor of NVFP4 (448 · 6 over about X's largest value), else fp8's static scale.
  if (!p.tensor(Slot::kInputScale).empty())
    p.tensor(Slot::kInputScale).data<float>()[0] =
        p.key.family == kNvfp4Family ? 2688.0f : 1.0f / 448.0f;
  const std::vector<float> bias = testing::RandomBf16Values(rng, p.tensor(Slot::kBias).elements());
  for (int64_t i = 0; i < p.tensor(Slot::kBias).elements(); ++i) {
    p.tensor(Slot::kBias).data<uint16_t>()[i] = FloatToBf16(bias[i]);
  }
  p.leg_weight_scales.clear();
  p.leg_input_scales.clear();
  p.loaded = p.processed = true;
  return p;
}

// An NVFP4 / MX weight from its bytes: the element (E2M1 nibble, low first, or E4M3 byte) times
// its block's scale (E4M3 times the global, or 2^(e − 127)).
double MicroscaledWeight(const LinearParams& p, int64_t r, int64_t c) {
  const ParamTensor& w = p.tensor(Slot::kWeight);
  const ParamTensor& s = p.tensor(Slot::kWeightScale);
  const uint8_t* row = w.data<uint8_t>() + r * w.row_bytes();
  const uint8_t scale = s.data<uint8_t>()[r * s.cols() + c / p.key.group];
  if (p.key.family == kMxfp8Family) return Fp8E4M3ToFloat(row[c]) * std::ldexp(1.0, scale - 127);
  const double element = E2M1ToFloat(c % 2 == 0 ? row[c / 2] & 0xF : row[c / 2] >> 4);
  if (p.key.family == kMxfp4Family) return element * std::ldexp(1.0, scale - 127);
  return element * Fp8E4M3ToFloat(scale) * p.tensor(Slot::kWeightGlobalScale).data<float>()[0];
}

// A bitsandbytes weight from its bytes: the map's value of the nibble (low first) times the absmax
// of its block of the flattened W, or the int8 code times SCB / 127.
double BnbWeight(const LinearParams& p, int64_t r, int64_t c) {
  const ParamTensor& w = p.tensor(Slot::kWeight);
  const float* s = p.tensor(Slot::kWeightScale).data<float>();
  if (p.key.family == kBnbInt8Family) return w.data<int8_t>()[r * p.cols + c] * (s[r] / 127.0);
  const uint8_t byte = w.data<uint8_t>()[r * w.row_bytes() + c / 2];
  const uint32_t bits = Bnb4Map(p.key.family)[c % 2 == 0 ? byte & 0xF : byte >> 4];
  return double{std::bit_cast<float>(bits)} * s[(r * p.cols + c) / p.key.group];
}

// W dequantized to double from the parameter bytes.
std::vector<double> DequantizeParams(const LinearParams& p) {
  const SpecKey key = *ParseSpecId(p.key.ToId());
  std::vector<double> w(static_cast<size_t>(p.rows * p.cols));
  for (int64_t r = 0; r < p.rows; ++r) {
    for (int64_t c = 0; c < p.cols; ++c) {
      const int64_t i = r * p.cols + c;
      if (key.family == kBf16Family) {
        w[i] = LoadFloat(p.tensor(Slot::kWeight), i);
        continue;
      }
      if (key.family == kNvfp4Family || IsMxFamily(key.family)) {
        w[i] = MicroscaledWeight(p, r, c);
        continue;
      }
      if (key.family == kNf4Family || key.family == kFp4Family || key.family == kBnbInt8Family) {
        w[i] = BnbWeight(p, r, c);
        continue;
      }
      const double q = Fp8E4M3ToFloat(p.tensor(Slot::kWeight).data<uint8_t>()[i]);
      const float* s = p.tensor(Slot::kWeightScale).data<float>();
      w[i] =
          key.family == kFp8BlockFamily
              ? q * s[(r / key.block[0]) * p.tensor(Slot::kWeightScale).cols() + c / key.block[1]]
              : q * s[r];
    }
  }
  return w;
}

std::vector<double> Oracle(const LinearParams& p, const ActivationQuant& act,
                           const std::vector<float>& x, int64_t m) {
  const std::vector<double> xd(x.begin(), x.end());
  const std::optional<double> static_scale =
      p.tensor(Slot::kInputScale).empty()
          ? std::nullopt
          : std::optional<double>(p.tensor(Slot::kInputScale).data<float>()[0]);
  const std::vector<double> xq = QuantizeActivationsReference(xd, m, p.cols, act, static_scale);
  const std::vector<double> w = DequantizeParams(p);
  std::vector<double> y(static_cast<size_t>(m * p.rows));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < p.rows; ++j) {
      double acc = p.tensor(Slot::kBias).empty() ? 0.0 : LoadFloat(p.tensor(Slot::kBias), j);
      for (int64_t c = 0; c < p.cols; ++c) acc += xq[i * p.cols + c] * w[j * p.cols + c];
      y[i * p.rows + j] = acc;
    }
  }
  return y;
}

class KernelVsOracleTest : public ::testing::TestWithParam<std::tuple<Case, CpuLevel>> {};

TEST_P(KernelVsOracleTest, EveryKernelWithinTolerance) {
  const Case& c = std::get<0>(GetParam());
  const CpuFeatures allowed = testing::FeaturesAt(std::get<1>(GetParam()));
  std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>()(c.name)));
  const std::unique_ptr<WeightSpec> spec = SpecFor(c);
  const LinearParams params = RandomParams(c, *spec, &rng);
  std::vector<float> x = testing::RandomBf16Values(&rng, c.m * c.k);
  if (!c.bf16_x) {
    for (float& v : x) v += v * 0x1.1p-12f;  // past bf16's 8 bits
  }
  const std::vector<double> expected = Oracle(params, spec->activation(), x, c.m);

  std::vector<uint16_t> x_bf16(x.size());
  for (size_t i = 0; i < x.size(); ++i) x_bf16[i] = FloatToBf16(x[i]);
  const ConstMatrix xm{c.in,
                       c.in == QDType::kBF16 ? static_cast<const void*>(x_bf16.data())
                                             : static_cast<const void*>(x.data()),
                       c.m, c.k};
  const KernelProbe probe{spec->key(),
                          c.m,
                          c.n,
                          c.k,
                          c.in,
                          c.out,
                          DeviceCaps{},
                          spec->activation(),
                          params.tensor(Slot::kWeight).dtype()};
  // bf16 outputs add one rounding of at most 2^-9 of each value.
  const double tolerance = ToleranceFor(spec->key(), spec->activation().mode) +
                           (c.out == QDType::kBF16 ? std::ldexp(1.0, -8) : 0.0);
  std::vector<const LinearKernel*> tested;
  for (const LinearKernel* kernel : KernelRegistry::Global().kernels()) {
    if (!allowed.Covers(kernel->features()) || !kernel->Serves(probe.spec, probe.device) ||
        !kernel->CanHandle(probe)) {
      continue;
    }
    std::vector<float> y32(static_cast<size_t>(c.m * c.n));
    std::vector<uint16_t> y16(y32.size());
    const MutableMatrix ym{
        c.out,
        c.out == QDType::kBF16 ? static_cast<void*>(y16.data()) : static_cast<void*>(y32.data()),
        c.m, c.n};
    kernel->Apply(params, spec->activation(), xm, ym);
    double max_abs = 0, max_ref = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      const double got = c.out == QDType::kBF16 ? Bf16ToFloat(y16[i]) : y32[i];
      max_abs = std::max(max_abs, std::fabs(got - expected[i]));
      max_ref = std::max(max_ref, std::fabs(expected[i]));
    }
    EXPECT_LE(max_abs / max_ref, tolerance)
        << kernel->name() << " (needs " << kernel->features().ToString() << ")";
    if (testing::PromisesBatchBits(*kernel, spec->activation(), c.m)) {
      testing::ExpectRowsAloneAsInBatch(*kernel, params, spec->activation(), xm);
    }
    tested.push_back(kernel);
  }
  ASSERT_FALSE(tested.empty()) << "no kernel handles " << c.name;
  Dispatcher dispatcher(KernelRegistry::Global(), allowed);
  Result<const LinearKernel*> chosen = dispatcher.Select(probe);
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  EXPECT_NE(std::find(tested.begin(), tested.end(), *chosen), tested.end()) << (*chosen)->name();
  for (const LinearKernel* kernel : tested) EXPECT_GE((*chosen)->priority(), kernel->priority());
}

std::vector<Case> Cases() {
  const ActivationQuant none{};
  const ActivationQuant token{ActMode::kDynamicPerToken, 0};
  const ActivationQuant tensor{ActMode::kDynamicPerTensor, 0};
  const ActivationQuant group{ActMode::kDynamicGroup, 128};
  const ActivationQuant fixed{ActMode::kStaticPerTensor, 0};
  const ActivationQuant nvfp4{ActMode::kDynamicGroup, 16, QDType::kNVFP4};
  const ActivationQuant mxfp8{ActMode::kDynamicGroup, 32, QDType::kMXFP8};
  const ActivationQuant int8{ActMode::kDynamicPerToken, 0, QDType::kINT8};
  const QDType f32 = QDType::kFP32, bf16 = QDType::kBF16;
  std::vector<Case> cases = {
      {"bf16_m1", "bf16", none, 1, 64, 96, f32, f32, false},
      {"bf16_m20_bias_bf16io", "bf16", none, 20, 48, 256, bf16, bf16, true},
      // Odd N and K (a row block and an 8-column step cut short), every decode M.
      {"bf16_m3_ragged", "bf16", none, 3, 37, 203, f32, f32, true},
      {"bf16_m8_ragged_bf16out", "bf16", none, 8, 61, 129, bf16, bf16, false},
      {"bf16_m17_ragged", "bf16", none, 17, 5, 7, f32, f32, true},
      {"bf16_m64_fp16_weights", "bf16", none, 64, 33, 100, bf16, f32, true, QDType::kFP16},
      {"bf16_m5_fp32_weights", "bf16", none, 5, 9, 77, f32, bf16, false, QDType::kFP32},
      // fp32 X that bf16 cannot hold, and rows longer than a 512-column tile.
      {"bf16_m1_fp32_x", "bf16", none, 1, 8, 64, f32, f32, false, bf16, false},
      {"bf16_m2_fp32_x_long", "bf16", none, 2, 24, 1100, f32, f32, true, bf16, false},
      {"bf16_m9_long", "bf16", none, 9, 12, 1100, bf16, f32, false},
      {"tensor_static_m3", "fp8_per_tensor", fixed, 3, 80, 256, bf16, f32, false},
      {"tensor_dynamic_m7_bias", "fp8_per_tensor", tensor, 7, 80, 256, f32, f32, true},
      {"tensor_weight_only_m2", "fp8_per_tensor", none, 2, 32, 64, f32, bf16, false},
      {"channel_token_m16", "fp8_per_channel", token, 16, 96, 384, bf16, f32, false},
      {"channel_token_m33_bf16out", "fp8_per_channel", token, 33, 64, 256, bf16, bf16, true},
      {"channel_weight_only_m1", "fp8_per_channel", none, 1, 64, 128, f32, f32, false},
      {"block_group_m1", "fp8_block_128_128", group, 1, 256, 512, bf16, f32, false},
      {"block_group_ragged_m5", "fp8_block_128_128", group, 5, 168, 200, bf16, f32, true},
      {"block_group_m130", "fp8_block_128_128", group, 130, 128, 256, f32, f32, false},
      {"block_small_blocks_m4",
       "fp8_block_32_64",
       {ActMode::kDynamicGroup, 64},
       4,
       72,
       160,
       f32,
       bf16,
       false},
      {"block_group_long_m3", "fp8_block_128_128", group, 3, 40, 1100, bf16, f32, false},
      {"channel_weight_only_long_m6", "fp8_per_channel", none, 6, 20, 1100, bf16, f32, true},
      {"block_weight_only_m3", "fp8_block_128_128", none, 3, 130, 130, f32, f32, false},
      {"block_token_m2", "fp8_block_128_128", token, 2, 128, 128, f32, f32, false},
      // Prefill M (the AVX-512 kernels' tiled GEMM): N past a 64-row tile and not a multiple of
      // 4, K past a 256-column tile with a tail, fp32 X split in two, X scales per token and per
      // tensor, more rows of X than one pass over W takes.
      {"bf16_m70_ragged", "bf16", none, 70, 37, 203, bf16, f32, true},
      {"bf16_m130_wide", "bf16", none, 130, 150, 600, f32, bf16, false},
      {"bf16_m67_fp32_x", "bf16", none, 67, 20, 300, f32, f32, true, bf16, false},
      {"channel_token_m96", "fp8_per_channel", token, 96, 70, 320, bf16, f32, true},
      {"tensor_static_m64", "fp8_per_tensor", fixed, 64, 64, 256, f32, f32, false},
      {"block_group_m600", "fp8_block_128_128", group, 600, 66, 256, bf16, f32, false},
      // NVFP4 and MX: whole 128-column steps, a ragged tail of 16- and 32-blocks, a row past a
      // 512-column tile, M in each bucket, X rounded to NVFP4 / MX.
      {"nvfp4_m1", "nvfp4_block_16_linear", none, 1, 64, 256, bf16, f32, false},
      {"nvfp4_m3_ragged", "nvfp4_block_16_linear", none, 3, 37, 208, f32, f32, true},
      {"nvfp4_m2_ragged", "nvfp4_block_16_linear", none, 2, 37, 208, bf16, f32, true},
      {"nvfp4_m18_long", "nvfp4_block_16_linear", none, 18, 20, 1104, bf16, bf16, false},
      {"nvfp4_m64", "nvfp4_block_16_linear", none, 64, 24, 384, f32, f32, true},
      {"nvfp4_w4a4_m5", "nvfp4_block_16_linear", nvfp4, 5, 40, 272, bf16, f32, false},
      {"mxfp4_m1", "mxfp4_block_32", none, 1, 64, 256, bf16, f32, false},
      {"mxfp4_m2_long", "mxfp4_block_32", none, 2, 21, 1120, f32, f32, false},
      {"mxfp4_m6_ragged", "mxfp4_block_32", none, 6, 33, 224, f32, bf16, true, bf16, true, true},
      {"mxfp4_m70", "mxfp4_block_32", none, 70, 40, 640, bf16, f32, true},
      {"mxfp4_m66_tiny_scales", "mxfp4_block_32", none, 66, 20, 256, f32, f32, false, bf16, true,
       true},
      {"mxfp4_m17_long", "mxfp4_block_32", none, 17, 12, 1120, bf16, f32, false},
      {"mxfp4_mxfp8_act_m4", "mxfp4_block_32", mxfp8, 4, 24, 320, f32, f32, false},
      // NVFP4 and MXFP4 with int8 activations per token (--int8-activations): whole steps, K
      // ending inside a step (the last blocks' scales past K), M in each bucket.
      {"nvfp4_int8_m1", "nvfp4_block_16_linear", int8, 1, 64, 256, bf16, f32, false},
      {"nvfp4_int8_m3_ragged", "nvfp4_block_16_linear", int8, 3, 37, 208, f32, f32, true},
      {"nvfp4_int8_m70", "nvfp4_block_16_linear", int8, 70, 24, 1104, bf16, bf16, false},
      {"mxfp4_int8_m2", "mxfp4_block_32", int8, 2, 40, 224, f32, f32, true, bf16, true, true},
      {"mxfp4_int8_m17_long", "mxfp4_block_32", int8, 17, 12, 1120, bf16, f32, false},
      {"mxfp8_m1", "mxfp8_block_32", none, 1, 48, 256, bf16, f32, true},
      {"mxfp8_m7_ragged", "mxfp8_block_32", none, 7, 29, 200, f32, f32, false, bf16, true, true},
      {"mxfp8_m65_long", "mxfp8_block_32", none, 65, 9, 1056, bf16, bf16, false},
      {"mxfp8_mxfp8_act_m2", "mxfp8_block_32", mxfp8, 2, 40, 160, bf16, f32, false},
      // bitsandbytes: blocks of 8 to 256 (a 128-column step holds up to 16), K with a 64-column
      // tail, blocks across rows where K is no multiple of the block (the reference alone), M in
      // each bucket; LLM.int8 rows with a ragged tail.
      {"nf4_m1", "nf4_block_64", none, 1, 64, 256, bf16, f32, false},
      {"nf4_m5_tail", "nf4_block_64", none, 5, 37, 320, f32, bf16, true},
      {"nf4_m18_block32", "nf4_block_32", none, 18, 20, 1152, bf16, f32, false},
      {"nf4_m70_block256", "nf4_block_256", none, 70, 40, 768, bf16, f32, true},
      {"nf4_m64_tail", "nf4_block_64", none, 64, 24, 576, f32, f32, false, bf16, false},
      {"nf4_m3_rows_share_blocks", "nf4_block_64", none, 3, 9, 96, f32, f32, false},
      {"fp4_m2", "fp4_block_64", none, 2, 48, 384, bf16, f32, false},
      {"fp4_m4_block16", "fp4_block_16", none, 4, 24, 512, bf16, f32, false},
      {"nf4_m1_block8", "nf4_block_8", none, 1, 40, 256, f32, f32, true},
      {"fp4_m66_block128", "fp4_block_128", none, 66, 20, 1024, bf16, bf16, false},
      {"bnb_int8_m1", "int8_rowwise_bnb", none, 1, 64, 256, bf16, f32, false},
      {"bnb_int8_m7_ragged", "int8_rowwise_bnb", none, 7, 37, 203, f32, f32, true},
      {"bnb_int8_m65_long", "int8_rowwise_bnb", none, 65, 30, 1100, bf16, bf16, false},
  };
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Kernels, KernelVsOracleTest,
                         ::testing::Combine(::testing::ValuesIn(Cases()),
                                            ::testing::ValuesIn(testing::SupportedCpuLevels())),
                         [](const ::testing::TestParamInfo<std::tuple<Case, CpuLevel>>& info) {
                           return std::get<0>(info.param).name + "_" +
                                  std::string(CpuLevelName(std::get<1>(info.param)));
                         });

}  // namespace
}  // namespace quantpath
