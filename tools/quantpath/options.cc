// Options several commands share. Each lists what it accepts in its help, from the library's own
// lists (dialects, importers, devices, online targets), and records it for the shell completions.
#include <map>

#include "quantpath/pipeline.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

std::map<const CLI::Option*, ValueCompletion>& Completions() {
  static std::map<const CLI::Option*, ValueCompletion> completions;
  return completions;
}

template <typename Names>
std::vector<std::string> Strings(const Names& names) {
  return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace

CLI::Option* Completes(CLI::Option* option, ValueCompletion completion) {
  Completions()[option] = std::move(completion);
  return option;
}

const ValueCompletion* CompletionOf(const CLI::Option* option) {
  auto it = Completions().find(option);
  return it == Completions().end() ? nullptr : &it->second;
}

CLI::Option* AddChoiceOption(CLI::App* cmd, const std::string& name, std::string* value,
                             const std::string& description, std::vector<std::string> values) {
  CLI::Option* option = cmd->add_option(name, *value, description + ": " + Join(values, ", "));
  return Completes(option, {ValueCompletion::kWords, std::move(values)});
}

CLI::Option* AddEngineOption(CLI::App* cmd, std::string* engine, const std::string& description) {
  return AddChoiceOption(cmd, "--engine", engine,
                         description + " (vllm, sglang: the newest release of each)",
                         Strings(DialectChoices()));
}

CLI::Option* AddQuantizationOption(CLI::App* cmd, std::string* quantization) {
  std::vector<std::string> names;
  for (const Importer* importer : Importers()) names.emplace_back(importer->name());
  return AddChoiceOption(cmd, "--quantization", quantization,
                         "Force the format instead of detecting it", std::move(names));
}

CLI::Option* AddDeviceOption(CLI::App* cmd, std::string* device, const std::string& description) {
  return AddChoiceOption(cmd, "--device", device, description, Strings(DeviceNames()));
}

CLI::Option* AddModelDir(CLI::App* cmd, std::string* dir, bool required) {
  CLI::Option* option = cmd->add_option(
      "model_dir", *dir,
      "Model folder, Hugging Face cache folder (…/models--org--name) or repo id in the local "
      "cache (org/name)" +
          std::string(required ? "" : "; default: the bundled example"));
  if (required) option->required();
  return Completes(option, {ValueCompletion::kDirs, {}});
}

void AddLaunchOptions(CLI::App* cmd, LaunchArgs* args) {
  AddChoiceOption(cmd, "--dtype", &args->dtype,
                  "The dtype the engine builds the model in (auto: the config's torch_dtype)",
                  {"auto", "bfloat16", "float16", "float32"});
  cmd->add_option("--tp", args->tp_size, "Tensor-parallel size (per-rank shapes are checked)");
  cmd->add_flag("--speculative", args->speculative,
                "Speculative decoding: build the MTP layers as the engine then does");
  AddPlatformOption(cmd, &args->platform);
}

void AddPlatformOption(CLI::App* cmd, std::string* platform) {
  AddChoiceOption(cmd, "--platform", platform,
                  "The platform the engine runs on (its registry and kernel paths; --device is "
                  "quantpath's own)",
                  std::vector<std::string>(std::begin(kPlatformNames), std::end(kPlatformNames)));
}

void AddFormatOptions(CLI::App* cmd, FormatArgs* args) {
  for (const FormatOption& option : FormatOptionsDeclared()) {
    AddChoiceOption(cmd, "--" + std::string(option.name), &(*args)[std::string(option.name)],
                    std::string(option.help), Strings(option.values));
  }
}

Status SetFormatOptions(const FormatArgs& args, OpenOptions* options) {
  for (const auto& [name, value] : args) QP_RETURN_IF_ERROR(options->SetFormatOption(name, value));
  return {};
}

void AddOnlineOption(CLI::App* cmd, std::string* online) {
  std::vector<std::string> names;
  for (const OnlineTarget& target : OnlineTargets()) {
    if (target.refusal.empty()) names.push_back(target.name);
  }
  AddChoiceOption(cmd, "--online", online,
                  "Quantize every linear layer of a bf16/fp16/fp32 checkpoint at load to this "
                  "scheme",
                  std::move(names));
}

void AddInt8ActivationsFlag(CLI::App* cmd, bool* int8_activations) {
  cmd->add_flag("--int8-activations", *int8_activations,
                "Run int4 (channel scales or groups of 64 · 2^i, no act-order), NVFP4 and MXFP4 "
                "weight-only layers with int8 activations quantized per token, on integer dot "
                "products (vLLM's CPU path for AWQ / GPTQ): faster, not exact; the native engine "
                "on the CPU only");
}

CLI::Option* AddJsonFlag(CLI::App* cmd, bool* json) {
  return cmd->add_flag_callback(
      "--json",
      [json] {
        *json = true;
        ReportErrorsAsJson();
      },
      "Print one JSON object instead of the text report (an unusable input as {\"error\": …})");
}

}  // namespace quantpath::cli
