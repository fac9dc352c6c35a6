// int8 weights per output channel quantized at load (w8a16-int8-channel), written as
// compressed-tensors' pack-quantized layout (int_source_ct.cc) for int8_channel.
//
// The rule of compressed-tensors 0.19's symmetric int8 channel strategy (calculate_qparams,
// _quantize): s = amax / 127.5 per row (bit_range / 2 = (127 − (−128)) / 2), computed in fp32 and
// kept in the checkpoint's 16-bit dtype (bf16 for bf16 and fp32 checkpoints, fp16 for fp16 ones:
// int8_channel stores 16-bit scales, as compressed-tensors stores the model's dtype), a zero scale
// taking that dtype's epsilon; q = clamp(round(w / s), −128, 127), w / s in fp32 and rounded to
// nearest even (torch.round). So +amax rounds to 128 and is clipped to 127, while −amax gives
// −128. (compressed-tensors on a bf16 model also divides in bf16, which rounds w / s to 8
// significant bits first; quantpath divides in fp32.)
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "quantpath/numeric.h"
#include "src/specs/int_family.h"
#include "src/specs/online/online_quantizer.h"

namespace quantpath::specs_internal {
namespace {

constexpr int kBits = 8;
constexpr uint32_t kOffset = 128;  // compressed-tensors stores q + 2^(b-1)

// The scale of a row in the 16-bit `dtype`, as a float and as its stored bits.
std::pair<float, uint16_t> RowScale(float amax, QDType dtype) {
  const float exact = amax / 127.5f;
  const bool fp16 = dtype == QDType::kFP16;
  uint16_t bits = fp16 ? FloatToFp16(exact) : FloatToBf16(exact);
  float scale = fp16 ? Fp16ToFloat(bits) : Bf16ToFloat(bits);
  if (scale == 0.0f) {
    // torch.finfo(dtype).eps
    scale = fp16 ? 0x1p-10f : 0x1p-7f;
    bits = fp16 ? FloatToFp16(scale) : FloatToBf16(scale);
  }
  return {scale, bits};
}

// 16-bit scales in the checkpoint's dtype: fp16 for fp16 checkpoints, bf16 otherwise.
QDType ScaleDtype(QDType params_dtype) {
  return params_dtype == QDType::kFP16 ? QDType::kFP16 : QDType::kBF16;
}

int64_t Words(int64_t cols) { return (cols * kBits + 31) / 32; }

std::vector<TensorHeader> Int8Headers(const SpecKey&, const std::string& prefix, int64_t rows,
                                      int64_t cols, QDType params_dtype) {
  return {{prefix + ".weight_packed", StDtype::kI32, {rows, Words(cols)}},
          {prefix + ".weight_shape", StDtype::kI64, {2}},
          {prefix + ".weight_scale",
           ScaleDtype(params_dtype) == QDType::kFP16 ? StDtype::kF16 : StDtype::kBF16,
           {rows, 1}}};
}

Result<QuantizedLayer> QuantizeInt8(const SpecKey&, const DenseLayer& layer) {
  const QDType scale_dtype = ScaleDtype(layer.params_dtype);
  const int64_t cols = layer.cols;
  const int64_t words = Words(cols);
  QuantizedLayer out;
  for (size_t l = 0; l < layer.legs.size(); ++l) {
    const ParamTensor& leg = layer.legs[l];
    const int64_t rows = leg.rows();
    // weight_packed's rows: little-endian int32 words, so a row's bytes are its codes in order.
    std::vector<uint8_t> packed(static_cast<size_t>(rows * words * 4), 0);
    std::vector<uint16_t> scales(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      const float* w = leg.data<float>() + r * cols;
      const auto [scale, bits] = RowScale(AbsMax(w, cols), scale_dtype);
      scales[r] = bits;
      for (int64_t c = 0; c < cols; ++c) {
        const float q = std::clamp(std::nearbyint(w[c] / scale), -128.0f, 127.0f);
        WriteCode(packed.data() + r * words * 4, c, kBits,
                  static_cast<uint32_t>(static_cast<int32_t>(q) + static_cast<int32_t>(kOffset)));
        out.error.Add(w[c], static_cast<double>(q) * scale);
      }
    }
    const std::string& prefix = layer.prefixes[l];
    out.tensors.push_back(
        OwnedTensorOf<uint8_t>(prefix, ".weight_packed", StDtype::kI32, {rows, words}, packed));
    const int64_t shape[] = {rows, cols};
    out.tensors.push_back(
        OwnedTensorOf<int64_t>(prefix, ".weight_shape", StDtype::kI64, {2}, shape));
    out.tensors.push_back(OwnedTensorOf<uint16_t>(
        prefix, ".weight_scale", scale_dtype == QDType::kFP16 ? StDtype::kF16 : StDtype::kBF16,
        {rows, 1}, scales));
  }
  return out;
}

// Symmetric 8-bit channels, weight-only: the integer spec loads the pack-quantized layout with
// activations in high precision.
bool Accepts(const SpecKey& key, const ActivationQuant& act) {
  return key.bits == kBits && !key.zero_point && act.mode == ActMode::kNone;
}

TensorQuant Int8ChannelWeight() {
  TensorQuant t;
  t.dtype = QDType::kINT8;
  t.granularity = Granularity::kPerChannel;
  return t;
}

const OnlineQuantizerRegistrar kRegister({kIntChannelFamily, SourceLayout::kCtPackQuantized,
                                          Accepts, QuantizeInt8, Int8Headers},
                                         {Served(OnlineScheme(Int8ChannelWeight(), std::nullopt))});

}  // namespace
}  // namespace quantpath::specs_internal
