// Code shared by the specs: request validation and tensor-parallel geometry, checkpoint tensor
// lookup with layer-naming errors, and row-slice copies into parameters.
//
// Goals: one place for the arithmetic of fused legs and tensor-parallel slices, so every spec
// loads the same rows and columns. Non-goals: any family's scale conventions (each spec file owns
// its own).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/checkpoint.h"
#include "quantpath/specs.h"

namespace quantpath::specs_internal {

// Where this rank's slice of each leg lies, in the checkpoint and in the fused parameter.
struct ShardGeometry {
  int64_t rows = 0;                    // this rank's N
  int64_t cols = 0;                    // this rank's K
  int64_t full_cols = 0;               // K in the checkpoint
  int64_t src_col = 0;                 // first checkpoint column of this rank's slice
  std::vector<int64_t> full_leg_rows;  // rows of each leg in the checkpoint
  std::vector<int64_t> leg_rows;       // rows of each leg on this rank
  std::vector<int64_t> leg_offsets;    // first row of each leg in the fused parameter
  std::vector<int64_t> leg_src_rows;   // first checkpoint row of each leg's slice
  bool has_bias = false;               // whether this rank stores the bias
};

// Validates `request` (positive shape, legs adding up to N, tensor-parallel sizes that divide, a
// bf16 / fp16 / fp32 params dtype) and computes this rank's geometry. An MoE request is
// Unsupported: its experts load as the plain requests ExpertProjectionRequests makes. Errors name
// the layer.
Result<ShardGeometry> ComputeGeometry(const AllocationRequest& request);

// ComputeGeometry for a layout with one scale per `block` columns of each row, its codes packed
// two per byte along K where `packed` (E2M1): K must then be even, and a row-parallel rank's K
// must be whole blocks (so whole bytes); errors name the layer, `key` and the sizes.
Result<ShardGeometry> BlockScaledGeometry(const AllocationRequest& request, const SpecKey& key,
                                          int64_t block, bool packed);

// "leg q_proj" (named legs), "leg 1" (unnamed fused legs) or "the weight" (one leg), for
// messages about one leg's dimension.
std::string LegLabel(const AllocationRequest& request, size_t leg);

// Bytes of this rank's bias (params dtype), 0 without one.
int64_t BiasBytes(const AllocationRequest& request, const ShardGeometry& geometry);

// Writes `value` as element i of a bf16 / fp16 / fp32 parameter, rounded to its dtype.
void StoreFloat(ParamTensor* tensor, int64_t i, float value);

// Fills the geometry-derived fields of fresh parameters (rows, cols, legs, bias).
LinearParams NewParams(const AllocationRequest& request, const ShardGeometry& geometry,
                       const SpecKey& key);

// Looks up `<prefix><suffix>` (the suffix carries its separator, ".weight"); a missing tensor is
// NotFound naming it and the layer.
Result<TensorView> FindTensor(const Checkpoint& checkpoint, std::string_view layer,
                              std::string_view prefix, std::string_view suffix);
// Looks up the tensor of `slot` in source layout `layout` (SourceSuffix) under `prefix`; a layout
// without that slot is an error naming the layout and the layer.
Result<TensorView> FindSlotTensor(const Checkpoint& checkpoint, std::string_view layer,
                                  std::string_view prefix, SourceLayout layout, Slot slot);
// Whether `spec` reads `layout`; otherwise an error naming the layer, the spec and the layout.
Status ExpectLayout(std::string_view layer, const SpecKey& key, SourceLayout layout,
                    std::initializer_list<SourceLayout> accepted);
// Whether the tensor has exactly `shape`; otherwise an error naming it, the layer and both shapes.
Status ExpectShape(const TensorView& view, std::string_view layer,
                   const std::vector<int64_t>& shape);
// Whether the tensor has the dtype and shape `layout`'s rule for `slot` gives `leg`; otherwise an
// error naming it, the layer, and what the rule accepts. A slot without a rule is accepted.
Status ExpectSourceRule(const TensorView& view, std::string_view layer, SourceLayout layout,
                        Slot slot, const SourceLeg& leg);
// Whether the tensor holds `elements` values in any shape of that size (scalars written as [] or
// [1], per-row scales as [N] or [N, 1]).
Status ExpectElements(const TensorView& view, std::string_view layer, int64_t elements,
                      std::string_view what);
// Decodes a scale tensor to float and checks every value is finite.
Result<std::vector<float>> ReadScales(const TensorView& view, std::string_view layer);

// The safetensors dtype that stores elements of `dtype` (bf16, fp16, fp32, fp8), if any.
std::optional<StDtype> StorageDtypeOf(QDType dtype);
std::string ShapeString(const std::vector<int64_t>& shape);

// Copies checkpoint rows [src_row, src_row + rows) and columns [src_col, src_col + dst->cols())
// of a 2-D tensor into rows [dst_row, dst_row + rows) of `dst`. The tensor's dtype must be
// `dst`'s storage dtype (bytes are copied), or, for bf16 / fp16 / fp32 parameters, any floating
// dtype (values are converted with round-to-nearest-even).
Status CopyRows(const TensorView& view, std::string_view layer, int64_t src_row, int64_t src_col,
                int64_t rows, int64_t dst_row, ParamTensor* dst);

// The leading dimensions of a leg's checkpoint tensors, one entry per row of the leg: [full leg
// rows], or for a stacked projection (AllocationRequest::stacked) [experts, row_step · full leg
// rows], every expert's rows with the other projections' interleaved.
std::vector<int64_t> SourceRowsShape(const AllocationRequest& request, const ShardGeometry& g,
                                     size_t leg);
// The row, counted over those leading dimensions, that holds row r of this rank's slice of leg
// `leg`.
int64_t SourceRow(const AllocationRequest& request, const ShardGeometry& g, size_t leg, int64_t r);

// Copies this rank's rows of leg `leg` (the rows SourceRow names) from the byte tensor `view`
// (packed codes, fp8 or E8M0 scales), which must be of dtype `dtype` and shape `shape`, whose rows
// are `src_row_bytes` long, into the leg's rows of `dst`: dst->row_bytes() bytes of each row from
// byte column `first_byte` (a rank's slice of a row-parallel layer starts there). Errors name the
// tensor, the layer and `key`'s spec.
Status CopyByteRows(const TensorView& view, const AllocationRequest& request,
                    const ShardGeometry& g, size_t leg, const SpecKey& key, StDtype dtype,
                    const std::vector<int64_t>& shape, int64_t src_row_bytes, int64_t first_byte,
                    ParamTensor* dst);

// Loads every leg's `<prefix><suffix>` slice into params->bias (when this rank stores the bias),
// the rows SourceRow names.
Status LoadBias(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
                const ShardGeometry& geometry, LinearParams* params,
                std::string_view suffix = ".bias");

// Whether `leg_prefixes` has one prefix per leg; an error naming the layer otherwise.
Status ExpectLegPrefixes(const LinearParams& params, const std::vector<std::string>& leg_prefixes);

// The device predicate of candidates that store a scheme the same way everywhere.
bool AnyDevice(const DeviceCaps& device);

// Whether ProcessAfterLoading may run: loaded, and not processed yet.
Status ExpectLoadedNotProcessed(const LinearParams& params);

// A spec made for one (SpecKey, activation, load facts). By default its Load writes the canonical
// layout directly, so ProcessAfterLoading only marks the parameters processed; a spec that
// combines its legs' scales after loading overrides it.
class KeyedSpec : public WeightSpec {
 public:
  KeyedSpec(const SpecKey& key, const ActivationQuant& activation, const LoadFacts& facts)
      : key_(key), activation_(activation), facts_(facts) {}

  const SpecKey& key() const override { return key_; }
  const ActivationQuant& activation() const override { return activation_; }
  const LoadFacts& facts() const override { return facts_; }
  Status ProcessAfterLoading(LinearParams* params) const override {
    QP_RETURN_IF_ERROR(ExpectLoadedNotProcessed(*params));
    params->processed = true;
    return {};
  }

 protected:
  const SpecKey key_;
  const ActivationQuant activation_;
  const LoadFacts facts_;
};

}  // namespace quantpath::specs_internal
