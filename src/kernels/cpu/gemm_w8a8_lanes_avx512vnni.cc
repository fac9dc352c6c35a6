// GemmW8A8Int8Lanes_Avx512Vnni: the W8A8 int8 specs (int8_channel / int8_tensor with int8
// activations), every M with K ≤ 2^16, on vpdpbusd, bit for bit the reference (w8a8_output.h:
// W's stored codes are multiplied as they are, their offset of 128 taken off once an output),
// from the rows-in-lanes prepack
// (lane_pack_avx512vnni.h): a chunk of 4 columns is one 64-byte vector of 16 rows, row j's 4 codes
// at 4j, multiplied as stored with one broadcast quad of X, so a row of X costs one vpdpbusd per
// vector and nothing is summed across lanes until the output.
#include "src/base/avx512_intrinsics.h"

#include <algorithm>
#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/dot_bytes_avx512vnni.h"
#include "src/kernels/cpu/int8_rows_avx512vnni.h"
#include "src/kernels/cpu/lane_pack_avx512vnni.h"
#include "src/kernels/cpu/w8a8_output.h"
#include "src/kernels/cpu/w8a8_pack.h"
#include "src/kernels/cpu_problems.h"

namespace quantpath {
namespace {

using avx512vnni::kLaneBlockRows;
using avx512vnni::kLaneVectors;
using avx512vnni::LanePack;

constexpr int64_t kColumns = 4;  // a chunk's: one quad
constexpr int64_t kVectorBytes = 64;
constexpr int kPassRows = 6;
constexpr int64_t kPrefetchBytes = 4096;
constexpr int64_t kMaxK = int64_t{1} << 16;  // |qx · q| < 2^15: a row's int32 sum stays exact

// W's codes in the lanes' layout, with each row's Σ (q − 128) for the output (w8a8_output.h).
struct W8a8Lanes {
  LanePack lanes;
  cpu::W8a8Pack sums;  // row_sums only
};

W8a8Lanes PackW8a8Lanes(const LinearParams& params) {
  const ParamTensor& w = params.tensor(Slot::kWeight);
  const int64_t n = params.rows, k = params.cols;
  W8a8Lanes pack;
  // Chunks of 4 columns: the pack's geometry counts them as it counts 8-column ones.
  pack.lanes = LanePack::Empty(n, (k + kColumns - 1) / kColumns * avx512vnni::kLaneChunk,
                               int64_t{1} << 62, kVectorBytes, 0, false);
  pack.sums.row_sums.assign(static_cast<size_t>(n), 0);
  for (int64_t row = 0; row < n; ++row) {
    const uint8_t* q = w.data<uint8_t>() + row * w.row_bytes();
    uint8_t* block = pack.lanes.codes.data<uint8_t>() +
                     row / kLaneBlockRows * pack.lanes.codes.row_bytes() +
                     row % kLaneBlockRows * kColumns;
    for (int64_t col = 0; col < k; ++col) {
      block[col / kColumns * kVectorBytes * kLaneVectors + col % kColumns] = q[col];
      pack.sums.row_sums[row] += int64_t{q[col]} - 128;
    }
  }
  return pack;
}

// P rows of X from t0 against block b: out[p][v] holds the int32 sums of 16 rows.
template <int P>
void Pass(const LanePack& lanes, const cpu::PaddedInt8Rows& x, int64_t b, int64_t t0,
          __m512i out[][kLaneVectors]) {
  const uint8_t* block = lanes.Block(b);
  __m512i acc[P][kLaneVectors];
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kLaneVectors; ++v) acc[p][v] = _mm512_setzero_si512();
  }
  for (int64_t c = 0; c < lanes.chunks; ++c) {
    const uint8_t* chunk = block + c * kVectorBytes * kLaneVectors;
    for (int64_t line = 0; line < kVectorBytes * kLaneVectors; line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(chunk) + kPrefetchBytes + line, _MM_HINT_T0);
    }
    __m512i w[kLaneVectors];
    for (int v = 0; v < kLaneVectors; ++v) w[v] = _mm512_load_si512(chunk + v * kVectorBytes);
    for (int p = 0; p < P; ++p) {
      const __m512i quad =
          avx512vnni::BroadcastPiece(x.codes.data<int8_t>() + (t0 + p) * x.stride + c * kColumns);
      for (int v = 0; v < kLaneVectors; ++v)
        acc[p][v] = avx512vnni::DotBytes(acc[p][v], w[v], quad);
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < kLaneVectors; ++v) out[p][v] = acc[p][v];
  }
}

template <int P>
void PassOf(const LanePack& lanes, const cpu::PaddedInt8Rows& x, int64_t b, int64_t t0, int rows,
            __m512i out[][kLaneVectors]) {
  if constexpr (P > 0) {
    if (rows == P) return Pass<P>(lanes, x, b, t0, out);
    PassOf<P - 1>(lanes, x, b, t0, rows, out);
  }
}

class GemmW8a8LanesAvx512Vnni final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmW8A8Int8Lanes_Avx512Vnni"; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 25; }
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
    const W8a8Lanes& pack = Packed(params);
    reference::Int8Activations xq;
    cpu::PaddedInt8Rows padded;
    avx512vnni::QuantizeW8a8X(params, act, x, &xq, &padded);
    const cpu::W8a8Problem problem{&pack.sums, &padded, &xq, &params, y};
    avx512vnni::ForEachLaneBlock(pack.lanes, x.rows, [&](int64_t b, int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; t += kPassRows) {
        __m512i sums[kPassRows][kLaneVectors];
        const int rows = static_cast<int>(std::min<int64_t>(kPassRows, t1 - t));
        PassOf<kPassRows>(pack.lanes, padded, b, t, rows, sums);
        for (int p = 0; p < rows; ++p) {
          alignas(64) int32_t lanes[kLaneBlockRows];
          for (int v = 0; v < kLaneVectors; ++v) _mm512_store_si512(lanes + v * 16, sums[p][v]);
          for (int64_t r = 0; r < std::min(kLaneBlockRows, params.rows - b * kLaneBlockRows); ++r) {
            cpu::W8a8Outputs<CpuLevel::kAvx512Vnni>::Store(problem, t + p, b * kLaneBlockRows + r,
                                                           lanes[r]);
          }
        }
      }
    });
  }

 private:
  const W8a8Lanes& Packed(const LinearParams& params) const {
    return params.packs.Get<W8a8Lanes>(
        this, [&] { return std::make_unique<W8a8Lanes>(PackW8a8Lanes(params)); });
  }
};

const KernelRegistrar kRegisterGemmW8a8LanesAvx512Vnni(std::make_unique<GemmW8a8LanesAvx512Vnni>());

}  // namespace
}  // namespace quantpath
