// quantpath reports: the plan table and JSON, explain traces, and engine-case matching.
//
// Goals: turn decisions into the stable outputs the CLI prints (DESIGN.md's contracts). Non-goals:
// deciding anything (importers and the planner do that).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/importers.h"
#include "quantpath/ir.h"
#include "quantpath/models.h"
#include "quantpath/planner.h"
#include "quantpath/sources.h"

namespace quantpath {

// ---------------------------------------------------------------------------------------------
// Engine decision cases (the `match` command; schema in tests/data/oracle/README.md).

struct CaseDecision {
  std::string prefix;
  std::string decision;  // "quantized" | "unquantized" | "error"
  std::string detail;
};

struct CaseResult {
  std::string id;
  std::vector<CaseDecision> decisions;  // same order and number as the case's layers
  std::vector<CaseDecision> expected;   // as recorded (may be empty)
};

// Decides every layer of every case in `cases` (a JSON list, read from `file`). `engine`
// overrides each case's engine. Malformed cases are an error naming the file and pointer.
Result<std::vector<CaseResult>> MatchCases(const Json& cases, std::string_view file,
                                           const std::optional<Dialect>& engine);

// ---------------------------------------------------------------------------------------------
// Plans of whole models.

struct PlannedLayer {
  const LayerSite* site = nullptr;
  Decision decision;
  std::optional<std::string> spec_id;  // null when no spec exists on the device (see spec_note)
  std::string spec_note;
  std::optional<int64_t> bytes;   // what the spec stores; null without a spec
  bool kernel_available = false;  // whether this build has a kernel for the spec on the device
};

struct ModelPlan {
  std::string model;  // the folder as given
  QuantPlan plan;
  ModelSites sites;
  std::string device = "cpu";
  std::vector<PlannedLayer> layers;

  int Errors() const;
};

struct PlanOptions {
  Dialect dialect;
  std::optional<std::string> quantization;  // --quantization
  std::string device = "cpu";
};

// Reads the folder, imports the plan, builds the sites and decides every layer.
Result<ModelPlan> PlanModel(const std::string& dir, const PlanOptions& options);

// A layer path as the user wrote it, resolved to its site: an execution name, a leg of a fused
// site ("…q_proj" → "…qkv_proj"), an expert's HF name, or a name ending in ".weight".
struct ResolvedSite {
  const LayerSite* site = nullptr;
  std::string note;  // how the name was resolved, when it was not the execution name
};
Result<ResolvedSite> ResolveLayer(const ModelSites& sites, std::string_view path);

// The explain trace as JSON objects {"matcher", "pattern", "file", "pointer", "result", "reason"}.
Json TraceToJson(const std::vector<TraceStep>& trace);

// DESIGN.md's `plan --json` object.
Json PlanToJson(const ModelPlan& plan);
// The human table and summary.
std::string PlanToTable(const ModelPlan& plan);
// Scheme as {"name", "weight": T, "input": T|null}; T per DESIGN.md.
Json SchemeToJson(const QuantScheme& scheme);

// ---------------------------------------------------------------------------------------------
// Engines side by side (the `diff` command).

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
};
// Every dialect: native, vllm, sglang, vllm@0.33, sglang@0.5.23.
std::vector<Dialect> DefaultDiffDialects();
// `--engines vllm,sglang@0.5.23`: native is put first whether named or not. An unknown or repeated
// name is an error naming it.
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
std::string DiffToText(const ModelDiff& diff);
Json DiffToJson(const ModelDiff& diff);

}  // namespace quantpath
