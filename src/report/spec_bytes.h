// Chooses each planned layer's physical spec and its stored bytes.
#pragma once

#include <string>

#include "quantpath/report.h"

namespace quantpath {

// Fills layer->spec_id, spec_note and bytes for `site` decided as layer->decision on `device`.
// Unquantized layers keep the checkpoint dtype (`torch_dtype`).
Status AssignSpec(const LayerSite& site, QDType torch_dtype, const std::string& device,
                  PlannedLayer* layer);

}  // namespace quantpath
