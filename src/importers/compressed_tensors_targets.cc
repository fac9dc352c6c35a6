// compressed-tensors `ignore` and `config_groups[*].targets` as rule groups, per dialect.
//
// Goals: the exact string semantics of each reference, chosen as data (the rows of
// compressed_tensors_dialects.cc):
//   - native = the compressed-tensors library (utils/match.py): `match_name` is exact equality or,
//     for "re:" entries, Python `re.match` (anchored at the start only); `_match_class` compares
//     the module's class names exactly. `match_targets` orders hits as exact names, then regexes,
//     then classes, each sorted by the target string, and apply.py takes the first. The reference
//     model is the Hugging Face one, where every linear layer is a torch.nn.Linear and fused layers
//     do not exist: fused sites are resolved through their legs, which must agree.
//   - vLLM / SGLang = compressed_tensors/utils.py as recorded in oracle/: `should_ignore_layer`
//     (vLLM exact-or-regex, SGLang case-insensitive substring-or-regex; a fused layer's shards must
//     agree, and a fused name listed exactly is ignored through the `layer_name not in ignore`
//     guard), then `find_matched_target`: every target against the name (exact or regex, config
//     order), then every target against the engine class name (case-insensitive substring), then
//     `_match_fused_layer` (each shard by exact or regex; the first shard's target decides).
//   - vLLM 0.33 / SGLang 0.5.23 (oracle/releases/*/cases/): the same helpers with the release's
//   changes
//     (see the rows), and experts layers looked up through expert 0's gate/up/down projections:
//     one group per experts layer holding the ignore entries, the targets and the fallback, under
//     which the three projections must agree (get_moe_method / get_moe_scheme).
// Non-goals: the engines' scheme classes and device checks.
// Documentation followed: compressed-tensors@ac8e2ba8 utils/match.py and lifecycle/apply.py;
// vLLM compressed_tensors/utils.py and compressed_tensors.py @e9476487; SGLang
// compressed_tensors/utils.py @4e75f468.
#include <algorithm>
#include <utility>

#include "fmt/format.h"
#include "src/importers/compressed_tensors.h"

namespace quantpath::ct {
namespace {

constexpr SiteKindSet kLinearLike = KindBit(SiteKind::kLinear) | KindBit(SiteKind::kLmHead) |
                                    KindBit(SiteKind::kRouter) | KindBit(SiteKind::kMoe);

// Module classes of the Hugging Face reference model that a class target can name. Every other
// class (decoder layers, attention blocks, MLP containers) is not a layer site.
struct LibraryClass {
  std::string_view name;
  SiteKindSet kinds;
  std::string_view why;
};
constexpr LibraryClass kLibraryClasses[] = {
    {"Linear", kLinearLike, "every linear layer, LM head, router and expert is a torch.nn.Linear"},
    {"Embedding", KindBit(SiteKind::kEmbedding), "the token embedding is a torch.nn.Embedding"},
};

bool IsRegex(std::string_view entry) { return entry.starts_with("re:"); }

const LibraryClass* FindLibraryClass(std::string_view name) {
  for (const LibraryClass& c : kLibraryClasses) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// The name matcher of one entry: "re:" → Python re.match, else `plain`.
Result<Rule> NameRule(const std::string& entry, MatchKind plain, const CtDialect& dialect,
                      SiteKindSet kinds, Action action, const Provenance& where) {
  if (IsRegex(entry)) {
    return MakeRule(MatchKind::kRegexMatch, entry.substr(3), dialect.regex, kinds,
                    std::move(action), where);
  }
  return MakeRule(plain, entry, dialect.regex, kinds, std::move(action), where);
}

// The site kinds the ignore and target groups decide: experts layers looked up through their
// projections have a group of their own.
SiteKindSet LayerKinds(const CtDialect& d) {
  return d.experts_through_legs ? kAllKinds & ~KindBit(SiteKind::kMoe) : kAllKinds;
}

// What an ignore hit means per kind: the LM head may have a detail of its own.
std::vector<SkipOutcome> IgnoreOutcomes(const CtDialect& d) {
  const SiteKindSet kinds = LayerKinds(d);
  if (d.lm_head_unquantized_detail.empty()) return {{kinds, std::string(d.ignore_detail)}};
  const SiteKindSet lm_head = KindBit(SiteKind::kLmHead);
  return {{kinds & ~lm_head, std::string(d.ignore_detail)},
          {lm_head, std::string(d.lm_head_unquantized_detail)}};
}

std::string_view IgnoreHow(const ListEntry& e, const CtDialect& d) {
  return IsRegex(e.value) ? std::string_view("regex, re.match from the start")
                          : d.ignore_plain_words;
}

// The library's _match_class for one entry, as a rule over the site kinds that class covers.
Result<std::optional<Rule>> LibraryClassRule(const std::string& entry, Action action,
                                             const Provenance& where) {
  const LibraryClass* cls = FindLibraryClass(entry);
  if (cls == nullptr) return std::optional<Rule>();
  action.message = fmt::format("{} (class {}: {})", action.message, cls->name, cls->why);
  QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kGlob, "*", RegexFlavor::kPythonRe, cls->kinds,
                                          std::move(action), where));
  return std::optional<Rule>(std::move(rule));
}

bool LooksLikeClassName(std::string_view entry) {
  return !entry.empty() && entry.find('.') == std::string_view::npos && entry[0] >= 'A' &&
         entry[0] <= 'Z';
}

}  // namespace

Result<std::vector<RuleGroup>> IgnoreGroups(const std::vector<ListEntry>& ignore,
                                            const CtDialect& dialect,
                                            std::vector<std::string>* notes) {
  const std::vector<SkipOutcome> outcomes = IgnoreOutcomes(dialect);
  if (dialect.ignore_shape == IgnoreShape::kSglangShouldIgnore) {
    return SglangShouldIgnoreGroups(
        {"ignore", ignore},
        {dialect.ignore_plain, dialect.ignore_plain_words, dialect.ignore_disagree}, outcomes);
  }
  std::vector<RuleGroup> groups;
  if (dialect.ignore_shape == IgnoreShape::kListedFusedName) {
    // should_ignore_layer only expands a fused layer into shards when its own name is not listed;
    // when it is, the layer is matched as itself (and is ignored). For unfused layers this group
    // is a subset of the next one.
    RuleGroup fused_name{"ignore (fused name listed)", {}, FusedPolicy::kFusedNameOnly, ""};
    for (const ListEntry& e : ignore) {
      if (IsRegex(e.value)) continue;
      for (const SkipOutcome& o : outcomes) {
        Action a{ActionKind::kSkip, std::nullopt,
                 fmt::format("ignore \"{}\" names this layer exactly", e.value), o.detail};
        QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kExact, e.value, dialect.regex, o.kinds,
                                                std::move(a), e.where));
        fused_name.rules.push_back(std::move(rule));
      }
    }
    groups.push_back(std::move(fused_name));
  }
  // vLLM 0.33 find_matching_patterns: every entry against the fused name first, then the shards.
  const FusedPolicy fused = dialect.ignore_shape == IgnoreShape::kFusedNameThenLegs
                                ? FusedPolicy::kFusedNameThenLegs
                                : FusedPolicy::kLegsMustAgree;
  RuleGroup group{"ignore", {}, fused, std::string(dialect.ignore_disagree)};
  for (const ListEntry& e : ignore) {
    for (const SkipOutcome& o : outcomes) {
      Action a{ActionKind::kSkip, std::nullopt,
               fmt::format("ignore \"{}\" ({})", e.value, IgnoreHow(e, dialect)), o.detail};
      QP_ASSIGN_OR_RETURN(Rule rule,
                          NameRule(e.value, dialect.ignore_plain, dialect, o.kinds, a, e.where));
      group.rules.push_back(std::move(rule));
      if (!dialect.ignore_classes || IsRegex(e.value)) continue;
      QP_ASSIGN_OR_RETURN(std::optional<Rule> cls, LibraryClassRule(e.value, a, e.where));
      if (cls) {
        group.rules.push_back(std::move(*cls));
      } else if (LooksLikeClassName(e.value)) {
        notes->push_back(
            fmt::format("{}: ignore \"{}\" looks like a class name; it ignores only "
                        "modules of exactly that class, none of which is a layer site",
                        e.where.ToString(), e.value));
      }
    }
  }
  groups.push_back(std::move(group));
  return groups;
}

namespace {

// An action of `actions` placed for target `t`: the dialect's detail pattern and the match kind.
Action PlacedAction(const TargetRef& t, const Action& base, std::string_view pattern,
                    std::string_view how, std::string_view method = {}) {
  // A kFail action's message is the engine's error text, kept as it is.
  if (base.kind == ActionKind::kFail) return base;
  Action a = base;
  const std::string group =
      t.alias_of.empty() ? base.detail.str() : fmt::format("{} via {}", base.detail, t.alias_of);
  a.detail = fmt::format(fmt::runtime(pattern), t.target, group, method);
  a.message = fmt::format("{}: target \"{}\" ({})", a.message, t.target, how);
  return a;
}

std::string_view NameHow(const TargetRef& t) {
  return IsRegex(t.target) ? "regex, re.match" : "exact name";
}
constexpr std::string_view kClassHow = "case-insensitive substring of the layer class";

// match_targets: sorted by ("re:" in target, target); names first, then classes.
Result<RuleGroup> LibraryTargetGroup(const std::vector<TargetRef>& targets,
                                     const std::vector<Action>& actions, const CtDialect& dialect,
                                     std::vector<std::string>* notes) {
  RuleGroup group{"targets", {}, dialect.target_fused, std::string(dialect.target_disagree)};
  std::vector<const TargetRef*> sorted;
  for (const TargetRef& t : targets) sorted.push_back(&t);
  std::stable_sort(sorted.begin(), sorted.end(), [](const TargetRef* a, const TargetRef* b) {
    return std::make_pair(IsRegex(a->target), a->target) <
           std::make_pair(IsRegex(b->target), b->target);
  });
  for (const TargetRef* t : sorted) {
    QP_ASSIGN_OR_RETURN(
        Rule rule, NameRule(t->target, MatchKind::kExact, dialect, kAllKinds,
                            PlacedAction(*t, actions[t->group], dialect.target_detail, NameHow(*t)),
                            t->where));
    group.rules.push_back(std::move(rule));
  }
  for (const TargetRef* t : sorted) {
    if (IsRegex(t->target)) continue;
    QP_ASSIGN_OR_RETURN(
        std::optional<Rule> cls,
        LibraryClassRule(t->target,
                         PlacedAction(*t, actions[t->group], dialect.target_detail, "class"),
                         t->where));
    if (cls) {
      group.rules.push_back(std::move(*cls));
    } else if (LooksLikeClassName(t->target)) {
      notes->push_back(fmt::format(
          "{}: target \"{}\" names a module class that is not a layer site (attention or "
          "container modules: attention quantization is not modelled)",
          t->where.ToString(), t->target));
    }
  }
  return group;
}

// The engines' name pass (exact or re.match, config order) over `kinds`.
Status AppendNameRules(const std::vector<TargetRef>& targets, const std::vector<Action>& actions,
                       const CtDialect& dialect, SiteKindSet kinds, std::string_view pattern,
                       const std::vector<std::string_view>& methods, std::vector<Rule>* rules) {
  for (const TargetRef& t : targets) {
    QP_ASSIGN_OR_RETURN(Rule rule, NameRule(t.target, MatchKind::kExact, dialect, kinds,
                                            PlacedAction(t, actions[t.group], pattern, NameHow(t),
                                                         methods.empty() ? "" : methods[t.group]),
                                            t.where));
    rules->push_back(std::move(rule));
  }
  return {};
}

// The engines' class pass: a plain target as a case-insensitive substring of the layer class. A
// "re:" target is also tried against the class name there (re.match); that case is not modelled
// (no class name starts like a layer-path regex in practice).
Status AppendClassRules(const std::vector<TargetRef>& targets, const std::vector<Action>& actions,
                        const CtDialect& dialect, SiteKindSet kinds, std::string_view pattern,
                        const std::vector<std::string_view>& methods, std::vector<Rule>* rules) {
  for (const TargetRef& t : targets) {
    if (IsRegex(t.target)) continue;
    QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kClassName, t.target, dialect.regex, kinds,
                                            PlacedAction(t, actions[t.group], pattern, kClassHow,
                                                         methods.empty() ? "" : methods[t.group]),
                                            t.where));
    rules->push_back(std::move(rule));
  }
  return {};
}

// Experts layers through expert 0's projections: each projection is ignored, or takes the first
// target by name, then by class (the experts class), else the dialect's fallback; the three must
// agree.
Result<RuleGroup> ExpertsGroup(const std::vector<TargetRef>& targets,
                               const std::vector<Action>& actions,
                               const std::vector<Action>& experts,
                               const std::vector<ListEntry>& ignore, const CtDialect& dialect) {
  const CtExperts& e = dialect.experts;
  const SiteKindSet moe = KindBit(SiteKind::kMoe);
  RuleGroup group{"experts (expert 0's gate_proj, up_proj, down_proj)",
                  {},
                  FusedPolicy::kLegsMustAgree,
                  std::string(e.disagree)};
  group.moe_through_expert_legs = true;
  for (const ListEntry& entry : ignore) {
    Action a{ActionKind::kSkip, std::nullopt,
             fmt::format("ignore \"{}\" ({})", entry.value, IgnoreHow(entry, dialect)),
             std::string(e.ignored_detail)};
    QP_ASSIGN_OR_RETURN(Rule rule, NameRule(entry.value, dialect.ignore_plain, dialect, moe,
                                            std::move(a), entry.where));
    group.rules.push_back(std::move(rule));
  }
  // The method class sits in the experts action's detail, the group name in the linear one's.
  std::vector<Action> named = experts;
  std::vector<std::string_view> methods;
  for (size_t i = 0; i < experts.size(); ++i) {
    methods.push_back(experts[i].detail);
    named[i].detail = actions[i].detail;
  }
  QP_RETURN_IF_ERROR(
      AppendNameRules(targets, named, dialect, moe, e.detail, methods, &group.rules));
  QP_RETURN_IF_ERROR(
      AppendClassRules(targets, named, dialect, moe, e.detail, methods, &group.rules));
  if (!targets.empty()) {
    QP_ASSIGN_OR_RETURN(
        Rule rule, MakeRule(MatchKind::kGlob, "*", dialect.regex, moe, e.no_target, Provenance{}));
    group.rules.push_back(std::move(rule));
  }
  return group;
}

}  // namespace

Result<std::vector<RuleGroup>> TargetGroups(const std::vector<TargetRef>& targets,
                                            const std::vector<Action>& actions,
                                            const std::vector<Action>& experts,
                                            const std::vector<ListEntry>& ignore,
                                            const CtDialect& dialect,
                                            std::vector<std::string>* notes) {
  std::vector<RuleGroup> groups;
  if (dialect.target_order == TargetOrder::kLibrary) {
    QP_ASSIGN_OR_RETURN(RuleGroup g, LibraryTargetGroup(targets, actions, dialect, notes));
    groups.push_back(std::move(g));
    return groups;
  }
  const SiteKindSet kinds = LayerKinds(dialect);
  const SiteKindSet class_kinds =
      dialect.lm_head_by_name_only ? kinds & ~KindBit(SiteKind::kLmHead) : kinds;
  RuleGroup group{"targets", {}, dialect.target_fused, std::string(dialect.target_disagree)};
  QP_RETURN_IF_ERROR(
      AppendNameRules(targets, actions, dialect, kinds, dialect.target_detail, {}, &group.rules));
  if (dialect.target_order == TargetOrder::kNameFusedClass) {
    // The fused shards are tried before the class: the class pass is a group of its own, matched
    // on the fused layer itself.
    groups.push_back(std::move(group));
    group = RuleGroup{"targets (class)", {}, FusedPolicy::kFusedNameOnly, ""};
  }
  QP_RETURN_IF_ERROR(AppendClassRules(targets, actions, dialect, class_kinds, dialect.target_detail,
                                      {}, &group.rules));
  if (!dialect.lm_head_unquantized_detail.empty()) {
    // An LM head no target reaches gets no method at all (None), whatever the default action.
    Action none{ActionKind::kSkip, std::nullopt, "no target names the LM head",
                std::string(dialect.lm_head_unquantized_detail)};
    QP_ASSIGN_OR_RETURN(Rule rule,
                        MakeRule(MatchKind::kGlob, "*", dialect.regex, KindBit(SiteKind::kLmHead),
                                 std::move(none), Provenance{}));
    group.rules.push_back(std::move(rule));
  }
  groups.push_back(std::move(group));
  if (dialect.experts_through_legs) {
    QP_ASSIGN_OR_RETURN(RuleGroup g, ExpertsGroup(targets, actions, experts, ignore, dialect));
    groups.push_back(std::move(g));
  }
  return groups;
}

}  // namespace quantpath::ct
