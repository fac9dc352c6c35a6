// Bf16Spec: unquantized weights (spec_id "bf16"), and the family's row.
//
// Layout (DenseLayout, bf16_family.h): W [N, K] row-major in the request's params dtype — bf16,
// fp16 or fp32 — no scales. Source layout kDense: `<prefix>.weight` per leg in any floating dtype
// of 16 or 32 bits; a dtype other than the params dtype is converted with round-to-nearest-even.
// A leg stored in fp8 (or any quantized dtype) is an error: the layer was decided unquantized.
// Non-goals: quantizing at load time (that is a quantized spec's job).
#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/bf16_family.h"
#include "src/specs/spec_common.h"
#include "src/specs/spec_id_grammar.h"

namespace quantpath {
namespace {

using specs_internal::ComputeGeometry;
using specs_internal::CopyRows;
using specs_internal::ExpectShape;
using specs_internal::FindSlotTensor;
using specs_internal::ShardGeometry;

class Bf16Spec final : public WeightSpec {
 public:
  explicit Bf16Spec(const LoadFacts& facts) : facts_(facts) {}

  const SpecKey& key() const override { return kBf16Key; }
  const ActivationQuant& activation() const override { return activation_; }
  const LoadFacts& facts() const override { return facts_; }

  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry geometry, ComputeGeometry(request));
    LinearParams params = specs_internal::NewParams(request, geometry, kBf16Key);
    params.tensor(Slot::kWeight) = ParamTensor(request.params_dtype, geometry.rows, geometry.cols);
    return params;
  }

  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry geometry, ComputeGeometry(request));
    return DenseLayout{Info(request.params_dtype).bits}.BytesFor(geometry.rows, geometry.cols) +
           specs_internal::BiasBytes(request, geometry);
  }

  Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
              LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLegPrefixes(*params, leg_prefixes));
    const std::string& layer = params->request.layer;
    QP_RETURN_IF_ERROR(
        specs_internal::ExpectLayout(layer, kBf16Key, facts_.layout, {SourceLayout::kDense}));
    QP_ASSIGN_OR_RETURN(ShardGeometry geometry, ComputeGeometry(params->request));
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      QP_ASSIGN_OR_RETURN(TensorView view, FindSlotTensor(checkpoint, layer, leg_prefixes[leg],
                                                          facts_.layout, Slot::kWeight));
      if (!IsUnquantized(view.info->dtype)) {
        return InvalidInput(fmt::format(
            "{}: tensor {} is stored as {}, but the layer is unquantized (expected BF16, F16 or "
            "F32)",
            layer, view.info->name, StDtypeName(view.info->dtype)));
      }
      QP_RETURN_IF_ERROR(
          ExpectShape(view, layer, {geometry.full_leg_rows[leg], geometry.full_cols}));
      QP_RETURN_IF_ERROR(CopyRows(view, layer, geometry.leg_src_rows[leg], geometry.src_col,
                                  geometry.leg_rows[leg], geometry.leg_offsets[leg],
                                  &params->tensor(Slot::kWeight)));
    }
    QP_RETURN_IF_ERROR(specs_internal::LoadBias(checkpoint, leg_prefixes, geometry, params));
    params->loaded = true;
    return {};
  }

  Status ProcessAfterLoading(LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLoadedNotProcessed(*params));
    params->processed = true;
    return {};
  }

 private:
  const ActivationQuant activation_{};
  const LoadFacts facts_;
};

bool Unquantized(const QuantScheme& scheme) { return !scheme.quantized(); }
Result<SpecKey> Bf16KeyFor(const QuantScheme&) { return kBf16Key; }

class Bf16Family final : public SpecFamilyRow {
 public:
  SpecFamily family() const override { return kBf16Family; }
  std::string_view name() const override { return "bf16"; }
  std::string_view grammar() const override { return "bf16"; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto params = specs_internal::IdParameters(spec_id, name());
    if (!params || !params->empty()) return std::nullopt;
    return kBf16Key;
  }
  std::string Format(const SpecKey&) const override { return "bf16"; }
  std::vector<Slot> Slots(const SpecKey&, const ActivationQuant&) const override {
    return {Slot::kWeight, Slot::kBias};
  }
  int64_t BytesFor(const SpecKey&, int64_t rows, int64_t cols, int dense_bits) const override {
    return DenseLayout{dense_bits}.BytesFor(rows, cols);
  }
  Result<std::unique_ptr<WeightSpec>> Make(const SpecKey&, const ActivationQuant& act,
                                           const LoadFacts& facts) const override {
    if (act.mode != ActMode::kNone) {
      return InvalidInput(
          fmt::format("bf16 layers keep activations in high precision, not {}", act.ToString()));
    }
    return std::unique_ptr<WeightSpec>(std::make_unique<Bf16Spec>(facts));
  }
  // fp32 accumulation over K terms drifts by about sqrt(K) · 2^-24 relative; 1e-4 leaves room
  // for K in the hundreds of thousands.
  double Tolerance(const SpecKey&, ActMode) const override { return 1e-4; }
  std::vector<SpecCandidate> Candidates() const override {
    return {{"unquantized (bf16, fp16, fp32) weights", "any", Unquantized,
             specs_internal::AnyDevice, Bf16KeyFor, 0}};
  }
};

const SpecFamilyRegistrar kRegisterBf16(std::make_unique<Bf16Family>());

}  // namespace
}  // namespace quantpath
