// GemmW4A4A8Nibbles_Avx2: the mixed int4 specs (w4a_family.h: int4_channel[_zp] and
// int4_group_<g>[_zp], g a power-of-two multiple of 64, with int4 or int8 activations per token)
// on vpmaddubsw, straight from the 4-bit codes. A 32-byte step of a row holds 64 columns, byte b
// columns 2b (low nibble) and 2b + 1 (high); its low and high nibbles, masked, are 32 unsigned
// bytes each, multiplied by X's codes of the even and of the odd columns (X is reordered so per
// step) into int16 pairs (|·| ≤ 2 · 15 · 128, no saturation), whose sum vpmaddwd widens to int32.
// Σ qx · (q − z) = Σ qx · q − z · Σ qx, the second term per group from X's sums.
//
// One group (channel): the int32 sum is exact and the output is the reference's bit for bit
// (gemm_w4a_ref.cc). Several groups: each group's int32 lanes are converted and scaled into fp32
// totals, within the family's tolerance of the reference's double sum.
//
// W is prepacked in blocks of 4 rows (row_interleave.h), each row's last step padded with zeros;
// X is padded with zero codes to whole steps, so the padding adds nothing to either sum. Two rows
// of X at a time pass over a block. OpenMP splits N.
#include <immintrin.h>

#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/f32_source_avx2.h"
#include "src/kernels/cpu/int_codes.h"
#include "src/kernels/cpu/row_blocks_avx2.h"
#include "src/kernels/cpu/row_interleave.h"
#include "src/kernels/cpu/w8a8_loops_avx2.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

constexpr int64_t kStep = 64;       // columns of a step
constexpr int64_t kStepBytes = 32;  // its bytes of 4-bit codes
// An int16 lane gains at most 2 · 2 · 15 · 128 = 7680 a step: kPairSteps steps stay
// below 2^15 before vpmaddwd widens them; a whole row's sum stays below 2^31 up to 2^20 columns
// (|qx · (q − z)| ≤ 128 · 15).
constexpr int64_t kPairSteps = 4;
constexpr int64_t kMaxK = int64_t{1} << 20;

// X's codes, each step's even columns then its odd ones, zero-padded to whole steps, with each
// row's scale and the sum of its codes over each group.
struct NibbleX {
  ParamTensor codes;  // [m, steps · kStep]
  int64_t stride = 0;
  int64_t groups = 0;
  std::vector<int32_t> sums;  // [m, groups]
  std::vector<float> scale;   // per row
};

NibbleX OrderX(const reference::Int8Activations& xq, int64_t m, int64_t k, int64_t group) {
  NibbleX out;
  const int64_t steps = (k + kStep - 1) / kStep;
  out.stride = steps * kStep;
  out.groups = (k + group - 1) / group;
  out.codes = ParamTensor(QDType::kINT8, m, out.stride);
  out.sums.assign(static_cast<size_t>(m * out.groups), 0);
  out.scale = xq.scale;
  for (int64_t t = 0; t < m; ++t) {
    const int8_t* src = xq.codes.data() + t * k;
    int8_t* dst = out.codes.data<int8_t>() + t * out.stride;
    for (int64_t c = 0; c < k; ++c) {
      const int64_t step = c / kStep, in_step = c % kStep;
      dst[step * kStep + (in_step % 2) * (kStep / 2) + in_step / 2] = src[c];
      out.sums[t * out.groups + c / group] += src[c];
    }
  }
  return out;
}

template <bool kZero>
struct Problem {
  cpu::IntCodes<CpuLevel::kAvx2, 4, kZero> w;
  const cpu::RowInterleave* packed;
  const NibbleX* x;
  const LinearParams* params;
  MutableMatrix y;
};

// P rows of X from row t0 against the R rows of W from `first` (their steps at `block`): out[p][r]
// is the product before the bias.
template <bool kZero, int R, int P>
void Pass(const Problem<kZero>& pr, const uint8_t* block, int64_t first, int64_t t0,
          float out[avx2::kPassRows][avx2::kBlockRows]) {
  const NibbleX& x = *pr.x;
  const int64_t steps = pr.packed->steps;
  const bool one_group = x.groups == 1;
  const int64_t group_steps = one_group ? steps : pr.w.group / kStep;
  const int8_t* xs = x.codes.data<int8_t>() + t0 * x.stride;
  const __m256i nibble = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  __m256 total[P][R];
  int32_t exact[P][R] = {};
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) total[p][r] = _mm256_setzero_ps();
  }
  for (int64_t s0 = 0, g = 0; s0 < steps; s0 += group_steps, ++g) {
    const int64_t s1 = s0 + group_steps < steps ? s0 + group_steps : steps;
    __m256i acc[P][R];
    for (int p = 0; p < P; ++p) {
      for (int r = 0; r < R; ++r) acc[p][r] = _mm256_setzero_si256();
    }
    for (int64_t c0 = s0; c0 < s1; c0 += kPairSteps) {
      const int64_t c1 = c0 + kPairSteps < s1 ? c0 + kPairSteps : s1;
      __m256i pairs[P][R];
      for (int p = 0; p < P; ++p) {
        for (int r = 0; r < R; ++r) pairs[p][r] = _mm256_setzero_si256();
      }
      for (int64_t s = c0; s < c1; ++s) {
        const uint8_t* step = block + s * R * kStepBytes;
        for (int64_t line = 0; line < R * kStepBytes; line += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(step) + avx2::kPrefetchBytes + line,
                       _MM_HINT_T0);
        }
        for (int r = 0; r < R; ++r) {
          const __m256i codes = avx2::LoadOnce(step + r * kStepBytes);
          const __m256i low = _mm256_and_si256(codes, nibble);
          const __m256i high = _mm256_and_si256(_mm256_srli_epi16(codes, 4), nibble);
          for (int p = 0; p < P; ++p) {
            const int8_t* xp = xs + p * x.stride + s * kStep;
            const __m256i even = _mm256_load_si256(reinterpret_cast<const __m256i*>(xp));
            const __m256i odd = _mm256_load_si256(reinterpret_cast<const __m256i*>(xp + 32));
            pairs[p][r] = _mm256_add_epi16(
                pairs[p][r],
                _mm256_add_epi16(_mm256_maddubs_epi16(low, even), _mm256_maddubs_epi16(high, odd)));
          }
        }
      }
      for (int p = 0; p < P; ++p) {
        for (int r = 0; r < R; ++r) {
          acc[p][r] = _mm256_add_epi32(acc[p][r], _mm256_madd_epi16(pairs[p][r], ones));
        }
      }
    }
    // Σ qx · (q − z) = Σ qx · q − z · Σ qx, the second term off lane 0: exact.
    for (int r = 0; r < R; ++r) {
      const int32_t z = pr.w.Zero(first + r, g);
      for (int p = 0; p < P; ++p) {
        const int32_t zero_term = z * x.sums[(t0 + p) * x.groups + g];
        acc[p][r] = _mm256_sub_epi32(acc[p][r], _mm256_setr_epi32(zero_term, 0, 0, 0, 0, 0, 0, 0));
      }
      if (one_group) continue;
      const __m256 scales = _mm256_set1_ps(pr.w.Scale(first + r, g));
      for (int p = 0; p < P; ++p) {
        total[p][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[p][r]), scales, total[p][r]);
      }
    }
    if (one_group) {
      for (int p = 0; p < P; ++p) {
        for (int r = 0; r < R; ++r) exact[p][r] = avx2::SumLanes(acc[p][r]);
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    const float sx = x.scale[t0 + p];
    for (int r = 0; r < R; ++r) {
      if (one_group) {
        // Multiplied apart from the bias's add, as the reference does (no FMA contraction).
        float product = static_cast<float>(exact[p][r]) * (sx * pr.w.Scale(first + r, 0));
        __asm__("" : "+v"(product));
        out[p][r] = product;
      } else {
        out[p][r] = sx * avx2::Sum(total[p][r]);
      }
    }
  }
}

// Every row of X against the R rows of W from `first`, into Y with the bias.
template <bool kZero, int R>
void RowBlock(const Problem<kZero>& pr, int64_t first) {
  const int64_t n = pr.params->rows;
  const cpu::RowInterleave& packed = *pr.packed;
  const uint8_t* block = packed.bytes.data<uint8_t>() + first * packed.steps * packed.step_bytes;
  const ParamTensor& bias = pr.params->tensor(Slot::kBias);
  const int64_t m = pr.y.rows;
  for (int64_t t = 0; t < m; t += avx2::kPassRows) {
    float out[avx2::kPassRows][avx2::kBlockRows];
    const int64_t rows = m - t < avx2::kPassRows ? m - t : avx2::kPassRows;
    if (rows == avx2::kPassRows) {
      Pass<kZero, R, avx2::kPassRows>(pr, block, first, t, out);
    } else {
      Pass<kZero, R, 1>(pr, block, first, t, out);
    }
    for (int64_t p = 0; p < rows; ++p) {
      for (int r = 0; r < R; ++r) {
        const float b = bias.empty() ? 0.0f : LoadFloat(bias, first + r);
        reference::StoreOutput(pr.y, (t + p) * n + first + r, out[p][r] + b);
      }
    }
  }
}

template <bool kZero, int R>
void TailBlock(const Problem<kZero>& pr, int64_t first) {
  if constexpr (R > 0) {
    if (pr.params->rows - first == R) return RowBlock<kZero, R>(pr, first);
    TailBlock<kZero, R - 1>(pr, first);
  }
}

template <bool kZero>
void Multiply(const Problem<kZero>& pr) {
  const int64_t blocks = pr.params->rows / avx2::kBlockRows;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
  for (int64_t block = 0; block < blocks; ++block) {
    RowBlock<kZero, avx2::kBlockRows>(pr, block * avx2::kBlockRows);
  }
  if (blocks * avx2::kBlockRows < pr.params->rows) {
    TailBlock<kZero, avx2::kBlockRows - 1>(pr, blocks * avx2::kBlockRows);
  }
}

class GemmW4aNibblesAvx2 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW4A4A8Nibbles_Avx2"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 20; }
  DotUnit unit() const override { return DotUnit::kInt4Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesW4a(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    const SpecKey& key = probe.spec;
    return cpu_problems::TakesW4a(probe) && probe.k <= kMaxK &&
           (key.family != kIntGroupFamily ||
            (key.group % kStep == 0 && std::has_single_bit(static_cast<uint64_t>(key.group))));
  }
  void Prepare(const LinearParams& params) const override { Packed(params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const reference::Int8Activations xq = reference::QuantizeW4aActivations(act, x);
    const NibbleX ordered = OrderX(xq, x.rows, x.cols, IntGroupOf(params.key, params.cols));
    if (!params.tensor(Slot::kWeightZero).empty()) {
      return Multiply(Problem<true>{cpu::IntCodes<CpuLevel::kAvx2, 4, true>::Of(params),
                                    &Packed(params), &ordered, &params, y});
    }
    Multiply(Problem<false>{cpu::IntCodes<CpuLevel::kAvx2, 4, false>::Of(params), &Packed(params),
                            &ordered, &params, y});
  }

 private:
  const cpu::RowInterleave& Packed(const LinearParams& params) const {
    return params.packs.Get<cpu::RowInterleave>(this, [&] {
      return std::make_unique<cpu::RowInterleave>(
          cpu::InterleaveRows(params.tensor(Slot::kWeight), avx2::kBlockRows, kStepBytes,
                              (params.cols + kStep - 1) / kStep));
    });
  }
};

const KernelRegistrar kRegisterGemmW4aNibblesAvx2(std::make_unique<GemmW4aNibblesAvx2>());

}  // namespace
}  // namespace quantpath
