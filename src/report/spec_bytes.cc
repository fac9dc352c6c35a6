// Each planned layer's physical spec and stored bytes, through materialize. Unquantized layers keep
// the checkpoint dtype; a scheme without a spec on the device gets spec_id null and the reason.
#include "src/report/spec_bytes.h"

#include "fmt/format.h"
#include "quantpath/kernels.h"
#include "quantpath/materialize.h"

namespace quantpath {
namespace {

// What a checkpoint of `scheme` stores for `site` when quantpath has no physical spec for it yet:
// packed weights plus the scales (and zero points) the scheme's granularity implies, in the
// dtypes the formats commonly use. An estimate, said so in the plan.
int64_t NominalBytes(const QuantScheme& scheme, const LayerSite& site) {
  const TensorQuant& w = scheme.weight;
  const int64_t params = site.params;
  const int64_t k = site.shape ? (*site.shape)[1] : 1;
  const int64_t rows = k > 0 ? params / k : params;
  const int64_t weights = (params * Info(w.dtype).bits + 7) / 8;
  auto per = [params](int64_t n) { return n > 0 ? (params + n - 1) / n : 0; };
  int64_t scales = 0;
  switch (w.dtype) {
    case QDType::kNVFP4:
      scales = per(16) + 4;
      break;  // E4M3 per 16, fp32 global
    case QDType::kMXFP4:
    case QDType::kMXFP8:
      scales = per(32);
      break;  // E8M0 per 32
    case QDType::kNF4:
    case QDType::kFP4:
      // fp32 absmax per 64-block, or with double quant one byte per block plus fp32 per 256 blocks.
      scales = w.load.double_quant ? per(64) + per(64 * 256) * 4 : per(64) * 4;
      break;
    default:
      switch (w.granularity) {
        case Granularity::kGroup: {
          const int64_t groups = per(w.group_size.value_or(128));
          scales = groups * 2;                                                // fp16 scales
          if (!w.symmetric) scales += (groups * Info(w.dtype).bits + 7) / 8;  // packed zeros
          break;
        }
        case Granularity::kBlock:
          scales = w.block_shape ? per((*w.block_shape)[0] * (*w.block_shape)[1]) * 4 : 4;
          break;
        case Granularity::kPerTensor:
          scales = 4;
          break;
        default:
          scales = rows * 2;
          if (!w.symmetric) scales += (rows * Info(w.dtype).bits + 7) / 8;
      }
  }
  return weights + scales;
}

}  // namespace

Status AssignSpec(const LayerSite& site, QDType torch_dtype, const std::string& device,
                  PlannedLayer* layer) {
  if (site.kind == SiteKind::kAttention) return {};
  QP_ASSIGN_OR_RETURN(DeviceCaps caps, ParseDevice(device));
  const Decision& d = layer->decision;
  const QuantScheme scheme = d.kind == DecisionKind::kQuantized && d.scheme && d.scheme->quantized()
                                 ? *d.scheme
                                 : QuantScheme{};
  Result<SpecKey> key = KeyFor(scheme, caps);
  if (!key.ok()) {
    layer->spec_note = key.status().message();
    layer->bytes = NominalBytes(scheme, site);
    return {};
  }
  layer->spec_id = key->ToId();
  if (!scheme.quantized()) {
    // Unquantized sites keep the checkpoint dtype for every parameter they count (biases, MTP
    // copies), so their bytes are the dense row's over site.params elements.
    QP_ASSIGN_OR_RETURN(layer->bytes, LayoutBytes(*key, 1, site.params, Info(torch_dtype).bits));
    return {};
  }
  Result<int64_t> bytes = StorageBytes(*key, RequestForSite(site, torch_dtype, caps));
  if (bytes.ok()) {
    layer->bytes = *bytes;
  } else if (bytes.status().code() == ErrorCode::kInvalidInput) {
    // The layout cannot hold this site (e.g. a fused block-fp8 leg that is not a multiple of the
    // block): loading would fail, so the plan says so instead of promising a spec.
    layer->decision.kind = DecisionKind::kError;
    layer->decision.detail = bytes.status().message();
    layer->bytes = NominalBytes(scheme, site);
  } else {
    layer->spec_note = bytes.status().message();
    layer->bytes = NominalBytes(scheme, site);
  }
  if (!KernelRegistry::Global().Supports(*key, caps)) {
    if (!layer->spec_note.empty()) layer->spec_note += "; ";
    layer->spec_note += fmt::format("no kernel for {} on {} yet", *layer->spec_id, device);
  }
  return {};
}

}  // namespace quantpath
