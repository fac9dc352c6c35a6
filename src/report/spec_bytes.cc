// Each planned layer's physical spec and stored bytes, through materialize. Unquantized layers keep
// the checkpoint dtype; a scheme without a spec on the device gets spec_id null and the reason.
#include "src/report/spec_bytes.h"

#include "fmt/format.h"
#include "quantpath/kernels.h"
#include "quantpath/materialize.h"

namespace quantpath {

Status AssignSpec(const LayerSite& site, QDType torch_dtype, const std::string& device,
                  PlannedLayer* layer) {
  if (site.kind == SiteKind::kAttention) return {};
  QP_ASSIGN_OR_RETURN(DeviceCaps caps, ParseDevice(device));
  const Decision& d = layer->decision;
  if (d.kind != DecisionKind::kQuantized || !d.scheme || !d.scheme->quantized()) {
    layer->spec_id = "bf16";
    layer->bytes = site.params * (Info(torch_dtype).bits / 8);
    return {};
  }
  Result<std::string> spec_id = SpecIdFor(*d.scheme, caps);
  if (!spec_id.ok()) {
    // No physical layout yet: the bytes are the weights' nominal size, scales not counted.
    layer->spec_note = spec_id.status().message() + "; bytes estimated from the weight dtype";
    layer->bytes = (site.params * Info(d.scheme->weight.dtype).bits + 7) / 8;
    return {};
  }
  layer->spec_id = *spec_id;
  Result<int64_t> bytes = StorageBytes(*spec_id, RequestForSite(site, torch_dtype, caps));
  if (bytes.ok()) {
    layer->bytes = *bytes;
  } else if (bytes.status().code() == ErrorCode::kInvalidInput) {
    // The layout cannot hold this site (e.g. a fused block-fp8 leg that is not a multiple of the
    // block): loading would fail, so the plan says so instead of promising a spec.
    layer->decision.kind = DecisionKind::kError;
    layer->decision.detail = bytes.status().message();
    layer->bytes = (site.params * Info(d.scheme->weight.dtype).bits + 7) / 8;
  } else {
    layer->spec_note = bytes.status().message();
    layer->bytes = (site.params * Info(d.scheme->weight.dtype).bits + 7) / 8;
  }
  if (!KernelRegistry::Global().Supports(*spec_id, caps)) {
    if (!layer->spec_note.empty()) layer->spec_note += "; ";
    layer->spec_note += fmt::format("no kernel for {} on {} yet", *spec_id, device);
  }
  return {};
}

}  // namespace quantpath
