// The kind `none`: X stays in high precision (weight-only quantization, bf16 layers). No scheme
// input is this kind's; a scheme without one is (ActivationQuantFor).
#include "quantpath/activation_kinds.h"

namespace quantpath {
namespace {

class NoActivationQuant final : public ActivationKindRow {
 public:
  std::string_view name() const override { return "none"; }
  int priority() const override { return 0; }
  bool Claims(const TensorQuant&) const override { return false; }
  ActivationQuant Quant(const TensorQuant&) const override { return {}; }
  bool Describes(const ActivationQuant& act) const override { return act.mode == ActMode::kNone; }
  void RoundFloats(std::vector<float>*, int64_t, int64_t, const ActivationQuant&,
                   const LinearParams&) const override {}
  std::vector<double> RoundReference(std::span<const double> x, int64_t, int64_t,
                                     const ActivationQuant&, std::optional<double>,
                                     std::optional<double>) const override {
    return {x.begin(), x.end()};
  }
};

const ActivationKindRegistrar kRegister(std::make_unique<NoActivationQuant>());

}  // namespace
}  // namespace quantpath
