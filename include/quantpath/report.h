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
// The human table and summary.
std::string PlanToTable(const Model& model, const std::vector<LayerDecision>& layers);
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

// `match` without --verify: [{"id", "decisions": [{"prefix", "decision", "detail"}]}].
Json CaseResultsToJson(const std::vector<CaseResult>& results);
// `match --verify`: one line per mismatch (and a note per detail difference) of the cases of
// `file`; adds to *passed and *failed one count per layer decision.
std::string VerifyCases(const std::vector<CaseResult>& results, std::string_view file, int* passed,
                        int* failed);

// ---------------------------------------------------------------------------------------------
// Engines side by side (the `diff` command).

// One layer as each dialect decides it (sites are aligned across dialects by their parent path and
// legs, since dialects name some fused layers and attention modules differently).
struct LayerDiff {
  std::string key;                 // the native path where it exists
  std::vector<std::string> paths;  // per dialect ("" when the dialect has no such site)
  std::vector<std::optional<Decision>> decisions;  // per dialect, with traces
};

struct EngineSummary {
  std::string dialect;
  std::string line;  // "loads", "errors at <layer>: <message>", "loads with N layers …"
  bool loads = true;
};

struct ModelDiff {
  std::vector<std::string> dialects;  // native, vllm, sglang
  std::vector<LayerDiff> layers;      // only layers where the dialects disagree
  std::vector<EngineSummary> summaries;
};

// Plans `dir` with every dialect and keeps the layers whose decisions (kind or scheme) differ.
Result<ModelDiff> DiffDialects(const std::string& dir,
                               const std::optional<std::string>& quantization);
std::string DiffToText(const ModelDiff& diff);

}  // namespace quantpath
