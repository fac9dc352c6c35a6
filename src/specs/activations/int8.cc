// The int8 kinds, as the W8A8 kernels quantize X (w8a8_family.h):
//   int8_per_token  dynamic, one scale per row of X, with a zero point per row when asymmetric;
//   int8_static     the checkpoint's input scale (and zero point, asymmetric), one grid for all
//                   the legs (CombineStaticInputs; ModelSlim's legs share theirs).
// Rounded as the kernels do it, their fp32 operations reproduced exactly in the fp64 reference (a
// double product or quotient of two floats rounds to the fp32 result):
//   dynamic per token  absmax = max(max |x|, kActAbsMaxFloor), s = fp32(absmax / 127),
//                      q = clamp(round(fp32(x · fp32(127 / absmax))), −128, 127), X' = q · s;
//   dynamic asymmetric s = fp32(max(max − min, kActAbsMaxFloor) / 255), z = round(fp32(−128 −
//                      fp32(min / s))), q = clamp(round(fp32(x / s)) + z, −128, 127),
//                      X' = (q − z) · s (vLLM's per-token zero point, azp; NaN left out of
//                      min and max, and a constant row's range stretched to include 0);
//   static             q = clamp(round(fp32(x / s)) + z, −128, 127), X' = (q − z) · s;
// round = nearest, ties to even (vLLM's scaled_int8_quant and torch.round; SGLang's Triton
// per-token quantizer rounds ties away from zero, which differs only on exact ties).
#include <algorithm>

#include "quantpath/activation_kinds.h"
#include "src/specs/activations/activation_rounding.h"
#include "src/specs/reference/int8_reference.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace {

// X rounded as the fp64 reference does, to fp32: the fp32 rule's own values, since X' = (q − z) ·
// s is one fp32 product there. No kernel takes these kinds' X in fp32 (the W8A8 kernels quantize
// it to codes, int8_activations.h), so no faster copy of the rule is kept for them.
void RoundThroughReference(const ActivationKindRow& kind, std::vector<float>* x, int64_t m,
                           int64_t k, const ActivationQuant& act, std::optional<double> scale,
                           std::optional<double> zero_point) {
  const std::vector<double> xd(x->begin(), x->end());
  const std::vector<double> q = kind.RoundReference(xd, m, k, act, scale, zero_point);
  std::transform(q.begin(), q.end(), x->begin(), [](double v) { return static_cast<float>(v); });
}

class Int8PerToken final : public ActivationKindRow {
 public:
  std::string_view name() const override { return "int8_per_token"; }
  int priority() const override { return 10; }
  bool Claims(const TensorQuant& in) const override {
    return in.dtype == QDType::kINT8 && in.dynamic == Dynamic::kDynamic &&
           (in.granularity == Granularity::kPerToken || in.granularity == Granularity::kPerChannel);
  }
  ActivationQuant Quant(const TensorQuant& in) const override {
    return ActivationFields(in, ActMode::kDynamicPerToken);
  }
  bool Describes(const ActivationQuant& act) const override {
    return act.mode == ActMode::kDynamicPerToken && act.dtype == QDType::kINT8;
  }
  // Symmetric: as the 4-bit float specs' kernels take X with --int8-activations.
  void RoundFloats(std::vector<float>* x, int64_t m, int64_t k, const ActivationQuant& act,
                   const LinearParams&) const override {
    if (act.symmetric) {
      reference::QuantizeIntRows(x, m, k, 127);
    } else {
      RoundThroughReference(*this, x, m, k, act, std::nullopt, std::nullopt);
    }
  }
  std::vector<double> RoundReference(std::span<const double> x, int64_t m, int64_t k,
                                     const ActivationQuant& act, std::optional<double>,
                                     std::optional<double>) const override {
    return reference::QuantizeInt8Reference(x, m, k, act, 1.0, 0.0);
  }
};

class Int8Static final : public ActivationKindRow {
 public:
  std::string_view name() const override { return "int8_static"; }
  int priority() const override { return 10; }
  bool Claims(const TensorQuant& in) const override {
    return in.dtype == QDType::kINT8 && in.dynamic == Dynamic::kStatic &&
           in.granularity == Granularity::kPerTensor;
  }
  ActivationQuant Quant(const TensorQuant& in) const override {
    return ActivationFields(in, ActMode::kStaticPerTensor);
  }
  bool Describes(const ActivationQuant& act) const override {
    return act.mode == ActMode::kStaticPerTensor && act.dtype == QDType::kINT8;
  }
  void RoundFloats(std::vector<float>* x, int64_t m, int64_t k, const ActivationQuant& act,
                   const LinearParams& params) const override {
    const ParamTensor& offset = params.tensor(Slot::kInputOffset);
    RoundThroughReference(*this, x, m, k, act, params.tensor(Slot::kInputScale).data<float>()[0],
                          offset.empty() ? 0 : offset.data<int32_t>()[0]);
  }
  std::vector<double> RoundReference(std::span<const double> x, int64_t m, int64_t k,
                                     const ActivationQuant& act, std::optional<double> static_scale,
                                     std::optional<double> static_zero_point) const override {
    return reference::QuantizeInt8Reference(x, m, k, act, static_scale.value_or(1.0),
                                            static_zero_point.value_or(0.0));
  }
  std::vector<Slot> StaticSlots(const ActivationQuant& act) const override {
    if (act.symmetric) return {Slot::kInputScale};
    return {Slot::kInputScale, Slot::kInputOffset};
  }
  Status ReadReferenceInputs(const Checkpoint& checkpoint, const QuantScheme& scheme,
                             std::string_view layer_name,
                             const std::vector<std::string>& leg_prefixes,
                             ReferenceLayer* layer) const override {
    const SourceLayout layout = scheme.weight.load.layout;
    std::vector<std::string> scales;
    std::vector<std::string> zeros;  // empty names for symmetric inputs, which have none
    for (const std::string& prefix : leg_prefixes) {
      QP_ASSIGN_OR_RETURN(std::string scale,
                          reference::SlotTensorName(layout, Slot::kInputScale, layer_name, prefix,
                                                    "static input scale"));
      scales.push_back(std::move(scale));
      if (scheme.input->symmetric) {
        zeros.emplace_back();
        continue;
      }
      QP_ASSIGN_OR_RETURN(std::string zero,
                          reference::SlotTensorName(layout, Slot::kInputOffset, layer_name, prefix,
                                                    "input zero point"));
      zeros.push_back(std::move(zero));
    }
    return reference::ReadStaticInt8Inputs(checkpoint, scheme, layer_name, scales, zeros, layer);
  }
};

const ActivationKindRegistrar kPerToken(std::make_unique<Int8PerToken>());
const ActivationKindRegistrar kStatic(std::make_unique<Int8Static>());

}  // namespace
}  // namespace quantpath
