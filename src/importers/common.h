// Helpers shared by the importers: config lists read with provenance, rules built with file#pointer
// errors, and the exclusion-list semantics of the reference implementations that several formats
// call (transformers' `should_convert_module`, vLLM's and SGLang's `is_layer_skipped`).
//
// Goals: one place per engine helper, so every format that calls the same engine function gets the
// same matchers and the same comments on its quirks. Non-goals: any format's own fields, fused
// policies and kind policies (each importer chooses those for its dialect).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/sources.h"

namespace quantpath {

// One string of a config list and where it sits, e.g. config.json#/quantization_config/ignore/3.
struct ListEntry {
  std::string value;
  Provenance where;
};

// A named exclusion list as an importer will use it.
struct SkipList {
  std::string key;  // the config key the entries came from ("ignored_layers", …), for messages
  std::vector<ListEntry> entries;
};

// What a hit of an exclusion rule means for the site kinds it may decide. One rule is made per
// entry and outcome, so each kind gets its own engine-facing detail.
struct SkipOutcome {
  SiteKindSet kinds = 0;
  std::string detail;  // e.g. "UnquantizedLinearMethod", "UnquantizedFusedMoEMethod"
};

// `key` of `object` as a list of strings with each item's provenance. Absent or JSON null →
// nullopt (callers that must tell the two apart look the key up themselves). Another type, or a
// non-string item, is an error naming `file` and the offending pointer.
Result<std::optional<std::vector<ListEntry>>> ReadEntryList(const Json& object,
                                                            std::string_view key,
                                                            std::string_view file);

// The embedded quantization_config of a format that is read only from there (`format` names it in
// messages), checked to be an object. No embedded description is an error naming the model's
// files; a value of another type is an error naming its file and pointer.
Result<Located> EmbeddedObject(const ConfigSources& sources, std::string_view format);
// Whether the embedded description's quant_method is `method` (compared lower-cased).
bool EmbeddedMethodIs(const ConfigSources& sources, std::string_view method);

// The provenance of `value` inside `file`.
Provenance ProvenanceOf(std::string_view file, const Json& value);

// Escapes `text` so that a Python regex matches it literally: every ASCII character other than a
// letter, digit or underscore gets a backslash (always legal in Python and PCRE2; digits are left
// alone because "\1" would be a back-reference), other bytes (UTF-8) pass unchanged.
std::string PyRegexEscape(std::string_view text);

// A rule whose matcher is compiled now; a pattern the flavour rejects is an error naming `source`.
Result<Rule> MakeRule(MatchKind kind, std::string pattern, RegexFlavor flavor, SiteKindSet kinds,
                      Action action, Provenance source);

// ---------------------------------------------------------------------------------------------
// Exclusion-list semantics. Each Append* adds, for every entry in list order and every outcome,
// the rules that make a site "skipped" exactly when the engine helper says so for that site's
// path. Fused sites are resolved by the planner through the group's FusedPolicy; the comments say
// which policy reproduces the engine.

// Hugging Face transformers 5.23 `should_convert_module(name, patterns)`: a module is not converted
// when, for some pattern `key`,
//   (a) `re.match(rf"(?:{key})(?:(?<=\.)|(?=\.|$))", name)`: `key` is a Python regex matched from
//       the start of the module name and ending at a module boundary (just after a '.', or before a
//       '.' or the end), so "model.layers.1" skips "model.layers.1.mlp.down_proj" but not
//       "model.layers.10…", "mlp.gate" does not reach "mlp.gate_up_proj", and "model.layers.*"
//       skips every layer; or
//   (b) `name.endswith(key)`: a plain string suffix, not aligned to segments ("proj" skips every
//       "*_proj", "fc1" skips "…layers.23.fc1").
// Two rules per entry: kRegexMatch with the pattern text built exactly as transformers builds it
// (so a key that is not a valid Python regex is an error here, as it raises re.error there), and
// kRegexFullMatch ".*<escaped key>" for the suffix test (paths hold no newlines). transformers
// decides every nn.Linear on its own (HF names q_proj, k_proj, …): the caller resolves fused sites
// through their legs.
Status AppendTransformersSkipRules(const SkipList& list, const std::vector<SkipOutcome>& outcomes,
                                   RegexFlavor flavor, std::vector<Rule>* rules);

// vLLM `is_layer_skipped(prefix, ignored_layers, fused_mapping)` in full (non-substring) mode, as
// recorded in oracle/ (vllm@1436674bcb) and as in vLLM 0.33.0's quant_utils.py:
//   - fused prefix (last segment in the packed mapping): only the shards are looked up, each by
//     exact list membership; they must agree, else ValueError(kShardsDisagreeText). In the
//     recorded code the fused name itself being listed has no effect → FusedPolicy::kLegsMustAgree;
//     0.33.0 honours a directly listed fused name first → FusedPolicy::kFusedNameThenLegs (the
//     exact rule below is that test).
//   - a prefix containing "experts": only entries containing "experts" count, in reverse:
//     `prefix in entry` (so "model.layers.1.mlp.experts.0.gate_proj" skips
//     "model.layers.1.mlp.experts", "mlp.experts" skips nothing).
//   - otherwise exact membership.
// Rules per entry: kExact, plus kReverseSubstring when the entry contains "experts". Exact is the
// equality case of the reverse test, so the union reproduces both branches for every path that
// contains "experts" and for every path that is not a substring of an experts entry; the one
// difference is a fused leg that is a proper substring of an experts entry (vLLM tests legs by
// exact membership only), e.g. leg "…shared_experts.gate_proj" against an entry
// "…shared_experts.gate_proj.weight".
Status AppendVllmSkipRules(const SkipList& list, const std::vector<SkipOutcome>& outcomes,
                           std::vector<Rule>* rules);

// Which fused-layer shards SGLang's is_layer_skipped uses when the model's packed mapping does not
// name a fused prefix's last segment.
enum class SglangShardTable : uint8_t {
  kNone,             // the prefix is treated as unfused (the code the old recording came from)
  kBuiltInFallback,  // 0.5.23 `_FALLBACK_FUSED_SHARDS`: qkv_proj → q/k/v, gate_up_proj → gate/up
};

// SGLang 0.5.23 `is_layer_skipped(prefix, ignored_layers, fused_mapping)` with
// `_module_path_match(ignored, prefix)`: after stripping trailing dots, the entry must equal a run
// of whole dotted segments of the prefix ("." + entry + "." in "." + prefix + "."), so
// "self_attn", "layers.0.mlp" and "model.layers.0" all match "model.layers.0.mlp.down_proj" (as
// far as the entry reaches) while "mlp.gate" does not match "mlp.gate_up_proj". Fused prefixes
// (model mapping, else the qkv_proj / gate_up_proj fallback) check every shard with the same test
// and raise kShardsDisagreeText on disagreement → FusedPolicy::kLegsMustAgree. A non-fused prefix
// containing "experts" is also skipped when it is a substring of an entry containing "experts".
// Rules per entry: kRegexFullMatch "(?:.*\.)?<escaped entry>(?:\..*)?", plus kReverseSubstring
// when the entry contains "experts" (same caveat on fused legs as vLLM's). Not reproduced: the
// non-fused branch's extra test for paths containing "gate_up_proj" without ending in it (both
// "gate_proj" and "up_proj" spellings listed exactly), which no execution name reaches.
//
// With SglangShardTable::kBuiltInFallback, a site without legs whose last segment is qkv_proj or
// gate_up_proj (the model's mapping does not name it) is decided from its shards as SGLang does:
// the per-entry rule above does not apply to it; an entry that is a run of segments before the
// fused name skips it (it reaches every shard); otherwise the entries ending in a shard name whose
// parent run is a suffix of the site's parent decide, as one rule per parent: every shard listed
// → skipped, some → kShardsDisagreeText. Not reproduced: `prefix.replace(fused, shard)` also
// rewrites an earlier occurrence of the fused name inside the path, and the experts rule still
// applies to such a site (neither is reached by any execution name).
Status AppendSglangSkipRules(const SkipList& list, const std::vector<SkipOutcome>& outcomes,
                             SglangShardTable shard_table, std::vector<Rule>* rules);

// SGLang's compressed_tensors/utils.py `should_ignore_layer(layer_name, ignore, fused_mapping)`,
// which W8A8Int8Config also calls. A fused prefix whose own name is listed exactly is ignored
// (the `layer_name not in ignore` guard); otherwise its shards are looked up and must agree, else
// ValueError(`disagree`). An entry "re:<pattern>" is Python re.match from the start; a plain
// entry uses `plain`: 0.5.23 `check_equal_or_regex_match` is kDottedSuffix (equal, or the path
// ends with "." + entry, so a parent module never swallows its children), the recorded code
// kSubstringIgnoreCase. Two groups: "ignore (fused name listed)" (kFusedNameOnly, exact) and
// "ignore" (kLegsMustAgree).
struct ShouldIgnoreSemantics {
  MatchKind plain = MatchKind::kDottedSuffix;
  std::string_view plain_words;  // how a plain entry matches, for messages
  std::string_view disagree;     // the engine's ValueError text ({legs}, {prefix} placeholders)
};
Result<std::vector<RuleGroup>> SglangShouldIgnoreGroups(const SkipList& list,
                                                        const ShouldIgnoreSemantics& semantics,
                                                        const std::vector<SkipOutcome>& outcomes);

// The ValueError text vLLM and SGLang raise when the shards of a fused layer disagree; "{prefix}"
// stands for the fused layer's execution path.
inline constexpr std::string_view kShardsDisagreeText =
    "Detected some but not all shards of {prefix} are quantized. All shards of fused layers to "
    "have the same precision.";

// vLLM 0.33.0's `Attention` and the classes deriving from it (layers/attention/*.py,
// models/whisper_causal.py): what `isinstance(layer, Attention)` in a get_quant_method reaches.
// MLAAttention derives from nn.Module only, so those branches leave it without a KV-cache method.
const std::vector<std::string>& VllmAttentionClasses();

}  // namespace quantpath
