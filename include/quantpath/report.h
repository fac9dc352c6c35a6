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
