// quantpath pipeline: engines side by side (`quantpath diff`): one folder under several dialects.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/planner.h"

namespace quantpath {

// Sites are aligned across dialects by LayerSite::CheckpointKey (checkpoint names, since dialects
// name fused MLA projections, attention modules and routers differently). Only differences in
// what is stored or computed count: the weight / activation scheme, quantized versus not, error
// versus not. The rest (a site one dialect names differently or lacks, an engine attaching a
// KV-cache method without a KV scheme, other error texts) becomes a note. JSON in
// docs/json/diff.md.

struct DiffOptions {
  // Native first (the reference), then the engines to compare with it.
  std::vector<Dialect> dialects;
  std::optional<std::string> quantization;  // --quantization
  Launch launch;                            // --tp, --dtype, --speculative
};
// Native and the newest release of each engine (vllm@0.34, sglang@0.5.23).
std::vector<Dialect> DefaultDiffDialects();
// `--engines vllm,sglang@0.5.23` (`all`: every dialect of the table): native is put first whether
// named or not. An unknown or repeated name is an error naming it.
Result<std::vector<Dialect>> ParseDiffEngines(std::string_view list);

// One dialect's side of an aligned site.
struct DialectDecision {
  std::vector<std::string> paths;    // its execution names for the key (SGLang's MLA: two)
  std::optional<Decision> decision;  // of paths[0], with its trace; null without a site or plan
  bool differs = false;              // stores or computes something other than the reference
  // Quantized only in name: an engine attached a KV-cache method to attention without a KV-cache
  // scheme, which stores and computes what an unquantized attention layer does.
  bool kv_method_only = false;
};

struct LayerDiff {
  std::string key;  // LayerSite::CheckpointKey()
  SiteKind kind = SiteKind::kLinear;
  size_t reference = 0;                   // the first dialect with a decision (native if any)
  std::vector<DialectDecision> dialects;  // per ModelDiff::dialects
};

// What differs between dialects without changing what is stored or computed, grouped per dialect
// and kind, with the first example.
struct DiffNote {
  std::string dialect;
  std::string kind;  // "naming", "missing", "kv_method", "error_text"
  int64_t count = 0;
  std::string text;
};

struct EngineSummary {
  std::string dialect;
  std::string line;  // "loads", "errors at <layer>: <message>", "loads with N layers …"
  bool loads = true;
  std::string config_error;       // why the quantization config did not import; "" when it did
  std::string first_error_layer;  // the first site decided error (its execution name)
  std::string first_error;
  // Sites by stored outcome (an attention layer with a KV-cache method but no scheme counts as
  // unquantized).
  int64_t quantized = 0;
  int64_t unquantized = 0;
  int64_t errors = 0;
  int64_t unquantized_meant = 0;  // unquantized here, quantized by native
};

struct ModelDiff {
  std::string model;  // the folder as given
  std::string architecture;
  std::vector<std::string> dialects;
  std::vector<LayerDiff> layers;  // real differences only
  std::vector<DiffNote> notes;
  std::vector<EngineSummary> summaries;

  // layers.size(), plus one when the quantization config imports under some dialects only.
  int64_t Differences() const;
};

// Plans `dir` with every dialect of `options`. An unreadable folder, or a quantization config no
// dialect can import, is an error.
Result<ModelDiff> DiffDialects(const std::string& dir, const DiffOptions& options);

}  // namespace quantpath
