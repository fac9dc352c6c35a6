// GemmW4A4A8Quads_Avx512Vnni: the mixed int4 specs (w4a_family.h: int4_channel[_zp] and
// int4_group_<g>[_zp], g a multiple of 8, with int4 or int8 activations per token) on vpdpbusd,
// from the rows-in-lanes prepack (int4_lanes_avx512vnni.h): each half of a chunk's vector, masked,
// multiplies one broadcast quad of X's codes into 16 rows' int32 sums, the vector unpacked once for
// the rows of X of a pass. Σ qx · (q − z) = Σ qx · q − z · Σ qx, the second term taken off each
// group's sums, exact in int32. One group (channel): the output is the reference's bit for bit
// (gemm_w4a_ref.cc); several: each group's sums are scaled into fp32 totals.
#include "src/base/avx512_intrinsics.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/dot_bytes_avx512vnni.h"
#include "src/kernels/cpu/int4_lanes_avx512vnni.h"
#include "src/kernels/cpu/w8a8_pack.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

// |qx · q| ≤ 128 · 15, so a row's int32 sum stays below 2^31 up to 2^20 columns.
constexpr int64_t kMaxK = int64_t{1} << 20;
constexpr int kPassRows = 6;
constexpr int64_t kPrefetchBytes = 4096;

using avx512vnni::kLaneChunk;
using avx512vnni::kLaneVectors;
using avx512vnni::kNibbleChunkBytes;
using avx512vnni::LanePack;

// X's codes padded with zeros to whole 64-byte steps, and the sum of each row's codes per group.
struct QuadX {
  cpu::PaddedInt8Rows rows;
  std::vector<int32_t> group_sums;  // [m, groups]
  std::vector<float> scale;
};

QuadX QuantizeX(const ActivationQuant& act, const ConstMatrix& x, const LanePack& pack) {
  reference::Int8Activations xq = reference::QuantizeW4aActivations(act, x);
  QuadX out;
  out.rows = cpu::PadInt8Rows(xq, x.rows, x.cols);
  out.scale = std::move(xq.scale);
  const int64_t run = pack.run_chunks * kLaneChunk;
  out.group_sums.assign(static_cast<size_t>(x.rows * pack.groups), 0);
  for (int64_t t = 0; t < x.rows; ++t) {
    const int8_t* codes = out.rows.codes.data<int8_t>() + t * out.rows.stride;
    for (int64_t c = 0; c < x.cols; ++c) out.group_sums[t * pack.groups + c / run] += codes[c];
  }
  return out;
}

struct Problem {
  const LanePack* pack;
  QDType scale_dtype;
  const QuadX* x;
  const LinearParams* params;
  MutableMatrix y;
};

// The int32 sums of P rows of X from t0 over chunks [c0, c1) of the block at `block`, per vector of
// 16 rows.
template <int P>
inline void Sums(const Problem& pr, const uint8_t* block, int64_t t0, int64_t c0, int64_t c1,
                 __m512i acc[P][kLaneVectors]) {
  const cpu::PaddedInt8Rows& xr = pr.x->rows;
  const int8_t* xs = xr.codes.data<int8_t>() + t0 * xr.stride;
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kLaneVectors; ++v) acc[p][v] = _mm512_setzero_si512();
  }
  for (int64_t c = c0; c < c1; ++c) {
    const uint8_t* chunk = block + c * kNibbleChunkBytes;
    _mm_prefetch(reinterpret_cast<const char*>(chunk) + kPrefetchBytes, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(chunk) + kPrefetchBytes + 64, _MM_HINT_T0);
    __m512i low[kLaneVectors], high[kLaneVectors];
    for (int v = 0; v < kLaneVectors; ++v) {
      const __m512i codes = _mm512_load_si512(chunk + v * 64);
      low[v] = _mm512_and_si512(codes, nibble);
      high[v] = _mm512_and_si512(_mm512_srli_epi16(codes, 4), nibble);
    }
    for (int p = 0; p < P; ++p) {
      const int8_t* quads = xs + p * xr.stride + c * kLaneChunk;
      const __m512i x_low = avx512vnni::BroadcastPiece(quads);
      const __m512i x_high = avx512vnni::BroadcastPiece(quads + 4);
      for (int v = 0; v < kLaneVectors; ++v) {
        acc[p][v] = avx512vnni::DotBytes(acc[p][v], low[v], x_low);
        acc[p][v] = avx512vnni::DotBytes(acc[p][v], high[v], x_high);
      }
    }
  }
}

// Σ qx · (q − z) of row t of X and group g: the sums less z · Σ qx.
template <bool kZero>
inline __m512i LessZeroTerm(const Problem& pr, __m512i sums, int64_t t, int64_t b, int64_t g,
                            int v) {
  const __m512i sum_x = _mm512_set1_epi32(pr.x->group_sums[t * pr.pack->groups + g]);
  if constexpr (kZero) {
    return _mm512_sub_epi32(sums, _mm512_mullo_epi32(pr.pack->Zeros(b, g, v), sum_x));
  }
  return _mm512_sub_epi32(sums, _mm512_slli_epi32(sum_x, 3));  // z = 8
}

// P rows of X from t0 against block b: out[p][v] holds the products of 16 rows before the bias.
template <bool kZero, int P>
void Pass(const Problem& pr, int64_t b, int64_t t0, __m512 out[][kLaneVectors]) {
  const LanePack& pack = *pr.pack;
  const uint8_t* block = pack.Block(b);
  __m512i acc[P][kLaneVectors];
  if (pack.groups == 1) {
    // Exact: float(Σ qx · (q − z)) · (s_x · s_w), multiplied apart from the bias's add, as the
    // reference does (no FMA contraction).
    Sums<P>(pr, block, t0, 0, pack.chunks, acc);
    for (int v = 0; v < kLaneVectors; ++v) {
      const __m512 s = avx512vnni::WidenScales(pack.Scales(b, 0, v), pr.scale_dtype);
      for (int p = 0; p < P; ++p) {
        const __m512i exact = LessZeroTerm<kZero>(pr, acc[p][v], t0 + p, b, 0, v);
        __m512 product = _mm512_mul_ps(_mm512_cvtepi32_ps(exact),
                                       _mm512_mul_ps(_mm512_set1_ps(pr.x->scale[t0 + p]), s));
        __asm__("" : "+v"(product));
        out[p][v] = product;
      }
    }
    return;
  }
  __m512 total[P][kLaneVectors];
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kLaneVectors; ++v) total[p][v] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < pack.groups; ++g) {
    const int64_t c0 = g * pack.run_chunks;
    Sums<P>(pr, block, t0, c0, std::min(pack.chunks, c0 + pack.run_chunks), acc);
    for (int v = 0; v < kLaneVectors; ++v) {
      const __m512 s = avx512vnni::WidenScales(pack.Scales(b, g, v), pr.scale_dtype);
      for (int p = 0; p < P; ++p) {
        const __m512i exact = LessZeroTerm<kZero>(pr, acc[p][v], t0 + p, b, g, v);
        total[p][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), s, total[p][v]);
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    const __m512 sx = _mm512_set1_ps(pr.x->scale[t0 + p]);
    for (int v = 0; v < kLaneVectors; ++v) out[p][v] = _mm512_mul_ps(total[p][v], sx);
  }
}

template <bool kZero, int P>
void PassOf(const Problem& pr, int64_t b, int64_t t0, int rows, __m512 out[][kLaneVectors]) {
  if constexpr (P > 0) {
    if (rows == P) return Pass<kZero, P>(pr, b, t0, out);
    PassOf<kZero, P - 1>(pr, b, t0, rows, out);
  }
}

// Rows [t0, t1) of X against block b, into Y with the bias.
template <bool kZero>
void Block(const Problem& pr, int64_t b, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; t += kPassRows) {
    __m512 out[kPassRows][kLaneVectors];
    const int64_t rows = std::min<int64_t>(kPassRows, t1 - t);
    PassOf<kZero, kPassRows>(pr, b, t, static_cast<int>(rows), out);
    for (int64_t p = 0; p < rows; ++p) avx512vnni::StoreLaneRow(*pr.params, pr.y, b, t + p, out[p]);
  }
}

class GemmW4aQuadsAvx512Vnni final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW4A4A8Quads_Avx512Vnni"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 25; }
  DotUnit unit() const override { return DotUnit::kInt8Quad; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return cpu_problems::ServesW4a(key, device);
  }
  bool CanHandle(const KernelProbe& probe) const override {
    const SpecKey& key = probe.spec;
    return cpu_problems::TakesW4a(probe) && probe.k <= kMaxK &&
           (key.family != kIntGroupFamily || key.group % kLaneChunk == 0);
  }
  void Prepare(const LinearParams& params) const override {
    avx512vnni::PackedInt4Lanes(this, params);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const LanePack& pack = avx512vnni::PackedInt4Lanes(this, params);
    const QuadX xq = QuantizeX(act, x, pack);
    const Problem pr{&pack, params.tensor(Slot::kWeightScale).dtype(), &xq, &params, y};
    if (params.tensor(Slot::kWeightZero).empty()) {
      avx512vnni::ForEachLaneBlock(
          pack, x.rows, [&](int64_t b, int64_t t0, int64_t t1) { Block<false>(pr, b, t0, t1); });
    } else {
      avx512vnni::ForEachLaneBlock(
          pack, x.rows, [&](int64_t b, int64_t t0, int64_t t1) { Block<true>(pr, b, t0, t1); });
    }
  }
};

const KernelRegistrar kRegisterGemmW4aQuadsAvx512Vnni(std::make_unique<GemmW4aQuadsAvx512Vnni>());

}  // namespace
}  // namespace quantpath
