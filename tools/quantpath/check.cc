// quantpath check MODEL_DIR [--engine E] [--quantization NAME] [--tp N] [--platform P]
//                           [--headers-only | --deep] [--json]
//
// Holds the checkpoint's headers and index against the plan (the pipeline's CheckFolder), then
// reads the values of every tensor beside the weights' codes (--headers-only: none; --deep: every
// byte, with a progress bar on a terminal): one line per finding, then the tensor-parallel sizes
// up to 16 at which the whole model splits, what was read and how fast, then a line per severity.
// Exit 0 when nothing is wrong (warnings allowed), 1 with an error finding, 2 when the folder
// cannot be checked (no weights, an unreadable config or index).
#include <unistd.h>

#include <iostream>
#include <memory>

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
  bool headers_only = false;
  bool deep = false;
};

// A bar on a terminal, redrawn at each whole percent (a checkpoint has 150k tensors).
std::function<void(uint64_t, uint64_t)> DeepProgress() {
  if (!isatty(STDERR_FILENO)) return {};
  auto line = std::make_shared<ProgressLine>(ProgressPrinter("check", "%"));
  auto shown = std::make_shared<uint64_t>(UINT64_MAX);
  return [line, shown](uint64_t done, uint64_t total) {
    const uint64_t percent = total ? done * 100 / total : 100;
    if (percent == *shown) return;
    *shown = percent;
    (*line)(percent, 100, DecimalBytes(static_cast<int64_t>(done)));
  };
}

int RunCheck(const CheckArgs& args) {
  Result<OpenOptions> options = OpenOptions::Parse(args.engine, args.quantization, "cpu", "auto",
                                                   args.tp_size, false, args.platform);
  if (!options.ok()) return ReportBadInput(options.status().message());
  if (Status s = SetFormatOptions(args.format_options, &*options); !s.ok()) {
    return ReportBadInput(s.message());
  }
  CheckReading reading;
  reading.reads = args.headers_only ? CheckReads::kHeaders
                  : args.deep       ? CheckReads::kEveryByte
                                    : CheckReads::kValues;
  if (args.deep) reading.progress = DeepProgress();
  Result<CheckReport> report = CheckFolder(args.dir, *options, reading);
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
      "check",
      "Check a checkpoint's headers, index and values (scales, zero points, g_idx) against its "
      "config");
  AddModelDir(cmd, &args->dir);
  AddEngineOption(cmd, &args->engine);
  AddQuantizationOption(cmd, &args->quantization);
  cmd->add_option("--tp", args->tp_size,
                  "Tensor-parallel size whose per-rank shapes are checked (findings per layer)");
  AddPlatformOption(cmd, &args->platform);
  AddFormatOptions(cmd, &args->format_options);
  CLI::Option* headers = cmd->add_flag(
      "--headers-only", args->headers_only,
      "Read the index and the headers only, no tensor data (the structure of a 700 GB checkpoint "
      "in seconds)");
  cmd->add_flag("--deep", args->deep,
                "Also read every weight's codes: fp8 NaN codes, all-zero rows (every byte)")
      ->excludes(headers);
  AddJsonFlag(cmd, &args->json);
  cmd->callback([args, exit_code] { *exit_code = RunCheck(*args); });
}

}  // namespace quantpath::cli
