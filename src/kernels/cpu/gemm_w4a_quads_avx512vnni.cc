// GemmW4A4A8Quads_Avx512Vnni: the mixed int4 specs (w4a_family.h: int4_channel[_zp] and
// int4_group_<g>[_zp], g a multiple of 8, with int4 or int8 activations per token) on vpdpbusd.
//
// W is prepacked once into blocks of 32 rows. Per 8 columns a block holds two 64-byte vectors of
// 16 rows, row j's 4 bytes at 4j holding columns c … c + 3 in their low nibbles and c + 4 … c + 7
// in their high ones, so each half, masked, multiplies one broadcast quad of X's codes into 16
// rows' int32 sums. A weight vector is unpacked once for the 4 rows of X of a pass, and a group's
// scale costs one product per 16 rows however long the group: with the rows side by side in the
// lanes, nothing is summed across lanes. Σ qx · (q − z) = Σ qx · q − z · Σ qx, the second term
// taken off each group's sums, exact in int32. One group (channel): the output is the reference's
// bit for bit (gemm_w4a_ref.cc); several: each group's sums are scaled into fp32 totals. The scales
// stay in their stored 16-bit type beside the block's codes (fp32 ones in fp32), the zero points
// in bytes, so a decode row reads about the bytes the layer stores. X's rows are taken in tiles of
// 64 that stay in L2 while W passes; OpenMP splits N.
#include "src/base/avx512_intrinsics.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/dot_bytes_avx512vnni.h"
#include "src/kernels/cpu/int_codes.h"
#include "src/kernels/cpu/w8a8_pack.h"
#include "src/kernels/cpu_problems.h"
#include "src/kernels/reference/int8_activations.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

// |qx · q| ≤ 128 · 15, so a row's int32 sum stays below 2^31 up to 2^20 columns.
constexpr int64_t kMaxK = int64_t{1} << 20;
constexpr int64_t kChunk = 8;  // columns of a chunk: a quad in each nibble
constexpr int kVectors = 2;    // vectors of 16 rows in a block
constexpr int64_t kBlockRows = 16 * kVectors;
constexpr int64_t kChunkBytes = 64 * kVectors;
constexpr int kPassRows = 6;
constexpr int64_t kTileRows = 64;
constexpr int64_t kPrefetchBytes = 4096;

// W's prepack: blocks of kBlockRows rows (rows past N zero), each chunk's kChunkBytes, then per
// group the rows' scales and zero points.
struct QuadPack {
  ParamTensor codes;       // [blocks, chunks · kChunkBytes]
  int64_t chunks = 0;      // ⌈K / 8⌉, the last one zero-padded
  int64_t run_chunks = 0;  // a group's (the last group's may be fewer)
  int64_t groups = 0;
  QDType scale_dtype = QDType::kFP32;  // as stored: fp16, bf16 or fp32
  ParamTensor scales;                  // [blocks, groups · kBlockRows] of scale_dtype
  ParamTensor zeros;                   // [blocks, groups · kBlockRows] codes, with zero points
};

template <bool kZero>
QuadPack PackQuads(const LinearParams& params) {
  const auto w = cpu::IntCodes<CpuLevel::kAvx512Vnni, 4, kZero>::Of(params);
  const int64_t n = params.rows, k = params.cols;
  QuadPack pack;
  pack.chunks = (k + kChunk - 1) / kChunk;
  pack.run_chunks = w.group >= k ? pack.chunks : w.group / kChunk;
  pack.groups = (pack.chunks + pack.run_chunks - 1) / pack.run_chunks;
  pack.scale_dtype = w.scale_dtype;
  const int64_t blocks = (n + kBlockRows - 1) / kBlockRows;
  const int64_t per_block = pack.groups * kBlockRows;
  pack.codes = ParamTensor(QDType::kINT8, blocks, pack.chunks * kChunkBytes);
  pack.scales = ParamTensor(w.scale_dtype, blocks, per_block);
  if constexpr (kZero) pack.zeros = ParamTensor(QDType::kINT8, blocks, per_block);
  const int64_t scale_bytes = w.scale_dtype == QDType::kFP32 ? 4 : 2;
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* codes = pack.codes.data<uint8_t>() + b * pack.codes.row_bytes();
    std::byte* scales = pack.scales.raw() + b * pack.scales.row_bytes();
    for (int64_t i = 0; i < kBlockRows && b * kBlockRows + i < n; ++i) {
      const int64_t row = b * kBlockRows + i;
      const uint8_t* src = w.codes + row * w.row_bytes;
      for (int64_t c = 0; c < pack.chunks; ++c) {
        for (int64_t s = 0; s < 4; ++s) {
          const int64_t col = c * kChunk + s;
          const uint32_t low = col < k ? ReadCode(src, col, 4) : 0;
          const uint32_t high = col + 4 < k ? ReadCode(src, col + 4, 4) : 0;
          codes[c * kChunkBytes + i * 4 + s] = static_cast<uint8_t>(low | high << 4);
        }
      }
      for (int64_t g = 0; g < pack.groups; ++g) {
        const int64_t at = g * kBlockRows + i;
        std::memcpy(scales + at * scale_bytes, w.scales + (row * w.scale_stride + g) * scale_bytes,
                    static_cast<size_t>(scale_bytes));
        if constexpr (kZero) pack.zeros.data<uint8_t>()[b * per_block + at] = w.Zero(row, g);
      }
    }
  }
  return pack;
}

// 16 rows' scales of one group, as stored, widened to fp32.
__m512 LoadScales(const std::byte* at, QDType dtype) {
  if (dtype == QDType::kFP32) return _mm512_loadu_ps(at);
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
  if (dtype == QDType::kFP16) return _mm512_cvtph_ps(bits);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

// X's codes padded with zeros to whole 64-byte steps, and the sum of each row's codes per group.
struct QuadX {
  cpu::PaddedInt8Rows rows;
  std::vector<int32_t> group_sums;  // [m, groups]
  std::vector<float> scale;
};

QuadX QuantizeX(const ActivationQuant& act, const ConstMatrix& x, const QuadPack& pack) {
  reference::Int8Activations xq = reference::QuantizeW4aActivations(act, x);
  QuadX out;
  out.rows = cpu::PadInt8Rows(xq, x.rows, x.cols);
  out.scale = std::move(xq.scale);
  const int64_t run = pack.run_chunks * kChunk;
  out.group_sums.assign(static_cast<size_t>(x.rows * pack.groups), 0);
  for (int64_t t = 0; t < x.rows; ++t) {
    const int8_t* codes = out.rows.codes.data<int8_t>() + t * out.rows.stride;
    for (int64_t c = 0; c < x.cols; ++c) out.group_sums[t * pack.groups + c / run] += codes[c];
  }
  return out;
}

struct Problem {
  const QuadPack* pack;
  const QuadX* x;
  const LinearParams* params;
  MutableMatrix y;
};

// 4 bytes at `at` in every lane, loaded by the broadcast itself: GCC merges two adjacent quads into
// one 8-byte load and broadcasts each from a general register, which cost a third of the GEMM.
inline __m512i BroadcastQuad(const int8_t* at) {
  __m512i v;
  __asm__("vpbroadcastd %1, %0" : "=v"(v) : "m"(*reinterpret_cast<const int32_t*>(at)));
  return v;
}

// The int32 sums of P rows of X from t0 over chunks [c0, c1) of the block at `block`, per vector of
// 16 rows.
template <int P>
inline void Sums(const Problem& pr, const uint8_t* block, int64_t t0, int64_t c0, int64_t c1,
                 __m512i acc[P][kVectors]) {
  const cpu::PaddedInt8Rows& xr = pr.x->rows;
  const int8_t* xs = xr.codes.data<int8_t>() + t0 * xr.stride;
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kVectors; ++v) acc[p][v] = _mm512_setzero_si512();
  }
  for (int64_t c = c0; c < c1; ++c) {
    const uint8_t* chunk = block + c * kChunkBytes;
    _mm_prefetch(reinterpret_cast<const char*>(chunk) + kPrefetchBytes, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(chunk) + kPrefetchBytes + 64, _MM_HINT_T0);
    __m512i low[kVectors], high[kVectors];
    for (int v = 0; v < kVectors; ++v) {
      const __m512i codes = _mm512_load_si512(chunk + v * 64);
      low[v] = _mm512_and_si512(codes, nibble);
      high[v] = _mm512_and_si512(_mm512_srli_epi16(codes, 4), nibble);
    }
    for (int p = 0; p < P; ++p) {
      const int8_t* quads = xs + p * xr.stride + c * kChunk;
      const __m512i x_low = BroadcastQuad(quads);
      const __m512i x_high = BroadcastQuad(quads + 4);
      for (int v = 0; v < kVectors; ++v) {
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
    const QuadPack& pack = *pr.pack;
    const uint8_t* z = pack.zeros.data<uint8_t>() + b * pack.zeros.row_bytes() + g * kBlockRows;
    const __m512i zeros =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(z + v * 16)));
    return _mm512_sub_epi32(sums, _mm512_mullo_epi32(zeros, sum_x));
  }
  return _mm512_sub_epi32(sums, _mm512_slli_epi32(sum_x, 3));  // z = 8
}

// P rows of X from t0 against block b: out[p][v] holds the products of 16 rows before the bias.
template <bool kZero, int P>
void Pass(const Problem& pr, int64_t b, int64_t t0, __m512 out[][kVectors]) {
  const QuadPack& pack = *pr.pack;
  const uint8_t* block = pack.codes.data<uint8_t>() + b * pack.codes.row_bytes();
  const std::byte* scales = pack.scales.raw() + b * pack.scales.row_bytes();
  const int64_t scale_bytes = pack.scale_dtype == QDType::kFP32 ? 4 : 2;
  __m512i acc[P][kVectors];
  if (pack.groups == 1) {
    // Exact: float(Σ qx · (q − z)) · (s_x · s_w), multiplied apart from the bias's add, as the
    // reference does (no FMA contraction).
    Sums<P>(pr, block, t0, 0, pack.chunks, acc);
    for (int v = 0; v < kVectors; ++v) {
      const __m512 s = LoadScales(scales + v * 16 * scale_bytes, pack.scale_dtype);
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
  __m512 total[P][kVectors];
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kVectors; ++v) total[p][v] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < pack.groups; ++g) {
    const int64_t c0 = g * pack.run_chunks;
    Sums<P>(pr, block, t0, c0, std::min(pack.chunks, c0 + pack.run_chunks), acc);
    for (int v = 0; v < kVectors; ++v) {
      const __m512 s =
          LoadScales(scales + (g * kBlockRows + v * 16) * scale_bytes, pack.scale_dtype);
      for (int p = 0; p < P; ++p) {
        const __m512i exact = LessZeroTerm<kZero>(pr, acc[p][v], t0 + p, b, g, v);
        total[p][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), s, total[p][v]);
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    const __m512 sx = _mm512_set1_ps(pr.x->scale[t0 + p]);
    for (int v = 0; v < kVectors; ++v) out[p][v] = _mm512_mul_ps(total[p][v], sx);
  }
}

template <bool kZero, int P>
void PassOf(const Problem& pr, int64_t b, int64_t t0, int rows, __m512 out[][kVectors]) {
  if constexpr (P > 0) {
    if (rows == P) return Pass<kZero, P>(pr, b, t0, out);
    PassOf<kZero, P - 1>(pr, b, t0, rows, out);
  }
}

// Rows [t0, t1) of X against block b, into Y with the bias.
template <bool kZero>
void Block(const Problem& pr, int64_t b, int64_t t0, int64_t t1) {
  const int64_t n = pr.params->rows;
  const int64_t first = b * kBlockRows;
  const int64_t rows_w = std::min(kBlockRows, n - first);
  const ParamTensor& bias = pr.params->tensor(Slot::kBias);
  for (int64_t t = t0; t < t1; t += kPassRows) {
    __m512 out[kPassRows][kVectors];
    const int64_t rows = std::min<int64_t>(kPassRows, t1 - t);
    PassOf<kZero, kPassRows>(pr, b, t, static_cast<int>(rows), out);
    for (int64_t p = 0; p < rows; ++p) {
      alignas(64) float values[kBlockRows];
      for (int v = 0; v < kVectors; ++v) _mm512_store_ps(values + v * 16, out[p][v]);
      for (int64_t r = 0; r < rows_w; ++r) {
        const float bias_value = bias.empty() ? 0.0f : LoadFloat(bias, first + r);
        reference::StoreOutput(pr.y, (t + p) * n + first + r, values[r] + bias_value);
      }
    }
  }
}

template <bool kZero>
void Gemm(const Problem& pr) {
  const int64_t blocks = pr.pack->codes.rows();
  const int64_t m = pr.y.rows;
  for (int64_t t0 = 0; t0 < m; t0 += kTileRows) {
    const int64_t t1 = std::min(m, t0 + kTileRows);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t b = 0; b < blocks; ++b) Block<kZero>(pr, b, t0, t1);
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
           (key.family != kIntGroupFamily || key.group % kChunk == 0);
  }
  void Prepare(const LinearParams& params) const override { Packed(params); }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const QuadPack& pack = Packed(params);
    const QuadX xq = QuantizeX(act, x, pack);
    const Problem problem{&pack, &xq, &params, y};
    if (!params.tensor(Slot::kWeightZero).empty()) return Gemm<true>(problem);
    Gemm<false>(problem);
  }

 private:
  const QuadPack& Packed(const LinearParams& params) const {
    return params.packs.Get<QuadPack>(this, [&] {
      return std::make_unique<QuadPack>(params.tensor(Slot::kWeightZero).empty()
                                            ? PackQuads<false>(params)
                                            : PackQuads<true>(params));
    });
  }
};

const KernelRegistrar kRegisterGemmW4aQuadsAvx512Vnni(std::make_unique<GemmW4aQuadsAvx512Vnni>());

}  // namespace
}  // namespace quantpath
