// quantpath reports: the plan table and JSON, explain traces, run results, and engine-case
// matching.
//
// Goals: turn decisions into the stable outputs the CLI prints (docs/json/). Non-goals: deciding
// anything (importers, the planner and the pipeline do that).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/importers.h"
#include "quantpath/ir.h"
#include "quantpath/models.h"
#include "quantpath/pipeline.h"
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
// Plans of whole models (docs/json/plan.md), explain (docs/json/explain.md) and run
// (docs/json/run.md). Each formats what the pipeline decided; none decides anything.

// The `plan --json` object: every field of every row always present (null where it does not
// apply).
Json PlanToJson(const Model& model, const std::vector<LayerDecision>& layers);
// How the human table is laid out.
struct TableStyle {
  // The terminal's columns: the least needed columns are left out (checkpoint_path, decision,
  // kind, spec_id, shape, in that order) and then long layer names cut from the left until rows
  // fit. 0: unknown (not a terminal, no COLUMNS), every column.
  int width = 0;
  bool wide = false;    // every column, whatever the width (--wide)
  bool colour = false;  // ANSI colours: errors red, layers without a kernel yellow, headers bold
};
// The human table (a row per site), a roll-up by scheme (layers, params, bytes), the summary and,
// when the folder has an index with metadata.total_size, that size beside the planned bytes.
std::string PlanToTable(const Model& model, const std::vector<LayerDecision>& layers,
                        const TableStyle& style = {});
// The plan as one SVG picture (docs/plan_picture.md): a row per decoder block, a column per
// projection, cells coloured by scheme, a legend with bytes per scheme. The HTML page is that SVG
// and the table, self-contained.
std::string PlanToSvg(const Model& model, const std::vector<LayerDecision>& layers);
std::string PlanToHtml(const Model& model, const std::vector<LayerDecision>& layers);
// Scheme as {"name", "weight": T, "input": T|null}; T per docs/json/plan.md.
Json SchemeToJson(const QuantScheme& scheme);

// The explain trace as JSON objects {"matcher", "pattern", "file", "pointer", "result", "reason"}.
Json TraceToJson(const std::vector<TraceStep>& trace);
// The `explain --json` object: the layer, its decision, what decided it and the trace.
Json ExplainToJson(const Model& model, std::string_view requested, const ExplainedLayer& layer);
std::string ExplainToText(const ExplainedLayer& layer);

// The `run --json` object and the human report.
Json RunToJson(const LoadedLayer& layer, const LayerRun& run, uint64_t seed);
std::string RunToText(const LoadedLayer& layer, const LayerRun& run);
// The same for the experts of an MoE layer (`run --layer …experts [--expert K]`): one entry per
// projection (w13, w2) under "projections" (docs/json/run.md).
Json ExpertsRunToJson(const LoadedExperts& layer, const ExpertsRun& run, uint64_t seed);
std::string ExpertsRunToText(const LoadedExperts& layer, const ExpertsRun& run);

// The `check --json` object (docs/json/check.md); `model` and `engine` as the user named them.
Json CheckToJson(const CheckReport& report, std::string_view model, std::string_view engine);
// The human report: a line per finding, the tensor-parallel sizes that split, the counts.
std::string CheckToText(const CheckReport& report);

// `match` without --verify: [{"id", "decisions": [{"prefix", "decision", "detail"}]}].
Json CaseResultsToJson(const std::vector<CaseResult>& results);
// `match --verify`: one line per mismatch (and a note per detail difference) of the cases of
// `file`; adds to *passed and *failed one count per layer decision.
std::string VerifyCases(const std::vector<CaseResult>& results, std::string_view file, int* passed,
                        int* failed);

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
  Launch launch;                            // --tp, --dtype, --speculative
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
