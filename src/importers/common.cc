// Helpers shared by the importers; see common.h for the engine semantics each one reproduces.
#include "src/importers/common.h"

#include <algorithm>
#include <array>
#include <utility>

#include "fmt/format.h"

namespace quantpath {
namespace {

// Appends one rule per outcome for `entry`, all with the same matcher.
Status AppendForOutcomes(MatchKind kind, const std::string& pattern, RegexFlavor flavor,
                         const std::vector<SkipOutcome>& outcomes, const std::string& message,
                         const ListEntry& entry, std::vector<Rule>* rules) {
  for (const SkipOutcome& outcome : outcomes) {
    Action skip{ActionKind::kSkip, std::nullopt, message, outcome.detail};
    QP_ASSIGN_OR_RETURN(
        Rule rule, MakeRule(kind, pattern, flavor, outcome.kinds, std::move(skip), entry.where));
    rules->push_back(std::move(rule));
  }
  return {};
}

bool MentionsExperts(std::string_view entry) {
  return entry.find("experts") != std::string_view::npos;
}

std::string_view StripTrailingDots(std::string_view entry) {
  while (!entry.empty() && entry.back() == '.') entry.remove_suffix(1);
  return entry;
}

// SGLang 0.5.23 `_FALLBACK_FUSED_SHARDS` (layers/quantization/utils.py), in table order.
struct FusedShards {
  std::string_view fused;
  std::array<std::string_view, 3> shards;
  size_t count;
};
constexpr FusedShards kSglangFallbackShards[] = {
    {"qkv_proj", {"q_proj", "k_proj", "v_proj"}, 3},
    {"gate_up_proj", {"gate_proj", "up_proj", ""}, 2},
};

// "(?:qkv_proj|gate_up_proj)": the last segment of a site the fallback table fuses.
std::string FallbackFusedAlternation() {
  std::vector<std::string> names;
  for (const FusedShards& f : kSglangFallbackShards) names.push_back(PyRegexEscape(f.fused));
  return "(?:" + Join(names, "|") + ")";
}

// Whether the dotted run `shorter` (empty, or ending in '.') ends `longer` on a segment boundary.
bool IsSegmentSuffix(std::string_view longer, std::string_view shorter) {
  if (shorter.empty() || longer == shorter) return true;
  return longer.size() > shorter.size() && longer.ends_with(shorter) &&
         longer[longer.size() - shorter.size() - 1] == '.';
}

// The shard rules of one fallback fused name. Each entry whose last segment is a shard name
// contributes its parent run ("model.layers.0.self_attn." or "" for a bare shard name); a site
// "<…><parent><fused>" sees every parent that is a segment suffix of its own, so the rule of the
// longest matching parent (emitted first) decides from the union of their shards.
Status AppendFallbackShardRules(const FusedShards& table, const SkipList& list,
                                const std::vector<SkipOutcome>& outcomes,
                                std::vector<Rule>* rules) {
  struct Parent {
    std::string run;
    uint32_t covered = 0;  // bit i: shard i is listed under this parent
    const ListEntry* entry = nullptr;
  };
  std::vector<Parent> parents;
  for (const ListEntry& entry : list.entries) {
    std::string_view stripped = StripTrailingDots(entry.value);
    size_t dot = stripped.rfind('.');
    std::string_view last = dot == std::string_view::npos ? stripped : stripped.substr(dot + 1);
    for (size_t i = 0; i < table.count; ++i) {
      if (table.shards[i] != last) continue;
      std::string run(dot == std::string_view::npos ? "" : stripped.substr(0, dot + 1));
      auto it = std::find_if(parents.begin(), parents.end(),
                             [&](const Parent& p) { return p.run == run; });
      if (it == parents.end()) it = parents.insert(parents.end(), {run, 0, &entry});
      it->covered |= 1u << i;
    }
  }
  auto segments = [](const std::string& run) { return std::count(run.begin(), run.end(), '.'); };
  std::stable_sort(parents.begin(), parents.end(), [&](const Parent& a, const Parent& b) {
    return segments(a.run) > segments(b.run);
  });
  const uint32_t all = (1u << table.count) - 1;
  SiteKindSet kinds = 0;
  for (const SkipOutcome& outcome : outcomes) kinds |= outcome.kinds;
  for (const Parent& parent : parents) {
    uint32_t covered = 0;
    for (const Parent& other : parents) {
      if (IsSegmentSuffix(parent.run, other.run)) covered |= other.covered;
    }
    std::string pattern = R"((?:.*\.)?)" + PyRegexEscape(parent.run) + PyRegexEscape(table.fused);
    if (covered == all) {
      std::string message = fmt::format(
          "{} lists every shard of this {} under \"{}\" (SGLang is_layer_skipped: the model's "
          "packed mapping does not name {}, so its built-in shard table is used)",
          list.key, table.fused, parent.run, table.fused);
      QP_RETURN_IF_ERROR(AppendForOutcomes(MatchKind::kRegexFullMatch, pattern,
                                           RegexFlavor::kPythonRe, outcomes, message, *parent.entry,
                                           rules));
      continue;
    }
    Action fail{ActionKind::kFail, std::nullopt, std::string(kShardsDisagreeText), ""};
    QP_ASSIGN_OR_RETURN(Rule rule,
                        MakeRule(MatchKind::kRegexFullMatch, pattern, RegexFlavor::kPythonRe, kinds,
                                 std::move(fail), parent.entry->where));
    rules->push_back(std::move(rule));
  }
  return {};
}

}  // namespace

Result<std::optional<std::vector<ListEntry>>> ReadEntryList(const Json& object,
                                                            std::string_view key,
                                                            std::string_view file) {
  const Json* list = object.FindNonNull(key);
  if (list == nullptr) return std::optional<std::vector<ListEntry>>();
  if (!list->is_array()) {
    return InvalidInput(fmt::format("{}: expected a list of module names for \"{}\", found {}",
                                    Where(file, *list), key, list->TypeName()));
  }
  std::vector<ListEntry> entries;
  entries.reserve(list->items().size());
  for (const Json& item : list->items()) {
    if (!item.is_string()) {
      return InvalidInput(fmt::format("{}: expected a module name (string) in \"{}\", found {}",
                                      Where(file, item), key, item.TypeName()));
    }
    entries.push_back({item.string_value(), ProvenanceOf(file, item)});
  }
  return std::optional<std::vector<ListEntry>>(std::move(entries));
}

bool EmbeddedMethodIs(const ConfigSources& sources, std::string_view method) {
  std::optional<Located> embedded = sources.Embedded();
  if (!embedded || !embedded->value->is_object()) return false;
  const Json* found = embedded->value->FindNonNull("quant_method");
  return found != nullptr && found->is_string() && ToLower(found->string_value()) == method;
}

Result<Located> EmbeddedObject(const ConfigSources& sources, std::string_view format) {
  std::optional<Located> embedded = sources.Embedded();
  if (!embedded) {
    return InvalidInput(fmt::format(
        "{} is described only by an embedded quantization_config, and the model's files ({}) "
        "hold none",
        format, Join(sources.FileNames(), ", ")));
  }
  const Json& q = *embedded->value;
  if (!q.is_object()) {
    return InvalidInput(fmt::format("{}: expected an object, found {}",
                                    Where(embedded->where.file, q), q.TypeName()));
  }
  return *embedded;
}

Provenance ProvenanceOf(std::string_view file, const Json& value) {
  return {std::string(file), value.pointer()};
}

std::string PyRegexEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 2);
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    bool word = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
                u == '_' || u >= 0x80;
    if (!word) out += '\\';
    out += c;
  }
  return out;
}

Result<Rule> MakeRule(MatchKind kind, std::string pattern, RegexFlavor flavor, SiteKindSet kinds,
                      Action action, Provenance source) {
  Result<Matcher> matcher = Matcher::Create(kind, std::move(pattern), flavor);
  if (!matcher.ok()) return matcher.status().WithContext(source.ToString());
  return Rule{std::move(matcher).value(), kinds, std::move(action), std::move(source)};
}

Status AppendTransformersSkipRules(const SkipList& list, const std::vector<SkipOutcome>& outcomes,
                                   RegexFlavor flavor, std::vector<Rule>* rules) {
  for (const ListEntry& entry : list.entries) {
    // The pattern text is transformers' own f-string, so the key keeps its regex meaning and a
    // key with unbalanced groups changes the pattern the same way it does in Python.
    std::string boundary = fmt::format(R"((?:{})(?:(?<=\.)|(?=\.|$)))", entry.value);
    QP_RETURN_IF_ERROR(AppendForOutcomes(
        MatchKind::kRegexMatch, boundary, flavor, outcomes,
        fmt::format("{} \"{}\" (transformers: regex match from the start, ending at a module "
                    "boundary)",
                    list.key, entry.value),
        entry, rules));
    QP_RETURN_IF_ERROR(AppendForOutcomes(
        MatchKind::kRegexFullMatch, ".*" + PyRegexEscape(entry.value), flavor, outcomes,
        fmt::format("{} \"{}\" (transformers: the module name ends with it)", list.key,
                    entry.value),
        entry, rules));
  }
  return {};
}

Status AppendVllmSkipRules(const SkipList& list, const std::vector<SkipOutcome>& outcomes,
                           std::vector<Rule>* rules) {
  for (const ListEntry& entry : list.entries) {
    QP_RETURN_IF_ERROR(AppendForOutcomes(
        MatchKind::kExact, entry.value, RegexFlavor::kPythonRegexModule, outcomes,
        fmt::format("{} \"{}\" (vLLM is_layer_skipped: exact name)", list.key, entry.value), entry,
        rules));
    if (!MentionsExperts(entry.value)) continue;
    QP_RETURN_IF_ERROR(AppendForOutcomes(
        MatchKind::kReverseSubstring, entry.value, RegexFlavor::kPythonRegexModule, outcomes,
        fmt::format("{} \"{}\" (vLLM is_layer_skipped: an experts entry that contains the path)",
                    list.key, entry.value),
        entry, rules));
  }
  return {};
}

Status AppendSglangSkipRules(const SkipList& list, const std::vector<SkipOutcome>& outcomes,
                             SglangShardTable shard_table, std::vector<Rule>* rules) {
  const bool fallback = shard_table == SglangShardTable::kBuiltInFallback;
  const std::string fused = fallback ? FallbackFusedAlternation() : "";
  // With the fallback table, sites ending in a fused name are decided from their shards below.
  const std::string unfused_only = fallback ? R"((?!(?:.*\.)?)" + fused + "$)" : "";
  for (const ListEntry& entry : list.entries) {
    std::string_view stripped = StripTrailingDots(entry.value);
    std::string segments = unfused_only + R"((?:.*\.)?)" + PyRegexEscape(stripped) + R"((?:\..*)?)";
    QP_RETURN_IF_ERROR(AppendForOutcomes(
        MatchKind::kRegexFullMatch, segments, RegexFlavor::kPythonRe, outcomes,
        fmt::format("{} \"{}\" (SGLang is_layer_skipped: whole dotted segments of the path)",
                    list.key, entry.value),
        entry, rules));
    if (!MentionsExperts(entry.value)) continue;
    QP_RETURN_IF_ERROR(AppendForOutcomes(
        MatchKind::kReverseSubstring, entry.value, RegexFlavor::kPythonRe, outcomes,
        fmt::format("{} \"{}\" (SGLang is_layer_skipped: an experts entry that contains the path)",
                    list.key, entry.value),
        entry, rules));
  }
  if (!fallback) return {};
  // An entry before the fused name reaches every shard alike.
  for (const ListEntry& entry : list.entries) {
    std::string before_fused =
        R"((?:.*\.)?)" + PyRegexEscape(StripTrailingDots(entry.value)) + R"(\.(?:.*\.)?)" + fused;
    QP_RETURN_IF_ERROR(AppendForOutcomes(
        MatchKind::kRegexFullMatch, before_fused, RegexFlavor::kPythonRe, outcomes,
        fmt::format("{} \"{}\" (SGLang is_layer_skipped: whole dotted segments of every shard of "
                    "this fused layer)",
                    list.key, entry.value),
        entry, rules));
  }
  for (const FusedShards& table : kSglangFallbackShards) {
    QP_RETURN_IF_ERROR(AppendFallbackShardRules(table, list, outcomes, rules));
  }
  return {};
}

Result<std::vector<RuleGroup>> SglangShouldIgnoreGroups(const SkipList& list,
                                                        const ShouldIgnoreSemantics& semantics,
                                                        const std::vector<SkipOutcome>& outcomes) {
  RuleGroup fused_name{"ignore (fused name listed)", {}, FusedPolicy::kFusedNameOnly, ""};
  RuleGroup ignore{"ignore", {}, FusedPolicy::kLegsMustAgree, std::string(semantics.disagree)};
  for (const ListEntry& entry : list.entries) {
    const bool regex = entry.value.starts_with("re:");
    if (!regex) {
      // `layer_name not in ignore`: for unfused sites this is a subset of the next group.
      QP_RETURN_IF_ERROR(AppendForOutcomes(
          MatchKind::kExact, entry.value, RegexFlavor::kPythonRe, outcomes,
          fmt::format("{} \"{}\" names this layer exactly", list.key, entry.value), entry,
          &fused_name.rules));
    }
    QP_RETURN_IF_ERROR(AppendForOutcomes(
        regex ? MatchKind::kRegexMatch : semantics.plain,
        regex ? entry.value.substr(3) : entry.value, RegexFlavor::kPythonRe, outcomes,
        fmt::format(
            "{} \"{}\" ({})", list.key, entry.value,
            regex ? std::string_view("regex, re.match from the start") : semantics.plain_words),
        entry, &ignore.rules));
  }
  std::vector<RuleGroup> groups;
  groups.push_back(std::move(fused_name));
  groups.push_back(std::move(ignore));
  return groups;
}

const std::vector<std::string>& VllmAttentionClasses() {
  static const std::vector<std::string> classes = {"Attention",
                                                   "ChunkedLocalAttention",
                                                   "CrossAttention",
                                                   "EncoderOnlyAttention",
                                                   "PrefillPrefixLMAttention",
                                                   "RSWAAttention",
                                                   "StaticSinkAttention",
                                                   "WhisperCausalAttentionWithBlockPooling"};
  return classes;
}

}  // namespace quantpath
