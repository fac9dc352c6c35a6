// GemmW16A16_Avx2: the bf16 spec (W [N, K] in bf16, fp16 or fp32) with AVX2 and FMA. A decode
// step streams W once: each block of 4 rows of W is widened to fp32 8 columns at a time and
// multiplied into 2 rows of X at once (8 accumulators, 4 weight and 1 activation register of the
// 16), the block staying in L1/L2 while the other rows of X pass over it. OpenMP splits N.
//
// Compiled with -mavx2 -mfma -mf16c (cmake/stage.cmake): the vector code is internal to this file
// and uses no template shared with portable files, so none of those is emitted with AVX2 in it.
#include <immintrin.h>

#include <cstdint>

#include "quantpath/kernels.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/bf16_family.h"

namespace quantpath {
namespace {

constexpr int64_t kRows = 4;   // rows of W per block
constexpr int64_t kXRows = 2;  // rows of X per pass over a block

// 8 weights from `p` as fp32.
template <QDType kW>
inline __m256 Load8(const std::byte* p) {
  if constexpr (kW == QDType::kBF16) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  } else if constexpr (kW == QDType::kFP16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
}

template <QDType kW>
inline float Load1(const std::byte* p) {
  if constexpr (kW == QDType::kBF16) {
    uint16_t bits;
    __builtin_memcpy(&bits, p, 2);
    const uint32_t wide = uint32_t{bits} << 16;
    float value;
    __builtin_memcpy(&value, &wide, 4);
    return value;
  } else if constexpr (kW == QDType::kFP16) {
    uint16_t bits;
    __builtin_memcpy(&bits, p, 2);
    return _cvtsh_ss(bits);
  } else {
    float value;
    __builtin_memcpy(&value, p, 4);
    return value;
  }
}

inline float Sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 pairs = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}

// out[t][r] = x row t · W row r, for R rows of W (at `w`, `row_bytes` apart) and T rows of X (at
// `x`, k apart).
template <QDType kW, int R, int T>
inline void Block(const std::byte* w, int64_t row_bytes, const float* x, int64_t k,
                  float out[kXRows][kRows]) {
  constexpr int64_t kBytes = kW == QDType::kFP32 ? 4 : 2;
  __m256 acc[T][R];
  for (int t = 0; t < T; ++t) {
    for (int r = 0; r < R; ++r) acc[t][r] = _mm256_setzero_ps();
  }
  int64_t c = 0;
  for (; c + 8 <= k; c += 8) {
    __m256 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = Load8<kW>(w + r * row_bytes + c * kBytes);
    for (int t = 0; t < T; ++t) {
      const __m256 xv = _mm256_loadu_ps(x + t * k + c);
      for (int r = 0; r < R; ++r) acc[t][r] = _mm256_fmadd_ps(xv, wv[r], acc[t][r]);
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int r = 0; r < R; ++r) {
      float sum = Sum(acc[t][r]);
      for (int64_t tail = c; tail < k; ++tail) {
        sum += x[t * k + tail] * Load1<kW>(w + r * row_bytes + tail * kBytes);
      }
      out[t][r] = sum;
    }
  }
}

// Rows [first, first + R) of W against every row of X (fp32, [m, k]) into Y.
template <QDType kW, int R>
void RowBlock(const LinearParams& params, const float* x, int64_t m, int64_t first,
              const MutableMatrix& y) {
  const int64_t n = params.rows;
  const int64_t k = params.cols;
  const ParamTensor& w = params.tensor(Slot::kWeight);
  const ParamTensor& bias = params.tensor(Slot::kBias);
  const int64_t row_bytes = w.row_bytes();
  const std::byte* rows = w.raw() + first * row_bytes;
  float b[kRows] = {};
  if (!bias.empty()) {
    for (int r = 0; r < R; ++r) b[r] = LoadFloat(bias, first + r);
  }
  float out[kXRows][kRows];
  for (int64_t i = 0; i < m; i += kXRows) {
    const int64_t t_count = m - i < kXRows ? m - i : kXRows;
    if (t_count == kXRows) {
      Block<kW, R, kXRows>(rows, row_bytes, x + i * k, k, out);
    } else {
      Block<kW, R, 1>(rows, row_bytes, x + i * k, k, out);
    }
    for (int64_t t = 0; t < t_count; ++t) {
      for (int r = 0; r < R; ++r) {
        reference::StoreOutput(y, (i + t) * n + first + r, out[t][r] + b[r]);
      }
    }
  }
}

template <QDType kW>
void Gemm(const LinearParams& params, const float* x, int64_t m, const MutableMatrix& y) {
  const int64_t n = params.rows;
  const int64_t blocks = n / kRows;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
  for (int64_t block = 0; block < blocks; ++block) {
    RowBlock<kW, kRows>(params, x, m, block * kRows, y);
  }
  for (int64_t row = blocks * kRows; row < n; ++row) RowBlock<kW, 1>(params, x, m, row, y);
}

// X as fp32 rows: bf16 widened into a buffer this file owns, fp32 read in place.
class Activations {
 public:
  explicit Activations(const ConstMatrix& x) {
    if (x.dtype == QDType::kFP32) {
      data_ = static_cast<const float*>(x.data);
      return;
    }
    const int64_t count = x.rows * x.cols;
    owned_ = new float[static_cast<size_t>(count)];
    const auto* bits = static_cast<const uint16_t*>(x.data);
    for (int64_t i = 0; i < count; ++i)
      owned_[i] = Load1<QDType::kBF16>(reinterpret_cast<const std::byte*>(bits + i));
    data_ = owned_;
  }
  ~Activations() { delete[] owned_; }
  Activations(const Activations&) = delete;
  Activations& operator=(const Activations&) = delete;
  const float* data() const { return data_; }

 private:
  float* owned_ = nullptr;
  const float* data_ = nullptr;
};

class GemmW16A16Avx2 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW16A16_Avx2"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx2); }
  int priority() const override { return kReferencePriority + 10; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return key.family == kBf16Family && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return Serves(probe.spec, probe.device) && probe.act.mode == ActMode::kNone &&
           reference::CanHandleIo(probe);
  }
  void Apply(const LinearParams& params, const ActivationQuant&, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const Activations xs(x);
    switch (params.tensor(Slot::kWeight).dtype()) {
      case QDType::kBF16:
        return Gemm<QDType::kBF16>(params, xs.data(), x.rows, y);
      case QDType::kFP16:
        return Gemm<QDType::kFP16>(params, xs.data(), x.rows, y);
      default:
        return Gemm<QDType::kFP32>(params, xs.data(), x.rows, y);
    }
  }
};

const KernelRegistrar kRegisterGemmW16A16Avx2(std::make_unique<GemmW16A16Avx2>());

}  // namespace
}  // namespace quantpath
