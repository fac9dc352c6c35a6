// The kind int4_per_token: X rounded per row to symmetric int4 codes at run time, as ModelSlim's
// W4A4_DYNAMIC kernels take it (w4a_family.h: s = absmax / 7, q = clamp(round(x · 7 / absmax),
// −8, 7), X' = q · s, in fp32). Asymmetric int4 inputs are not this kind's.
#include "quantpath/activation_kinds.h"
#include "src/specs/activations/activation_rounding.h"
#include "src/specs/reference/int4_reference.h"

namespace quantpath {
namespace {

class Int4PerToken final : public ActivationKindRow {
 public:
  std::string_view name() const override { return "int4_per_token"; }
  int priority() const override { return 10; }
  bool Claims(const TensorQuant& in) const override {
    return in.dtype == QDType::kINT4 && in.dynamic == Dynamic::kDynamic && in.symmetric &&
           (in.granularity == Granularity::kPerToken || in.granularity == Granularity::kPerChannel);
  }
  ActivationQuant Quant(const TensorQuant& in) const override {
    return ActivationFields(in, ActMode::kDynamicPerToken);
  }
  bool Describes(const ActivationQuant& act) const override {
    return act.SymmetricPerToken(QDType::kINT4);
  }
  void RoundFloats(std::vector<float>* x, int64_t m, int64_t k, const ActivationQuant&,
                   const LinearParams&) const override {
    reference::QuantizeIntRows(x, m, k, 7);
  }
  std::vector<double> RoundReference(std::span<const double> x, int64_t m, int64_t k,
                                     const ActivationQuant&, std::optional<double>,
                                     std::optional<double>) const override {
    return reference::QuantizeInt4Reference(x, m, k);
  }
};

const ActivationKindRegistrar kRegister(std::make_unique<Int4PerToken>());

}  // namespace
}  // namespace quantpath
