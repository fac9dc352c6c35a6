// quantpath check MODEL_DIR [--engine E] [--quantization NAME] [--tp N] [--platform P] [--json]
//
// Holds the checkpoint's headers and index against the plan (the pipeline's CheckFolder), never
// reading tensor data: one line per finding, then the tensor-parallel sizes up to 16 at which the
// whole model splits, then a line per severity. Exit 0 when nothing is
// wrong (warnings allowed), 1 with an error finding, 2 when the folder cannot be checked (no
// weights, an unreadable config or index).
#include <iostream>

#include "quantpath/pipeline.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct CheckArgs {
  std::string dir;
  std::string engine = "native";
  std::string quantization;
  FormatArgs format_options;
  int64_t tp_size = 1;
  std::string platform = "cuda";
  bool json = false;
};

int RunCheck(const CheckArgs& args) {
  Result<OpenOptions> options = OpenOptions::Parse(args.engine, args.quantization, "cpu", "auto",
                                                   args.tp_size, false, args.platform);
  if (!options.ok()) return ReportBadInput(options.status().message());
  if (Status s = SetFormatOptions(args.format_options, &*options); !s.ok()) {
    return ReportBadInput(s.message());
  }
  Result<CheckReport> report = CheckFolder(args.dir, *options);
  if (!report.ok()) return ReportBadInput(report.status().message());
  if (args.json) {
    std::cout << ToJson(CheckToJson(*report, args.dir, args.engine)) << "\n";
  } else {
    std::cout << CheckToText(*report);
  }
  return report->errors > 0 ? kExitFindings : kExitOk;
}

}  // namespace

void AddCheckCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "check", "Check a checkpoint's headers and index against its config, without reading data");
  AddModelDir(cmd, &args->dir);
  AddEngineOption(cmd, &args->engine);
  AddQuantizationOption(cmd, &args->quantization);
  cmd->add_option("--tp", args->tp_size,
                  "Tensor-parallel size whose per-rank shapes are checked (findings per layer)");
  AddPlatformOption(cmd, &args->platform);
  AddFormatOptions(cmd, &args->format_options);
  AddJsonFlag(cmd, &args->json);
  cmd->callback([args, exit_code] { *exit_code = RunCheck(*args); });
}

}  // namespace quantpath::cli
