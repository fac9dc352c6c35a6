// quantpath specs: weightspec.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/device.h"
#include "quantpath/ir.h"
#include "quantpath/specs/params.h"

namespace quantpath {

class WeightSpec {
 public:
  virtual ~WeightSpec() = default;
  virtual const SpecKey& key() const = 0;
  // How this spec's kernels quantize activations.
  virtual const ActivationQuant& activation() const = 0;
  // The checkpoint source layout this spec loads from (materialize hands over the scheme's).
  virtual const LoadFacts& facts() const = 0;

  // Allocates zeroed parameters for `request`. Errors name the layer: shapes that do not add up,
  // tensor-parallel sizes that do not divide, fused legs the layout cannot hold.
  virtual Result<LinearParams> Allocate(const AllocationRequest& request) const = 0;
  // Bytes the parameters of `request` hold once processed (LinearParams::WeightBytes()), with
  // Allocate's checks, without allocating.
  virtual Result<int64_t> StorageBytes(const AllocationRequest& request) const = 0;
  // Loads the layer from `checkpoint` in the source layout of facts(): `leg_prefixes` holds one
  // module prefix per fused leg, in leg order ("model.layers.0.self_attn.q_proj", …), or one
  // prefix when not fused. A source layout the family does not read is an error naming it. Errors
  // name the tensor and the layer.
  virtual Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
                      LinearParams* params) const = 0;
  // Converts loaded parameters into the canonical layout kernels read.
  virtual Status ProcessAfterLoading(LinearParams* params) const = 0;
  // The experts of one MoE layer, loaded and not yet processed: experts[e] holds expert e's
  // projections in ExpertProjectionRequests' order (gate, up, down). A family whose engines share
  // a per-layer scalar across experts, or across an expert's gate and up, sets it here in the
  // kept leg scalars, before ProcessAfterLoading reads them; by default nothing is shared.
  virtual Status ShareAcrossExperts(std::span<std::vector<LinearParams>> experts) const {
    (void)experts;
    return {};
  }
};

}  // namespace quantpath
