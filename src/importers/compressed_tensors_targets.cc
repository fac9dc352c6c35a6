// compressed-tensors `ignore` and `config_groups[*].targets` as rule groups, per dialect.
//
// Goals: the exact string semantics of each reference, chosen as data (kDialects below):
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

// The engines' text for fused shards that disagree on `ignore` (SGLang keeps the word "vLLM").
constexpr std::string_view kEngineShardsText =
    "ValueError: Found a different quantization schemes for {legs} in {prefix}. vLLM requires "
    "all to use the same scheme.";

const CtDialect kDialects[] = {
    {
        .engine = Engine::kNative,
        .regex = RegexFlavor::kPythonRe,
        .ignore_plain = MatchKind::kExact,
        .ignore_classes = true,
        .exact_fused_name_ignored = false,
        .ignore_disagree = "compressed-tensors ignores some legs of this fused layer and not "
                           "others; one fused layer cannot hold both precisions",
        .ignore_detail = "ignored",
        .library_order = true,
        .target_fused = FusedPolicy::kLegsMustAgree,
        .target_disagree = "the legs of this fused layer fall in config groups with different "
                           "schemes; one fused layer cannot hold both",
        .target_detail = "config group {1} (target {0})",
        .no_target = {ActionKind::kSkip, std::nullopt,
                      "no target matches: compressed-tensors leaves the module as it is",
                      "not targeted"},
        .reading = {.validate_scheme = true,
                    .presets = true,
                    .weights_required = false,
                    .parse_output = true},
        .drop_attention_groups = false,
        .fused_moe_alias = false,
        .sparsity_fails = false,
        .kv = KvPolicy::kSchemeOnly,
        .attention_detail = "",
        .lm_head = KindPolicy::kRules,
        .router = KindPolicy::kRules,
        .embedding = KindPolicy::kRules,
    },
    {
        .engine = Engine::kVllm,
        .regex = RegexFlavor::kPythonRegexModule,
        .ignore_plain = MatchKind::kExact,
        .ignore_classes = false,
        .exact_fused_name_ignored = true,
        .ignore_disagree = kEngineShardsText,
        .ignore_detail = "UnquantizedLinearMethod",
        .library_order = false,
        .target_fused = FusedPolicy::kAllLegsFirstRule,
        .target_disagree = "",
        .target_detail = "CompressedTensorsLinearMethod[target={0} group={1}]",
        .no_target = {ActionKind::kSkip, std::nullopt,
                      "no target matches: vLLM falls back to UnquantizedLinearMethod",
                      "UnquantizedLinearMethod"},
        .reading = {.validate_scheme = false,
                    .presets = false,
                    .weights_required = true,
                    .parse_output = false},
        .drop_attention_groups = true,
        .fused_moe_alias = true,
        .sparsity_fails = true,
        .kv = KvPolicy::kEngineMethod,
        .attention_detail = "CompressedTensorsKVCacheMethod",
        .lm_head = KindPolicy::kRules,
        .router = KindPolicy::kUnquantized,
        .embedding = KindPolicy::kUnquantized,
    },
    {
        .engine = Engine::kSglang,
        .regex = RegexFlavor::kPythonRe,
        .ignore_plain = MatchKind::kSubstringIgnoreCase,
        .ignore_classes = false,
        .exact_fused_name_ignored = true,
        .ignore_disagree = kEngineShardsText,
        .ignore_detail = "Unquantized: helpers: should_ignore_layer=True",
        .library_order = false,
        .target_fused = FusedPolicy::kAllLegsFirstRule,
        .target_disagree = "",
        .target_detail = "helpers: find_matched_target={0} (group={1})",
        .no_target = {ActionKind::kFail, std::nullopt,
                      "ValueError: Unable to find matching target for {prefix} in the "
                      "compressed-tensors config.",
                      ""},
        .reading = {.validate_scheme = false,
                    .presets = false,
                    .weights_required = true,
                    .parse_output = false},
        .drop_attention_groups = false,
        .fused_moe_alias = true,
        .sparsity_fails = false,
        .kv = KvPolicy::kEngineMethod,
        .attention_detail = "CompressedTensorsKVCacheMethod",
        .lm_head = KindPolicy::kRules,
        .router = KindPolicy::kUnquantized,
        .embedding = KindPolicy::kUnquantized,
    },
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
                      Action action, const Provenance& where) {
  if (IsRegex(entry)) {
    return MakeRule(MatchKind::kRegexMatch, entry.substr(3), dialect.regex, kAllKinds,
                    std::move(action), where);
  }
  return MakeRule(plain, entry, dialect.regex, kAllKinds, std::move(action), where);
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

const CtDialect& DialectFor(Engine engine) {
  for (const CtDialect& d : kDialects) {
    if (d.engine == engine) return d;
  }
  return kDialects[0];
}

Result<std::vector<RuleGroup>> IgnoreGroups(const std::vector<ListEntry>& ignore,
                                            const CtDialect& dialect,
                                            std::vector<std::string>* notes) {
  std::vector<RuleGroup> groups;
  const Action skip{ActionKind::kSkip, std::nullopt, "", std::string(dialect.ignore_detail)};
  if (dialect.exact_fused_name_ignored) {
    // should_ignore_layer only expands a fused layer into shards when its own name is not listed;
    // when it is, the layer is matched as itself (and is ignored). For unfused layers this group
    // is a subset of the next one.
    RuleGroup fused_name{"ignore (fused name listed)", {}, FusedPolicy::kFusedNameOnly, ""};
    for (const ListEntry& e : ignore) {
      if (IsRegex(e.value)) continue;
      Action a = skip;
      a.message = fmt::format("ignore \"{}\" names this layer exactly", e.value);
      QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kExact, e.value, dialect.regex, kAllKinds,
                                              std::move(a), e.where));
      fused_name.rules.push_back(std::move(rule));
    }
    groups.push_back(std::move(fused_name));
  }
  RuleGroup group{"ignore", {}, FusedPolicy::kLegsMustAgree, std::string(dialect.ignore_disagree)};
  for (const ListEntry& e : ignore) {
    Action a = skip;
    a.message =
        fmt::format("ignore \"{}\" ({})", e.value,
                    IsRegex(e.value)                            ? "regex, re.match from the start"
                    : dialect.ignore_plain == MatchKind::kExact ? "exact name"
                                                                : "case-insensitive substring");
    QP_ASSIGN_OR_RETURN(Rule rule, NameRule(e.value, dialect.ignore_plain, dialect, a, e.where));
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
  groups.push_back(std::move(group));
  return groups;
}

Result<RuleGroup> TargetGroup(const std::vector<TargetRef>& targets,
                              const std::vector<Action>& actions, const CtDialect& dialect,
                              std::vector<std::string>* notes) {
  RuleGroup group{"targets", {}, dialect.target_fused, std::string(dialect.target_disagree)};
  auto action_for = [&](const TargetRef& t, std::string_view how) {
    Action a = actions[t.group];
    a.detail = fmt::format(fmt::runtime(dialect.target_detail), t.target, a.detail);
    a.message = fmt::format("{}: target \"{}\" ({})", a.message, t.target, how);
    return a;
  };
  if (dialect.library_order) {
    // match_targets: sorted by ("re:" in target, target); names first, then classes.
    std::vector<const TargetRef*> sorted;
    for (const TargetRef& t : targets) sorted.push_back(&t);
    std::stable_sort(sorted.begin(), sorted.end(), [](const TargetRef* a, const TargetRef* b) {
      return std::make_pair(IsRegex(a->target), a->target) <
             std::make_pair(IsRegex(b->target), b->target);
    });
    for (const TargetRef* t : sorted) {
      QP_ASSIGN_OR_RETURN(
          Rule rule, NameRule(t->target, MatchKind::kExact, dialect,
                              action_for(*t, IsRegex(t->target) ? "regex, re.match" : "exact name"),
                              t->where));
      group.rules.push_back(std::move(rule));
    }
    for (const TargetRef* t : sorted) {
      if (IsRegex(t->target)) continue;
      QP_ASSIGN_OR_RETURN(std::optional<Rule> cls,
                          LibraryClassRule(t->target, action_for(*t, "class"), t->where));
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
  // The engines' find_matched_target: the name pass over every target, then the class pass.
  // A "re:" target is also tried against the class name there (re.match); that case is not
  // modelled (no class name starts like a layer-path regex in practice).
  for (const TargetRef& t : targets) {
    QP_ASSIGN_OR_RETURN(
        Rule rule,
        NameRule(t.target, MatchKind::kExact, dialect,
                 action_for(t, IsRegex(t.target) ? "regex, re.match" : "exact name"), t.where));
    group.rules.push_back(std::move(rule));
  }
  for (const TargetRef& t : targets) {
    if (IsRegex(t.target)) continue;
    QP_ASSIGN_OR_RETURN(
        Rule rule,
        MakeRule(MatchKind::kClassName, t.target, dialect.regex, kAllKinds,
                 action_for(t, "case-insensitive substring of the layer class"), t.where));
    group.rules.push_back(std::move(rule));
  }
  return group;
}

}  // namespace quantpath::ct
