// int8 weights per output channel quantized at load, symmetric: w8a16-int8-channel, written as
// compressed-tensors' pack-quantized layout (int_source_ct.cc) for int8_channel weight-only, and
// w8a8-int8-channel with dynamic per-token int8 activations, written as its int-quantized layout
// (`weight` I8, read by the W8A8 spec).
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
#include <cmath>

#include "src/specs/int_family.h"
#include "src/specs/online/online_quantizer.h"

namespace quantpath::specs_internal {
namespace {

constexpr int kBits = 8;

// One leg's signed codes [rows, cols] and its rows' scale bits in `scale_dtype`.
struct Int8Leg {
  std::vector<int8_t> codes;
  std::vector<uint16_t> scales;
};

Int8Leg QuantizeLeg(const ParamTensor& leg, QDType scale_dtype, QuantizationError* error) {
  const int64_t rows = leg.rows();
  const int64_t cols = leg.cols();
  Int8Leg out{std::vector<int8_t>(static_cast<size_t>(rows * cols)),
              std::vector<uint16_t>(static_cast<size_t>(rows))};
  ForEachRowInParallel(rows, error, [&](int64_t r, QuantizationError* e) {
    const float* w = leg.data<float>() + r * cols;
    float scale = Round16(AbsMax(w, cols) / 127.5f, scale_dtype);
    if (scale == 0.0f) scale = Eps16(scale_dtype);
    out.scales[r] = Bits16(scale, scale_dtype);
    for (int64_t c = 0; c < cols; ++c) {
      const float q = std::clamp(std::nearbyint(w[c] / scale), -128.0f, 127.0f);
      out.codes[r * cols + c] = static_cast<int8_t>(q);
      e->Add(w[c], static_cast<double>(q) * scale);
    }
  });
  return out;
}

int64_t Words(int64_t cols) { return (cols * kBits + 31) / 32; }

std::vector<TensorHeader> PackedHeaders(const SpecKey&, const std::string& prefix, int64_t rows,
                                        int64_t cols, QDType params_dtype) {
  return {{prefix + ".weight_packed", StDtype::kI32, {rows, Words(cols)}},
          {prefix + ".weight_shape", StDtype::kI64, {2}},
          {prefix + ".weight_scale", StDtypeOf16(IntScaleDtype(params_dtype)), {rows, 1}}};
}

// compressed-tensors' pack-quantized: the codes offset by 128 in little-endian int32 words, so a
// row's bytes are its unsigned codes in order.
Result<QuantizedLayer> QuantizePacked(const SpecKey&, const DenseLayer& layer) {
  const QDType scale_dtype = IntScaleDtype(layer.params_dtype);
  const int64_t cols = layer.cols;
  const int64_t words = Words(cols);
  QuantizedLayer out;
  for (size_t l = 0; l < layer.legs.size(); ++l) {
    const int64_t rows = layer.legs[l].rows();
    const Int8Leg leg = QuantizeLeg(layer.legs[l], scale_dtype, &out.error);
    std::vector<uint8_t> packed(static_cast<size_t>(rows * words * 4), 0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        WriteCode(packed.data() + r * words * 4, c, kBits,
                  static_cast<uint32_t>(leg.codes[r * cols + c] + 128));
      }
    }
    AddCtPackedLeg(layer.prefixes[l], rows, cols, words, packed, scale_dtype, 1, leg.scales, &out);
  }
  return out;
}

std::vector<TensorHeader> SignedHeaders(const SpecKey&, const std::string& prefix, int64_t rows,
                                        int64_t cols, QDType params_dtype) {
  return {{prefix + ".weight", StDtype::kI8, {rows, cols}},
          {prefix + ".weight_scale", StDtypeOf16(IntScaleDtype(params_dtype)), {rows, 1}}};
}

// compressed-tensors' int-quantized: the signed codes as they are.
Result<QuantizedLayer> QuantizeSigned(const SpecKey&, const DenseLayer& layer) {
  const QDType scale_dtype = IntScaleDtype(layer.params_dtype);
  QuantizedLayer out;
  for (size_t l = 0; l < layer.legs.size(); ++l) {
    const int64_t rows = layer.legs[l].rows();
    const Int8Leg leg = QuantizeLeg(layer.legs[l], scale_dtype, &out.error);
    const std::string& prefix = layer.prefixes[l];
    out.tensors.push_back(
        OwnedTensorOf<int8_t>(prefix, ".weight", StDtype::kI8, {rows, layer.cols}, leg.codes));
    out.tensors.push_back(OwnedTensorOf<uint16_t>(prefix, ".weight_scale", StDtypeOf16(scale_dtype),
                                                  {rows, 1}, leg.scales));
  }
  return out;
}

// Symmetric 8-bit channels, weight-only: the integer spec loads the pack-quantized layout with
// activations in high precision.
bool AcceptsWeightOnly(const SpecKey& key, const ActivationQuant& act) {
  return key.bits == kBits && !key.zero_point && act.mode == ActMode::kNone;
}

// With int8 activations scaled per token at run time: the W8A8 spec loads int-quantized.
bool AcceptsDynamicTokens(const SpecKey& key, const ActivationQuant& act) {
  return key.bits == kBits && !key.zero_point && act.mode == ActMode::kDynamicPerToken;
}

TensorQuant Int8ChannelWeight() {
  TensorQuant t;
  t.dtype = QDType::kINT8;
  t.granularity = Granularity::kPerChannel;
  return t;
}

TensorQuant Int8TokenInput() {
  TensorQuant t;
  t.dtype = QDType::kINT8;
  t.granularity = Granularity::kPerToken;
  t.dynamic = Dynamic::kDynamic;
  return t;
}

const OnlineQuantizerRegistrar kWeightOnly({kIntChannelFamily, SourceLayout::kCtPackQuantized,
                                            AcceptsWeightOnly, QuantizePacked, PackedHeaders},
                                           {Served(OnlineScheme(Int8ChannelWeight(),
                                                                std::nullopt))});
const OnlineQuantizerRegistrar kDynamicTokens({kIntChannelFamily, SourceLayout::kCtNaiveQuantized,
                                               AcceptsDynamicTokens, QuantizeSigned, SignedHeaders},
                                              {Served(OnlineScheme(Int8ChannelWeight(),
                                                                   Int8TokenInput()))});

}  // namespace
}  // namespace quantpath::specs_internal
