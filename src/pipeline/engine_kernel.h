// The kernel the engine picks for a quantized linear layer when it creates the weights, joined to
// the layer's decision (importers.h LinearKernelFor): the name in the detail, or the layer's error.
#pragma once

#include "quantpath/ir.h"
#include "quantpath/models.h"
#include "quantpath/planner.h"

namespace quantpath {

void ApplyEngineKernel(const QuantPlan& plan, Platform platform, const LayerSite& site,
                       Decision* decision);

}  // namespace quantpath
