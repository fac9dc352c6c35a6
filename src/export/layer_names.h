// What the drivers of `quantize` and `convert` share about a model's layers: the module names a
// site is matched and listed by, the tensors of a leg in a source layout, and a tensor's name in
// another layout (the same parameter slot under the other layout's suffix).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/ir.h"
#include "quantpath/models.h"

namespace quantpath::export_internal {

// The checkpoint module names of a site: its legs' prefixes; an moe site's expert 0's
// projections (as engines match experts), or with `every_expert` every expert's.
std::vector<std::string> ModuleNames(const LayerSite& site, bool every_expert = false);

// The tensors of `layout` stored under `prefix` in `checkpoint` (the bias left out), in the
// layout's table order.
std::vector<std::string> LayoutTensors(const Checkpoint& checkpoint, SourceLayout layout,
                                       const std::string& prefix);

// `headers` (tensors of `prefix`) in `layout`'s table order, LayoutTensors' order; tensors the
// layout does not name are left out.
std::vector<TensorHeader> InLayoutOrder(const std::vector<TensorHeader>& headers,
                                        SourceLayout layout, const std::string& prefix);

// `name` (`prefix` + a suffix of layout `from`) as layout `to` names the same parameter; an
// error naming the layer when `to` has no place for it.
Result<std::string> RelaidName(std::string_view name, const std::string& prefix, SourceLayout from,
                               SourceLayout to, std::string_view layer);

// The ignore list of a folder whose unquantized modules are `modules`, with `patterns` (kept as
// the user gave them) first, then the modules not already listed.
std::vector<std::string> IgnoreList(const std::vector<std::string>& patterns,
                                    const std::vector<std::string>& modules);

}  // namespace quantpath::export_internal
