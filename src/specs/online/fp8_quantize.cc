// fp8 e4m3 weights quantized at load, written as the kFp8Scale layout (`weight` F8_E4M3 and a
// `weight_scale` that multiplies) for fp8_per_tensor, fp8_per_channel and fp8_block_<bn>_<bk>.
//
// The scale of a group of weights is s = amax / 448 in fp32 (an all-zero group takes fp32's
// epsilon, as compressed-tensors' calculate_qparams replaces a zero scale), and each weight is
// e4m3(w / s), rounded to nearest even and saturating at ±448 (fp8_family.h):
//   per tensor   one scale for the whole fused layer: vLLM's Fp8LinearMethod quantizes the fused
//                weight once (`ops.scaled_fp8_quant(layer.weight, scale=None)` in
//                process_weights_after_loading, recorded code; vLLM 0.33's
//                Fp8PerTensorOnlineLinearMethod the same), so every leg stores that scale.
//                scaled_fp8_quant multiplies by the reciprocal (`x * (1.0f / scale)`, csrc
//                quantization/w8a8/fp8/common.cu), so q = e4m3(w · fp32(1 / s)) here.
//   per channel  one scale per output row, q = e4m3(w / s) with a true division (vLLM 0.33's
//                _fp8_quant_per_channel, SGLang's per_token_group_quant_fp8 over the row,
//                compressed-tensors' channel strategy).
//   block        one scale per bn × bk block of each leg, clipped at the leg's last row and at K,
//                q = e4m3(w / s) (compressed-tensors' block strategy on each module, which is
//                what block checkpoints store: one grid per leg). vLLM 0.33's fp8_per_block
//                quantizes the fused weight instead (per_block_cast_to_fp8, multiplying by
//                1 / s), so a block of rows that straddles two legs shares one scale there.
// The amax is the whole layer's (of every rank), so a tensor-parallel rank holds its slice of the
// unsplit layer's codes, as vLLM 0.33's online methods make it (amax_for_tp_weight_quant
// all-reduces the amax); the recorded vLLM and SGLang quantize each rank's shard on its own.
#include <algorithm>
#include <cfloat>

#include "quantpath/numeric.h"
#include "src/specs/fp8_family.h"
#include "src/specs/online/online_quantizer.h"

namespace quantpath::specs_internal {
namespace {

constexpr float kFp8Max = 448.0f;

float ScaleOf(float amax) {
  const float scale = amax / kFp8Max;
  return scale == 0.0f ? FLT_EPSILON : scale;
}

// The scales of one leg [rows, cols] for `key`, in its checkpoint shape, and the leg's codes.
struct Fp8Leg {
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  std::vector<int64_t> scale_shape;
};

// Quantizes the rows × cols block at `w` (rows `stride` apart) with `scale`: w · (1 / scale) where
// `reciprocal` (scaled_fp8_quant), else w / scale.
void QuantizeBlock(const float* w, int64_t rows, int64_t cols, int64_t stride, float scale,
                   bool reciprocal, uint8_t* codes, QuantizationError* error) {
  const float inverse = 1.0f / scale;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float v = w[r * stride + c];
      const uint8_t q = FloatToFp8E4M3(reciprocal ? v * inverse : v / scale);
      codes[r * stride + c] = q;
      error->Add(v, static_cast<double>(Fp8E4M3ToFloat(q)) * scale);
    }
  }
}

Fp8Leg QuantizeLeg(const SpecKey& key, const ParamTensor& leg, float tensor_scale,
                   QuantizationError* error) {
  const int64_t rows = leg.rows();
  const int64_t cols = leg.cols();
  const float* w = leg.data<float>();
  Fp8Leg out;
  out.codes.resize(static_cast<size_t>(rows * cols));
  if (key.family == kFp8PerTensorFamily) {
    ForEachRowInParallel(rows, error, [&](int64_t r, QuantizationError* e) {
      QuantizeBlock(w + r * cols, 1, cols, cols, tensor_scale, true, out.codes.data() + r * cols,
                    e);
    });
    out.scales = {tensor_scale};
    out.scale_shape = {1};
    return out;
  }
  const int64_t bn = key.family == kFp8BlockFamily ? key.block[0] : 1;
  const int64_t bk = key.family == kFp8BlockFamily ? key.block[1] : cols;
  const Fp8BlockLayout grid{bn, bk};
  const int64_t scale_cols = grid.ScaleCols(cols);
  out.scales.resize(static_cast<size_t>(grid.ScaleRows(rows) * scale_cols));
  ForEachRowInParallel(grid.ScaleRows(rows), error, [&](int64_t i, QuantizationError* e) {
    for (int64_t j = 0; j < scale_cols; ++j) {
      const int64_t r0 = i * bn;
      const int64_t c0 = j * bk;
      const int64_t block_rows = std::min(bn, rows - r0);
      const int64_t block_cols = std::min(bk, cols - c0);
      float amax = 0.0f;
      for (int64_t r = 0; r < block_rows; ++r) {
        amax = std::max(amax, AbsMax(w + (r0 + r) * cols + c0, block_cols));
      }
      const float scale = ScaleOf(amax);
      QuantizeBlock(w + r0 * cols + c0, block_rows, block_cols, cols, scale, false,
                    out.codes.data() + r0 * cols + c0, e);
      out.scales[i * scale_cols + j] = scale;
    }
  });
  out.scale_shape = key.family == kFp8BlockFamily
                        ? std::vector<int64_t>{grid.ScaleRows(rows), grid.ScaleCols(cols)}
                        : std::vector<int64_t>{rows, 1};
  return out;
}

Result<QuantizedLayer> QuantizeFp8(const SpecKey& key, const DenseLayer& layer) {
  const float tensor_scale = ScaleOf(layer.AbsMax());
  QuantizedLayer out;
  for (size_t l = 0; l < layer.legs.size(); ++l) {
    const ParamTensor& leg = layer.legs[l];
    const std::string& prefix = layer.prefixes[l];
    Fp8Leg q = QuantizeLeg(key, leg, tensor_scale, &out.error);
    out.tensors.push_back(OwnedTensorOf<uint8_t>(prefix, ".weight", StDtype::kF8E4M3,
                                                 {leg.rows(), leg.cols()}, q.codes));
    out.tensors.push_back(OwnedTensorOf<float>(prefix, ".weight_scale", StDtype::kF32,
                                               std::move(q.scale_shape), q.scales));
  }
  return out;
}

std::vector<TensorHeader> Fp8Headers(const SpecKey& key, const std::string& prefix, int64_t rows,
                                     int64_t cols, QDType) {
  std::vector<int64_t> scale_shape{1};
  if (key.family == kFp8PerChannelFamily) scale_shape = {rows, 1};
  if (key.family == kFp8BlockFamily) {
    const Fp8BlockLayout grid{key.block[0], key.block[1]};
    scale_shape = {grid.ScaleRows(rows), grid.ScaleCols(cols)};
  }
  return {{prefix + ".weight", StDtype::kF8E4M3, {rows, cols}},
          {prefix + ".weight_scale", StDtype::kF32, std::move(scale_shape)}};
}

// Dynamic activations only: a static input scale needs calibration.
bool Accepts(const SpecKey&, const ActivationQuant& act) {
  return act.mode != ActMode::kStaticPerTensor;
}

TensorQuant Fp8Weight(Granularity granularity) {
  TensorQuant w;
  w.dtype = QDType::kFP8E4M3;
  w.granularity = granularity;
  if (granularity == Granularity::kBlock) w.block_shape = std::array<int64_t, 2>{128, 128};
  return w;
}

// fp8 activations, dynamic: per token, or per 1 × 128 group for block weights (the block
// kernels' grouping, as the fp8 importer plans it).
TensorQuant Fp8DynamicInput(Granularity weight) {
  TensorQuant in;
  in.dtype = QDType::kFP8E4M3;
  in.dynamic = Dynamic::kDynamic;
  in.granularity = weight == Granularity::kBlock ? Granularity::kGroup : Granularity::kPerToken;
  if (weight == Granularity::kBlock) in.group_size = 128;
  return in;
}

OnlineTarget Target(Granularity granularity) {
  return Served(OnlineScheme(Fp8Weight(granularity), Fp8DynamicInput(granularity)));
}

// w8a8-fp8-tensor-static, which vLLM's and SGLang's online fp8 do not offer either.
OnlineTarget StaticTarget() {
  TensorQuant in;
  in.dtype = QDType::kFP8E4M3;
  in.granularity = Granularity::kPerTensor;
  return Refused(OnlineScheme(Fp8Weight(Granularity::kPerTensor), in),
                 "a static input scale is measured on X by calibration, which quantizing weights "
                 "at load cannot; w8a8-fp8-tensor-dyn scales X at run time");
}

const OnlineQuantizerRegistrar kPerTensor({kFp8PerTensorFamily, SourceLayout::kFp8Scale, Accepts,
                                           QuantizeFp8, Fp8Headers},
                                          {Target(Granularity::kPerTensor), StaticTarget()});
const OnlineQuantizerRegistrar kPerChannel({kFp8PerChannelFamily, SourceLayout::kFp8Scale, Accepts,
                                            QuantizeFp8, Fp8Headers},
                                           {Target(Granularity::kPerChannel)});
const OnlineQuantizerRegistrar kBlock({kFp8BlockFamily, SourceLayout::kFp8Scale, Accepts,
                                       QuantizeFp8, Fp8Headers},
                                      {Target(Granularity::kBlock)});

}  // namespace
}  // namespace quantpath::specs_internal
