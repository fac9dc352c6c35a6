// quantpath reports: the plan table and JSON, explain traces, run, check, diff and engine-case
// results.
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
// Engines side by side (the `diff` command; DiffDialects in pipeline.h computes it).

// `group_layers` (a terminal's view): layers whose lines differ only in their decoder block's
// number are printed once, under "layers 0–63 (64 layers):".
std::string DiffToText(const ModelDiff& diff, bool group_layers = false);
Json DiffToJson(const ModelDiff& diff);

}  // namespace quantpath
