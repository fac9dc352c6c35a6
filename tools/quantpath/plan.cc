// quantpath plan [MODEL_DIR] [--engine E] [--quantization NAME] [--device D] [--json]
#include <iostream>

#include "quantpath/report.h"
#include "quantpath/specs.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct PlanArgs {
  std::string dir;
  std::string engine = "native";
  std::string quantization;
  std::string device = "cpu";
  bool json = false;
};

int RunPlan(const PlanArgs& args) {
  Result<PlanOptions> options = MakePlanOptions(args.engine, args.quantization, args.device);
  if (!options.ok()) return ReportBadInput(options.status().message());
  Result<ModelPlan> plan = PlanModel(args.dir.empty() ? DefaultExampleDir() : args.dir, *options);
  if (!plan.ok()) return ReportBadInput(plan.status().message());
  if (args.json) {
    std::cout << ToJson(PlanToJson(*plan), 1) << "\n";
  } else {
    std::cout << PlanToTable(*plan);
  }
  return plan->Errors() > 0 ? kExitFindings : kExitOk;
}

}  // namespace

Result<PlanOptions> MakePlanOptions(const std::string& engine, const std::string& quantization,
                                    const std::string& device) {
  PlanOptions options;
  std::optional<Dialect> dialect = ParseDialect(engine);
  if (!dialect) {
    const std::vector<std::string_view> names = DialectNames();
    return InvalidInput("--engine: expected one of " + Join({names.begin(), names.end()}, ", ") +
                        ", got " + engine);
  }
  options.dialect = *dialect;
  if (!quantization.empty()) options.quantization = quantization;
  Result<DeviceCaps> caps = ParseDevice(device);
  if (!caps.ok()) return caps.status().WithContext("--device");
  options.device = caps->name;
  return options;
}

void AddPlanCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand("plan", "Decide every layer of a model folder");
  cmd->add_option("model_dir", args->dir, "Model folder (default: the bundled example)");
  cmd->add_option("--engine", args->engine, "native|vllm|sglang");
  cmd->add_option("--quantization", args->quantization, "Force the format");
  cmd->add_option("--device", args->device, "cpu|sm80|sm90|sm100");
  cmd->add_flag("--json", args->json, "Print DESIGN.md's JSON object");
  cmd->callback([args, exit_code] { *exit_code = RunPlan(*args); });
}

}  // namespace quantpath::cli
