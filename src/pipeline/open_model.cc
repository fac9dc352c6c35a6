// Opens a model folder: sources → importer (with the dialect's HF→engine name mapper) → sites.
#include <bit>

#include "fmt/format.h"
#include "quantpath/checkpoint.h"
#include "quantpath/materialize.h"
#include "quantpath/pipeline.h"
#include "quantpath/specs.h"

namespace quantpath {

Result<OpenOptions> OpenOptions::Parse(std::string_view engine, std::string_view quantization,
                                       std::string_view device, std::string_view dtype,
                                       int64_t tp_size, bool speculative) {
  OpenOptions options;
  std::optional<Dialect> dialect = ParseDialect(engine);
  if (!dialect) {
    const std::vector<std::string_view> names = DialectNames();
    return InvalidInput(fmt::format("--engine: expected one of {}, got {}",
                                    Join({names.begin(), names.end()}, ", "), engine));
  }
  options.dialect = *dialect;
  if (!quantization.empty()) options.quantization = std::string(quantization);
  Result<DeviceCaps> caps = ParseDevice(device);
  if (!caps.ok()) return caps.status().WithContext("--device");
  options.device = *caps;
  QP_ASSIGN_OR_RETURN(options.launch, ParseLaunch(dtype, tp_size, speculative));
  return options;
}

Status OpenOptions::SetModelSlimPacking(std::string_view text) {
  if (text.empty() || text == "old") {
    modelslim_packing = ModelSlimPacking::kOld;
  } else if (text == "new") {
    modelslim_packing = ModelSlimPacking::kNew;
  } else {
    return InvalidInput(fmt::format("--modelslim-packing: expected old or new, got {}", text));
  }
  return {};
}

Status OpenOptions::SetOnline(std::string_view name) {
  if (name.empty()) return {};
  const std::string context = fmt::format("--online {} on {}", name, device.name);
  Result<QuantScheme> scheme = OnlineTargetNamed(name);
  if (!scheme.ok()) return scheme.status().WithContext(context);
  Result<std::unique_ptr<WeightSpec>> spec = Materialize(*scheme, device);
  if (!spec.ok()) return spec.status().WithContext(context);
  online = *scheme;
  return {};
}

namespace {

// Applies `apply` to the scheme of every action of the plan.
template <typename Fn>
void ForEachScheme(QuantPlan* plan, Fn apply) {
  if (plan->default_action.scheme) apply(*plan->default_action.scheme);
  for (RuleGroup& group : plan->groups) {
    for (Rule& rule : group.rules) {
      if (rule.action.scheme) apply(*rule.action.scheme);
    }
  }
}

// The packing is the loader's to know (LoadFacts), so every ModelSlim 4-bit scheme of the plan
// carries it.
void ApplyModelSlimPacking(ModelSlimPacking packing, QuantPlan* plan) {
  ForEachScheme(plan, [packing](QuantScheme& s) {
    TensorQuant& w = s.weight;
    if (w.load.layout != SourceLayout::kModelSlim || w.dtype != QDType::kINT4) return;
    w.load.int4_pairs = packing == ModelSlimPacking::kNew;
  });
}

// OpenOptions::int8_activations.
Status ApplyInt8Activations(const Dialect& dialect, const DeviceCaps& device, QuantPlan* plan) {
  if (dialect.engine != Engine::kNative) {
    return InvalidInput(fmt::format(
        "--int8-activations changes how quantpath runs the layers, not what {} does: it applies "
        "to --engine native",
        dialect.name));
  }
  if (!device.is_cpu()) {
    return InvalidInput(fmt::format(
        "--int8-activations runs the layers on the CPU's integer dot products: it applies to "
        "--device cpu, not {}",
        device.name));
  }
  int64_t changed = 0, kept = 0;
  ForEachScheme(plan, [&](QuantScheme& s) {
    const TensorQuant& w = s.weight;
    const bool int4 = w.dtype == QDType::kINT4 && (w.granularity == Granularity::kGroup ||
                                                   w.granularity == Granularity::kPerChannel);
    const bool fp4 = w.dtype == QDType::kNVFP4 || w.dtype == QDType::kMXFP4;
    if (s.input || s.online || !(int4 || fp4)) return;
    // The integer kernel takes groups of whole 64-column steps; act-order and narrower groups
    // would fall to the reference kernel, far slower than their exact fast ones.
    const int64_t group = w.group_size.value_or(0);
    const bool steps = w.granularity != Granularity::kGroup ||
                       (group % 64 == 0 && std::has_single_bit(static_cast<uint64_t>(group)));
    if (int4 && (w.load.act_order || !steps)) {
      ++kept;
      return;
    }
    TensorQuant in;
    in.dtype = QDType::kINT8;
    in.granularity = Granularity::kPerToken;
    in.dynamic = Dynamic::kDynamic;
    s.input = in;
    ++changed;
  });
  if (changed > 0) {
    plan->notes.push_back(
        "--int8-activations: int4, NVFP4 and MXFP4 weight-only layers take int8 activations, "
        "quantized per token at run time");
  }
  if (kept > 0) {
    plan->notes.push_back(
        "--int8-activations: int4 layers with act-order or groups other than a power-of-two "
        "multiple of 64 stay weight-only");
  }
  return {};
}

// bitsandbytes' 4-bit block size is the checkpoint's to say (each quant_state), so where the
// folder has weights, every 4-bit scheme of the plan takes it from there instead of the 64 the
// importer assumes from config.json alone.
Status ApplyBnbBlockSize(const std::string& dir, QuantPlan* plan) {
  bool bnb4 = false;
  ForEachScheme(plan, [&](const QuantScheme& s) {
    bnb4 = bnb4 || s.weight.load.layout == SourceLayout::kBnb4bit;
  });
  if (!bnb4) return {};
  Result<Checkpoint> checkpoint = Checkpoint::Open(dir);
  if (checkpoint.status().code() == ErrorCode::kNotFound) return {};  // a config-only plan
  if (!checkpoint.ok()) return checkpoint.status();
  const std::optional<Bnb4BlockSize> block = Bnb4BlockSizeOf(*checkpoint);
  if (!block) return {};
  ForEachScheme(plan, [&](QuantScheme& s) {
    if (s.weight.load.layout == SourceLayout::kBnb4bit) s.weight.group_size = block->block;
  });
  plan->notes.push_back(fmt::format("block size {} read from {}, replacing the assumed one",
                                    block->block, block->tensor));
  return {};
}

}  // namespace

Result<QuantPlan> ImportForEngine(const ConfigSources& sources, const Dialect& dialect,
                                  const std::optional<std::string>& quantization,
                                  const std::optional<std::string>& model_class) {
  std::optional<NameMapper> mapper =
      model_class ? FindNameMapper(*model_class, dialect) : FindNameMapper(sources, dialect);
  return ImportPlan(sources, dialect, quantization, mapper);
}

Result<Model> OpenModel(const std::string& given, const OpenOptions& options) {
  QP_ASSIGN_OR_RETURN(std::filesystem::path resolved, ResolveModelDir(given));
  const std::string dir = resolved.string();
  QP_ASSIGN_OR_RETURN(ConfigSources sources, ConfigSources::Load(dir));
  sources.set_launch(options.launch);
  QP_ASSIGN_OR_RETURN(QuantPlan plan,
                      ImportForEngine(sources, options.dialect, options.quantization));
  if (options.online && options.quantization) {
    return InvalidInput(
        fmt::format("--online and --quantization {}: give one of them", *options.quantization));
  }
  if (options.online) {
    Result<QuantPlan> online = OnlinePlan(plan, *options.online);
    if (!online.ok()) return online.status().WithContext(dir);
    plan = std::move(*online);
  }
  QP_ASSIGN_OR_RETURN(ModelSites sites, BuildModelSites(sources, options.dialect, options.launch));
  NameFindingTensors(sites, &plan);
  ApplyModelSlimPacking(options.modelslim_packing, &plan);
  if (options.int8_activations) {
    QP_RETURN_IF_ERROR(
        ApplyInt8Activations(options.dialect, options.device, &plan).WithContext(dir));
  }
  QP_RETURN_IF_ERROR(ApplyBnbBlockSize(dir, &plan).WithContext(dir));
  return Model{dir,           std::move(sources), std::move(plan), std::move(sites), options.device,
               options.launch};
}

}  // namespace quantpath
