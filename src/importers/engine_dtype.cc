// Methods' accepted model dtypes per release, as each config class's get_supported_act_dtypes
// returns them (CUDA platform), and the check the engines run before building the model.
#include "src/importers/engine_dtype.h"

#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include "fmt/format.h"
#include "src/importers/engine_methods.h"

namespace quantpath {
namespace {

struct MethodDtypes {
  std::string_view importer;  // quantpath's importer (or the plan's quant_method)
  std::string_view method;    // the engine's name for the method it runs
  std::vector<QDType> dtypes;
};

using QDType::kBF16;
using QDType::kFP16;
using QDType::kFP32;

// vLLM 0.33.0: fp8.py, auto_gptq.py, auto_awq.py, inc/inc.py, compressed_tensors.py, modelopt.py
// (FP8 and NVFP4 configs), mxfp4.py.
const std::vector<MethodDtypes>& VllmMethods() {
  static const std::vector<MethodDtypes> kRows = {
      {"fp8", "fp8", {kBF16, kFP16}},
      {"gptq", "auto_gptq", {kFP16, kBF16}},
      {"awq", "auto_awq", {kFP16, kBF16}},
      {"auto-round", "inc", {kFP16, kBF16}},
      {"compressed-tensors", "compressed-tensors", {kFP32, kFP16, kBF16}},
      {"modelopt", "modelopt", {kBF16, kFP16}},
      {"mxfp4", "gpt_oss_mxfp4", {kBF16}},
  };
  return kRows;
}

// SGLang 0.5.23: fp8.py, gptq/gptq.py (GPTQMarlinConfig), awq/awq.py (AWQMarlinConfig; the plain
// AWQConfig's float16 is set by the AWQ importer), auto_round.py, compressed_tensors.py,
// modelopt_quant.py, mxfp4.py, bitsandbytes.py, w8a8_int8.py, w8a8_fp8.py, modelslim.py.
const std::vector<MethodDtypes>& SglangMethods() {
  static const std::vector<MethodDtypes> kRows = {
      {"fp8", "fp8", {kBF16, kFP16}},
      {"gptq", "gptq_marlin", {kFP16, kBF16}},
      {"awq", "awq_marlin", {kFP16, kBF16}},
      {"auto-round", "auto-round", {kFP16, kBF16}},
      {"compressed-tensors", "compressed-tensors", {kFP16, kBF16}},
      {"modelopt", "modelopt", {kBF16, kFP16}},
      {"mxfp4", "mxfp4", {kBF16, kFP16}},
      {"bitsandbytes", "bitsandbytes", {kFP32, kFP16, kBF16}},
      {"w8a8_int8", "w8a8_int8", {kFP16, kBF16}},
      {"w8a8_fp8", "w8a8_fp8", {kFP16, kBF16}},
      {"modelslim", "modelslim", {kFP16, kBF16}},
  };
  return kRows;
}

std::string_view TorchName(QDType type) {
  switch (type) {
    case kFP16:
      return "torch.float16";
    case kFP32:
      return "torch.float32";
    default:
      return "torch.bfloat16";
  }
}

// The config's dtype string as torch names it; a missing or unknown one reads as float32, as both
// engines default it.
QDType ConfigDtype(const ConfigSources& sources) {
  for (const Json* root : {sources.text_config(), sources.config()}) {
    if (root == nullptr) continue;
    for (std::string_view key : {"dtype", "torch_dtype"}) {
      const Json* value = root->FindNonNull(key);
      if (value == nullptr || !value->is_string()) continue;
      Result<Launch> parsed = ParseLaunch(value->string_value(), 1, false);
      return parsed.ok() && parsed->dtype ? *parsed->dtype : kFP32;
    }
  }
  return kFP32;
}

bool IsGemma(const ConfigSources& sources) {
  const Json* root = sources.text_config();
  const Json* type = root != nullptr ? root->FindNonNull("model_type") : nullptr;
  return type != nullptr && type->is_string() && type->string_value().starts_with("gemma");
}

// Every site the method builds raises the engine's ValueError.
void FailEverySite(const std::string& message, QuantPlan* plan) {
  const Action fail{ActionKind::kFail, std::nullopt, message, ""};
  plan->groups.clear();
  plan->default_action = fail;
  plan->linear = plan->lm_head = plan->moe = plan->router = plan->embedding = KindPolicy::kRules;
  plan->blocks_only.reset();
  plan->kv_cache.reset();
  plan->attention = fail;
}

}  // namespace

QDType EngineDtype(const ConfigSources& sources, Engine engine) {
  if (sources.launch().dtype) return *sources.launch().dtype;
  const QDType config = ConfigDtype(sources);
  if (config != kFP32) return config;
  if (engine == Engine::kSglang && !IsGemma(sources)) return kFP16;
  return kBF16;
}

void CheckActDtype(const ConfigSources& sources, const Dialect& dialect, QuantPlan* plan) {
  if (!dialect.is_release()) return;
  if (plan->act_dtypes.empty()) {
    const std::vector<MethodDtypes>& rows =
        dialect.engine == Engine::kVllm ? VllmMethods() : SglangMethods();
    auto find = [&](std::string_view name) {
      return std::find_if(rows.begin(), rows.end(),
                          [&](const MethodDtypes& r) { return r.importer == name; });
    };
    auto row = find(plan->quant_method);
    if (row == rows.end()) row = find(plan->importer);
    if (row == rows.end()) return;
    plan->engine_method = std::string(row->method);
    plan->act_dtypes = row->dtypes;
  }
  const QDType dtype = EngineDtype(sources, dialect.engine);
  if (std::find(plan->act_dtypes.begin(), plan->act_dtypes.end(), dtype) !=
      plan->act_dtypes.end()) {
    return;
  }
  std::vector<std::string> names;
  for (QDType t : plan->act_dtypes) names.emplace_back(TorchName(t));
  FailEverySite(fmt::format("ValueError: {} is not supported for quantization method {}. "
                            "Supported dtypes: [{}]",
                            TorchName(dtype), plan->engine_method, Join(names, ", ")),
                plan);
  plan->notes.push_back(fmt::format(
      "{} builds the model in {} ({}), which {} refuses", dialect.name, QDTypeName(dtype),
      sources.launch().dtype ? "--dtype" : "config.json's dtype as dtype=auto resolves it",
      plan->engine_method));
}

void CheckPlatformMethod(const ConfigSources& sources, const Dialect& dialect, QuantPlan* plan) {
  const Platform platform = sources.launch().platform;
  const std::span<const std::string_view> gate = PlatformMethodGate(dialect, platform);
  if (gate.empty() || plan->quant_method == "none") return;
  const std::string name = sources.requested_method().value_or(
      plan->engine_method.empty() ? plan->quant_method : plan->engine_method);
  if (std::find(gate.begin(), gate.end(), name) != gate.end()) return;
  // The loader's get_quant_config raises it, before any config object is built.
  FailEverySite(fmt::format("get_quant_config ValueError: Invalid quantization method on CPU: {}. "
                            "Available methods on CPU: {}",
                            name, RegisteredMethodsText(dialect, platform)),
                plan);
  plan->notes.push_back(
      fmt::format("{} on {} accepts only {}", dialect.name, PlatformName(platform),
                  Join(std::vector<std::string>(gate.begin(), gate.end()), ", ")));
}

}  // namespace quantpath
