// Opens a model folder: sources → importer (with the dialect's HF→engine name mapper) → sites.
#include "fmt/format.h"
#include "quantpath/checkpoint.h"
#include "quantpath/materialize.h"
#include "quantpath/pipeline.h"
#include "quantpath/specs.h"
#include "src/pipeline/model_folder.h"

namespace quantpath {

Result<OpenOptions> OpenOptions::Parse(std::string_view engine, std::string_view quantization,
                                       std::string_view device, std::string_view dtype,
                                       int64_t tp_size, bool speculative,
                                       std::string_view platform) {
  OpenOptions options;
  std::optional<Dialect> dialect = ParseDialect(engine);
  if (!dialect) {
    const std::vector<std::string_view> names = DialectChoices();
    return InvalidInput(fmt::format("--engine: expected one of {}, got {}",
                                    Join({names.begin(), names.end()}, ", "), engine));
  }
  options.dialect = *dialect;
  if (!quantization.empty()) options.quantization = std::string(quantization);
  Result<DeviceCaps> caps = ParseDevice(device);
  if (!caps.ok()) return caps.status().WithContext("--device");
  options.device = *caps;
  QP_ASSIGN_OR_RETURN(options.launch, ParseLaunch(dtype, tp_size, speculative, platform));
  return options;
}

Status OpenOptions::SetFormatOption(std::string_view name, std::string_view value) {
  if (value.empty()) return {};
  QP_RETURN_IF_ERROR(CheckFormatOption(name, value));
  for (auto& [given, was] : format_options) {
    if (given == name) {
      was = std::string(value);
      return {};
    }
  }
  format_options.emplace_back(std::string(name), std::string(value));
  return {};
}

Status OpenOptions::SetOnline(std::string_view name) {
  if (name.empty()) return {};
  const std::string context = fmt::format("--online {} on {}", name, device.name);
  Result<QuantScheme> scheme = OnlineTargetNamed(name);
  if (!scheme.ok()) return scheme.status().WithContext(context);
  Result<std::shared_ptr<const WeightSpec>> spec = Materialize(*scheme, device);
  if (!spec.ok()) return spec.status().WithContext(context);
  online = *scheme;
  return {};
}

namespace {

// The most bytes of one tensor an importer's refinement reads (a bitsandbytes quant_state is a
// few hundred).
constexpr int64_t kRefinementTensorBytes = int64_t{1} << 20;

// OpenOptions::int8_activations: each int4 (channel or group), NVFP4 and MXFP4 weight-only scheme
// takes int8 activations per token where a fast kernel runs that product; the others stay
// weight-only, where the reference kernel would be far slower than their exact fast ones.
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
  TensorQuant int8_tokens;
  int8_tokens.dtype = QDType::kINT8;
  int8_tokens.granularity = Granularity::kPerToken;
  int8_tokens.dynamic = Dynamic::kDynamic;
  const KernelRegistry& kernels = KernelRegistry::Global();
  int64_t changed = 0, kept = 0;
  plan->ForEachScheme([&](QuantScheme& s) {
    const TensorQuant& w = s.weight;
    const bool int4 = w.dtype == QDType::kINT4 && (w.granularity == Granularity::kGroup ||
                                                   w.granularity == Granularity::kPerChannel);
    const bool fp4 = w.dtype == QDType::kNVFP4 || w.dtype == QDType::kMXFP4;
    if (s.input || s.online || !(int4 || fp4)) return;
    QuantScheme with_int8 = s;
    with_int8.input = int8_tokens;
    const Result<SpecKey> key = KeyFor(with_int8, device);
    const Result<ActivationQuant> act = ActivationQuantFor(with_int8);
    if (!key.ok() || !act.ok() || !kernels.HasFastKernel(*key, *act, device)) {
      ++kept;
      return;
    }
    s = std::move(with_int8);
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

}  // namespace

namespace pipeline_internal {

Result<ModelFolder> ReadModelFolder(const std::string& given, const OpenOptions& options,
                                    const CheckpointListing* listing) {
  QP_ASSIGN_OR_RETURN(std::filesystem::path resolved, ResolveModelDir(given));
  ModelFolder folder{resolved.string(), {}};
  QP_ASSIGN_OR_RETURN(folder.sources, ConfigSources::Load(folder.dir, listing));
  folder.sources.set_launch(options.launch);
  folder.sources.set_format_options(options.format_options);
  return folder;
}

Result<QuantPlan> ImportModelPlan(const ModelFolder& folder, const OpenOptions& options) {
  QP_ASSIGN_OR_RETURN(QuantPlan plan,
                      ImportForEngine(folder.sources, options.dialect, options.quantization));
  if (options.online && options.quantization) {
    return InvalidInput(
        fmt::format("--online and --quantization {}: give one of them", *options.quantization));
  }
  if (options.online) {
    Result<QuantPlan> online = OnlinePlan(plan, *options.online);
    if (!online.ok()) return online.status().WithContext(folder.dir);
    plan = std::move(*online);
  }
  if (options.int8_activations) {
    QP_RETURN_IF_ERROR(
        ApplyInt8Activations(options.dialect, options.device, &plan).WithContext(folder.dir));
  }
  if (options.dialect.engine == Engine::kNative && options.launch.tp_size > 1) {
    plan.notes.push_back(fmt::format(
        "--tp {}: the native reference decides each layer whole and checks no tensor-parallel "
        "shapes; --engine vllm or --engine sglang adds the engines' checks at this size",
        options.launch.tp_size));
  }
  // Facts of the plan only the checkpoint's data holds, through the importer's refinement.
  QP_RETURN_IF_ERROR(
      RefinePlan(SmallTensors(folder.dir, kRefinementTensorBytes), &plan).WithContext(folder.dir));
  return plan;
}

}  // namespace pipeline_internal

Result<QuantPlan> ImportForEngine(const ConfigSources& sources, const Dialect& dialect,
                                  const std::optional<std::string>& quantization,
                                  const std::optional<std::string>& model_class) {
  std::optional<NameMapper> mapper =
      model_class ? FindNameMapper(*model_class, dialect) : FindNameMapper(sources, dialect);
  return ImportPlan(sources, dialect, quantization, mapper);
}

Result<Model> OpenModel(const std::string& given, const OpenOptions& options) {
  QP_ASSIGN_OR_RETURN(pipeline_internal::ModelFolder folder,
                      pipeline_internal::ReadModelFolder(given, options));
  return pipeline_internal::OpenModelFolder(std::move(folder), options);
}

Result<Model> pipeline_internal::OpenModelFolder(ModelFolder folder, const OpenOptions& options) {
  QP_ASSIGN_OR_RETURN(QuantPlan plan, pipeline_internal::ImportModelPlan(folder, options));
  QP_ASSIGN_OR_RETURN(ModelSites sites,
                      BuildModelSites(folder.sources, options.dialect, options.launch));
  NameFindingTensors(sites, &plan);
  return Model{std::move(folder.dir), std::move(folder.sources),
               std::move(plan),       std::move(sites),
               options.device,        options.launch};
}

}  // namespace quantpath
