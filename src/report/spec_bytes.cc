// Each planned layer's physical spec and stored bytes, through materialize and the family rows.
// Unquantized layers keep the checkpoint dtype; a scheme without a spec on the device gets spec_id
// and bytes null and the reason; whether a kernel exists is the kernel registry's answer.
#include "src/report/spec_bytes.h"

#include "fmt/format.h"
#include "quantpath/kernels.h"
#include "quantpath/materialize.h"

namespace quantpath {

Status AssignSpec(const LayerSite& site, QDType torch_dtype, const std::string& device,
                  PlannedLayer* layer) {
  if (site.kind == SiteKind::kAttention) {
    layer->bytes = 0;  // the KV cache is not a weight
    return {};
  }
  QP_ASSIGN_OR_RETURN(DeviceCaps caps, ParseDevice(device));
  const Decision& d = layer->decision;
  const QuantScheme scheme = d.kind == DecisionKind::kQuantized && d.scheme && d.scheme->quantized()
                                 ? *d.scheme
                                 : QuantScheme{};
  Result<SpecKey> key = KeyFor(scheme, caps);
  if (!key.ok()) {
    layer->spec_note = key.status().message();
    return {};
  }
  layer->spec_id = key->ToId();
  layer->kernel_available = KernelRegistry::Global().Supports(*key, caps);
  if (!scheme.quantized()) {
    // Unquantized sites keep the checkpoint dtype for every parameter they count (biases, MTP
    // copies), so their bytes are the dense row's over site.params elements.
    QP_ASSIGN_OR_RETURN(layer->bytes, LayoutBytes(*key, 1, site.params, Info(torch_dtype).bits));
    return {};
  }
  std::vector<std::string> notes;
  Result<int64_t> bytes = StorageBytes(*key, RequestForSite(site, torch_dtype, caps));
  if (bytes.ok()) {
    layer->bytes = *bytes;
  } else if (bytes.status().code() == ErrorCode::kInvalidInput) {
    // The layout cannot hold this site (e.g. a fused block-fp8 leg that is not a multiple of the
    // block): loading would fail, so the plan says so instead of promising a spec.
    layer->decision.kind = DecisionKind::kError;
    layer->decision.detail = bytes.status().message();
  } else {
    notes.push_back(bytes.status().message());
  }
  // The spec itself: a family whose loader is not in this build, or activations its kernels
  // cannot quantize, are said beside the spec_id.
  Result<std::unique_ptr<WeightSpec>> spec = Materialize(scheme, caps);
  if (!spec.ok()) notes.push_back(spec.status().message());
  if (!layer->kernel_available) {
    notes.push_back(fmt::format("no kernel for {} on {} in this build", *layer->spec_id, device));
  }
  layer->spec_note = Join(notes, "; ");
  return {};
}

}  // namespace quantpath
