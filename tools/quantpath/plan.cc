// quantpath plan [MODEL_DIR] [--engine E] [--quantization NAME | --online SCHEME] [--device D]
//                [--dtype T] [--tp N] [--speculative] [--json] [--svg FILE] [--html FILE]
#include <iostream>

#include "quantpath/pipeline.h"
#include "quantpath/report.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct PlanArgs {
  std::string dir;
  std::string engine = "native";
  std::string quantization;
  FormatArgs format_options;
  std::string online;
  bool int8_activations = false;
  std::string device = "cpu";
  LaunchArgs launch;
  bool json = false;
  bool wide = false;
  std::string svg;
  std::string html;
};

int RunPlan(const PlanArgs& args) {
  Result<OpenOptions> options =
      OpenOptions::Parse(args.engine, args.quantization, args.device, args.launch.dtype,
                         args.launch.tp_size, args.launch.speculative, args.launch.platform);
  if (!options.ok()) return ReportBadInput(options.status().message());
  if (Status s = SetFormatOptions(args.format_options, &*options); !s.ok()) {
    return ReportBadInput(s.message());
  }
  if (Status s = options->SetOnline(args.online); !s.ok()) return ReportBadInput(s.message());
  options->int8_activations = args.int8_activations;
  const std::string dir = args.dir.empty() ? DefaultExampleDir() : args.dir;
  Result<Model> model = OpenModel(dir, *options);
  if (!model.ok()) return ReportBadInput(model.status().message());
  // The description linted against the model, as `check` reports it.
  Result<std::vector<UnmatchedEntry>> unmatched = UnmatchedEntries(dir, *options);
  if (!unmatched.ok()) return ReportBadInput(unmatched.status().message());
  for (const UnmatchedEntry& e : *unmatched) model->plan.notes.push_back(UnmatchedEntryText(e));
  Result<std::vector<LayerDecision>> decided = DecideAll(*model);
  if (!decided.ok()) return ReportBadInput(decided.status().message());
  const std::vector<LayerDecision>& layers = *decided;
  if (args.json) {
    std::cout << ToJson(PlanToJson(*model, layers), 1) << "\n";
  } else {
    std::cout << PlanToTable(*model, layers, StdoutStyle(args.wide));
  }
  for (const auto& [path, page] : {std::pair{args.svg, &PlanToSvg}, {args.html, &PlanToHtml}}) {
    if (path.empty()) continue;
    if (Status s = WriteFileAtomically(path, page(*model, layers)); !s.ok()) {
      return ReportBadInput(s.message());
    }
  }
  const bool model_errors = !model->plan.errors.empty();
  return CountErrors(layers) > 0 || model_errors ? kExitFindings : kExitOk;
}

}  // namespace

void AddPlanCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand("plan", "Decide every layer of a model folder");
  AddModelDir(cmd, &args->dir, /*required=*/false);
  AddEngineOption(cmd, &args->engine);
  AddQuantizationOption(cmd, &args->quantization);
  AddDeviceOption(cmd, &args->device);
  AddLaunchOptions(cmd, &args->launch);
  AddFormatOptions(cmd, &args->format_options);
  AddOnlineOption(cmd, &args->online);
  AddInt8ActivationsFlag(cmd, &args->int8_activations);
  AddJsonFlag(cmd, &args->json);
  cmd->add_flag("--wide", args->wide,
                "Every column of the table, however wide (default: the columns that fit the "
                "terminal, COLUMNS)");
  Completes(cmd->add_option("--svg", args->svg,
                            "Also write the plan as a picture: a row per decoder block, a column "
                            "per projection, cells coloured by scheme"),
            {ValueCompletion::kFiles, {}});
  Completes(cmd->add_option("--html", args->html,
                            "Also write the picture and the table as one HTML page"),
            {ValueCompletion::kFiles, {}});
  cmd->callback([args, exit_code] { *exit_code = RunPlan(*args); });
}

}  // namespace quantpath::cli
