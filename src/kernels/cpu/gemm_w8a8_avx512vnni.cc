// GemmW8A8Int8_Avx512Vnni: the W8A8 int8 specs (int8_channel / int8_tensor with int8 activations)
// on vpdpbusd, which multiplies 64 unsigned by 64 signed bytes into 16 int32 sums. X is quantized
// as the reference kernel quantizes it (int8_activations.h); W's stored codes q are the unsigned
// operand as they are and the 128 they are offset by comes off once per output as 128 · Σ qx, so
// acc = Σ qx · (q − 128) is the reference's exactly, in int32 (K ≤ 2^16: |qx · q| < 2^15 each),
// and y = float(acc + quant_bias − z_x · Σ (q − 128)) · (s_x · s_w) + bias as it computes it.
//
// W is read from a prepack (w8a8_pack.h): blocks of 4 rows, their 64-byte steps side by side.
// Rows of X are taken 4 at a time against a block (16 accumulators, 4 weight and 1 activation
// register), the block staying in L1 / L2 for the next 4; X is cut into tiles of 64 rows, which
// stay in L2 while every block of W passes. OpenMP splits N within a tile.
#include "src/base/avx512_intrinsics.h"

#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/w8a8_pack.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/kernels/reference/reference_gemm.h"

namespace quantpath {
namespace {

constexpr int64_t kBlockRows = 4;
constexpr int kPassRows = 4;
constexpr int64_t kTileRows = 64;
constexpr int64_t kPrefetchBytes = 8192;  // as the bf16 kernels (bf16_dot_avx512vnni.h)
constexpr int64_t kMaxK = int64_t{1} << 16;

int32_t SumLanes(__m512i v) {
  const __m512i halves = _mm512_add_epi32(v, _mm512_shuffle_i32x4(v, v, 0x4E));
  const __m128i quarter =
      _mm_add_epi32(_mm512_castsi512_si128(halves),
                    _mm512_castsi512_si128(_mm512_shuffle_i32x4(halves, halves, 0xB1)));
  const __m128i pairs = _mm_add_epi32(quarter, _mm_shuffle_epi32(quarter, 0x4E));
  return _mm_cvtsi128_si32(_mm_add_epi32(pairs, _mm_shuffle_epi32(pairs, 0xB1)));
}

// P rows of X (at `x`, `stride` bytes apart) against the R rows of a block (its steps at `w`).
template <int R, int P>
void Pass(const uint8_t* w, int64_t steps, const int8_t* x, int64_t stride,
          int32_t out[kPassRows][kBlockRows]) {
  __m512i acc[P][R];
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) acc[p][r] = _mm512_setzero_si512();
  }
  for (int64_t s = 0; s < steps; ++s) {
    const uint8_t* step = w + s * R * cpu::kInt8Step;
    for (int64_t line = 0; line < R * cpu::kInt8Step; line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(step) + kPrefetchBytes + line, _MM_HINT_T0);
    }
    __m512i wv[R];
    for (int r = 0; r < R; ++r) wv[r] = _mm512_load_si512(step + r * cpu::kInt8Step);
    for (int p = 0; p < P; ++p) {
      const __m512i xv = _mm512_load_si512(x + p * stride + s * cpu::kInt8Step);
      for (int r = 0; r < R; ++r) acc[p][r] = _mm512_dpbusd_epi32(acc[p][r], wv[r], xv);
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) out[p][r] = SumLanes(acc[p][r]);
  }
}

// What every output needs beside the products.
struct Problem {
  const cpu::W8a8Pack* pack;
  const cpu::PaddedInt8Rows* x;
  const reference::Int8Activations* xq;
  const LinearParams* params;
  MutableMatrix y;
};

// X rows [t0, t1) against the R rows of W from `first` into Y.
template <int R>
void Block(const Problem& pr, int64_t first, int64_t t0, int64_t t1) {
  const LinearParams& params = *pr.params;
  const cpu::RowInterleave& codes = pr.pack->codes;
  const uint8_t* w = codes.bytes.data<uint8_t>() + first * codes.steps * codes.step_bytes;
  const ParamTensor& scales = params.tensor(Slot::kWeightScale);
  const ParamTensor& quant_bias = params.tensor(Slot::kQuantBias);
  const ParamTensor& bias = params.tensor(Slot::kBias);
  const bool one_scale = scales.rows() == 1;  // int8_tensor (w8a8_family.h)
  const int8_t* x = pr.x->codes.data<int8_t>();
  const int64_t stride = pr.x->stride;
  for (int64_t t = t0; t < t1; t += kPassRows) {
    int32_t acc[kPassRows][kBlockRows];
    const int64_t rows = t1 - t < kPassRows ? t1 - t : kPassRows;
    const int8_t* xt = x + t * stride;
    switch (rows) {
      case 4:
        Pass<R, 4>(w, codes.steps, xt, stride, acc);
        break;
      case 3:
        Pass<R, 3>(w, codes.steps, xt, stride, acc);
        break;
      case 2:
        Pass<R, 2>(w, codes.steps, xt, stride, acc);
        break;
      default:
        Pass<R, 1>(w, codes.steps, xt, stride, acc);
        break;
    }
    for (int64_t p = 0; p < rows; ++p) {
      const int64_t i = t + p;
      for (int r = 0; r < R; ++r) {
        const int64_t j = first + r;
        const int64_t c = quant_bias.empty() ? 0 : quant_bias.data<int32_t>()[j];
        const int64_t exact = int64_t{acc[p][r]} - 128 * int64_t{pr.x->sums[i]} + c -
                              int64_t{pr.xq->zero[i]} * pr.pack->row_sums[j];
        const float sw = LoadFloat(scales, one_scale ? 0 : j);
        const float b = bias.empty() ? 0.0f : LoadFloat(bias, j);
        // Multiplied and added apart, as the reference does (no FMA contraction: same bits).
        float product = static_cast<float>(exact) * (pr.xq->scale[i] * sw);
        __asm__("" : "+v"(product));
        reference::StoreOutput(pr.y, i * params.rows + j, product + b);
      }
    }
  }
}

class GemmW8a8Avx512Vnni final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW8A8Int8_Avx512Vnni"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 20; }
  DotUnit unit() const override { return DotUnit::kInt8Quad; }
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
    const Problem problem{&Packed(params), &padded, &xq, &params, y};
    const int64_t blocks = params.rows / kBlockRows;
    const int64_t tail_first = blocks * kBlockRows;
    for (int64_t t0 = 0; t0 < x.rows; t0 += kTileRows) {
      const int64_t t1 = x.rows - t0 < kTileRows ? x.rows : t0 + kTileRows;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
      for (int64_t block = 0; block < blocks; ++block) {
        Block<kBlockRows>(problem, block * kBlockRows, t0, t1);
      }
      // The rows past the last full block are one block of fewer rows in the prepack.
      switch (params.rows - tail_first) {
        case 3:
          Block<3>(problem, tail_first, t0, t1);
          break;
        case 2:
          Block<2>(problem, tail_first, t0, t1);
          break;
        case 1:
          Block<1>(problem, tail_first, t0, t1);
          break;
        default:
          break;
      }
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

const KernelRegistrar kRegisterGemmW8a8Avx512Vnni(std::make_unique<GemmW8a8Avx512Vnni>());

}  // namespace
}  // namespace quantpath
