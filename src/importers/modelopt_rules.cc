// ModelOpt exclusion lists and the MIXED_PRECISION quantized_layers table as rule groups.
//
// Goals, per dialect:
//   - native: ModelOpt writes `exclude_modules` as fnmatch wildcards over the Hugging Face module
//     names (`*` crosses dots); fused sites are resolved through their legs, which must agree.
//   - vLLM is_layer_excluded @c9a59901: (1) quant_utils.is_layer_skipped (exact with fused shards
//     that must agree, reverse-substring for "experts"), (2) an entry that is a substring of the
//     prefix (or of the prefix without "language_model."), (3) fnmatch of the whole prefix; then
//     every layer whose prefix contains "vision_tower" or "vision_model" is unquantized.
//   - SGLang (newest is_layer_excluded read; `regex` module): is_layer_skipped (@daef1f94: exact
//     with fused shards, LinearBase only), then each pattern as a regex ("." → "\.", "*" → ".*")
//     that must fullmatch the prefix (also without "language_model.") or any dotted part of it,
//     plus the MLA rule: a pattern whose last segment is q_a_proj, q_b_proj, kv_a_proj_with_mqa
//     or kv_b_proj excludes every prefix whose last segment contains it, whatever the layer index.
// Non-goals: the HF→engine name mappers (apply_vllm_mapper's "x*" split, apply_weight_name_mapper)
// belong to the models stage; the recorded cases do not run them.
// Documentation followed: vLLM modelopt.py and utils/quant_utils.py; SGLang modelopt_quant.py
// (is_layer_excluded, _get_quant_method); ENGINES.md 3.1, 3.2, 3.8.
#include <algorithm>
#include <map>
#include <span>
#include <utility>

#include "fmt/format.h"
#include "src/importers/modelopt.h"

namespace quantpath::modelopt {
namespace {

constexpr SiteKindSet kLinearHead = KindBit(SiteKind::kLinear) | KindBit(SiteKind::kLmHead);

constexpr std::string_view kShardsText =
    "ValueError: Detected some but not all shards of {prefix} are quantized. All shards of fused "
    "layers to have the same precision.";

// SGLang's fused_patterns: MLA projections whose name survives inside a fused execution name.
constexpr std::string_view kMlaTails[] = {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa",
                                          "kv_b_proj"};

Action Skip(std::string message, std::string_view detail) {
  return {ActionKind::kSkip, std::nullopt, std::move(message), std::string(detail)};
}

// One rule per (kinds, detail) outcome.
Status AddRules(std::vector<Rule>* rules, MatchKind kind, const std::string& pattern,
                RegexFlavor flavor, const std::string& message, const Provenance& where,
                std::initializer_list<SkipOutcome> outcomes) {
  for (const SkipOutcome& o : outcomes) {
    QP_ASSIGN_OR_RETURN(Rule rule,
                        MakeRule(kind, pattern, flavor, o.kinds, Skip(message, o.detail), where));
    rules->push_back(std::move(rule));
  }
  return {};
}

// Native: ModelOpt's own semantics. Its checkpoints carry no fused layer, yet a split of legs that
// share an input is none of its making: its DeepSeek recipe (examples/deepseek/ptq.py) sets wq_a
// and wkv_a alike, and its exporter asserts that such legs agree (quant_utils.py
// preprocess_linear_fusion); vLLM and SGLang refuse the mix, and TensorRT-LLM decides the fused
// MLA projection by its own name (kv_a_proj_with_mqa) and reads q_a_proj as that precision.
Result<std::vector<RuleGroup>> NativeGroups(const Description& d) {
  RuleGroup group{"exclude_modules",
                  {},
                  FusedPolicy::kLegsMustAgree,
                  "exclude_modules excludes some legs of this fused layer and not others; one "
                  "fused layer cannot hold both precisions (ModelOpt quantizes the legs that "
                  "share an input together, and vLLM, SGLang and TensorRT-LLM build them as one "
                  "layer)"};
  for (const ListEntry& e : d.exclude) {
    QP_RETURN_IF_ERROR(AddRules(&group.rules, MatchKind::kGlob, e.value, RegexFlavor::kPythonRe,
                                fmt::format("{} \"{}\" (fnmatch)", d.exclude_key, e.value), e.where,
                                {{kAllKinds, "excluded"}}));
  }
  return std::vector<RuleGroup>{std::move(group)};
}

// Exclusion outcomes: linear layers and the LM head get UnquantizedLinearMethod, other layers no
// method.
const std::vector<SkipOutcome> kOutcomes = {
    {kLinearHead, "UnquantizedLinearMethod"},
    {kAllKinds & ~kLinearHead, "get_quant_method returned None"}};

// vLLM keeps these towers unquantized after the exclusion list (not for MIXED_PRECISION).
constexpr std::string_view kVllmTowers[] = {"vision_tower", "vision_model"};
constexpr std::string_view kVllm033Towers[] = {"vision_tower", "vision_model",
                                               "vit_large_projector"};

Result<std::vector<RuleGroup>> VllmGroups(const Description& d, const Dialect& dialect) {
  // 0.33's is_layer_skipped honours a fused name listed directly before looking at the shards.
  RuleGroup skipped{"exclude (is_layer_skipped)",
                    {},
                    Since(dialect, DialectId::kVllm033) ? FusedPolicy::kFusedNameThenLegs
                                                        : FusedPolicy::kLegsMustAgree,
                    std::string(kShardsText)};
  QP_RETURN_IF_ERROR(AppendVllmSkipRules({d.exclude_key, d.exclude}, kOutcomes, &skipped.rules));
  RuleGroup wildcard{"exclude (substring, fnmatch)", {}, FusedPolicy::kFusedNameOnly, ""};
  for (const ListEntry& e : d.exclude) {
    // `exclude_module != prefix and exclude_module in prefix`: the equal case is fnmatch's.
    QP_RETURN_IF_ERROR(
        AddRules(&wildcard.rules, MatchKind::kSubstring, e.value, RegexFlavor::kPythonRegexModule,
                 fmt::format("{} \"{}\" is a substring of the prefix", d.exclude_key, e.value),
                 e.where, {kOutcomes[0], kOutcomes[1]}));
    QP_RETURN_IF_ERROR(
        AddRules(&wildcard.rules, MatchKind::kGlob, e.value, RegexFlavor::kPythonRegexModule,
                 fmt::format("{} \"{}\" (fnmatch of the whole prefix)", d.exclude_key, e.value),
                 e.where, {kOutcomes[0], kOutcomes[1]}));
  }
  std::vector<RuleGroup> groups;
  groups.push_back(std::move(skipped));
  groups.push_back(std::move(wildcard));
  if (d.mixed) return groups;
  RuleGroup vision{"vision tower", {}, FusedPolicy::kFusedNameOnly, ""};
  std::span<const std::string_view> towers(kVllmTowers);
  if (Since(dialect, DialectId::kVllm033)) towers = kVllm033Towers;
  for (std::string_view tower : towers) {
    QP_RETURN_IF_ERROR(AddRules(
        &vision.rules, MatchKind::kSubstring, std::string(tower), RegexFlavor::kPythonRegexModule,
        fmt::format("vLLM keeps every layer whose prefix contains \"{}\" unquantized", tower),
        {"vLLM ModelOptQuantConfigBase.get_quant_method", ""},
        {{kAllKinds, "UnquantizedLinearMethod"}}));
  }
  groups.push_back(std::move(vision));
  return groups;
}

// SGLang's glob-to-regex: only "." and "*" are rewritten; other characters keep their regex
// meaning.
std::string SglangRegex(std::string_view pattern, std::string_view star) {
  std::string out;
  for (char c : pattern) {
    if (c == '.') {
      out += "\\.";
    } else if (c == '*') {
      out += star;
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::vector<RuleGroup>> SglangGroups(const Description& d, const Dialect& dialect) {
  const SiteKindSet moe = KindBit(SiteKind::kMoe);
  RuleGroup skipped{"exclude (is_layer_skipped)",
                    {},
                    d.packed_mapping_in_config || Since(dialect, DialectId::kSglang0523)
                        ? FusedPolicy::kLegsMustAgree
                        : FusedPolicy::kFusedNameOnly,
                    std::string(kShardsText)};
  RuleGroup excluded{"exclude (is_layer_excluded)", {}, FusedPolicy::kFusedNameOnly, ""};
  const std::vector<SkipOutcome> outcomes = {{kLinearHead, "UnquantizedLinearMethod"},
                                             {moe, "get_quant_method returned None"}};
  if (Since(dialect, DialectId::kSglang0523)) {
    // 0.5.23's is_layer_skipped matches whole dotted segments (common.h).
    QP_RETURN_IF_ERROR(AppendSglangSkipRules({d.exclude_key, d.exclude}, {outcomes[0]},
                                             SglangShardTable::kBuiltInFallback, &skipped.rules));
  }
  for (const ListEntry& e : d.exclude) {
    if (!Since(dialect, DialectId::kSglang0523)) {
      QP_RETURN_IF_ERROR(AddRules(
          &skipped.rules, MatchKind::kExact, e.value, RegexFlavor::kPythonRegexModule,
          fmt::format("{} \"{}\" (exact name)", d.exclude_key, e.value), e.where, {outcomes[0]}));
    }
    const std::string regex = SglangRegex(e.value, ".*");
    QP_RETURN_IF_ERROR(AddRules(&excluded.rules, MatchKind::kRegexFullMatch,
                                "(?:language_model\\.)?(?:" + regex + ")",
                                RegexFlavor::kPythonRegexModule,
                                fmt::format("{} \"{}\" as regex {} (fullmatch of the prefix)",
                                            d.exclude_key, e.value, regex),
                                e.where, {outcomes[0], outcomes[1]}));
    // A part holds no dots, so "\." never matches inside one and ".*" stays within the part.
    if (e.value.find('.') == std::string::npos) {
      QP_RETURN_IF_ERROR(
          AddRules(&excluded.rules, MatchKind::kRegexFullMatch,
                   "(?:[^.]*\\.)*(?:" + SglangRegex(e.value, "[^.]*") + ")(?:\\.[^.]*)*",
                   RegexFlavor::kPythonRegexModule,
                   fmt::format("{} \"{}\" as regex {} (fullmatch of one dotted part)",
                               d.exclude_key, e.value, regex),
                   e.where, {outcomes[0], outcomes[1]}));
    }
    std::string_view tail = LastSegment(e.value);
    if (std::find(std::begin(kMlaTails), std::end(kMlaTails), tail) != std::end(kMlaTails)) {
      QP_RETURN_IF_ERROR(AddRules(
          &excluded.rules, MatchKind::kRegexFullMatch, fmt::format("(?:.*\\.)?[^.]*{}[^.]*", tail),
          RegexFlavor::kPythonRegexModule,
          fmt::format("{} \"{}\": SGLang excludes every layer whose last segment contains {}, "
                      "whatever its layer index",
                      d.exclude_key, e.value, tail),
          e.where, {outcomes[0], outcomes[1]}));
    }
  }
  return std::vector<RuleGroup>{std::move(skipped), std::move(excluded)};
}

// "model.layers.3.mlp.experts" for "model.layers.3.mlp.experts.17.gate_proj"; empty otherwise.
std::string ExpertsParent(std::string_view path) {
  size_t pos = path.find(".experts.");
  if (pos == std::string_view::npos) return "";
  return std::string(path.substr(0, pos + 8));
}

}  // namespace

Result<std::vector<RuleGroup>> ExclusionGroups(const Description& d, const Dialect& dialect) {
  switch (dialect.engine) {
    case Engine::kNative:
      return NativeGroups(d);
    case Engine::kVllm:
      return VllmGroups(d, dialect);
    case Engine::kSglang:
      return SglangGroups(d, dialect);
  }
  return std::vector<RuleGroup>{};
}

Result<RuleGroup> QuantizedLayersGroup(const Description& d) {
  RuleGroup group{"quantized_layers",
                  {},
                  FusedPolicy::kLegsMustAgree,
                  "quantized_layers gives the legs of this fused layer different algorithms"};
  const std::string& file = d.quantized_layers_file;
  if (!d.quantized_layers->is_object()) {
    return InvalidInput(fmt::format("{}: quantized_layers must be an object, found {}",
                                    Where(file, *d.quantized_layers),
                                    d.quantized_layers->TypeName()));
  }
  // Experts entries also decide their MoE site; the first entry under a parent sets it, and a
  // later entry with another algorithm makes the site an error naming both.
  struct ExpertsSite {
    std::string first_key;
    std::string first_algo;
    Provenance where;
    std::optional<QuantScheme> scheme;
    std::string conflict;
  };
  std::map<std::string, ExpertsSite> experts;
  std::vector<std::string> experts_order;
  for (const auto& [path, entry] : d.quantized_layers->members()) {
    if (!entry.is_object()) {
      return InvalidInput(fmt::format("{}: expected {{\"quant_algo\": …}}, found {}",
                                      Where(file, entry), entry.TypeName()));
    }
    QP_ASSIGN_OR_RETURN(std::optional<std::string> algo, OptionalString(entry, "quant_algo", file));
    const AlgoInfo* info = algo ? FindAlgo(*algo) : nullptr;
    if (info == nullptr) {
      return InvalidInput(fmt::format("{}: quant_algo must be one of {}, found {}",
                                      Where(file, entry), NativeAlgoList(),
                                      algo ? "\"" + *algo + "\"" : std::string("nothing")));
    }
    QP_ASSIGN_OR_RETURN(std::optional<int64_t> group_size, OptionalInt(entry, "group_size", file));
    QP_ASSIGN_OR_RETURN(
        QuantScheme scheme,
        AlgoScheme(*info, group_size ? group_size : d.group_size, Where(file, entry)));
    Action a{ActionKind::kQuantize, scheme,
             fmt::format("quantized_layers[\"{}\"]: {}", path, *algo), *algo};
    QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kExact, path, RegexFlavor::kPythonRe,
                                            kAllKinds, std::move(a), ProvenanceOf(file, entry)));
    group.rules.push_back(std::move(rule));
    std::string parent = ExpertsParent(path);
    if (parent.empty()) continue;
    auto [it, inserted] = experts.try_emplace(parent);
    if (inserted) {
      experts_order.push_back(parent);
      it->second = {path, *algo, ProvenanceOf(file, entry), scheme, ""};
    } else if (it->second.conflict.empty() && !(it->second.scheme == scheme)) {
      it->second.conflict = fmt::format(
          "quantized_layers gives the experts of {} different "
          "schemes: \"{}\" {} and \"{}\" {}",
          parent, it->second.first_key, it->second.first_algo, path, *algo);
    }
  }
  for (const std::string& parent : experts_order) {
    const ExpertsSite& site = experts.at(parent);
    Action a = site.conflict.empty()
                   ? Action{ActionKind::kQuantize, site.scheme,
                            fmt::format("quantized_layers[\"{}\"] (an expert of this layer): {}",
                                        site.first_key, site.first_algo),
                            site.first_algo}
                   : Action{ActionKind::kFail, std::nullopt, site.conflict, ""};
    QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kExact, parent, RegexFlavor::kPythonRe,
                                            KindBit(SiteKind::kMoe), std::move(a), site.where));
    group.rules.push_back(std::move(rule));
  }
  return group;
}

}  // namespace quantpath::modelopt
