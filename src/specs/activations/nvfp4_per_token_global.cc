// The kind nvfp4_per_token_global: NVFP4 activations ("dynamic" tensor-group inputs: W4A4
// quantized at load, which no calibration gave an input global) whose rows are each divided by
// their own global, Nvfp4GlobalFor(max |x_row|), then rounded per group as against a calibrated one
// (nvfp4_family.h's rule). It reads no static input.
#include "fmt/format.h"
#include "quantpath/activation_kinds.h"
#include "src/specs/activations/activation_rounding.h"
#include "src/specs/nvfp4_family.h"
#include "src/specs/reference/nvfp4_reference.h"

namespace quantpath {
namespace {

class Nvfp4PerTokenGlobal final : public ActivationKindRow {
 public:
  std::string_view name() const override { return "nvfp4_per_token_global"; }
  int priority() const override { return 10; }
  bool Claims(const TensorQuant& in) const override {
    return in.dtype == QDType::kNVFP4 && in.dynamic == Dynamic::kDynamic &&
           in.granularity == Granularity::kTensorGroup && in.group_size && *in.group_size > 0;
  }
  ActivationQuant Quant(const TensorQuant& in) const override {
    ActivationQuant act;
    act.mode = ActMode::kDynamicGroup;
    act.dtype = QDType::kNVFP4;
    act.group_size = *in.group_size;
    act.kind = kNvfp4PerTokenGlobal;
    return act;
  }
  std::string Text(const ActivationQuant& act) const override {
    return fmt::format("{}, per-token global", ActivationFieldsText(act));
  }
  void RoundFloats(std::vector<float>* x, int64_t m, int64_t k, const ActivationQuant& act,
                   const LinearParams&) const override {
    reference::QuantizeNvfp4Activations(x, m, k, act.group_size, std::nullopt);
  }
  std::vector<double> RoundReference(std::span<const double> x, int64_t m, int64_t k,
                                     const ActivationQuant& act, std::optional<double>,
                                     std::optional<double>) const override {
    return reference::QuantizeNvfp4Reference(x, m, k, act.group_size, std::nullopt);
  }
};

const ActivationKindRegistrar kRegister(std::make_unique<Nvfp4PerTokenGlobal>());

}  // namespace
}  // namespace quantpath
