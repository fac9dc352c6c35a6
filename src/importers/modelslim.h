// ModelSlim importer internals, shared by modelslim_description.cc (reading
// quant_model_description.json) and modelslim.cc (the rules of each dialect and the plan).
//
// Goals: the per-weight description as data: "<module>.weight" → type, the ignore list and the
// packed_modules_mapping (flat, or nested by model / visual / vision_model). Non-goals: NPU
// kernels, the RMSNorm bias patch (shown in notes only). Documentation followed: SGLang
// modelslim/modelslim.py (@b39fe43c as recorded in oracle/, and 0.5.23 with w13/w2 MoE lookup,
// block_sparse_moe ↔ mlp aliases, DSpark and DeepSeek-V4 names), seed 003.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/sources.h"
#include "src/importers/common.h"

namespace quantpath::modelslim {

inline constexpr std::string_view kFile = "quant_model_description.json";

// One ModelSlim quantization type and its scheme; FLOAT (unquantized) has none.
struct TypeInfo {
  std::string_view name;  // "W8A8_DYNAMIC", …
  bool quantized = true;
};
const TypeInfo* FindType(std::string_view name);
// The scheme of a quantized type; `group_size` > 0 makes W4A8_DYNAMIC weights grouped.
QuantScheme TypeScheme(const TypeInfo& type, int64_t group_size);
std::string TypeList();

// A "<path>.weight" key of the description.
struct WeightKey {
  std::string path;  // module path (the key without ".weight")
  std::string type;  // the value as written
  Provenance where;
};

using Mapping = std::vector<std::pair<std::string, std::vector<std::string>>>;

struct Description {
  Provenance where;
  std::vector<WeightKey> weights;  // document order
  std::vector<ListEntry> ignore;
  // packed_modules_mapping: the sections by name ("model", "visual", "vision_model"), or the
  // flat mapping under "" when the file gives fused names at the top level.
  std::vector<std::pair<std::string, Mapping>> mapping;
  bool flat_mapping = false;
  int64_t group_size = 0;
  std::vector<std::string> notes;

  // The value of "<path>.weight", or nullptr.
  const WeightKey* Find(std::string_view path) const;
  // The section SGLang picks for a prefix: vision_model, else visual, else model.
  const Mapping* SectionFor(std::string_view prefix) const;
};

Result<Description> ReadDescription(const SourceFile& file);

// `path` with every occurrence of `from` replaced by `to` (Python str.replace), as the engines
// derive shard names from a fused name.
std::string ReplaceAll(std::string_view path, std::string_view from, std::string_view to);

// Appends an exact-path rule for `path` unless `seen` already holds it: the first key that names a
// module decides it, as the engines' dictionary lookups do.
Status AddExact(std::vector<Rule>* rules, std::set<std::string>* seen, const std::string& path,
                SiteKindSet kinds, Action action, const Provenance& where);

// The plan SGLang 0.5.23 builds from the description (modelslim_sglang.cc).
Result<QuantPlan> SglangCurrentPlan(const SourceFile& file, const Dialect& dialect);

}  // namespace quantpath::modelslim
