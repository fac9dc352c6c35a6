// Decides every site of a model and what each stores: the physical spec through materialize,
// its bytes, and whether this build has a kernel for it. Unquantized layers keep the checkpoint
// dtype; a scheme without a spec on the device gets spec_id null and the reason.
#include "fmt/format.h"
#include "quantpath/kernels.h"
#include "quantpath/materialize.h"
#include "quantpath/pipeline.h"

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

// Fills layer->spec_id, kernel_available, spec_note and bytes for a site that is not attention.
// The Materialize / SpecIdFor / StorageBytes / registry calls stay together here, the one place
// that turns a decision into storage.
void AssignSpec(const LayerSite& site, QDType torch_dtype, const DeviceCaps& device,
                LayerDecision* layer) {
  const Decision& d = layer->decision;
  if (d.kind != DecisionKind::kQuantized || !d.scheme || !d.scheme->quantized()) {
    layer->spec_id = "bf16";
    layer->kernel_available = KernelRegistry::Global().Supports(*layer->spec_id, device);
    layer->bytes = site.params * (Info(torch_dtype).bits / 8);
    return;
  }
  Result<std::string> spec_id = SpecIdFor(*d.scheme, device);
  if (!spec_id.ok()) {
    layer->spec_note =
        spec_id.status().message() + "; bytes estimated from the scheme (weights and scales)";
    layer->bytes = NominalBytes(*d.scheme, site);
    return;
  }
  layer->spec_id = *spec_id;
  layer->kernel_available = KernelRegistry::Global().Supports(*spec_id, device);
  Result<int64_t> bytes = StorageBytes(*spec_id, RequestForSite(site, torch_dtype, device));
  if (bytes.ok()) {
    layer->bytes = *bytes;
  } else if (bytes.status().code() == ErrorCode::kInvalidInput) {
    // The layout cannot hold this site (e.g. a fused block-fp8 leg that is not a multiple of the
    // block): loading would fail, so the plan says so instead of promising a spec.
    layer->decision.kind = DecisionKind::kError;
    layer->decision.detail = bytes.status().message();
    layer->bytes = NominalBytes(*d.scheme, site);
  } else {
    layer->spec_note = bytes.status().message();
    layer->bytes = NominalBytes(*d.scheme, site);
  }
}

// An attention site stores its KV cache, not weights: quantized only when a KV scheme quantizes
// it. An engine that attaches its KV-cache method without a KV scheme (vLLM's Fp8KVCacheMethod
// under fp8) still keeps the cache in the model's dtype unless --kv-cache-dtype says otherwise.
void DecideKvCache(const QuantPlan& plan, QDType torch_dtype, LayerDecision* layer) {
  Decision& d = layer->decision;
  KvCache kv;
  kv.dtype = torch_dtype;
  kv.engine_method = plan.attention && plan.attention->kind == ActionKind::kQuantize;
  if (kv.engine_method) kv.engine_method_name = plan.attention->detail;
  if (d.kind == DecisionKind::kQuantized) {
    if (d.scheme && d.scheme->quantized()) {
      kv.scheme = d.scheme;
      kv.dtype = d.scheme->weight.dtype;
    } else {
      d.kind = DecisionKind::kUnquantized;
      d.scheme.reset();
    }
  }
  layer->kv = std::move(kv);
}

LayerDecision Assign(const Model& model, const LayerSite& site, Decision decision) {
  LayerDecision layer;
  layer.site = &site;
  layer.decision = std::move(decision);
  if (site.kind == SiteKind::kAttention) {
    DecideKvCache(model.plan, model.sites.torch_dtype, &layer);
  } else {
    AssignSpec(site, model.sites.torch_dtype, model.device, &layer);
  }
  return layer;
}

}  // namespace

std::vector<LayerDecision> DecideAll(const Model& model) {
  std::vector<LayerDecision> layers;
  layers.reserve(model.sites.sites.size());
  for (const LayerSite& site : model.sites.sites) {
    layers.push_back(Assign(model, site, DecideSite(model.plan, site, false)));
  }
  return layers;
}

int CountErrors(const std::vector<LayerDecision>& layers) {
  int errors = 0;
  for (const LayerDecision& layer : layers) errors += layer.decision.kind == DecisionKind::kError;
  return errors;
}

Result<ExplainedLayer> DecideLayer(const Model& model, std::string_view path) {
  QP_ASSIGN_OR_RETURN(ResolvedSite resolved, ResolveLayer(model.sites, path));
  LayerDecision layer = Assign(model, *resolved.site, DecideSite(model.plan, *resolved.site, true));
  return ExplainedLayer{std::move(resolved), std::move(layer)};
}

}  // namespace quantpath
