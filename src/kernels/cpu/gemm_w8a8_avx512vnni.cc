// GemmW8A8Int8_Avx512Vnni: the W8A8 int8 specs (int8_channel / int8_tensor with int8 activations)
// on vpdpbusd, which multiplies 64 unsigned by 64 signed bytes into 16 int32 sums. X is quantized
// as the reference kernel quantizes it (int8_activations.h); W's stored codes q are the unsigned
// operand as they are and the 128 they are offset by comes off once per output as 128 · Σ qx, so
// acc = Σ qx · (q − 128) is the reference's exactly, in int32 (K ≤ 2^16: |qx · q| < 2^15 each),
// and y = float(acc + quant_bias − z_x · Σ (q − 128)) · (s_x · s_w) + bias as it computes it.
//
// W is read from a prepack (w8a8_pack.h): blocks of 4 rows, their 64-byte steps side by side.
// Below kTiledRows rows of X, rows of X are taken 4 at a time against a block (16 accumulators, 4
// weight and 1 activation register), the block staying in L1 / L2 for the next 4; X is cut into
// tiles of 64 rows, which stay in L2 while every block of W passes. From kTiledRows on, W is
// converted once per tile of 64 rows × 512 columns into 4-byte column groups of 16 rows side by
// side (16 × 16 transposes), which multiply one broadcast group of X into 16 outputs: 6 rows of
// X × 4 vectors of W = 24 accumulators per group (as bf16_tiles_avx512vnni.h does for bf16), W
// read from DRAM once per 512 rows of X, the next tile fetched during this one. OpenMP splits N.
#include "src/base/avx512_intrinsics.h"

#include <algorithm>
#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/dot_bytes_avx512vnni.h"
#include "src/kernels/cpu/int8_rows_avx512vnni.h"
#include "src/kernels/cpu/tile_fetch_avx512vnni.h"
#include "src/kernels/cpu/transpose16_avx512vnni.h"
#include "src/kernels/cpu/w8a8_output.h"
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

using Problem = cpu::W8a8Problem;
inline void StoreOutput(const Problem& pr, int64_t i, int64_t j, int32_t acc) {
  cpu::W8a8Outputs<CpuLevel::kAvx512Vnni>::Store(pr, i, j, acc);
}

// X rows [t0, t1) against the R rows of W from `first` into Y.
template <int R>
void Block(const Problem& pr, int64_t first, int64_t t0, int64_t t1) {
  const cpu::RowInterleave& codes = pr.pack->codes;
  const uint8_t* w = codes.bytes.data<uint8_t>() + first * codes.steps * codes.step_bytes;
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
      for (int r = 0; r < R; ++r) StoreOutput(pr, t + p, first + r, acc[p][r]);
    }
  }
}

constexpr int64_t kTiledRows = 64;      // rows of X from which W is tiled
constexpr int64_t kTileN = 64;          // rows of W per tile: 4 vectors of 16
constexpr int64_t kTileK = 512;         // columns (bytes) of W per tile: 128 groups of 4, 32 KiB
constexpr int64_t kTiledMaxRows = 512;  // rows of X per pass over W
constexpr int kMicroRows = 6;
constexpr int kTileVectors = kTileN / 16;

// Rows [n0, n0 + kTileN) ∩ [0, N) of W's prepack, steps [s0, s0 + steps): group g of 4 columns of
// 16 rows q·16 … at quads[g][q · 16] (rows past N are zeros).
struct QuadTile {
  alignas(64) uint32_t quads[kTileK / 4][kTileN];
};
void ConvertQuads(const cpu::RowInterleave& codes, int64_t n_rows, int64_t n0, int64_t s0,
                  int64_t steps, QuadTile* tile) {
  for (int64_t q = 0; q < kTileVectors; ++q) {
    for (int64_t s = 0; s < steps; ++s) {
      __m512i rows[16];
      for (int i = 0; i < 16; ++i) {
        const int64_t n = n0 + q * 16 + i;
        if (n >= n_rows) {
          rows[i] = _mm512_setzero_si512();
          continue;
        }
        const int64_t first = n / kBlockRows * kBlockRows;
        const int64_t block_rows = std::min(kBlockRows, n_rows - first);
        rows[i] =
            _mm512_load_si512(codes.bytes.data<uint8_t>() + first * codes.steps * codes.step_bytes +
                              ((s0 + s) * block_rows + n - first) * codes.step_bytes);
      }
      avx512vnni::Transpose16(rows);
      for (int i = 0; i < 16; ++i) _mm512_store_si512(tile->quads[s * 16 + i] + q * 16, rows[i]);
    }
  }
}

// Rows [m0, m0 + MR) of X (byte `c0` on) over the tile's first `groups` groups, added into
// totals[m · kTileVectors + v]. Not inlined, as the bf16 microkernel (bf16_tiles_avx512vnni.h).
template <int MR>
[[gnu::noinline]] void MicroQuads(const QuadTile& tile, int64_t groups, const Problem& pr,
                                  int64_t m0, int64_t c0, __m512i* totals) {
  const int8_t* xm[MR];
  for (int m = 0; m < MR; ++m) xm[m] = pr.x->codes.data<int8_t>() + (m0 + m) * pr.x->stride + c0;
  __m512i acc[MR][kTileVectors];
  for (int m = 0; m < MR; ++m) {
    for (int v = 0; v < kTileVectors; ++v) acc[m][v] = _mm512_setzero_si512();
  }
  for (int64_t g = 0; g < groups; ++g) {
    __m512i wv[kTileVectors];
    for (int v = 0; v < kTileVectors; ++v) wv[v] = _mm512_load_si512(tile.quads[g] + v * 16);
    for (int m = 0; m < MR; ++m) {
      int32_t four;
      __builtin_memcpy(&four, xm[m] + 4 * g, sizeof four);
      const __m512i xv = _mm512_set1_epi32(four);
      for (int v = 0; v < kTileVectors; ++v) acc[m][v] = avx512vnni::DotBytes(acc[m][v], wv[v], xv);
    }
  }
  for (int m = 0; m < MR; ++m) {
    for (int v = 0; v < kTileVectors; ++v) {
      totals[m * kTileVectors + v] = _mm512_add_epi32(totals[m * kTileVectors + v], acc[m][v]);
    }
  }
}

template <int MR>
void MicroQuadsTail(const QuadTile& tile, int64_t groups, const Problem& pr, int64_t m0, int rows,
                    int64_t c0, __m512i* totals) {
  if constexpr (MR > 0) {
    if (rows == MR) return MicroQuads<MR>(tile, groups, pr, m0, c0, totals);
    MicroQuadsTail<MR - 1>(tile, groups, pr, m0, rows, c0, totals);
  }
}

// What the outputs of W's rows [n0, n0 + kTileN) need beside the products, per row of W.
struct TileOutputs {
  alignas(64) float weight_scale[kTileN];
  alignas(64) float bias[kTileN];
  alignas(64) int64_t quant_bias[kTileN];
  alignas(64) int64_t row_sums[kTileN];

  TileOutputs(const Problem& pr, int64_t n0, int64_t count) {
    const LinearParams& params = *pr.params;
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    const ParamTensor& quant = params.tensor(Slot::kQuantBias);
    const ParamTensor& b = params.tensor(Slot::kBias);
    for (int64_t r = 0; r < kTileN; ++r) {
      const int64_t j = n0 + r;
      const bool in = r < count;
      weight_scale[r] = in ? LoadFloat(scales, scales.rows() == 1 ? 0 : j) : 0.0f;
      bias[r] = in && !b.empty() ? LoadFloat(b, j) : 0.0f;
      quant_bias[r] = in && !quant.empty() ? quant.data<int32_t>()[j] : 0;
      row_sums[r] = in ? pr.pack->row_sums[j] : 0;
    }
  }
};

// StoreOutput for row i of X and `count` rows of W from n0, 8 at a time: the same int64 sum, the
// same conversion, product and sum in fp32 (a scalar loop of them cost a quarter of the prefill).
void StoreTileRow(const Problem& pr, const TileOutputs& out, int64_t i, int64_t n0, int64_t count,
                  const int32_t* lanes) {
  const MutableMatrix& y = pr.y;
  const int64_t n_rows = pr.params->rows;
  const __m512i x_terms = _mm512_set1_epi64(-128 * int64_t{pr.x->sums[i]});
  const __m512i x_zero = _mm512_set1_epi64(pr.xq->zero[i]);
  const float x_scale = pr.xq->scale[i];
  for (int64_t r = 0; r < count; r += 8) {
    const __mmask8 in = count - r >= 8 ? 0xFF : static_cast<__mmask8>((1u << (count - r)) - 1);
    __m512i exact = _mm512_add_epi64(
        _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lanes + r))),
        x_terms);
    exact = _mm512_add_epi64(exact, _mm512_load_si512(out.quant_bias + r));
    exact =
        _mm512_sub_epi64(exact, _mm512_mullo_epi64(x_zero, _mm512_load_si512(out.row_sums + r)));
    const __m256 scale =
        _mm256_mul_ps(_mm256_set1_ps(x_scale), _mm256_load_ps(out.weight_scale + r));
    __m256 product = _mm256_mul_ps(_mm512_cvtepi64_ps(exact), scale);
    __asm__("" : "+v"(product));  // not contracted into an FMA: the reference's bits
    const __m256 value = _mm256_add_ps(product, _mm256_load_ps(out.bias + r));
    if (y.dtype == QDType::kFP32) {
      _mm256_mask_storeu_ps(static_cast<float*>(y.data) + i * n_rows + n0 + r, in, value);
      continue;
    }
    alignas(32) float values[8];
    _mm256_store_ps(values, value);
    for (int64_t l = 0; l < 8 && r + l < count; ++l) {
      reference::StoreOutput(y, i * n_rows + n0 + r + l, values[l]);
    }
  }
}

void TiledGemm(const Problem& pr, int64_t m) {
  const cpu::RowInterleave& codes = pr.pack->codes;
  const int64_t n_rows = pr.params->rows;
  const int64_t steps_per_tile = kTileK / cpu::kInt8Step;
  const int64_t tiles = (n_rows + kTileN - 1) / kTileN;
#ifdef _OPENMP
#pragma omp parallel
#endif
  {
    const std::unique_ptr<QuadTile> tile = std::make_unique<QuadTile>();
    ParamTensor totals_bytes(QDType::kINT8, kTiledMaxRows * kTileVectors, 64);  // 64-byte aligned
    __m512i* totals = reinterpret_cast<__m512i*>(totals_bytes.data<uint8_t>());
    for (int64_t x0 = 0; x0 < m; x0 += kTiledMaxRows) {
      const int64_t x1 = std::min(m, x0 + kTiledMaxRows);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t n0 = t * kTileN;
        std::fill(totals, totals + (x1 - x0) * kTileVectors, _mm512_setzero_si512());
        for (int64_t s0 = 0; s0 < codes.steps; s0 += steps_per_tile) {
          const int64_t steps = std::min(steps_per_tile, codes.steps - s0);
          ConvertQuads(codes, n_rows, n0, s0, steps, tile.get());
          // The next tile: this one's next columns, or the next rows' first.
          const bool last = s0 + steps_per_tile >= codes.steps;
          const int64_t next_n0 = last ? n0 + kTileN : n0, next_s0 = last ? 0 : s0 + steps_per_tile;
          avx512vnni::TileFetch fetch;
          if (next_n0 < n_rows) {
            fetch = avx512vnni::TileFetch(codes, kBlockRows, kTileN, n_rows, next_n0, next_s0,
                                          std::min(steps_per_tile, codes.steps - next_s0),
                                          (x1 - x0 + kMicroRows - 1) / kMicroRows);
          }
          for (int64_t i = x0; i < x1; i += kMicroRows) {
            fetch.Next();
            const int rows = static_cast<int>(std::min<int64_t>(kMicroRows, x1 - i));
            MicroQuadsTail<kMicroRows>(*tile, steps * cpu::kInt8Step / 4, pr, i, rows,
                                       s0 * cpu::kInt8Step, totals + (i - x0) * kTileVectors);
          }
        }
        const int64_t count = std::min(kTileN, n_rows - n0);
        const TileOutputs outputs(pr, n0, count);
        for (int64_t i = x0; i < x1; ++i) {
          StoreTileRow(pr, outputs, i, n0, count,
                       reinterpret_cast<const int32_t*>(totals + (i - x0) * kTileVectors));
        }
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
    reference::Int8Activations xq;
    cpu::PaddedInt8Rows padded;
    avx512vnni::QuantizeW8a8X(params, act, x, &xq, &padded);
    const Problem problem{&Packed(params), &padded, &xq, &params, y};
    if (x.rows >= kTiledRows) return TiledGemm(problem, x.rows);
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
