// quantpath pipeline: Decisions: every site of a model decided, with its physical spec
// (materialized once per scheme), stored bytes and whether this build has a kernel for it; one
// layer with its trace.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/pipeline/open_model.h"
#include "quantpath/specs.h"

namespace quantpath {

// What an attention site's KV cache stores.
struct KvCache {
  // What the cache stores: the KV scheme's dtype, or without one the model's torch_dtype (the
  // engines' `--kv-cache-dtype auto`).
  QDType dtype = QDType::kBF16;
  std::optional<QuantScheme> scheme;  // the KV-cache scheme, when the config names one
  // The engine attaches its KV-cache method (e.g. vLLM's Fp8KVCacheMethod) to the layer; without
  // a scheme the cache still stores the model's dtype (`--kv-cache-dtype auto`).
  bool engine_method = false;
  std::string engine_method_name;  // the method's class, when attached
};

// One site decided, with what it stores.
struct LayerDecision {
  const LayerSite* site = nullptr;  // into Model::sites; valid while the Model lives
  // The planner's decision, except that an attention site is quantized only when its KV cache is
  // (an engine attaching its KV-cache method without a KV scheme keeps a bf16/auto cache; `kv`
  // says so).
  Decision decision;
  std::optional<KvCache> kv;  // attention sites only
  // The physical spec; null when no spec exists on the device (spec_note says why) and for
  // attention sites.
  std::optional<SpecKey> spec;
  // Whether this build has a kernel for the spec on the device (a registry query, never a reason
  // to pick another spec); null without a spec.
  std::optional<bool> kernel_available;
  std::string spec_note;         // why spec is null, or what this build cannot do with the spec
  std::optional<int64_t> bytes;  // what the spec stores, scales and bias included; null without a
                                 // spec
  // The element type the weight is stored in: the scheme's weight dtype, or unquantized the
  // checkpoint's torch_dtype; null for attention and error rows.
  std::optional<QDType> dtype;
  // The spec materialized for the decision on the device, shared by every site of the same scheme
  // (LoadLayer and LoadExperts load into it); null for attention sites and where
  // `materialized` says why not.
  std::shared_ptr<const WeightSpec> weight_spec;
  Status materialized;
};

// The planner's decisions for `sites`, in order, without traces, with every regex match of the
// plan under one step budget (InputLimits::regex_plan_steps). A regex limit, per match or per
// plan, is the result (kLimit naming the rule's file and key, the pattern and the layer), never a
// layer's decision: it says the config cannot be decided at all.
Result<std::vector<Decision>> DecidePlanSites(const QuantPlan& plan,
                                              const std::vector<LayerSite>& sites);
// Every site of `model`, in site order, decided as DecidePlanSites does, with the shape checks of
// the launch's --tp and the site's spec, one materialization per scheme.
Result<std::vector<LayerDecision>> DecideAll(const Model& model);
// One site as DecideAll decides it, under its own regex budget; with the planner's trace when
// `trace`.
Result<LayerDecision> DecideOneSite(const Model& model, const LayerSite& site, bool trace = false);
// Bytes of the parameters that are not sites (norms, other tensors), in the checkpoint dtype,
// through the unquantized family's row.
int64_t OtherBytes(const Model& model);
// How many of `layers` decided error.
int CountErrors(const std::vector<LayerDecision>& layers);

// A layer path as the user wrote it, resolved to its site: an execution name, a leg of a fused
// site ("…q_proj" → "…qkv_proj"), an expert's HF name, or a name ending in ".weight".
struct ResolvedSite {
  const LayerSite* site = nullptr;
  std::string note;  // how the name was resolved, when it was not the execution name
};
Result<ResolvedSite> ResolveLayer(const ModelSites& sites, std::string_view path);

// One layer decided with its full trace (explain).
struct ExplainedLayer {
  ResolvedSite resolved;
  LayerDecision layer;  // layer.decision.trace holds every rule tried
};
// Its regex limits are DecideAll's (one budget for the layer's whole trace).
Result<ExplainedLayer> DecideLayer(const Model& model, std::string_view path);

}  // namespace quantpath
