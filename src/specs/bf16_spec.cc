// Bf16Spec: unquantized weights (spec_id "bf16").
//
// Layout (DenseLayout): W [N, K] row-major in the request's params dtype — bf16, fp16 or fp32 —
// no scales. Source layout: `<prefix>.weight` per leg in any floating dtype of 16 or 32 bits;
// a dtype other than the params dtype is converted with round-to-nearest-even. A leg stored in
// fp8 (or any quantized dtype) is an error: the layer was decided unquantized.
// Non-goals: quantizing at load time (that is a quantized spec's job).
#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/spec_common.h"

namespace quantpath {
namespace {

using specs_internal::ComputeGeometry;
using specs_internal::CopyRows;
using specs_internal::ExpectShape;
using specs_internal::FindTensor;
using specs_internal::ShardGeometry;

bool IsFloatSource(StDtype dtype) {
  return dtype == StDtype::kBF16 || dtype == StDtype::kF16 || dtype == StDtype::kF32;
}

class Bf16Spec final : public WeightSpec {
 public:
  const std::string& spec_id() const override { return id_; }
  const SpecKey& key() const override { return key_; }
  const ActivationQuant& activation() const override { return activation_; }

  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry geometry, ComputeGeometry(request));
    LinearParams params = specs_internal::NewParams(request, geometry, id_);
    params.weight = ParamTensor(request.params_dtype, geometry.rows, geometry.cols);
    return params;
  }

  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry geometry, ComputeGeometry(request));
    return LayoutBytes(key_, geometry.rows, geometry.cols, Info(request.params_dtype).bits) +
           specs_internal::BiasBytes(request, geometry);
  }

  Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
              LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLegPrefixes(*params, leg_prefixes));
    QP_ASSIGN_OR_RETURN(ShardGeometry geometry, ComputeGeometry(params->request));
    const std::string& layer = params->request.layer;
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      QP_ASSIGN_OR_RETURN(TensorView view,
                          FindTensor(checkpoint, layer, leg_prefixes[leg], "weight"));
      if (!IsFloatSource(view.info->dtype)) {
        return InvalidInput(fmt::format(
            "{}: tensor {} is stored as {}, but the layer is unquantized (expected BF16, F16 or "
            "F32)",
            layer, view.info->name, StDtypeName(view.info->dtype)));
      }
      QP_RETURN_IF_ERROR(
          ExpectShape(view, layer, {geometry.full_leg_rows[leg], geometry.full_cols}));
      QP_RETURN_IF_ERROR(CopyRows(view, layer, geometry.leg_src_rows[leg], geometry.src_col,
                                  geometry.leg_rows[leg], geometry.leg_offsets[leg],
                                  &params->weight));
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
  const std::string id_ = "bf16";
  const SpecKey key_{SpecFamily::kBf16, {0, 0}};
  const ActivationQuant activation_{};
};

}  // namespace

std::unique_ptr<WeightSpec> MakeBf16Spec() { return std::make_unique<Bf16Spec>(); }

}  // namespace quantpath
