// Checkpoint reads shared by the reference entries and the activation kinds: a tensor as doubles,
// a slot's tensor name, a leg's 2-D weight, an int8 weight, and ModelSlim's per-row scale and
// offset.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quantpath/specs.h"

namespace quantpath::reference {

// Reads tensor `name` as doubles (every float dtype the checkpoint decodes) and copies its
// description to `info`. Errors name the layer.
Result<std::vector<double>> ReadDoubles(const Checkpoint& checkpoint, std::string_view layer,
                                        const std::string& name, TensorInfo* info);

// The name of the leg `prefix`'s tensor of `slot` in `layout`; an error naming the layer where the
// layout stores none ("{layer}: source layout {layout} stores no {what}").
Result<std::string> SlotTensorName(SourceLayout layout, Slot slot, std::string_view layer,
                                   const std::string& prefix, std::string_view what);

// Reads `<prefix><suffix of kWeight in layout>` as a [rows, cols] matrix of doubles.
Result<ReferenceLeg> ReadWeight(const Checkpoint& checkpoint, SourceLayout layout,
                                std::string_view layer, const std::string& prefix);

// Reads the I8 matrix `name` (int8 codes) as doubles; other dtypes or ranks are an error naming
// the tensor and the layer.
Result<ReferenceLeg> ReadInt8Weight(const Checkpoint& checkpoint, std::string_view layer,
                                    const std::string& name);

// ModelSlim's per-row dequantization of `leg`'s codes, w = (q − offset[r]) · scale[r]; an error
// naming the layer when either has other than one value per row.
Status ApplyRowScaleAndOffset(std::string_view layer, const std::string& prefix,
                              const std::vector<double>& scale, const std::vector<double>& offset,
                              ReferenceLeg* leg);

}  // namespace quantpath::reference
