// quantpath run MODEL_DIR --layer PATH [--m N] [--seed S] [--tp N --rank R] [--json]
//
// Loads one layer the way an engine would (rank R's shard of N with --tp) and compares one
// Forward on seeded input with the double-precision reference (pipeline.h RunSeeded says exactly
// how). Exit 1 when rel > tol (or
// is not finite), 2 for unusable input.
#include <iostream>

#include "quantpath/pipeline.h"
#include "quantpath/report.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct RunArgs {
  std::string dir;
  std::string layer;
  int64_t m = 4;
  uint64_t seed = 0;
  int64_t tp = 1;
  int rank = 0;
  bool json = false;
};

int RunLayer(const RunArgs& args) {
  if (args.m < 1 || args.m > 65536) return ReportBadInput("--m: expected 1 to 65536 rows");
  Result<OpenOptions> options = OpenOptions::Parse("native", "", "cpu", "auto", args.tp);
  if (!options.ok()) return ReportBadInput(options.status().message());
  Result<Model> model = OpenModel(args.dir, *options);
  if (!model.ok()) return ReportBadInput(model.status().message());
  Result<LoadedLayer> layer = LoadLayer(*model, args.layer, args.rank);
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
  cmd->add_option("--m", args->m, "Rows of the input (default 4)");
  cmd->add_option("--seed", args->seed, "Seed of the input (default 0)");
  cmd->add_option("--tp", args->tp, "Tensor-parallel size (default 1)");
  cmd->add_option("--rank", args->rank, "Tensor-parallel rank to load, 0 to tp - 1 (default 0)");
  cmd->add_flag("--json", args->json, "Print one JSON object (docs/json/run.md)");
  cmd->callback([args, exit_code] { *exit_code = RunLayer(*args); });
}

}  // namespace quantpath::cli
