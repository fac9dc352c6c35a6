// int4 weights in groups along K quantized at load, symmetric (w4a16-int4-g128) or with zero
// points (w4a16-int4-g128-…zp), written as compressed-tensors' pack-quantized layout
// (int_source_ct.cc) for int4_group_<g>[_zp].
//
// The rule of compressed-tensors 0.19's int group strategy (calculate_qparams, _quantize) on the
// group's min and max widened to include 0, its arithmetic in the checkpoint's 16-bit dtype as
// llmcompressor's observers compute it on a bf16 / fp16 model (each operation rounded to that
// dtype; fp32 checkpoints keep bf16 scales, as the integer families store 16-bit scales):
//   symmetric   s = max(|min|, |max|) / 7.5 (bit_range / 2), z = 0;
//   asymmetric  s = (max − min) / 15, z = round(clamp(−8 − min / s, −8, 7)) to nearest even;
//   a zero s takes the dtype's epsilon (an all-zero group's z is 0);
//   q = clamp(round(w / s + z), −8, 7), in fp32 from the stored s, nearest even.
// Stored offset by 8: the codes in little-endian int32 words along each row, the zero points in
// int32 words along each group's column of N (weight_zero_point [ceil(N / 8), groups]).
#include <algorithm>
#include <cmath>

#include "src/specs/int_family.h"
#include "src/specs/int_source.h"
#include "src/specs/online/online_quantizer.h"

namespace quantpath::specs_internal {
namespace {

constexpr int kBits = 4;
constexpr int kMin = -8;
constexpr int kMax = 7;
constexpr int kOffset = 8;  // stored codes are q + 8

int64_t Words(int64_t count) { return (count * kBits + 31) / 32; }
int64_t Groups(const SpecKey& key, int64_t cols) { return (cols + key.group - 1) / key.group; }

std::vector<TensorHeader> GroupHeaders(const SpecKey& key, const std::string& prefix, int64_t rows,
                                       int64_t cols, QDType params_dtype) {
  std::vector<TensorHeader> headers = {
      {prefix + ".weight_packed", StDtype::kI32, {rows, Words(cols)}},
      {prefix + ".weight_shape", StDtype::kI64, {2}},
      {prefix + ".weight_scale",
       StDtypeOf16(IntScaleDtype(params_dtype)),
       {rows, Groups(key, cols)}}};
  if (key.zero_point) {
    headers.push_back(
        {prefix + ".weight_zero_point", StDtype::kI32, {Words(rows), Groups(key, cols)}});
  }
  return headers;
}

// A group's scale and zero point from its values `w[0, n)`.
std::pair<float, int> GroupParams(const float* w, int64_t n, bool zero_point, QDType dtype) {
  float lo = 0.0f;
  float hi = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, w[i]);
    hi = std::max(hi, w[i]);
  }
  if (!zero_point) {
    const float s = Round16(std::max(-lo, hi) / 7.5f, dtype);
    return {s == 0.0f ? Eps16(dtype) : s, 0};
  }
  const float s = Round16(Round16(hi - lo, dtype) / 15.0f, dtype);
  if (s == 0.0f) return {Eps16(dtype), 0};
  const float z = Round16(static_cast<float>(kMin) - Round16(lo / s, dtype), dtype);
  return {s, static_cast<int>(std::nearbyint(std::clamp(z, float{kMin}, float{kMax})))};
}

Result<QuantizedLayer> QuantizeGroups(const SpecKey& key, const DenseLayer& layer) {
  const QDType scale_dtype = IntScaleDtype(layer.params_dtype);
  const int64_t cols = layer.cols;
  const int64_t words = Words(cols);
  const int64_t groups = Groups(key, cols);
  QuantizedLayer out;
  for (size_t l = 0; l < layer.legs.size(); ++l) {
    const ParamTensor& leg = layer.legs[l];
    const int64_t rows = leg.rows();
    std::vector<uint8_t> packed(static_cast<size_t>(rows * words * 4), 0);
    std::vector<uint16_t> scales(static_cast<size_t>(rows * groups));
    std::vector<uint32_t> zeros(static_cast<size_t>(Words(rows) * groups), 0);
    // Threads take the 8 rows whose zero points share a word at a time.
    constexpr int64_t kRowsPerWord = 32 / kBits;
    ForEachRowInParallel(Words(rows), &out.error, [&](int64_t word, QuantizationError* e) {
      for (int64_t r = word * kRowsPerWord; r < std::min(rows, (word + 1) * kRowsPerWord); ++r) {
        const float* w = leg.data<float>() + r * cols;
        for (int64_t g = 0; g < groups; ++g) {
          const int64_t c0 = g * key.group;
          const int64_t n = std::min(key.group, cols - c0);
          const auto [scale, zero] = GroupParams(w + c0, n, key.zero_point, scale_dtype);
          scales[r * groups + g] = Bits16(scale, scale_dtype);
          const auto zero_code = static_cast<uint32_t>(zero + kOffset);
          // Row r's zero point is code r of the group's column, whose words are `groups` apart.
          PutStreamCode(zeros.data() + g, groups, r, kBits, zero_code);
          for (int64_t c = c0; c < c0 + n; ++c) {
            const float q = std::clamp(std::nearbyint(w[c] / scale + static_cast<float>(zero)),
                                       float{kMin}, float{kMax});
            WriteCode(packed.data() + r * words * 4, c, kBits,
                      static_cast<uint32_t>(static_cast<int>(q) + kOffset));
            e->Add(w[c], (static_cast<double>(q) - zero) * scale);
          }
        }
      }
    });
    const std::string& prefix = layer.prefixes[l];
    AddCtPackedLeg(prefix, rows, cols, words, packed, scale_dtype, groups, scales, &out);
    if (key.zero_point) {
      out.tensors.push_back(OwnedTensorOf<uint32_t>(prefix, ".weight_zero_point", StDtype::kI32,
                                                    {Words(rows), groups}, zeros));
    }
  }
  return out;
}

// Weight-only 4-bit groups in input order (act-order is GPTQ's, which needs calibration).
bool Accepts(const SpecKey& key, const ActivationQuant& act) {
  return key.bits == kBits && !key.act_order && act.mode == ActMode::kNone;
}

TensorQuant Int4Group128(bool symmetric) {
  TensorQuant t;
  t.dtype = QDType::kINT4;
  t.granularity = Granularity::kGroup;
  t.group_size = 128;
  t.symmetric = symmetric;
  return t;
}

const OnlineQuantizerRegistrar kRegister({kIntGroupFamily, SourceLayout::kCtPackQuantized, Accepts,
                                          QuantizeGroups, GroupHeaders},
                                         {Served(OnlineScheme(Int4Group128(true), std::nullopt)),
                                          Served(OnlineScheme(Int4Group128(false), std::nullopt))});

}  // namespace
}  // namespace quantpath::specs_internal
