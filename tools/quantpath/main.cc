#include <cstdlib>
#include <iostream>
#include <new>

#include "tools/quantpath/commands.h"

namespace quantpath::cli {

std::string DefaultExampleDir() {
  if (const char* env = std::getenv("QUANTPATH_EXAMPLES"))
    return std::string(env) + "/llama-tiny-fp8";
  return std::string(QUANTPATH_EXAMPLES_DIR) + "/llama-tiny-fp8";
}

void AddLaunchOptions(CLI::App* cmd, LaunchArgs* args) {
  cmd->add_option("--dtype", args->dtype,
                  "The dtype the engine builds the model in: auto (the config's torch_dtype), "
                  "bfloat16, float16, float32");
  cmd->add_option("--tp", args->tp_size, "Tensor-parallel size (per-rank shapes are checked)");
  cmd->add_flag("--speculative", args->speculative,
                "Speculative decoding: build the MTP layers as the engine then does");
}

void AddModelSlimPackingOption(CLI::App* cmd, std::string* packing) {
  cmd->add_option("--modelslim-packing", *packing,
                  "ModelSlim 4-bit weights: old (one code per int8, SGLang's default) or new (two "
                  "per int8, SGLANG_NPU_W4A4_NEW_PACKING)");
}

void AddOnlineOption(CLI::App* cmd, std::string* online) {
  std::vector<std::string> names;
  for (const OnlineTarget& target : OnlineTargets()) {
    if (target.refusal.empty()) names.push_back(target.name);
  }
  cmd->add_option("--online", *online,
                  "Quantize every linear layer of a bf16/fp16/fp32 checkpoint at load to this "
                  "scheme: " +
                      Join(names, ", "));
}

int ReportBadInput(const std::string& message) {
  std::cerr << "quantpath: " << message << "\n";
  return kExitBadInput;
}

Json NullIfEmpty(const std::string& s) { return s.empty() ? Json::Null() : Json::String(s); }

}  // namespace quantpath::cli

int main(int argc, char** argv) {
  using namespace quantpath::cli;
  CLI::App app{"quantpath: from a quantized model folder's config files to a kernel per layer"};
  app.require_subcommand(1);
  int exit_code = kExitOk;
  AddPlanCommand(app, &exit_code);
  AddExplainCommand(app, &exit_code);
  AddLoadCommand(app, &exit_code);
  AddCheckCommand(app, &exit_code);
  AddRunCommand(app, &exit_code);
  AddMatchCommand(app, &exit_code);
  AddDiffCommand(app, &exit_code);
  AddBenchCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  } catch (const std::bad_alloc&) {
    // Every input size is capped; an input that still needs more memory than the machine has is
    // unusable input, not a crash.
    return ReportBadInput(
        "out of memory reading the input (the limits in README.md#limits bound what is read)");
  }
  return exit_code;
}
