// quantpath diff MODEL_DIR [--engines E,...] [--quantization NAME] [--wide] [--json]
//
// On a terminal (without --wide) the layers whose decisions differ alike in every decoder block are
// printed once; a pipe or a file gets every layer.
#include <iostream>

#include "quantpath/report.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct DiffArgs {
  std::string dir;
  std::string engines;
  std::string quantization;
  LaunchArgs launch;
  bool json = false;
  bool wide = false;
};

int RunDiff(const DiffArgs& args) {
  DiffOptions options;
  if (args.engines.empty()) {
    options.dialects = DefaultDiffDialects();
  } else {
    Result<std::vector<Dialect>> dialects = ParseDiffEngines(args.engines);
    if (!dialects.ok()) return ReportBadInput(dialects.status().message());
    options.dialects = *std::move(dialects);
  }
  if (!args.quantization.empty()) options.quantization = args.quantization;
  Result<Launch> launch = ParseLaunch(args.launch.dtype, args.launch.tp_size,
                                      args.launch.speculative, args.launch.platform);
  if (!launch.ok()) return ReportBadInput(launch.status().message());
  options.launch = *launch;
  Result<ModelDiff> diff = DiffDialects(args.dir, options);
  if (!diff.ok()) return ReportBadInput(diff.status().message());
  if (args.json) {
    std::cout << ToJson(DiffToJson(*diff), 1) << "\n";
  } else {
    const TableStyle style = StdoutStyle(args.wide);
    std::cout << DiffToText(*diff, style.width > 0 && !style.wide);
  }
  return diff->Differences() > 0 ? kExitFindings : kExitOk;
}

}  // namespace

void AddDiffCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* cmd =
      app.add_subcommand("diff", "Layers that native and the engines store or compute differently");
  AddModelDir(cmd, &args->dir);
  std::vector<std::string> names = {"all"};
  for (std::string_view name : DialectChoices()) names.emplace_back(name);
  AddChoiceOption(cmd, "--engines", &args->engines,
                  "Comma-separated dialects to compare with native (default: the newest release "
                  "of each engine; all: every dialect)",
                  std::move(names));
  AddQuantizationOption(cmd, &args->quantization);
  AddLaunchOptions(cmd, &args->launch);
  cmd->add_flag("--wide", args->wide,
                "Every layer on its own, as a pipe gets them (a terminal groups the decoder blocks "
                "that differ alike)");
  AddJsonFlag(cmd, &args->json);
  cmd->callback([args, exit_code] { *exit_code = RunDiff(*args); });
}

}  // namespace quantpath::cli
