// GemmIntW16Lanes_Avx512Bf16: the 4-bit integer weight-only specs (int4_channel[_zp] and
// int4_group_<g>[_zp], g a multiple of 8; act-order stays with the reference kernel) for decode
// batches (M ≤ 16) on vdpbf16ps, from the rows-in-lanes prepack (int4_lanes_avx512vnni.h). A code
// q under the exponent and leading mantissa bits of 128 is the bf16 value 128 + q (bits 0x4300 |
// q), so one shift and one mask-and-or turn a chunk's vector into 16 rows' bf16 pairs of two
// columns, four vectors a chunk: columns (c, c + 2), (c + 4, c + 6), (c + 1, c + 3) and (c + 5, c +
// 7), each multiplied with the matching pair of X broadcast (X reordered so per chunk). Per group,
// y += s · Σ x · (128 + q) − s · (128 + z) · Σ x: a group costs two vector products per 16 rows
// however long, where the kernel that sums rows across lanes (gemm_int_avx512vnni.cc) paid a
// reduction and scalar scale and zero point reads per row and group, which bound its decode rows
// at half the memory's speed. X in bf16: exact from bf16 input; fp32 input is split into a high
// and a low bf16 part, both multiplied into the same sums (bf16_rows.h does the same).
#include "src/base/avx512_intrinsics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/int4_lanes_avx512vnni.h"
#include "src/kernels/cpu/x_order.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

constexpr int64_t kMaxM = 16;  // decode batches; prefill runs the tiled GEMM of the other kernel
constexpr int kPassRows = 4;
constexpr int64_t kPrefetchBytes = 4096;
constexpr int kPairs = 4;  // bf16 pair vectors a chunk vector gives
constexpr float kMagic = 128.0f;

using avx512vnni::Int4Lanes;
using avx512vnni::kLaneChunk;
using avx512vnni::kLaneChunkBytes;
using avx512vnni::kLaneVectors;

// Where column c + i of a chunk sits in X's reordered chunk: the pairs' order above.
constexpr int kChunkPosition[kLaneChunk] = {0, 4, 1, 5, 2, 6, 3, 7};

// X as bf16 rows in the chunks' order, one part (bf16 input, or fp32 values that are all bf16
// values) or two (high parts, then low parts), and Σ x per row and group.
struct LaneX {
  std::vector<uint16_t> bits;  // [parts, m, chunks · 8]
  int64_t stride = 0;
  int parts = 1;
  std::vector<float> group_sums;  // [m, groups]
};

LaneX OrderX(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const Int4Lanes& pack) {
  const std::vector<float> xs = reference::PrepareActivations(params, act, x);
  const int64_t m = x.rows, k = x.cols;
  LaneX out;
  out.stride = pack.chunks * kLaneChunk;
  bool exact = x.dtype == QDType::kBF16;
  if (!exact) {
    exact = std::all_of(xs.begin(), xs.end(),
                        [](float v) { return std::isnan(v) || Bf16ToFloat(FloatToBf16(v)) == v; });
  }
  out.parts = exact ? 1 : 2;
  out.bits.assign(static_cast<size_t>(out.parts * m * out.stride), 0);
  for (int64_t t = 0; t < m; ++t) {
    for (int64_t c = 0; c < k; ++c) {
      const int64_t at =
          t * out.stride + c / kLaneChunk * kLaneChunk + kChunkPosition[c % kLaneChunk];
      const float v = xs[t * k + c];
      const uint16_t high = FloatToBf16(v);
      out.bits[at] = high;
      if (!exact) out.bits[m * out.stride + at] = FloatToBf16(v - Bf16ToFloat(high));
    }
  }
  const int64_t run = pack.run_chunks * kLaneChunk;
  out.group_sums.resize(static_cast<size_t>(m * pack.groups));
  for (int64_t t = 0; t < m; ++t) {
    for (int64_t g = 0; g < pack.groups; ++g) {
      out.group_sums[t * pack.groups + g] =
          cpu::RunSum(xs.data() + t * k, g * run, std::min(k, (g + 1) * run));
    }
  }
  return out;
}

struct Problem {
  const Int4Lanes* pack;
  const LaneX* x;
  const LinearParams* params;
  MutableMatrix y;
};

// The low 4 bits of each 16-bit lane of `words` as the bf16 value 128 + q.
inline __m512i NibblesAsBf16(__m512i words) {
  return _mm512_ternarylogic_epi32(words, _mm512_set1_epi16(0x000F), _mm512_set1_epi16(0x4300),
                                   0xEA);  // (words & 0xF) | 0x4300
}

// acc += the products of 32 bf16 pairs, in place (as DotBytes: no register moves around it).
inline __m512 DotPairs(__m512 acc, __m512i w, __m512i x) {
  __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(w), "v"(x));
  return acc;
}

// The sums of P rows of X from t0 over chunks [c0, c1) of the block at `block`, in A accumulators a
// row of X and vector so that enough products are in flight at small P. kParts is X's (a count
// known at run time kept the accumulators in memory).
template <int kParts, int P, int A>
inline void Sums(const Problem& pr, const uint8_t* block, int64_t t0, int64_t c0, int64_t c1,
                 __m512 sums[P][kLaneVectors]) {
  const LaneX& x = *pr.x;
  const int64_t m = pr.y.rows;
  __m512 acc[P][kLaneVectors][A];  // local: handed out, GCC kept them in memory
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kLaneVectors; ++v) {
      for (int a = 0; a < A; ++a) acc[p][v][a] = _mm512_setzero_ps();
    }
  }
  for (int64_t c = c0; c < c1; ++c) {
    const uint8_t* chunk = block + c * kLaneChunkBytes;
    _mm_prefetch(reinterpret_cast<const char*>(chunk) + kPrefetchBytes, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(chunk) + kPrefetchBytes + 64, _MM_HINT_T0);
    __m512i pairs[kLaneVectors][kPairs];
    for (int v = 0; v < kLaneVectors; ++v) {
      const __m512i words = _mm512_load_si512(chunk + v * 64);
      pairs[v][0] = NibblesAsBf16(words);
      pairs[v][1] = NibblesAsBf16(_mm512_srli_epi16(words, 4));
      pairs[v][2] = NibblesAsBf16(_mm512_srli_epi16(words, 8));
      pairs[v][3] = NibblesAsBf16(_mm512_srli_epi16(words, 12));
    }
    for (int p = 0; p < P; ++p) {
      for (int part = 0; part < kParts; ++part) {
        const uint16_t* xc = x.bits.data() + (part * m + t0 + p) * x.stride + c * kLaneChunk;
        for (int i = 0; i < kPairs; ++i) {
          const __m512i xv = avx512vnni::BroadcastPiece(xc + 2 * i);
          for (int v = 0; v < kLaneVectors; ++v) {
            acc[p][v][i % A] = DotPairs(acc[p][v][i % A], pairs[v][i], xv);
          }
        }
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kLaneVectors; ++v) {
      sums[p][v] = acc[p][v][0];
      for (int a = 1; a < A; ++a) sums[p][v] = _mm512_add_ps(sums[p][v], acc[p][v][a]);
    }
  }
}

// P rows of X from t0 against block b: out[p][v] holds the products of 16 rows before the bias.
template <bool kZero, int kParts, int P>
void Pass(const Problem& pr, int64_t b, int64_t t0, __m512 out[][kLaneVectors]) {
  constexpr int A = P == 1 ? 4 : P <= 3 ? 2 : 1;  // at most 12 accumulators: more stayed in memory
  const Int4Lanes& pack = *pr.pack;
  const LaneX& x = *pr.x;
  const uint8_t* block = pack.Block(b);
  __m512 total[P][kLaneVectors];
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kLaneVectors; ++v) total[p][v] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < pack.groups; ++g) {
    const int64_t c0 = g * pack.run_chunks;
    __m512 sums[P][kLaneVectors];
    Sums<kParts, P, A>(pr, block, t0, c0, std::min(pack.chunks, c0 + pack.run_chunks), sums);
    for (int v = 0; v < kLaneVectors; ++v) {
      const __m512 s = pack.Scales(b, g, v);
      __m512 z = _mm512_set1_ps(kMagic + 8.0f);
      if constexpr (kZero) {
        z = _mm512_add_ps(_mm512_cvtepi32_ps(pack.Zeros(b, g, v)), _mm512_set1_ps(kMagic));
      }
      const __m512 zero_scale = _mm512_mul_ps(s, z);
      for (int p = 0; p < P; ++p) {
        const __m512 sum = sums[p][v];
        const __m512 sum_x = _mm512_set1_ps(x.group_sums[(t0 + p) * pack.groups + g]);
        total[p][v] = _mm512_fnmadd_ps(zero_scale, sum_x, _mm512_fmadd_ps(sum, s, total[p][v]));
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kLaneVectors; ++v) out[p][v] = total[p][v];
  }
}

template <bool kZero, int kParts, int P>
void PassOf(const Problem& pr, int64_t b, int64_t t0, int rows, __m512 out[][kLaneVectors]) {
  if constexpr (P > 0) {
    if (rows == P) return Pass<kZero, kParts, P>(pr, b, t0, out);
    PassOf<kZero, kParts, P - 1>(pr, b, t0, rows, out);
  }
}

// Rows [t0, t1) of X against block b, into Y with the bias.
template <bool kZero, int kParts>
void Block(const Problem& pr, int64_t b, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; t += kPassRows) {
    __m512 out[kPassRows][kLaneVectors];
    const int64_t rows = std::min<int64_t>(kPassRows, t1 - t);
    PassOf<kZero, kParts, kPassRows>(pr, b, t, static_cast<int>(rows), out);
    for (int64_t p = 0; p < rows; ++p) avx512vnni::StoreLaneRow(*pr.params, pr.y, b, t + p, out[p]);
  }
}

class GemmInt4LanesAvx512Bf16 final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmIntW16Lanes_Avx512Bf16"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 25; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return (key.family == kIntChannelFamily || key.family == kIntGroupFamily) && key.bits == 4 &&
           !key.act_order && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    const SpecKey& key = probe.spec;
    return Serves(key, probe.device) && probe.m <= kMaxM &&
           (key.family != kIntGroupFamily || (key.group > 0 && key.group % kLaneChunk == 0)) &&
           probe.act.mode == ActMode::kNone && reference::CanHandleIo(probe);
  }
  void Prepare(const LinearParams& params) const override {
    avx512vnni::PackedInt4Lanes(this, params);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const Int4Lanes& pack = avx512vnni::PackedInt4Lanes(this, params);
    const LaneX xb = OrderX(params, act, x, pack);
    const Problem pr{&pack, &xb, &params, y};
    const bool zero = !params.tensor(Slot::kWeightZero).empty();
    avx512vnni::ForEachLaneBlock(pack, x.rows, [&](int64_t b, int64_t t0, int64_t t1) {
      if (xb.parts == 1)
        return zero ? Block<true, 1>(pr, b, t0, t1) : Block<false, 1>(pr, b, t0, t1);
      zero ? Block<true, 2>(pr, b, t0, t1) : Block<false, 2>(pr, b, t0, t1);
    });
  }
};

const KernelRegistrar kRegisterGemmInt4LanesAvx512Bf16(std::make_unique<GemmInt4LanesAvx512Bf16>());

}  // namespace
}  // namespace quantpath
