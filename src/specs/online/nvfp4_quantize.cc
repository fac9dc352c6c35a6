// NVFP4 weights quantized at load (w4a16-nvfp4), written as compressed-tensors'
// nvfp4-pack-quantized layout (`weight_packed`, `weight_scale` E4M3, `weight_global_scale`, which
// divides) for nvfp4_block_16_linear.
//
// The rule of compressed-tensors 0.19 (calculate_qparams with its global scale, _quantize) on the
// fp32 weights, as llmcompressor's observers feed it for a fused layer:
//   global  g = 448 · 6 / amax over every leg of the layer, in fp32 (generate_gparam; the fused
//           legs share one, as llmcompressor's fusion of q/k/v and gate/up makes it, and 1 where
//           the quotient is not finite);
//   block   per row and 16 columns, s = e4m3(g · (amax_block / 6)) rounded to nearest even and
//           saturating, a zero taking compressed-tensors' E4M3 epsilon 0.125;
//   weight  q = e2m1(w / (s / g)), nearest even, saturating at ±6 (cast_to_fp4), a negative
//           value that rounds to zero keeping its sign bit (pack_fp4_to_uint8 reads signbit).
// W4A4 (NVFP4 activations) is refused: its activation divisor is a calibrated global scale of X,
// which quantizing weights at load cannot measure (vLLM's nvfp4_per_token and SGLang's
// nvfp4_online quantize MoE experts only, with per-token activation scales).
#include <algorithm>
#include <cmath>

#include "quantpath/numeric.h"
#include "src/specs/nvfp4_family.h"
#include "src/specs/online/online_quantizer.h"

namespace quantpath::specs_internal {
namespace {

// compressed-tensors' _get_dtype_eps for an E4M3 scale, which replaces a zero block scale.
constexpr float kZeroBlockScale = 0.125f;

float GlobalScaleOf(float amax) {
  const float g = 448.0f * kE2M1Max / amax;
  return std::isfinite(g) ? g : 1.0f;
}

Result<QuantizedLayer> QuantizeNvfp4(const SpecKey& key, const DenseLayer& layer) {
  float amax = 0.0f;
  for (const ParamTensor& leg : layer.legs) {
    amax = std::max(amax, AbsMax(leg.data<float>(), leg.elements()));
  }
  const float g = GlobalScaleOf(amax);
  const Nvfp4LinearLayout layout{key.group};
  const int64_t cols = layer.cols;
  const int64_t row_bytes = layout.WeightRowBytes(cols);
  const int64_t blocks = layout.ScaleCols(cols);
  QuantizedLayer out;
  for (size_t l = 0; l < layer.legs.size(); ++l) {
    const ParamTensor& leg = layer.legs[l];
    const int64_t rows = leg.rows();
    std::vector<uint8_t> codes(static_cast<size_t>(rows * row_bytes), 0);
    std::vector<uint8_t> scales(static_cast<size_t>(rows * blocks));
    for (int64_t r = 0; r < rows; ++r) {
      const float* w = leg.data<float>() + r * cols;
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t c0 = b * key.group;
        const int64_t n = std::min(key.group, cols - c0);
        uint8_t s = FloatToFp8E4M3(g * (AbsMax(w + c0, n) / kE2M1Max));
        if (Fp8E4M3ToFloat(s) == 0.0f) s = FloatToFp8E4M3(kZeroBlockScale);
        scales[r * blocks + b] = s;
        const float step = Fp8E4M3ToFloat(s) / g;
        for (int64_t c = c0; c < c0 + n; ++c) {
          const uint8_t q = FloatToE2M1(w[c] / step);
          PutE2M1(codes.data() + r * row_bytes, c, q);
          out.error.Add(w[c], static_cast<double>(E2M1ToFloat(q)) * step);
        }
      }
    }
    const std::string& prefix = layer.prefixes[l];
    out.tensors.push_back(
        OwnedTensorOf<uint8_t>(prefix, ".weight_packed", StDtype::kU8, {rows, row_bytes}, codes));
    out.tensors.push_back(OwnedTensorOf<uint8_t>(prefix, ".weight_scale", StDtype::kF8E4M3,
                                                 {rows, blocks}, scales));
    const float global[] = {g};
    out.tensors.push_back(
        OwnedTensorOf<float>(prefix, ".weight_global_scale", StDtype::kF32, {1}, global));
  }
  return out;
}

// Weight-only (W4A16): NVFP4 activations need a calibrated input scale.
bool Accepts(const SpecKey& key, const ActivationQuant& act) {
  return key.group == kNvfp4Group && act.mode == ActMode::kNone;
}

TensorQuant Nvfp4(Dynamic dynamic) {
  TensorQuant t;
  t.dtype = QDType::kNVFP4;
  t.granularity = Granularity::kTensorGroup;
  t.group_size = kNvfp4Group;
  t.micro_scaled = true;
  t.dynamic = dynamic;
  return t;
}

const OnlineQuantizerRegistrar kRegister(
    {kNvfp4Family, SourceLayout::kCtNvfp4PackQuantized, Accepts, QuantizeNvfp4},
    {Served(OnlineScheme(Nvfp4(Dynamic::kStatic), std::nullopt)),
     Refused(OnlineScheme(Nvfp4(Dynamic::kStatic), Nvfp4(Dynamic::kLocal)),
             "NVFP4 activations are scaled by a global scale that calibration measures on X, "
             "which quantizing weights at load cannot; w4a16-nvfp4 quantizes the weights alone")});

}  // namespace
}  // namespace quantpath::specs_internal
