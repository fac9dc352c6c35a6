// quantpath specs: checkpoint source layouts: the tensor names of every layout, in one table
// (loaders and `check` read it; nothing guesses a layout from which names happen to exist).
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
#include "quantpath/specs/online.h"

namespace quantpath {

// One leg (or one expert projection) of a layer as its source layout stores it, whole (every
// rank's rows and columns): what the layout's rules derive each tensor's dtype and shape from.
struct SourceLeg {
  int64_t rows = 0;     // N
  int64_t cols = 0;     // K
  int64_t experts = 0;  // layouts that stack every expert in one tensor (StacksExperts): E
  TensorQuant weight;   // the scheme's weight quantization: dtype, scale granularity, load facts
};

// What a source tensor's values must be, beside its dtype and shape (`check` reads them; the
// loaders decode them).
enum class SourceValues : uint8_t {
  kBySlot,        // as its slot says (SourceValuesOf)
  kCodes,         // the weight's bulk codes: read by `check --deep` only
  kScale,         // multiplies: finite, ≥ 0 but integer codes'; a tensor or row all zero is dead
  kScaleByGroup,  // a kScale stored [groups, N]: an output row's scales are a column
  kDivisor,       // divides, or a scale no product does without: finite and positive
  kZeroPoint,     // a weight zero point: an integer in the code range, the midpoint if symmetric
  kOffset,        // an activation zero point: a finite integer
  kGroupMap,      // g_idx: each input column's group
  kShapeVector,   // the leg's [rows, cols]
  kFinite,        // a bias, a prescale, a code book: finite
  kUnchecked,     // serialized state, or integer terms with no rule of their own
};

// What one source tensor of a leg must be: one of `dtypes` (any when empty), and one of `shapes`,
// or, with `any_shape`, any shape holding as many elements as shapes[0] (producers write scalars
// as [] or [1] and per-row vectors as [N] or [N, 1]).
struct SourceTensorRule {
  std::vector<StDtype> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  bool any_shape = false;
  bool AcceptsDtype(StDtype dtype) const;
  bool AcceptsShape(const std::vector<int64_t>& shape) const;
  std::string DtypesText() const;  // "F16, BF16 or F32"
  std::string ShapesText() const;  // "[2, 128]", "[128, 1] or [128]", "128 elements"
};

struct SourceTensor {
  // The parameter slot the tensor loads into; nullopt for tensors read only to validate or
  // decode others (compressed-tensors `weight_shape`, bitsandbytes `quant_map`).
  std::optional<Slot> slot;
  // What follows the module prefix, separator included: ".weight_scale_inv", ".qweight",
  // ".weight.absmax", "_blocks" (gpt-oss experts).
  std::string_view suffix;
  bool required;  // false: present only in some checkpoints of the layout, or only for some schemes
  // Optional, yet read by the engines whenever present, even where the canonical layout keeps no
  // slot for it (GPTQ's g_idx without act-order, ModelSlim's weight_offset): such a tensor is
  // consumed by every loaded layer of the layout, never an unconsumed extra.
  bool always_read = false;
  // The tensor's dtype and shape for a leg, as its producers write it and the loaders read it;
  // null, or nullopt for a leg, where the layout does not fix them.
  std::optional<SourceTensorRule> (*rule)(const SourceLeg& leg) = nullptr;
  // What its values must be; kBySlot for every tensor with a slot.
  SourceValues values = SourceValues::kBySlot;
};
// The tensor's values rule: its own, or its slot's.
SourceValues SourceValuesOf(const SourceTensor& tensor);
// Whether `layout`'s zero points, scales and g_idx are decoded by an integer loader
// (CheckIntegerSourceValues checks them as it reads them).
bool HasIntegerLoader(SourceLayout layout);
// The tensors of `layout` per module (leg) prefix. Static activation tensors are listed with
// required = false: whether a layer needs them depends on its scheme. Every layout also has the
// optional ".bias" of the layer itself.
std::span<const SourceTensor> SourceTensors(SourceLayout layout);
// The checkpoint suffix of `slot` in `layout`, or nullopt when the layout has no such tensor
// (the bias is ".bias" unless the layout names another).
std::optional<std::string_view> SourceSuffix(SourceLayout layout, Slot slot);
// The rule of `layout`'s tensor of `slot` for `leg`; nullopt where the layout has no such tensor
// or does not fix it.
std::optional<SourceTensorRule> SourceRule(SourceLayout layout, Slot slot, const SourceLeg& leg);
// A leg's values that its loader would refuse: the slot of the tensor at fault (nullopt where the
// decoder refused the leg before reading it), its name, and the message naming the layer.
struct SourceValueProblem {
  std::optional<Slot> slot;
  std::string tensor;
  std::string message;
};
// For the integer layouts (GPTQ, AWQ, compressed-tensors pack-quantized): decodes the leg's zero
// points and g_idx from `values` as its loader does, without its codes and scales, and holds them
// to what the loader holds them to (CheckZeroPoints, CheckGroupMap); nullopt when they pass, for
// what this build does not load, and for every other layout.
std::optional<SourceValueProblem> CheckIntegerSourceValues(const Checkpoint& values,
                                                           const SourceLeg& leg,
                                                           std::string_view prefix,
                                                           std::string_view layer);
// Whether `layout` holds every expert of a layer in one tensor per projection (gpt-oss's
// `_blocks` / `_scales`), so that its loaders read a projection through StackedExpert.
bool StacksExperts(SourceLayout layout);

}  // namespace quantpath
