// quantpath planner: evaluates a QuantPlan against layer sites.
//
// Goals: one Decision per site (quantized with a scheme / unquantized / error) with a trace of
// every rule tried and why it hit or missed; fused sites resolved through their legs.
// Non-goals: format knowledge (the plan carries the semantics), engines (the importer chose the
// dialect's matchers), devices.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "quantpath/ir.h"
#include "quantpath/models.h"

namespace quantpath {

enum class DecisionKind : uint8_t { kQuantized, kUnquantized, kError };
std::string_view DecisionKindName(DecisionKind kind);  // "quantized", "unquantized", "error"

struct TraceStep {
  std::string group;    // rule group name
  std::string subject;  // the path matched (the site, or one leg's path)
  MatchKind kind = MatchKind::kExact;
  std::string pattern;
  Provenance source;
  bool hit = false;
  std::string reason;  // why it hit or missed, in words
};

struct Decision {
  DecisionKind kind = DecisionKind::kUnquantized;
  std::optional<QuantScheme> scheme;  // kQuantized only
  SharedText rule;                    // what decided, e.g. "config.json#/…: fp8 applies to …"
  SharedText detail;                  // engine-facing detail (method class, target) or error text
  bool rule_hit = false;              // a rule's matcher decided (MatchedName names what it hit)
  std::optional<size_t> leg;          // index into the site's legs when a leg's name decided
  std::optional<int64_t> expert;      // the expert whose projection decided
  std::vector<TraceStep> trace;
};

// The name the deciding rule matched: the site's path, one leg's path ("…self_attn.q_proj"), or
// for an MoE site matched through its experts, an expert's projection ("…mlp.experts.0.gate_proj").
// Empty when no rule decided (a kind policy, the default action).
std::string MatchedName(const Decision& decision, const LayerSite& site);

// Decides one site. With `record_trace` false only the deciding rule is kept (plans of models with
// thousands of sites and hundreds of rules would otherwise hold millions of trace steps).
Decision DecideSite(const QuantPlan& plan, const LayerSite& site, bool record_trace = true);
// Decides every site, in order, without traces.
std::vector<Decision> DecideSites(const QuantPlan& plan, const std::vector<LayerSite>& sites);

// A model's attention heads, for splitting QKV layers across tensor-parallel ranks.
struct AttentionHeads {
  int64_t heads = 0;
  int64_t kv_heads = 0;
};
// One rank's shape of a site, as its linear class splits it.
struct RankShape {
  bool split = false;               // tp > 1 splits the checked dimension
  bool merged_column = false;       // a column-parallel class with one partition per leg
  int64_t input = 0;                // K per rank
  std::vector<int64_t> partitions;  // output_partition_sizes
  int64_t moe_intermediate = 0;
};
// The per-rank shape of `site` at tensor-parallel size `tp` by its tp_style (column-, row-
// parallel, replicated, merged; QKV by `heads`, a KV head replicated below one per rank; MoE by
// the experts' intermediate size); nullopt for a class it cannot place or sizes that do not
// divide. ApplyShapeChecks and the tensor-parallel loader share it.
std::optional<RankShape> RankShapeOf(const LayerSite& site, int64_t tp,
                                     const std::optional<AttentionHeads>& heads);
// config.json's num_attention_heads and num_key_value_heads (the text config's); nullopt when it
// does not give them.
std::optional<AttentionHeads> ReadAttentionHeads(const ConfigSources& sources);
// Runs the plan's create_weights shape checks (QuantPlan::shape_checks) on a site decided
// quantized, with its per-rank shape at `tp_size` as its linear class splits it (tp_style:
// column-, row-parallel, replicated, merged; QKV by `heads`, a KV head replicated below one per
// rank; MoE by the experts' intermediate size). The first check that fails turns `decision` into
// the engine's error. Sites whose class or shape the split cannot place are left as decided.
void ApplyShapeChecks(const QuantPlan& plan, const LayerSite& site, int64_t tp_size,
                      const std::optional<AttentionHeads>& heads, Decision* decision);

// Names the tensor of each model-level finding the folder could not name (ModelFinding::
// tensor_listed false) as the format's layout implies it: the first linear site of the decoder
// blocks, by its first leg's checkpoint name, plus the packed suffix
// ("model.layers.0.self_attn.q_proj.qweight").
void NameFindingTensors(const ModelSites& sites, QuantPlan* plan);

}  // namespace quantpath
