// Source precedence, copy comparison and the integer scheme of the GPTQ / AWQ / AutoRound
// importers; see gptq_family.h.
#include "src/importers/gptq_family.h"

#include <algorithm>
#include <utility>

#include "fmt/format.h"
#include "src/importers/common.h"

namespace quantpath {
namespace {

constexpr size_t kExcerptChars = 80;

// The value a copy gives a decision field: its own, else (absent or null) the field's default,
// else none.
std::optional<Json> Effective(const Json& object, const DecisionField& field) {
  if (const Json* v = object.FindNonNull(field.key)) return *v;
  if (!field.default_value) return std::nullopt;
  Result<Json> parsed = ParseJson(*field.default_value, "default");
  return parsed.ok() ? std::optional<Json>(*parsed) : std::nullopt;
}

std::string FieldWhere(const ConfigCopy& copy, std::string_view key) {
  if (const Json* v = copy.json->Find(key)) return Where(copy.file(), *v);
  return fmt::format("{} (no \"{}\")", copy.where.ToString(), key);
}

}  // namespace

Result<std::optional<FamilyConfig>> FindFamilyConfig(const ConfigSources& sources,
                                                     std::span<const std::string_view> standalone,
                                                     AcceptsConfig accepts) {
  // As the engines' get_quant_config: every file whose name ends with one of the format's names
  // (they glob *.json and test str.endswith), in the folder's order.
  std::vector<ConfigCopy> files;
  for (const SourceFile& file : sources.files()) {
    bool named = std::any_of(standalone.begin(), standalone.end(),
                             [&](std::string_view name) { return file.name.ends_with(name); });
    if (named && file.root.is_object() && accepts(file.root, true)) {
      files.push_back({&file.root, {file.name, ""}});
    }
  }
  std::optional<Located> embedded = sources.Embedded();
  if (embedded && embedded->value->is_object() && accepts(*embedded->value, false)) {
    return std::optional<FamilyConfig>(FamilyConfig{{embedded->value, embedded->where}, files});
  }
  // An embedded block of another format owns the folder; a leftover standalone file does not.
  if (embedded || files.empty()) return std::optional<FamilyConfig>();
  if (files.size() > 1) {
    std::vector<std::string> names;
    for (const ConfigCopy& f : files) names.push_back(f.file());
    return InvalidInput(fmt::format(
        "config.json has no quantization_config and several standalone files describe the "
        "format ({}); remove all but one",
        Join(names, ", ")));
  }
  return std::optional<FamilyConfig>(FamilyConfig{files.front(), {}});
}

Status CompareCopies(const FamilyConfig& config, std::span<const DecisionField> decision_fields,
                     std::vector<std::string>* notes) {
  const ConfigCopy& primary = config.primary;
  for (const ConfigCopy& other : config.standalone_copies) {
    for (const DecisionField& field : decision_fields) {
      std::optional<Json> a = Effective(*primary.json, field);
      std::optional<Json> b = Effective(*other.json, field);
      if (!a && !b) continue;
      if (a && b && *a == *b) continue;
      return InvalidInput(fmt::format(
          "{} and {} disagree on \"{}\" ({} vs {}), which changes per-layer decisions; make the "
          "two files agree",
          FieldWhere(primary, field.key), FieldWhere(other, field.key), field.key,
          a ? Excerpt(*a) : "absent", b ? Excerpt(*b) : "absent"));
    }
    for (const Json::Member& m : primary.json->members()) {
      bool decides = std::any_of(decision_fields.begin(), decision_fields.end(),
                                 [&](const DecisionField& f) { return f.key == m.first; });
      const Json* theirs = other.json->Find(m.first);
      if (decides || theirs == nullptr || *theirs == m.second) continue;
      notes->push_back(fmt::format(
          "warning: {} = {} but {} = {}; the embedded value is used (the field changes no "
          "decision)",
          Where(primary.file(), m.second), Excerpt(m.second), Where(other.file(), *theirs),
          Excerpt(*theirs)));
    }
  }
  return {};
}

void NoteOtherFields(const ConfigCopy& copy, std::span<const std::string_view> read_keys,
                     std::vector<std::string>* notes) {
  for (const Json::Member& m : copy.json->members()) {
    if (std::find(read_keys.begin(), read_keys.end(), m.first) != read_keys.end()) continue;
    notes->push_back(
        fmt::format("{} = {}: recorded by the exporting tool; no decision depends on it",
                    Where(copy.file(), m.second), Excerpt(m.second)));
  }
}

std::optional<std::string> QuantMethod(const Json& config) {
  const Json* m = config.FindNonNull("quant_method");
  if (m == nullptr || !m->is_string()) return std::nullopt;
  return ToLower(m->string_value());
}

std::string Excerpt(const Json& value) {
  std::string text = ToJson(value);
  if (text.size() <= kExcerptChars) return text;
  return text.substr(0, kExcerptChars) + "…";
}

std::string_view PyBool(bool value) { return value ? "True" : "False"; }

Result<int64_t> RequiredInt(const ConfigCopy& copy, std::string_view key,
                            std::string_view missing_text) {
  QP_ASSIGN_OR_RETURN(std::optional<int64_t> v, OptionalInt(*copy.json, key, copy.file()));
  if (!v) return InvalidInput(fmt::format("{}: {}", copy.where.ToString(), missing_text));
  return *v;
}

std::optional<QuantScheme> IntScheme(const IntWeight& weight) {
  std::optional<QDType> dtype = ParseQDType(fmt::format("int{}", weight.bits));
  if (!dtype) return std::nullopt;
  QuantScheme scheme;
  scheme.weight.dtype = *dtype;
  if (weight.group_size == -1) {
    scheme.weight.granularity = Granularity::kPerChannel;
  } else {
    scheme.weight.granularity = Granularity::kGroup;
    scheme.weight.group_size = weight.group_size;
  }
  scheme.weight.symmetric = weight.symmetric;
  scheme.weight.load = weight.load;
  return scheme;
}

Result<RuleGroup> KindMethodGroup(SiteKindSet kinds, Action action, Provenance source) {
  // "" is a substring of every path.
  QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kSubstring, "", RegexFlavor::kPythonRe, kinds,
                                          std::move(action), std::move(source)));
  return RuleGroup{"experts", {std::move(rule)}, FusedPolicy::kFusedNameOnly, ""};
}

Result<Rule> MakeNoneOfRule(const std::vector<std::string>& entries, std::string_view lead,
                            std::string_view tail, SiteKindSet kinds, Action action,
                            Provenance source) {
  if (entries.empty()) {
    // "" is a substring of every path.
    return MakeRule(MatchKind::kSubstring, "", RegexFlavor::kPythonRe, kinds, std::move(action),
                    std::move(source));
  }
  std::vector<std::string> escaped;
  escaped.reserve(entries.size());
  for (const std::string& e : entries) escaped.push_back(PyRegexEscape(e));
  std::string pattern = fmt::format("(?!{}(?:{}){})", lead, Join(escaped, "|"), tail);
  return MakeRule(MatchKind::kRegexMatch, std::move(pattern), RegexFlavor::kPythonRe, kinds,
                  std::move(action), std::move(source));
}

}  // namespace quantpath
