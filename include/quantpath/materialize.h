// quantpath materialize: a semantic QuantScheme on a device → the physical WeightSpec that stores
// it, the only hardware-aware step before kernels.
//
// Goals: the family rows' candidates (scheme predicate, device predicate), tried in priority
// order, the first that matches wins; a scheme with no spec on the device is an error saying why
// (the plan then shows spec_id null and the reason); keys and storage bytes for `plan` without
// weights; the allocation request of a layer site. Whether a kernel exists for the key is the
// kernel registry's answer, never a reason to choose another layout. Non-goals: config files
// (importers), kernels (the registry answers "is (spec, device) supported?"), loading (specs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/device.h"
#include "quantpath/ir.h"
#include "quantpath/models.h"
#include "quantpath/specs.h"

namespace quantpath {

// The spec that stores `scheme` on `device`: the registered family candidates (SpecCandidate in
// specs.h) are tried by descending priority; the first whose scheme predicate and device
// predicate both hold builds the key, and its family row builds the spec with the scheme's
// activation mode and LoadFacts. No candidate is an error (kUnsupported) naming the scheme, the
// device, and the candidates that store the scheme on other devices; an inconsistent scheme is
// the candidate's error (kInvalidInput or kUnsupported). A scheme quantized at load
// (scheme.online) gets MakeSpecQuantizingAtLoad's spec; a key no quantizer writes is
// kUnsupported naming the scheme, the device and the schemes this build quantizes at load.
// A spec's methods are const, so every layer and expert of one scheme shares the spec made once.
Result<std::shared_ptr<const WeightSpec>> Materialize(const QuantScheme& scheme,
                                                      const DeviceCaps& device);
// The key Materialize(scheme, device) would build, with the same errors, without a spec.
Result<SpecKey> KeyFor(const QuantScheme& scheme, const DeviceCaps& device);
// How the kernels of `scheme` treat activations: none for weight-only and unquantized schemes;
// otherwise the ActivationQuant of the registered activation kind that claims the input
// (activation_kinds.h): its dtype (fp8, int8, nvfp4, mxfp8 …), symmetry, and mode — per token,
// per tensor (dynamic or static) or per 1 × group_size (dynamic). An input no kind claims is an
// error naming the scheme.
Result<ActivationQuant> ActivationQuantFor(const QuantScheme& scheme);

// Bytes the spec of `key` stores for `request` on this rank: weights, weight scales and bias (what
// LinearParams::WeightBytes() reports after Allocate), through the family's row.
//   fp8_block_128_128 on [168, 256] = 168 · 256 + ceil(168/128) · ceil(256/128) · 4 = 43024.
// An MoE request (experts > 0, shape = one expert's [intermediate, hidden]) counts every expert's
// gate and up [intermediate, hidden] and down [hidden, intermediate] projections, each with its
// own scale grid as checkpoints store them and LoadExperts holds them (ExpertProjectionRequests);
// intermediate is split by tensor parallelism.
// Errors: an unregistered family; a request that does not add up or that the layout cannot hold
// (the same checks Allocate makes). `act` and `facts` are the scheme's activation mode
// (ActivationQuantFor) and source layout: static asymmetric W8A8 also stores each row's
// zero-point correction.
Result<int64_t> StorageBytes(const SpecKey& key, const AllocationRequest& request,
                             const ActivationQuant& act = {}, const LoadFacts& facts = {});
// The same through a materialized spec.
Result<int64_t> StorageBytes(const WeightSpec& spec, const AllocationRequest& request);

// The allocation request of a site: its shape, legs (rows and names), bias and expert count (and,
// where the checkpoint stacks the experts, a StackedExpert of expert 0), with `params_dtype` (the
// checkpoint's torch_dtype), on `device`, unsplit.
AllocationRequest RequestForSite(const LayerSite& site, QDType params_dtype,
                                 const DeviceCaps& device);
// The checkpoint module prefix of each leg of a site, in leg order (the site's path when it is
// not fused): "model.layers.0.self_attn.q_proj", "….k_proj", "….v_proj" for qkv_proj.
std::vector<std::string> LegPrefixes(const LayerSite& site);

}  // namespace quantpath
