// MIXED_PRECISION as the current engine releases decide it: `_resolve_quant_algo` over
// quantized_layers, as exact-path rule groups.
//
// Goals: the lookup order of vLLM 0.33 and SGLang 0.5.23 ModelOptMixedPrecisionConfig:
//   1. a key equal to one of the prefix's candidates (the prefix itself; "lm_head" for a prefix
//      ending in ".lm_head"; "language_model.model." ↔ "model.language_model."; SGLang also
//      "model.language_model." → "model." and "model." → "model.language_model.");
//   2. a fused prefix: the algorithms of the shards listed (under any candidate of its parent);
//      one algorithm decides, several raise "Mixed quant_algo within fused layer", shards not
//      listed do not count;
//   3. the first key (document order) below a candidate of the prefix;
//   4. vLLM only: "<parent>.experts" takes the first key below "<parent>.";
// then the algorithm's method for the layer kind (unknown algorithms: UnquantizedLinearMethod for
// linear layers and the LM head, no method for experts). vLLM tests the exclusion list first;
// SGLang resolves first (so a fused conflict raises even for an excluded layer) and then tests
// the exclusion list.
// Non-goals: the HF→engine name mappers (apply_dict on the keys) belong to the models stage.
// Documentation followed: vLLM 0.33.0 modelopt.py ModelOptMixedPrecisionConfig
// (_resolve_quant_algo, _quantized_layer_prefix_candidates, get_quant_method); SGLang 0.5.23
// modelopt_quant.py ModelOptMixedPrecisionConfig (same names).
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "fmt/format.h"
#include "src/importers/modelopt.h"

namespace quantpath::modelopt {
namespace {

constexpr SiteKindSet kLinearHead = KindBit(SiteKind::kLinear) | KindBit(SiteKind::kLmHead);
constexpr SiteKindSet kMoe = KindBit(SiteKind::kMoe);

// vLLM's fixed fallback when the model's mapping lacks a fused name (its step 4 for qkv_proj and
// gate_up_proj); SGLang reads the mapping from the config object only.
const std::vector<std::pair<std::string, std::vector<std::string>>> kVllmFusedFallback = {
    {"qkv_proj", {"q_proj", "k_proj", "v_proj"}}, {"gate_up_proj", {"gate_proj", "up_proj"}}};

struct Entry {
  std::string key;
  std::string algo;  // upper-cased, as the engines compare it
  std::optional<int64_t> group_size;
  Provenance where;
};

// Every prefix whose candidate list holds `key` (the inverse of _quantized_layer_prefix_candidates;
// "lm_head" is handled by a dotted-suffix matcher instead).
std::vector<std::string> PrefixesFor(const std::string& key, bool sglang) {
  constexpr std::string_view kLmModel = "language_model.model.";
  constexpr std::string_view kModelLm = "model.language_model.";
  constexpr std::string_view kModel = "model.";
  std::vector<std::string> out = {key};
  auto add = [&](std::string p) {
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(std::move(p));
  };
  if (key.starts_with(kModelLm)) {
    std::string rest = key.substr(kModelLm.size());
    add(std::string(kLmModel) + rest);
    if (sglang && !rest.starts_with("language_model.")) add(std::string(kModel) + rest);
  } else if (key.starts_with(kLmModel)) {
    add(std::string(kModelLm) + key.substr(kLmModel.size()));
  } else if (sglang && key.starts_with(kModel)) {
    add(std::string(kModelLm) + key.substr(kModel.size()));
  }
  return out;
}

// "a.b.c" → {"a", "a.b"}: the dotted prefixes a key lies below.
std::vector<std::string> Parents(const std::string& key) {
  std::vector<std::string> out;
  for (size_t pos = key.find('.'); pos != std::string::npos; pos = key.find('.', pos + 1)) {
    out.push_back(key.substr(0, pos));
  }
  return out;
}

struct Builder {
  const Description& d;
  const std::vector<AlgoMethods>& methods;
  bool sglang;

  // Two rules for `pattern`: linear layers and the LM head, then experts, each with the method
  // the engine picks for `e`'s algorithm.
  Status Add(RuleGroup* group, MatchKind kind, const std::string& pattern, const Entry& e,
             const std::string& why) const {
    const AlgoMethods* row = FindMethods(methods, e.algo);
    const AlgoInfo* info = FindAlgo(e.algo);
    std::optional<QuantScheme> scheme;
    if (row != nullptr && info != nullptr) {
      QP_ASSIGN_OR_RETURN(
          QuantScheme s,
          AlgoScheme(*info, e.group_size ? e.group_size : d.group_size, e.where.ToString()));
      scheme = s;
    }
    const std::string message =
        e.key.empty() ? std::string("not in quantized_layers")
                      : fmt::format("quantized_layers[\"{}\"] ({}): {}", e.key, why, e.algo);
    auto action = [&](std::string_view method, std::string_view none) {
      if (method.empty()) {
        return Action{ActionKind::kSkip, std::nullopt, message + ": no method for this layer kind",
                      std::string(none)};
      }
      return Action{ActionKind::kQuantize, scheme, message, std::string(method)};
    };
    QP_ASSIGN_OR_RETURN(
        Rule linear, MakeRule(kind, pattern, RegexFlavor::kPythonRe, kLinearHead,
                              action(row ? row->linear : "", "UnquantizedLinearMethod"), e.where));
    QP_ASSIGN_OR_RETURN(
        Rule moe, MakeRule(kind, pattern, RegexFlavor::kPythonRe, kMoe,
                           action(row ? row->moe : "", "get_quant_method returned None"), e.where));
    group->rules.push_back(std::move(linear));
    group->rules.push_back(std::move(moe));
    return {};
  }
};

Result<std::vector<Entry>> ReadEntries(const Description& d) {
  std::vector<Entry> entries;
  const std::string& file = d.quantized_layers_file;
  for (const auto& [key, info] : d.quantized_layers->members()) {
    const Json* algo = info.is_object() ? info.FindNonNull("quant_algo") : nullptr;
    if (algo == nullptr || !algo->is_string()) {
      return InvalidInput(fmt::format("{}: expected {{\"quant_algo\": \"…\"}}, found {}",
                                      Where(file, info), ToJson(info)));
    }
    QP_ASSIGN_OR_RETURN(std::optional<int64_t> group_size, OptionalInt(info, "group_size", file));
    entries.push_back({key, Upper(algo->string_value()), group_size, ProvenanceOf(file, info)});
  }
  return entries;
}

}  // namespace

Result<std::vector<RuleGroup>> EngineMixedGroups(const Description& d, const Dialect& dialect,
                                                 std::vector<RuleGroup> exclusion,
                                                 const std::vector<AlgoMethods>& methods) {
  const bool sglang = dialect.engine == Engine::kSglang;
  QP_ASSIGN_OR_RETURN(std::vector<Entry> entries, ReadEntries(d));
  Builder b{d, methods, sglang};

  // 1. Direct lookup.
  RuleGroup direct{"quantized_layers (listed)", {}, FusedPolicy::kFusedNameOnly, ""};
  std::set<std::string> listed;
  for (const Entry& e : entries) {
    if (e.key == "lm_head") {
      QP_RETURN_IF_ERROR(b.Add(&direct, MatchKind::kDottedSuffix, e.key, e, "listed"));
      listed.insert(e.key);
      continue;
    }
    for (const std::string& p : PrefixesFor(e.key, sglang)) {
      QP_RETURN_IF_ERROR(b.Add(&direct, MatchKind::kExact, p, e, "listed"));
      listed.insert(p);
    }
  }

  // 2. Fused prefixes through their listed shards.
  std::vector<std::pair<std::string, std::vector<std::string>>> mapping = d.packed;
  if (!sglang) {
    for (const auto& fallback : kVllmFusedFallback) {
      bool present = std::any_of(mapping.begin(), mapping.end(),
                                 [&](const auto& m) { return m.first == fallback.first; });
      if (!present) mapping.push_back(fallback);
    }
  }
  struct Fused {
    std::vector<const Entry*> shards;  // the first entry of each distinct algorithm
  };
  std::map<std::string, Fused> fused;
  std::vector<std::string> fused_order;
  for (const Entry& e : entries) {
    size_t dot = e.key.rfind('.');
    if (dot == std::string::npos) continue;
    const std::string parent = e.key.substr(0, dot);
    const std::string shard = e.key.substr(dot + 1);
    for (const auto& [name, shards] : mapping) {
      if (std::find(shards.begin(), shards.end(), shard) == shards.end()) continue;
      for (const std::string& base : PrefixesFor(parent, sglang)) {
        const std::string path = base + "." + name;
        if (listed.contains(path)) continue;
        auto [it, inserted] = fused.try_emplace(path);
        if (inserted) fused_order.push_back(path);
        bool seen = std::any_of(it->second.shards.begin(), it->second.shards.end(),
                                [&](const Entry* s) { return s->algo == e.algo; });
        if (!seen) it->second.shards.push_back(&e);
      }
    }
  }
  RuleGroup conflicts{
      "quantized_layers (fused shards disagree)", {}, FusedPolicy::kFusedNameOnly, ""};
  RuleGroup shards{"quantized_layers (fused shards)", {}, FusedPolicy::kFusedNameOnly, ""};
  for (const std::string& path : fused_order) {
    const Fused& f = fused.at(path);
    if (f.shards.size() == 1) {
      QP_RETURN_IF_ERROR(b.Add(&shards, MatchKind::kExact, path, *f.shards.front(),
                               "a shard of this fused layer"));
      continue;
    }
    // The engine prints a Python set: each algorithm once, in an order that depends on
    // PYTHONHASHSEED; sorted is the order the recordings (seed 0) show for these names.
    std::vector<std::string> algos;
    for (const Entry* s : f.shards) algos.push_back(fmt::format("'{}'", s->algo));
    std::sort(algos.begin(), algos.end());
    algos.erase(std::unique(algos.begin(), algos.end()), algos.end());
    Action fail{ActionKind::kFail, std::nullopt,
                fmt::format("ValueError: Mixed quant_algo within fused layer {{prefix}}: {{{}}}. "
                            "All shards must use the same quantization.",
                            Join(algos, ", ")),
                ""};
    QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kExact, path, RegexFlavor::kPythonRe,
                                            kAllKinds & ~KindBit(SiteKind::kAttention), fail,
                                            f.shards.front()->where));
    conflicts.rules.push_back(std::move(rule));
  }

  // 3. A prefix that keys lie below; 4. vLLM: "<parent>.experts" for keys below "<parent>.".
  RuleGroup below{"quantized_layers (keys below the prefix)", {}, FusedPolicy::kFusedNameOnly, ""};
  RuleGroup experts{
      "quantized_layers (experts of the parent)", {}, FusedPolicy::kFusedNameOnly, ""};
  std::set<std::string> below_seen;
  std::set<std::string> experts_seen;
  for (const Entry& e : entries) {
    for (const std::string& parent : Parents(e.key)) {
      for (const std::string& p : PrefixesFor(parent, sglang)) {
        if (below_seen.insert(p).second) {
          QP_RETURN_IF_ERROR(b.Add(&below, MatchKind::kExact, p, e, "a key below this prefix"));
        }
      }
      if (!sglang && experts_seen.insert(parent + ".experts").second) {
        QP_RETURN_IF_ERROR(b.Add(&experts, MatchKind::kExact, parent + ".experts", e,
                                 "a key below the experts' parent"));
      }
    }
  }

  // Not listed: linear layers and the LM head stay unquantized, experts get no method.
  RuleGroup rest{"quantized_layers (not listed)", {}, FusedPolicy::kFusedNameOnly, ""};
  Entry none{"", "", std::nullopt, {d.quantized_layers_file, ""}};
  QP_RETURN_IF_ERROR(b.Add(&rest, MatchKind::kGlob, "*", none, "no key for this layer"));

  std::vector<RuleGroup> groups;
  if (sglang) groups.push_back(std::move(conflicts));
  for (RuleGroup& g : exclusion) groups.push_back(std::move(g));
  if (!sglang) groups.push_back(std::move(conflicts));
  groups.push_back(std::move(direct));
  groups.push_back(std::move(shards));
  groups.push_back(std::move(below));
  if (!sglang) groups.push_back(std::move(experts));
  groups.push_back(std::move(rest));
  return groups;
}

}  // namespace quantpath::modelopt
