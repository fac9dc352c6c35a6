// The kind nvfp4_local_global: NVFP4 activations against the checkpoint's input global (W4A4,
// compressed-tensors' "local" tensor-group inputs, ModelOpt's NVFP4): per row and group of X,
// scales at run time against the layer's input divisor D (nvfp4_family.h's rule), which the spec
// keeps in the input slot. The fused legs' stored globals make one divisor as the engines do
// (Nvfp4InputDivisor), and an MoE projection shares one over the experts
// (Nvfp4SharedExpertInput).
#include "fmt/format.h"
#include "quantpath/activation_kinds.h"
#include "src/specs/activations/activation_rounding.h"
#include "src/specs/nvfp4_family.h"
#include "src/specs/reference/nvfp4_reference.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace {

// The stored NVFP4 input global of the leg `prefix` (one positive value).
Result<float> ReadInputGlobal(const Checkpoint& checkpoint, SourceLayout layout,
                              std::string_view layer, const std::string& prefix) {
  QP_ASSIGN_OR_RETURN(
      const std::string name,
      reference::SlotTensorName(layout, Slot::kInputScale, layer, prefix, "input global scale"));
  TensorInfo info;
  QP_ASSIGN_OR_RETURN(std::vector<double> s,
                      reference::ReadDoubles(checkpoint, layer, name, &info));
  if (s.size() != 1 || !(s[0] > 0.0)) {
    return InvalidInput(fmt::format("{}: tensor {} is not one positive value", layer, info.name));
  }
  return static_cast<float>(s[0]);
}

class Nvfp4LocalGlobal final : public ActivationKindRow {
 public:
  std::string_view name() const override { return "nvfp4_local_global"; }
  int priority() const override { return 10; }
  bool Claims(const TensorQuant& in) const override {
    return in.dtype == QDType::kNVFP4 && in.dynamic == Dynamic::kLocal &&
           in.granularity == Granularity::kTensorGroup && in.group_size && *in.group_size > 0;
  }
  ActivationQuant Quant(const TensorQuant& in) const override {
    ActivationQuant act;
    act.mode = ActMode::kDynamicGroup;
    act.dtype = QDType::kNVFP4;
    act.group_size = *in.group_size;
    return act;
  }
  bool Describes(const ActivationQuant& act) const override {
    return act.mode == ActMode::kDynamicGroup && act.dtype == QDType::kNVFP4;
  }
  void RoundFloats(std::vector<float>* x, int64_t m, int64_t k, const ActivationQuant& act,
                   const LinearParams& params) const override {
    reference::QuantizeNvfp4Activations(x, m, k, act.group_size,
                                        params.tensor(Slot::kInputScale).data<float>()[0]);
  }
  std::vector<double> RoundReference(std::span<const double> x, int64_t m, int64_t k,
                                     const ActivationQuant& act, std::optional<double> static_scale,
                                     std::optional<double>) const override {
    return reference::QuantizeNvfp4Reference(x, m, k, act.group_size, static_scale.value_or(1.0));
  }
  std::vector<Slot> StaticSlots(const ActivationQuant&) const override {
    return {Slot::kInputScale};  // the input divisor
  }
  Status ReadReferenceInputs(const Checkpoint& checkpoint, const QuantScheme& scheme,
                             std::string_view layer_name,
                             const std::vector<std::string>& leg_prefixes,
                             ReferenceLayer* layer) const override {
    const SourceLayout layout = scheme.weight.load.layout;
    std::vector<float> stored;
    for (const std::string& prefix : leg_prefixes) {
      QP_ASSIGN_OR_RETURN(const float global,
                          ReadInputGlobal(checkpoint, layout, layer_name, prefix));
      stored.push_back(global);
    }
    layer->input_scale = Nvfp4InputDivisor(layout, stored);
    return {};
  }
  Status ShareExpertInputs(const Checkpoint& checkpoint, const QuantScheme& scheme,
                           std::string_view layer_name, const std::vector<std::string>& input_peers,
                           ReferenceLayer* layer) const override {
    const SourceLayout layout = scheme.weight.load.layout;
    std::vector<float> stored;
    for (const std::string& peer : input_peers) {
      QP_ASSIGN_OR_RETURN(const float global,
                          ReadInputGlobal(checkpoint, layout, layer_name, peer));
      stored.push_back(global);
    }
    if (stored.empty()) {
      return InvalidInput(
          fmt::format("{}: no experts to share the NVFP4 input global of", layer_name));
    }
    const float shared = Nvfp4SharedExpertInput(layout, stored);
    layer->input_scale = Nvfp4InputDivisor(layout, std::span<const float>(&shared, 1));
    return {};
  }
};

const ActivationKindRegistrar kRegister(std::make_unique<Nvfp4LocalGlobal>());

}  // namespace
}  // namespace quantpath
