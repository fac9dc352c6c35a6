// quantpath materialize: a semantic QuantScheme on a device → the physical WeightSpec that stores
// it, the only hardware-aware step before kernels.
//
// Goals: an ordered list of candidates (predicate, spec factory), the first that matches wins; a
// scheme with no spec on the device is an error saying why (the plan then shows spec_id null and
// the reason); spec_ids and storage bytes for `plan` without weights; the allocation request of a
// layer site. Non-goals: config files (importers), kernels (the registry answers "is (spec,
// device) supported?"), loading (specs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/models.h"
#include "quantpath/specs.h"  // DeviceCaps, ParseDevice, WeightSpec, AllocationRequest

namespace quantpath {

// The spec that stores `scheme` on `device`: bf16 for unquantized schemes; fp8_per_tensor,
// fp8_per_channel or fp8_block_<bn>_<bk> for fp8 e4m3 weights. No spec is an error (kUnsupported
// for schemes quantpath does not store yet, kInvalidInput for inconsistent ones) naming the
// scheme, the device and the reason.
Result<std::unique_ptr<WeightSpec>> Materialize(const QuantScheme& scheme,
                                                const DeviceCaps& device);
// Materialize(scheme, device)'s spec_id, with the same errors.
Result<std::string> SpecIdFor(const QuantScheme& scheme, const DeviceCaps& device);
// How the kernels of `scheme` treat activations: none for weight-only and unquantized schemes;
// fp8 e4m3 inputs per token / per tensor (dynamic or static) / per 1 × group_size (dynamic).
// Other inputs are an error naming the scheme.
Result<ActivationQuant> ActivationQuantFor(const QuantScheme& scheme);

// Bytes the spec stores for `request` on this rank: weights, weight scales and bias (what
// LinearParams::WeightBytes() reports after Allocate), from the layout records in specs.h.
//   fp8_block_128_128 on [168, 256] = 168 · 256 + ceil(168/128) · ceil(256/128) · 4 = 43024.
// An MoE request (experts > 0, shape = one expert's [intermediate, hidden]) counts every expert's
// gate and up [intermediate, hidden] and down [hidden, intermediate] projections, each with its
// own scale grid as checkpoints store them; intermediate is split by tensor parallelism.
// Errors: an unknown spec_id; a request that does not add up or that the layout cannot hold
// (the same checks Allocate makes).
Result<int64_t> StorageBytes(std::string_view spec_id, const AllocationRequest& request);

// The allocation request of a site: its shape, legs (rows and names), bias and expert count, with
// `params_dtype` (the checkpoint's torch_dtype), on `device`, unsplit.
AllocationRequest RequestForSite(const LayerSite& site, QDType params_dtype,
                                 const DeviceCaps& device);
// The checkpoint module prefix of each leg of a site, in leg order (the site's path when it is
// not fused): "model.layers.0.self_attn.q_proj", "….k_proj", "….v_proj" for qkv_proj.
std::vector<std::string> LegPrefixes(const LayerSite& site);

}  // namespace quantpath
