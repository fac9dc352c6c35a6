// GemmW8A8Int8_Avx2: the W8A8 int8 specs (int8_channel / int8_tensor with int8 activations) on
// vpmaddwd, which multiplies 16 int16 pairs into 8 int32 sums of two. X is quantized as the
// reference kernel quantizes it (int8_activations.h) and padded with zeros to whole 64-column
// steps; W's stored codes q widen to int16 as they are and X's codes with their sign, so acc = Σ qx
// · q is exact in int32 (K ≤ 2^16: |qx · q| < 2^15 each) and each output is the reference's bit for
// bit (w8a8_output.h). W is read from the prepack the AVX-512 kernel reads (w8a8_pack.h): blocks of
// 4 rows, their 64-byte steps side by side, fetched 8 KiB ahead; two rows of X at a time pass over
// a block (8 accumulators), X in tiles of 64 rows that stay in L2 while every block passes. OpenMP
// splits N.
#include <immintrin.h>

#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/w8a8_output.h"
#include "src/kernels/cpu/w8a8_pack.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath {
namespace {

constexpr int64_t kBlockRows = 4;
constexpr int kPassRows = 2;
constexpr int64_t kTileRows = 64;
constexpr int64_t kPrefetchBytes = 8192;  // as the other prepacked kernels (f32_dot_avx2.h)
constexpr int64_t kMaxK = int64_t{1} << 16;

int32_t SumLanes(__m256i v) {
  const __m128i half = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i pairs = _mm_add_epi32(half, _mm_shuffle_epi32(half, 0x4E));
  return _mm_cvtsi128_si32(_mm_add_epi32(pairs, _mm_shuffle_epi32(pairs, 0xB1)));
}

// P rows of X (at `x`, `stride` bytes apart) against the R rows of a block (its steps at `w`).
template <int R, int P>
void Pass(const uint8_t* w, int64_t steps, const int8_t* x, int64_t stride,
          int32_t out[kPassRows][kBlockRows]) {
  __m256i acc[P][R];
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) acc[p][r] = _mm256_setzero_si256();
  }
  for (int64_t s = 0; s < steps; ++s) {
    const uint8_t* step = w + s * R * cpu::kInt8Step;
    for (int64_t line = 0; line < R * cpu::kInt8Step; line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(step) + kPrefetchBytes + line, _MM_HINT_T0);
    }
    for (int64_t h = 0; h < cpu::kInt8Step; h += 16) {
      __m256i xv[P];
      for (int p = 0; p < P; ++p) {
        xv[p] = _mm256_cvtepi8_epi16(_mm_load_si128(
            reinterpret_cast<const __m128i*>(x + p * stride + s * cpu::kInt8Step + h)));
      }
      for (int r = 0; r < R; ++r) {
        const __m256i wv = _mm256_cvtepu8_epi16(
            _mm_load_si128(reinterpret_cast<const __m128i*>(step + r * cpu::kInt8Step + h)));
        for (int p = 0; p < P; ++p) {
          acc[p][r] = _mm256_add_epi32(acc[p][r], _mm256_madd_epi16(wv, xv[p]));
        }
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) out[p][r] = SumLanes(acc[p][r]);
  }
}

// X rows [t0, t1) against the R rows of W from `first` into Y.
template <int R>
void Block(const cpu::W8a8Problem& pr, int64_t first, int64_t t0, int64_t t1) {
  const cpu::RowInterleave& codes = pr.pack->codes;
  const uint8_t* w = codes.bytes.data<uint8_t>() + first * codes.steps * codes.step_bytes;
  const int8_t* x = pr.x->codes.data<int8_t>();
  const int64_t stride = pr.x->stride;
  for (int64_t t = t0; t < t1; t += kPassRows) {
    int32_t acc[kPassRows][kBlockRows];
    const int64_t rows = t1 - t < kPassRows ? t1 - t : kPassRows;
    if (rows == kPassRows) {
      Pass<R, kPassRows>(w, codes.steps, x + t * stride, stride, acc);
    } else {
      Pass<R, 1>(w, codes.steps, x + t * stride, stride, acc);
    }
    for (int64_t p = 0; p < rows; ++p) {
      for (int r = 0; r < R; ++r) {
        cpu::W8a8Outputs<CpuLevel::kAvx2>::Store(pr, t + p, first + r, acc[p][r]);
      }
    }
  }
}

template <int R>
void TailBlock(const cpu::W8a8Problem& pr, int64_t first, int64_t t0, int64_t t1) {
  if constexpr (R > 0) {
    if (pr.params->rows - first == R) return Block<R>(pr, first, t0, t1);
    TailBlock<R - 1>(pr, first, t0, t1);
  }
}

class GemmW8a8Avx2 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW8A8Int8_Avx2"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 15; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesW8a8Int8(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return cpu_problems::TakesW8a8Int8(probe) && probe.k <= kMaxK;
  }
  void Prepare(const LinearParams& params) const override { Packed(params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const reference::Int8Activations xq = reference::QuantizeInt8Activations(params, act, x);
    const cpu::PaddedInt8Rows padded = cpu::PadInt8Rows(xq, x.rows, x.cols);
    const cpu::W8a8Problem problem{&Packed(params), &padded, &xq, &params, y};
    const int64_t blocks = params.rows / kBlockRows;
    for (int64_t t0 = 0; t0 < x.rows; t0 += kTileRows) {
      const int64_t t1 = x.rows - t0 < kTileRows ? x.rows : t0 + kTileRows;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
      for (int64_t block = 0; block < blocks; ++block) {
        Block<kBlockRows>(problem, block * kBlockRows, t0, t1);
      }
      // The rows past the last full block are one block of fewer rows in the prepack.
      TailBlock<kBlockRows - 1>(problem, blocks * kBlockRows, t0, t1);
    }
  }

 private:
  const cpu::W8a8Pack& Packed(const LinearParams& params) const {
    return params.packs.Get<cpu::W8a8Pack>(this, [&] {
      return std::make_unique<cpu::W8a8Pack>(
          cpu::PackW8a8(params.tensor(Slot::kWeight), kBlockRows));
    });
  }
};

const KernelRegistrar kRegisterGemmW8a8Avx2(std::make_unique<GemmW8a8Avx2>());

}  // namespace
}  // namespace quantpath
