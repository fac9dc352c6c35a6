// quantpath pipeline: the description linted against the model: exclusion and target entries
// that match no module.
#pragma once

#include <string>
#include <vector>

#include "quantpath/pipeline/open_model.h"

namespace quantpath {

// An exclusion or target entry of the description (compressed-tensors `ignore` and `targets`,
// `modules_to_not_convert`, `ignored_layers`, ModelOpt `exclude_modules`,
// `llm_int8_skip_modules`, GPTQ `dynamic` keys…) that matches no module of the model under some
// dialect's matching (substring, prefix, re.match, fnmatch…): usually a stale or misspelled name.
struct UnmatchedEntry {
  std::string entry;                     // as the description writes it
  Provenance where;                      // its file and JSON pointer
  std::vector<std::string> dialects;     // the dialects under which it matches nothing
  std::vector<std::string> suggestions;  // the module names nearest the entry
};

// The description of `dir` under native and the newest release of each engine (`options`' other
// settings kept): each entry that matches no module (site, fused leg, or checkpoint module) under
// at least one of them, in description order. A dialect that cannot plan the folder is left out.
Result<std::vector<UnmatchedEntry>> UnmatchedEntries(const std::string& dir,
                                                     const OpenOptions& options);
// "config.json#/quantization_config/ignore/3: "lm_heda" matches no module under native,
// vllm@0.34; nearest: lm_head".
std::string UnmatchedEntryText(const UnmatchedEntry& entry);

}  // namespace quantpath
