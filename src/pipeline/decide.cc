// Decides every site of a model and what each stores: the physical spec through materialize,
// its bytes through the family rows, and whether this build has a kernel for it. Unquantized
// layers keep the checkpoint dtype; a scheme without a spec on the device gets spec_id and bytes
// null and the reason.
#include <optional>

#include "fmt/format.h"
#include "quantpath/kernels.h"
#include "quantpath/materialize.h"
#include "quantpath/pipeline.h"
#include "src/base/pyregex.h"
#include "src/pipeline/engine_kernel.h"

namespace quantpath {
namespace {

// One materialization per scheme among the sites decided together (schemes compare with their
// load facts, so two layouts of one scheme never share a spec).
class SpecCache {
 public:
  explicit SpecCache(const DeviceCaps& device) : device_(device) {}
  const Result<std::shared_ptr<const WeightSpec>>& For(const QuantScheme& scheme) {
    for (const auto& [seen, spec] : specs_) {
      if (seen == scheme) return spec;
    }
    return specs_.emplace_back(scheme, Materialize(scheme, device_)).second;
  }
  const DeviceCaps& device() const { return device_; }

 private:
  DeviceCaps device_;
  std::vector<std::pair<QuantScheme, Result<std::shared_ptr<const WeightSpec>>>> specs_;
};

// Fills layer->spec, weight_spec, kernel_available, spec_note and bytes for a site that is not
// attention: the one place that turns a decision into storage; bytes come only from the family
// rows, through the materialized spec where this build has its loader.
void AssignSpec(const LayerSite& site, QDType torch_dtype, SpecCache* specs, LayerDecision* layer) {
  const Decision& d = layer->decision;
  const DeviceCaps& device = specs->device();
  const QuantScheme scheme = d.kind == DecisionKind::kQuantized && d.scheme && d.scheme->quantized()
                                 ? *d.scheme
                                 : QuantScheme{};
  if (d.kind != DecisionKind::kError) {
    layer->dtype = scheme.quantized() ? scheme.weight.dtype : torch_dtype;
  }
  const Result<std::shared_ptr<const WeightSpec>>& spec = specs->For(scheme);
  layer->materialized = spec.status();
  Result<SpecKey> key = spec.ok() ? Result<SpecKey>((*spec)->key()) : KeyFor(scheme, device);
  if (!key.ok()) {
    layer->spec_note = key.status().message();
    return;
  }
  layer->spec = *key;
  if (spec.ok()) layer->weight_spec = *spec;
  layer->kernel_available = KernelRegistry::Global().Supports(*key, device);
  if (!scheme.quantized()) {
    // Unquantized sites keep the checkpoint dtype for every parameter they count (biases, MTP
    // copies), so their bytes are the dense row's over site.params elements.
    Result<int64_t> bytes = LayoutBytes(*key, 1, site.params, Info(torch_dtype).bits);
    if (bytes.ok()) layer->bytes = *bytes;
    return;
  }
  std::vector<std::string> notes;
  const AllocationRequest request = RequestForSite(site, torch_dtype, device);
  // A family whose loader is not in this build, or activations no mode describes, still have a
  // layout, and so a size.
  const auto layout_bytes = [&] {
    const Result<ActivationQuant> act = ActivationQuantFor(scheme);
    return StorageBytes(*key, request, act.ok() ? *act : ActivationQuant{}, scheme.weight.load);
  };
  Result<int64_t> bytes = spec.ok() ? StorageBytes(**spec, request) : layout_bytes();
  // A layout that cannot hold this site (e.g. a fused block-fp8 leg that is not a multiple of the
  // block) leaves bytes null and says why; the decision stays the format's or engine's (vLLM
  // builds such a fused layer, allowing the mismatch), only this build cannot load it.
  if (bytes.ok()) {
    layer->bytes = *bytes;
  } else {
    notes.push_back(bytes.status().message());
  }
  // A family whose loader is not in this build, or activations its kernels cannot quantize, are
  // said beside the spec_id.
  if (!spec.ok()) notes.push_back(spec.status().message());
  layer->spec_note = Join(notes, "; ");
}

// An attention site stores its KV cache, not weights: quantized only when a KV scheme quantizes
// it. An engine that attaches its KV-cache method without a KV scheme (vLLM's Fp8KVCacheMethod
// under fp8) still keeps the cache in the model's dtype unless --kv-cache-dtype says otherwise.
// The method is the one the engine attaches to this site's attention class (vLLM's MLAAttention
// gets none under fp8 and compressed-tensors).
void DecideKvCache(const QuantPlan& plan, QDType torch_dtype, LayerDecision* layer) {
  Decision& d = layer->decision;
  KvCache kv;
  kv.dtype = torch_dtype;
  const Action* method = plan.AttentionFor(layer->site->module_class);
  kv.engine_method = method != nullptr && method->kind == ActionKind::kQuantize;
  if (kv.engine_method) kv.engine_method_name = method->detail;
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
  layer->bytes = 0;  // the KV cache is not a weight
  layer->spec_note = "no weights of its own (the KV cache is allocated at run time)";
}

// The regex limit `site`'s decision met under `budget`, as the whole plan's error: the planner
// stops a site at its first matcher failure, so that decision's detail names the rule.
Status RegexLimitOf(const RegexStepBudget& budget, const LayerSite& site,
                    const Decision& decision) {
  if (budget.limit_error() == nullptr) return {};
  const std::string& what = decision.kind == DecisionKind::kError ? decision.detail.str()
                                                                  : budget.limit_error()->message();
  return LimitError(fmt::format("{} (layer {})", what, site.path));
}

LayerDecision Assign(const Model& model, const LayerSite& site, Decision decision,
                     SpecCache* specs) {
  LayerDecision layer;
  layer.site = &site;
  layer.decision = std::move(decision);
  if (layer.decision.kind == DecisionKind::kQuantized && !model.plan.shape_checks.empty()) {
    ApplyShapeChecks(model.plan, site, model.launch.tp_size, ReadAttentionHeads(model.sources),
                     &layer.decision);
  }
  ApplyEngineKernel(model.plan, model.launch.platform, site, &layer.decision);
  if (site.kind == SiteKind::kAttention) {
    DecideKvCache(model.plan, model.sites.torch_dtype, &layer);
  } else {
    AssignSpec(site, model.sites.torch_dtype, specs, &layer);
  }
  return layer;
}

}  // namespace

Result<std::vector<Decision>> DecidePlanSites(const QuantPlan& plan,
                                              const std::vector<LayerSite>& sites) {
  QP_ASSIGN_OR_RETURN(InputLimits limits, CurrentLimits());
  RegexStepBudget budget(limits.regex_plan_steps);
  std::vector<Decision> decisions;
  decisions.reserve(sites.size());
  for (const LayerSite& site : sites) {
    decisions.push_back(DecideSite(plan, site, false));
    QP_RETURN_IF_ERROR(RegexLimitOf(budget, site, decisions.back()));
  }
  return decisions;
}

Result<std::vector<LayerDecision>> DecideAll(const Model& model) {
  QP_ASSIGN_OR_RETURN(std::vector<Decision> decisions,
                      DecidePlanSites(model.plan, model.sites.sites));
  SpecCache specs(model.device);
  std::vector<LayerDecision> layers;
  layers.reserve(decisions.size());
  for (size_t i = 0; i < decisions.size(); ++i) {
    layers.push_back(Assign(model, model.sites.sites[i], std::move(decisions[i]), &specs));
  }
  return layers;
}

Result<LayerDecision> DecideOneSite(const Model& model, const LayerSite& site, bool trace) {
  QP_ASSIGN_OR_RETURN(InputLimits limits, CurrentLimits());
  RegexStepBudget budget(limits.regex_plan_steps);
  Decision decision = DecideSite(model.plan, site, trace);
  QP_RETURN_IF_ERROR(RegexLimitOf(budget, site, decision));
  SpecCache specs(model.device);
  return Assign(model, site, std::move(decision), &specs);
}

int64_t OtherBytes(const Model& model) {
  Result<SpecKey> dense = KeyFor(QuantScheme{}, model.device);
  if (!dense.ok()) return 0;
  Result<int64_t> bytes =
      LayoutBytes(*dense, 1, model.sites.other_params, Info(model.sites.torch_dtype).bits);
  return bytes.ok() ? *bytes : 0;
}

int CountErrors(const std::vector<LayerDecision>& layers) {
  int errors = 0;
  for (const LayerDecision& layer : layers) errors += layer.decision.kind == DecisionKind::kError;
  return errors;
}

Result<ExplainedLayer> DecideLayer(const Model& model, std::string_view path) {
  QP_ASSIGN_OR_RETURN(ResolvedSite resolved, ResolveLayer(model.sites, path));
  QP_ASSIGN_OR_RETURN(LayerDecision layer, DecideOneSite(model, *resolved.site, true));
  return ExplainedLayer{std::move(resolved), std::move(layer)};
}

}  // namespace quantpath
