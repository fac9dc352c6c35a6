// quantpath run MODEL_DIR --layer PATH [--expert K] [--m N] [--seed S] [--json]
//
// Loads one layer the way an engine would and compares one Forward on seeded input with the
// double-precision reference (pipeline.h RunSeeded says exactly how). An MoE layer runs each
// expert's w13 (gate and up) and w2 (down), for expert K or every expert (RunExpertsSeeded).
// Exit 1 when rel > tol (or is not finite), 2 for unusable input.
#include <iostream>
#include <optional>

#include "quantpath/pipeline.h"
#include "quantpath/report.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct RunArgs {
  std::string dir;
  std::string layer;
  std::optional<int64_t> expert;
  int64_t expert_index = 0;  // --expert as parsed; `expert` holds it when given
  int64_t m = 4;
  uint64_t seed = 0;
  bool json = false;
};

int RunExperts(const Model& model, const RunArgs& args) {
  Result<LoadedExperts> layer = LoadExperts(model, args.layer);
  if (!layer.ok()) return ReportBadInput(layer.status().message());
  Result<ExpertsRun> run = RunExpertsSeeded(*layer, args.m, args.seed, args.expert);
  if (!run.ok()) return ReportBadInput(run.status().message());
  if (args.json) {
    std::cout << ToJson(ExpertsRunToJson(*layer, *run, args.seed)) << "\n";
  } else {
    std::cout << ExpertsRunToText(*layer, *run);
  }
  return run->pass() ? kExitOk : kExitFindings;
}

int RunLayer(const RunArgs& args) {
  if (args.m < 1 || args.m > 65536) return ReportBadInput("--m: expected 1 to 65536 rows");
  Result<Model> model = OpenModel(args.dir, OpenOptions{});
  if (!model.ok()) return ReportBadInput(model.status().message());
  Result<ResolvedSite> resolved = ResolveLayer(model->sites, args.layer);
  if (resolved.ok() && resolved->site->kind == SiteKind::kMoe) return RunExperts(*model, args);
  if (args.expert) return ReportBadInput("--expert: only an MoE layer (kind moe) has experts");
  Result<LoadedLayer> layer = LoadLayer(*model, args.layer);
  if (!layer.ok()) return ReportBadInput(layer.status().message());
  Result<LayerRun> run = RunSeeded(*layer, args.m, args.seed);
  if (!run.ok()) return ReportBadInput(run.status().message());
  if (args.json) {
    std::cout << ToJson(RunToJson(*layer, *run, args.seed)) << "\n";
  } else {
    std::cout << RunToText(*layer, *run);
  }
  return run->pass() ? kExitOk : kExitFindings;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Load one layer, run it on seeded input and compare with an fp64 reference");
  cmd->add_option("model_dir", args->dir, "Model folder")->required();
  cmd->add_option("--layer", args->layer, "Layer (execution name, leg or HF name)")->required();
  CLI::Option* expert =
      cmd->add_option("--expert", args->expert_index,
                      "MoE layers: run this expert's w13 (gate+up) and w2 (down); default: every "
                      "expert on the same input");
  cmd->add_option("--m", args->m, "Rows of the input (default 4)");
  cmd->add_option("--seed", args->seed, "Seed of the input (default 0)");
  cmd->add_flag("--json", args->json, "Print one JSON object (docs/json/run.md)");
  cmd->callback([args, exit_code, expert] {
    if (expert->count() > 0) args->expert = args->expert_index;
    *exit_code = RunLayer(*args);
  });
}

}  // namespace quantpath::cli
