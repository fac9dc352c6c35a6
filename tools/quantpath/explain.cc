// quantpath explain MODEL_DIR LAYER_PATH [--engine E] [--quantization NAME] [--json]
#include <iostream>

#include "quantpath/pipeline.h"
#include "quantpath/report.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct ExplainArgs {
  std::string dir;
  std::string layer;
  std::string engine = "native";
  std::string quantization;
  std::string online;
  bool int8_activations = false;
  LaunchArgs launch;
  bool json = false;
};

int RunExplain(const ExplainArgs& args) {
  Result<OpenOptions> options =
      OpenOptions::Parse(args.engine, args.quantization, "cpu", args.launch.dtype,
                         args.launch.tp_size, args.launch.speculative, args.launch.platform);
  if (!options.ok()) return ReportBadInput(options.status().message());
  if (Status s = options->SetOnline(args.online); !s.ok()) return ReportBadInput(s.message());
  options->int8_activations = args.int8_activations;
  Result<Model> model = OpenModel(args.dir, *options);
  if (!model.ok()) return ReportBadInput(model.status().message());
  Result<ExplainedLayer> explained = DecideLayer(*model, args.layer);
  if (!explained.ok()) return ReportBadInput(explained.status().message());
  if (args.json) {
    std::cout << ToJson(ExplainToJson(*model, args.layer, *explained), 1) << "\n";
  } else {
    std::cout << ExplainToText(*explained);
  }
  return explained->layer.decision.kind == DecisionKind::kError ? kExitFindings : kExitOk;
}

}  // namespace

void AddExplainCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ExplainArgs>();
  CLI::App* cmd = app.add_subcommand("explain", "Show every rule tried for one layer, and why");
  AddModelDir(cmd, &args->dir);
  cmd->add_option("layer_path", args->layer, "Layer (execution name, leg or HF name)")->required();
  AddEngineOption(cmd, &args->engine);
  AddQuantizationOption(cmd, &args->quantization);
  AddOnlineOption(cmd, &args->online);
  AddInt8ActivationsFlag(cmd, &args->int8_activations);
  AddLaunchOptions(cmd, &args->launch);
  AddJsonFlag(cmd, &args->json);
  cmd->callback([args, exit_code] { *exit_code = RunExplain(*args); });
}

}  // namespace quantpath::cli
