// NVFP4 weights quantized at load (w4a16-nvfp4, w4a4-nvfp4), written as compressed-tensors'
// nvfp4-pack-quantized layout (`weight_packed`, `weight_scale` E4M3, `weight_global_scale`, which
// divides) for nvfp4_block_16_linear.
//
// The rule of compressed-tensors 0.19 (calculate_qparams with its global scale, _quantize) on the
// fp32 weights, as llmcompressor's observers feed it for a fused layer:
//   global  g = Nvfp4GlobalFor(amax over every leg of the layer) (generate_gparam; the fused legs
//           share one, as llmcompressor's fusion of q/k/v and gate/up makes it);
//   block   per row and 16 columns, s = e4m3(g · (amax_block / 6)) rounded to nearest even and
//           saturating, a zero taking compressed-tensors' E4M3 epsilon 0.125;
//   weight  q = e2m1(w / (s / g)), nearest even, saturating at ±6 (cast_to_fp4), a negative
//           value that rounds to zero keeping its sign bit (pack_fp4_to_uint8 reads signbit).
// W4A4: no calibration measured X's global, so the kernels take each row's own at run time
// (the activation kind nvfp4_per_token_global, nvfp4_family.h) and no input global is written.

#include "quantpath/numeric.h"
#include "src/specs/nvfp4_family.h"
#include "src/specs/online/online_quantizer.h"

namespace quantpath::specs_internal {
namespace {

// compressed-tensors' _get_dtype_eps for an E4M3 scale, which replaces a zero block scale.
constexpr float kZeroBlockScale = 0.125f;

Result<QuantizedLayer> QuantizeNvfp4(const SpecKey& key, const DenseLayer& layer) {
  const float g = Nvfp4GlobalFor(layer.AbsMax());
  QuantizedLayer out;
  for (size_t l = 0; l < layer.legs.size(); ++l) {
    const std::string& prefix = layer.prefixes[l];
    WriteE2M1Leg(
        layer.legs[l], prefix, key.group, StDtype::kF8E4M3,
        [g](float amax) {
          const uint8_t s = FloatToFp8E4M3(g * (amax / kE2M1Max));
          return Fp8E4M3ToFloat(s) == 0.0f ? FloatToFp8E4M3(kZeroBlockScale) : s;
        },
        [g](uint8_t s) { return Fp8E4M3ToFloat(s) / g; }, &out);
    const float global[] = {g};
    out.tensors.push_back(
        OwnedTensorOf<float>(prefix, ".weight_global_scale", StDtype::kF32, {1}, global));
  }
  return out;
}

std::vector<TensorHeader> Nvfp4Headers(const SpecKey& key, const std::string& prefix, int64_t rows,
                                       int64_t cols, QDType) {
  std::vector<TensorHeader> headers =
      E2M1LegHeaders(prefix, rows, cols, key.group, StDtype::kF8E4M3);
  headers.push_back({prefix + ".weight_global_scale", StDtype::kF32, {1}});
  return headers;
}

// Weight-only (W4A16), or NVFP4 activations with each row's own global (W4A4).
bool Accepts(const SpecKey& key, const ActivationQuant& act) {
  return key.group == kNvfp4Group &&
         (act.mode == ActMode::kNone || act.kind == kNvfp4PerTokenGlobal);
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

// W4A4's input is dynamic as a whole, its global too (the kind nvfp4_per_token_global).
const OnlineQuantizerRegistrar kRegister(
    {kNvfp4Family, SourceLayout::kCtNvfp4PackQuantized, Accepts, QuantizeNvfp4, Nvfp4Headers},
    {Served(OnlineScheme(Nvfp4(Dynamic::kStatic), std::nullopt)),
     Served(OnlineScheme(Nvfp4(Dynamic::kStatic), Nvfp4(Dynamic::kDynamic)))});

}  // namespace
}  // namespace quantpath::specs_internal
