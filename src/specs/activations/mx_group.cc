// The kind mx_group: MXFP4 or MXFP8 activations (W4A4_MXFP4, W4A8_MXFP, W8A8_MXFP8,
// compressed-tensors MXFP4 / MXFP8), per row and group of X with one E8M0 scale each, computed at
// run time (mx_family.h's rule: OCP MX v1.0's conversion of a vector).
#include "quantpath/activation_kinds.h"
#include "src/specs/activations/activation_rounding.h"
#include "src/specs/reference/mx_reference.h"

namespace quantpath {
namespace {

bool IsMx(QDType dtype) { return dtype == QDType::kMXFP4 || dtype == QDType::kMXFP8; }

class MxGroup final : public ActivationKindRow {
 public:
  std::string_view name() const override { return "mx_group"; }
  int priority() const override { return 10; }
  bool Claims(const TensorQuant& in) const override {
    return IsMx(in.dtype) && in.dynamic == Dynamic::kDynamic && XGroupOf(in).has_value();
  }
  ActivationQuant Quant(const TensorQuant& in) const override {
    return ActivationFields(in, ActMode::kDynamicGroup);
  }
  bool Describes(const ActivationQuant& act) const override {
    return act.mode == ActMode::kDynamicGroup && IsMx(act.dtype);
  }
  void RoundFloats(std::vector<float>* x, int64_t m, int64_t k, const ActivationQuant& act,
                   const LinearParams&) const override {
    reference::QuantizeMxActivations(x, m, k, act.group_size, act.dtype);
  }
  std::vector<double> RoundReference(std::span<const double> x, int64_t m, int64_t k,
                                     const ActivationQuant& act, std::optional<double>,
                                     std::optional<double>) const override {
    return reference::QuantizeMxReference(x, m, k, act.group_size, act.dtype);
  }
};

const ActivationKindRegistrar kRegister(std::make_unique<MxGroup>());

}  // namespace
}  // namespace quantpath
