// quantpath diff MODEL_DIR [--quantization NAME]
#include <iostream>

#include "quantpath/report.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct DiffArgs {
  std::string dir;
  std::string quantization;
};

int RunDiff(const DiffArgs& args) {
  std::optional<std::string> quantization;
  if (!args.quantization.empty()) quantization = args.quantization;
  Result<ModelDiff> diff = DiffDialects(args.dir, quantization);
  if (!diff.ok()) return ReportBadInput(diff.status().message());
  std::cout << DiffToText(*diff);
  return diff->layers.empty() ? kExitOk : kExitFindings;
}

}  // namespace

void AddDiffCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* cmd =
      app.add_subcommand("diff", "Layers that native, vLLM and SGLang decide differently");
  cmd->add_option("model_dir", args->dir, "Model folder")->required();
  cmd->add_option("--quantization", args->quantization, "Force the format");
  cmd->callback([args, exit_code] { *exit_code = RunDiff(*args); });
}

}  // namespace quantpath::cli
