// quantpath specs: quantizing at load (scheme.online): a bf16 / fp16 / fp32 checkpoint whose plan
// asks for a quantized scheme. Such a scheme's weight source layout is kDense, and materialize
// makes its spec with MakeSpecQuantizingAtLoad: the family's spec behind the quantizer registered
// for its key (src/specs/online/), whose Load reads every leg whole, quantizes it as the family's
// own checkpoints store it (round to nearest even, the format's scale rule) and hands those tensors
// to the family's loader, so a tensor-parallel rank holds its slice of the whole layer's codes and
// scales.
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
#include "quantpath/specs/family_rows.h"

namespace quantpath {

// A scheme `--online` names.
struct OnlineTarget {
  QuantScheme scheme;        // online, weight source layout kDense
  std::string_view refusal;  // non-empty: known and refused, and why
  std::string name;  // the scheme's CanonicalName() without "-online" (filled when registered)
};
// The registered targets, by name.
std::vector<OnlineTarget> OnlineTargets();
// The scheme of the target `name`. An unknown name is an error naming it and listing the targets; a
// refused target's error says why.
Result<QuantScheme> OnlineTargetNamed(std::string_view name);
// Whether a quantizer writes `key`'s layout at load for kernels that quantize X as `act` says.
bool QuantizesAtLoad(const SpecKey& key, const ActivationQuant& act);
// The spec of `key` that quantizes the checkpoint's high-precision weights at load (`facts`'
// layout kDense): the family's spec behind the quantizer registered for (key, act). kUnsupported
// naming the spec when no quantizer is registered.
Result<std::unique_ptr<WeightSpec>> MakeSpecQuantizingAtLoad(const SpecKey& key,
                                                             const ActivationQuant& act,
                                                             const LoadFacts& facts);

// A layer quantized as quantizing at load does, for writing it out (`quantize`): the tensors of
// the quantizer's source layout `layout`, leg by leg in QuantizedLayerHeaders' order, and the
// weights' max |W' − W| / max |W|.
struct QuantizedTensors {
  SourceLayout layout = SourceLayout::kDense;
  std::vector<Checkpoint::OwnedTensor> tensors;
  double error = 0;
};
// The layer of `request` (unsplit) whose legs' high-precision `.weight`s are in `checkpoint`
// under `leg_prefixes`, quantized by the quantizer of (key, act). Errors as
// MakeSpecQuantizingAtLoad's Load: no quantizer, a weight missing, misshapen, not BF16 / F16 /
// F32, or not finite (naming the tensor and the layer).
Result<QuantizedTensors> QuantizeLayerTensors(const SpecKey& key, const ActivationQuant& act,
                                              const Checkpoint& checkpoint,
                                              const AllocationRequest& request,
                                              const std::vector<std::string>& leg_prefixes);
// The tensors QuantizeLayerTensors writes, described without reading or computing them.
struct QuantizedHeaders {
  SourceLayout layout = SourceLayout::kDense;
  std::vector<TensorHeader> tensors;
};
Result<QuantizedHeaders> QuantizedLayerHeaders(const SpecKey& key, const ActivationQuant& act,
                                               const AllocationRequest& request,
                                               const std::vector<std::string>& leg_prefixes);

}  // namespace quantpath
