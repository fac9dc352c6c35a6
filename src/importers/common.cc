// Helpers shared by the importers; see common.h for the engine semantics each one reproduces.
#include "src/importers/common.h"

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
                             std::vector<Rule>* rules) {
  for (const ListEntry& entry : list.entries) {
    std::string_view stripped = entry.value;
    while (!stripped.empty() && stripped.back() == '.') stripped.remove_suffix(1);
    std::string segments = R"((?:.*\.)?)" + PyRegexEscape(stripped) + R"((?:\..*)?)";
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
  return {};
}

}  // namespace quantpath
