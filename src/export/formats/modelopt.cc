// quant_method "modelopt" as NVIDIA ModelOpt 0.47 exports a Hugging Face checkpoint: the
// description embedded in config.json ({"config_groups", "ignore", "quant_algo", "producer",
// "quant_method"}) and the same in hf_quant_config.json ({"producer", "quantization":
// {"quant_algo", "kv_cache_quant_algo", "group_size", "exclude_modules"}}), which TensorRT-LLM
// reads. Written: NVFP4 (`weight` E2M1 pairs, E4M3 `weight_scale`, `weight_scale_2` and
// `input_scale` that multiply), as "NVFP4" with NVFP4 activations or "W4A16_NVFP4" without;
// "FP8" (per-tensor fp8 weights and static per-tensor fp8 activations) and
// "FP8_PER_CHANNEL_PER_TOKEN" (per-channel weights, activations scaled per token at run time),
// which ModelOpt writes without config_groups. producer.name is
// "modelopt": vLLM reads hf_quant_config.json only from that producer.
#include "fmt/format.h"
#include "src/export/format_row.h"

namespace quantpath::export_internal {
namespace {

constexpr std::string_view kVersion = "0.47.0";  // the export format followed

Result<SourceLayout> Layout(const QuantScheme& scheme) {
  const TensorQuant& w = scheme.weight;
  const std::string name = scheme.CanonicalName();
  if (w.dtype == QDType::kNVFP4) {
    if (scheme.input && scheme.input->dtype != QDType::kNVFP4) {
      return Unsupported(fmt::format(
          "{}: ModelOpt's NVFP4 takes NVFP4 activations (NVFP4) or none (W4A16_NVFP4)", name));
    }
    return SourceLayout::kModelOptNvfp4;
  }
  const bool fp8_input = scheme.input && scheme.input->dtype == QDType::kFP8E4M3;
  if (w.dtype == QDType::kFP8E4M3 && w.granularity == Granularity::kPerTensor && fp8_input &&
      scheme.input->granularity == Granularity::kPerTensor &&
      scheme.input->dynamic == Dynamic::kStatic) {
    return SourceLayout::kModelOptFp8;  // FP8
  }
  if (w.dtype == QDType::kFP8E4M3 && w.granularity == Granularity::kPerChannel && fp8_input &&
      scheme.input->granularity == Granularity::kPerToken &&
      scheme.input->dynamic == Dynamic::kDynamic) {
    return SourceLayout::kModelOptFp8;  // FP8_PER_CHANNEL_PER_TOKEN
  }
  return Unsupported(fmt::format(
      "{}: the ModelOpt format written here stores NVFP4, FP8 per tensor with static activation "
      "scales and FP8 per channel with dynamic per-token activations",
      name));
}

std::string_view Algo(const QuantScheme& scheme) {
  if (scheme.weight.dtype == QDType::kNVFP4) return scheme.input ? "NVFP4" : "W4A16_NVFP4";
  return scheme.weight.granularity == Granularity::kPerChannel ? "FP8_PER_CHANNEL_PER_TOKEN"
                                                               : "FP8";
}

Json Args(const TensorQuant& t) {
  std::vector<Json::Member> members = {{"dynamic", Json::Bool(false)},
                                       {"num_bits", Json::Int(Info(t.dtype).bits)},
                                       {"type", Json::String("float")}};
  if (t.group_size) members.emplace_back("group_size", Json::Int(*t.group_size));
  return Json::Object(std::move(members));
}

Json Producer() {
  return Json::Object(
      {{"name", Json::String("modelopt")}, {"version", Json::String(std::string(kVersion))}});
}

Json Config(const QuantScheme& scheme, SourceLayout, const std::vector<std::string>& ignore) {
  std::vector<Json> names;
  for (const std::string& module : ignore) names.push_back(Json::String(module));
  std::vector<Json::Member> members;
  if (scheme.weight.granularity != Granularity::kPerChannel) {
    std::vector<Json::Member> group;
    if (scheme.input) group.emplace_back("input_activations", Args(*scheme.input));
    group.emplace_back("weights", Args(scheme.weight));
    group.emplace_back("targets", Json::Array({Json::String("Linear")}));
    members.emplace_back("config_groups",
                         Json::Object({{"group_0", Json::Object(std::move(group))}}));
  }
  members.emplace_back("ignore", Json::Array(std::move(names)));
  members.emplace_back("quant_algo", Json::String(std::string(Algo(scheme))));
  members.emplace_back("producer", Producer());
  members.emplace_back("quant_method", Json::String("modelopt"));
  return Json::Object(std::move(members));
}

// hf_quant_config.json from the embedded description.
std::vector<std::pair<std::string, Json>> DescriptionFiles(const Json& config) {
  std::vector<Json::Member> quantization = {{"quant_algo", *config.Find("quant_algo")},
                                            {"kv_cache_quant_algo", Json::Null()}};
  if (const Json* groups = config.Find("config_groups")) {
    const Json* weights = groups->Find("group_0")->Find("weights");
    if (const Json* group = weights->FindNonNull("group_size")) {
      quantization.emplace_back("group_size", *group);
    }
  }
  quantization.emplace_back("exclude_modules", *config.Find("ignore"));
  return {{"hf_quant_config.json",
           Json::Object({{"producer", Producer()},
                         {"quantization", Json::Object(std::move(quantization))}})}};
}

const FormatRegistrar kRegister({CheckpointFormat::kModelOpt, "modelopt", Layout, Config, false,
                                 DescriptionFiles});

}  // namespace
}  // namespace quantpath::export_internal
