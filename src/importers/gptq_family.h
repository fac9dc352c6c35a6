// Helpers shared by the importers of the integer weight-only family (GPTQ, AWQ, AutoRound): where
// the description lives (embedded block or standalone file), how two copies are compared, which
// fields are only noted, and the integer scheme they all describe. The bitsandbytes and mxfp4
// importers read their embedded block through the same source helpers.
//
// Goals: one reading of the source-precedence rule of DESIGN.md ("Source precedence"): the
// embedded `quantization_config` wins, a standalone file is read only when there is none, several
// candidate standalone files are an error, and when both exist a disagreement on a field that
// changes a decision is an error naming both files and the field (other disagreements are
// warnings in the plan's notes). Non-goals: any one format's field meanings or dialect choices.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/sources.h"

namespace quantpath {

// One copy of a format's description and where it sits.
struct ConfigCopy {
  const Json* json = nullptr;  // an object
  Provenance where;            // file + JSON pointer of the object ("" for a file's root)
  const std::string& file() const { return where.file; }
};

// The description an importer reads, plus the standalone copies that exist beside an embedded one.
struct FamilyConfig {
  ConfigCopy primary;
  std::vector<ConfigCopy> standalone_copies;  // only when `primary` is embedded
};

// Whether a JSON object is this format's description (e.g. "quant_method is gptq"). `standalone`
// says whether it is a standalone file's root, which may omit quant_method where its file name
// already names the format.
using AcceptsConfig = bool (*)(const Json& config, bool standalone);

// The embedded description when `accepts` it; otherwise the standalone file whose name ends with
// one of `standalone` (so "my_quantize_config.json" counts, as in the engines) that `accepts` its
// root. No description → nullopt. Two accepted standalone files and no
// embedded block → an error naming both (the engines refuse to guess).
Result<std::optional<FamilyConfig>> FindFamilyConfig(const ConfigSources& sources,
                                                     std::span<const std::string_view> standalone,
                                                     AcceptsConfig accepts);

// A field whose value changes decisions. An absent (or null) field counts as `default_value` when
// it has one; absent without a default never equals a present value.
struct DecisionField {
  std::string_view key;
  std::optional<std::string_view> default_value;  // JSON text, e.g. "false"
};

// Compares the primary copy with each standalone copy field by field (member order of the copies
// themselves is irrelevant; order inside a value, such as GPTQ `dynamic`, is kept). A decision
// field that differs is an error naming both files, pointers and the field; any other field
// present in both with different values becomes a warning in `notes`.
Status CompareCopies(const FamilyConfig& config, std::span<const DecisionField> decision_fields,
                     std::vector<std::string>* notes);

// Adds a note for every member of the primary copy whose key is not in `read_keys`: those fields
// (calibration data, damping, kernel hints of the exporting tool) are shown and change nothing.
void NoteOtherFields(const ConfigCopy& copy, std::span<const std::string_view> read_keys,
                     std::vector<std::string>* notes);

// The config's quant_method in lower case (the engines compare it case-insensitively), or nullopt
// when it is absent or not a string.
std::optional<std::string> QuantMethod(const Json& config);

// A short JSON rendering of `value` for messages (long lists and objects are cut).
std::string Excerpt(const Json& value);

// Python's spelling of a boolean in engine texts ("True" / "False").
std::string_view PyBool(bool value);

// "config.json#/quantization_config/bits: expected …": a required integer member.
Result<int64_t> RequiredInt(const ConfigCopy& copy, std::string_view key,
                            std::string_view missing_text);

// The weight of an integer weight-only scheme (activations stay in 16 bits): INT<bits>, one scale
// per `group_size` inputs or per output channel when `group_size` is -1.
struct IntWeight {
  int64_t bits = 4;
  int64_t group_size = 128;  // -1 = per channel
  bool symmetric = true;
  LoadFacts load;
};
// Null when `bits` names no integer QDType (the caller has validated the width already).
std::optional<QuantScheme> IntScheme(const IntWeight& weight);

// The group "experts": one rule deciding every site of `kinds` with `action` — an engine's own
// method for a kind (MoE experts) whose detail differs from the default action's. It goes after
// the groups that may skip those sites.
Result<RuleGroup> KindMethodGroup(SiteKindSet kinds, Action action, Provenance source);

// A rule that hits every path none of `entries` matches, as Python would test one entry with
// re.match(lead + escaped(entry) + tail, path): lead ".*" and tail "" is "entry in path", lead ".*"
// and tail "\Z" is "path.endswith(entry)", lead "" is "path.startswith(entry)". The matcher is a
// re.match of one negative look-ahead over the alternation of the escaped entries, which is exactly
// "no entry matches"; with no entries at all the rule hits every path.
Result<Rule> MakeNoneOfRule(const std::vector<std::string>& entries, std::string_view lead,
                            std::string_view tail, SiteKindSet kinds, Action action,
                            Provenance source);

}  // namespace quantpath
