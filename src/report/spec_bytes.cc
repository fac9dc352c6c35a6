#include "src/report/spec_bytes.h"

#include "fmt/format.h"

namespace quantpath {

Status AssignSpec(const LayerSite& site, QDType torch_dtype, const std::string& device,
                  PlannedLayer* layer) {
  (void)device;
  if (site.kind == SiteKind::kAttention) return {};
  if (layer->decision.kind != DecisionKind::kQuantized) {
    layer->spec_id = "bf16";
    layer->bytes = site.params * (Info(torch_dtype).bits / 8);
    return {};
  }
  layer->spec_note = "materialize not wired";
  return {};
}

}  // namespace quantpath
