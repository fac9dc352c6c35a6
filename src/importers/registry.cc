// The importer registry: an explicit detection order, the --quantization override, and where
// each dialect's engine looks for the description (vLLM 0.33.0 and SGLang 0.5.23
// model_loader/weight_utils.py get_quant_config, vLLM transformers_utils/config.py get_config).
#include <algorithm>
#include <array>
#include <span>
#include <utility>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/common.h"
#include "src/importers/engine_dtype.h"
#include "src/importers/engine_methods.h"
#include "src/importers/importer_list.h"
#include "src/importers/name_mapping.h"

namespace quantpath {
namespace {

// How a dialect finds the description among the folder's files.
struct SourceSearch {
  std::string_view engine;  // the engine's name in messages; empty for native
  // The engines use an embedded description as it is and never open a standalone file beside it;
  // native reads both copies and compares them (DESIGN.md, "Source precedence").
  bool standalone_only_without_embedded;
  // hf_quant_config.json is ModelOpt's only when its producer.name is this (empty: any file).
  std::string_view modelopt_producer;
  // A ModelOpt MIXED_PRECISION description embedded without quantized_layers is replaced by
  // hf_quant_config.json (vLLM 0.33: "older checkpoints keep it only in hf_quant_config.json").
  bool mixed_falls_through_to_file;
  // The releases find the method only in config.json, hf_quant_config.json and (SGLang) the
  // ModelSlim description (vLLM _verify_quantization, SGLang _parse_quant_hf_config): a standalone
  // integer-family file is opened by get_quant_config only once --quantization named the method.
  bool standalone_needs_forced;
  // The release reads no MLX description: mlx-lm writes it under config.json's `quantization`,
  // and vLLM 0.33 looks only at `quantization_config`, so it builds the model unquantized.
  bool ignores_mlx_description = false;
};

constexpr std::array<DialectRow<SourceSearch>, 5> kSearches = {{
    {DialectId::kNative, {"", false, "", false, false}},
    {DialectId::kVllmHelpers, {"vLLM", true, "", false, false}},
    {DialectId::kSglangHelpers, {"SGLang", true, "", false, false}},
    {DialectId::kVllm033, {"vLLM", true, "modelopt", true, true, true}},
    {DialectId::kSglang0523, {"SGLang", true, "", false, true}},
}};
static_assert(CoversEveryDialect(kSearches));

// The standalone files of the integer weight-only family (get_config_filenames of GPTQ, AWQ and
// AutoRound), the ones an engine would otherwise read beside an embedded description.
// hf_quant_config.json and quant_model_description.json are left to their importers, which
// decide when they are read.
constexpr std::string_view kIntegerFamilyFiles[] = {"quantize_config.json", "quant_config.json",
                                                    "quantization_config.json"};
constexpr std::string_view kModelOptFile = "hf_quant_config.json";

const SourceSearch& SearchFor(const Dialect& dialect) { return RowFor(dialect, kSearches); }

std::string EngineRaises(const SourceSearch& search, std::string_view text) {
  if (search.engine.empty()) return "";
  return fmt::format(" ({} raises ValueError: {})", search.engine, text);
}

bool ProducerIs(const Json& root, std::string_view producer) {
  const Json* p = root.FindNonNull("producer");
  const Json* name = p != nullptr ? p->FindNonNull("name") : nullptr;
  return name != nullptr && name->is_string() && name->string_value() == producer;
}

bool IsMixedWithoutTable(const Json& description) {
  const Json* method = description.FindNonNull("quant_method");
  const Json* algo = description.FindNonNull("quant_algo");
  return method != nullptr && method->is_string() &&
         ToLower(method->string_value()) == "modelopt" && algo != nullptr && algo->is_string() &&
         algo->string_value() == "MIXED_PRECISION" &&
         description.Find("quantized_layers") == nullptr;
}

// Removes the member of `root` (at any depth) whose value sits at `pointer`.
bool EraseAt(Json* root, std::string_view pointer) {
  if (!root->is_object()) return false;
  std::vector<Json::Member>& members = root->mutable_members();
  for (auto it = members.begin(); it != members.end(); ++it) {
    if (it->second.pointer() == pointer) {
      members.erase(it);
      return true;
    }
    if (pointer.starts_with(it->second.pointer()) && EraseAt(&it->second, pointer)) return true;
  }
  return false;
}

// The folder as the dialect's engine reads it: files it never opens are left out. The integer
// family's standalone files left out only because the user named no method go to `unforced`.
Result<ConfigSources> SearchedSources(const ConfigSources& sources, const SourceSearch& search,
                                      bool forced, std::vector<std::string>* unforced) {
  std::optional<Located> embedded = sources.Embedded();
  bool fall_through =
      search.mixed_falls_through_to_file && embedded && IsMixedWithoutTable(*embedded->value);
  if (fall_through) {
    const SourceFile* file = sources.File(kModelOptFile);
    if (file == nullptr) {
      return InvalidInput(fmt::format(
          "{}: MIXED_PRECISION without quantized_layers, and there is no {} to take them from{}",
          embedded->where.ToString(), kModelOptFile,
          EngineRaises(search, "Cannot find the config file for modelopt_mixed")));
    }
    if (!ProducerIs(file->root, "modelopt")) {
      return InvalidInput(fmt::format(
          "{}: MIXED_PRECISION without quantized_layers, and {} is not ModelOpt's (producer.name "
          "is not \"modelopt\"){}",
          embedded->where.ToString(), kModelOptFile,
          EngineRaises(search, fmt::format("Unsupported quantization config found for "
                                           "modelopt_mixed in <model_dir>/{}.",
                                           kModelOptFile))));
    }
  }
  bool changed = fall_through;
  std::vector<SourceFile> files;
  for (const SourceFile& file : sources.files()) {
    // Matched by suffix as the engines match them, which hf_quant_config.json also ends with.
    bool integer_family = false;
    for (std::string_view name : kIntegerFamilyFiles) {
      integer_family = integer_family || (file.name.ends_with(name) && file.name != kModelOptFile);
    }
    const bool beside_embedded =
        integer_family && embedded && search.standalone_only_without_embedded;
    const bool needs_forced = integer_family && !forced && search.standalone_needs_forced;
    if (needs_forced && !beside_embedded) unforced->push_back(file.name);
    bool unread = beside_embedded || needs_forced ||
                  (file.name == kModelOptFile && !search.modelopt_producer.empty() &&
                   !ProducerIs(file.root, search.modelopt_producer));
    changed = changed || unread;
    if (!unread) files.push_back(file);
  }
  if (!changed) return sources;
  if (fall_through) {
    for (SourceFile& file : files) {
      if (file.name == embedded->where.file) EraseAt(&file.root, embedded->where.pointer);
    }
  }
  return sources.WithFiles(std::move(files));
}

// A folder with no quantization description: every site keeps the checkpoint dtype.
QuantPlan UnquantizedPlan(const Dialect& dialect) {
  QuantPlan plan;
  plan.quant_method = "none";
  plan.importer = "none";
  plan.dialect = dialect;
  plan.default_action = {ActionKind::kSkip, std::nullopt, "the model has no quantization config",
                         ""};
  plan.linear = KindPolicy::kUnquantized;
  plan.moe = KindPolicy::kUnquantized;
  return plan;
}

// The tensor whose name GPTQ, AWQ and AutoRound exports pack their weights under.
constexpr std::string_view kPackedSuffix = "qweight";

// A finding on the first checkpoint tensor ending in `.<suffix>` (`what` names it), named from the
// folder's index or shard headers; without one, the name `method`'s layout implies is left to the
// planner (NameFindingTensors). `where` says which of the two it is, for the message.
ModelFinding FindingOnFirstTensor(const ConfigSources& sources, std::string_view suffix,
                                  std::string_view what, std::string_view method,
                                  std::string* where) {
  ModelFinding finding;
  finding.implied_suffix = std::string(suffix);
  const CheckpointListing& listing = sources.checkpoint();
  for (const CheckpointTensor& tensor : listing.tensors) {
    if (tensor.name.ends_with("." + finding.implied_suffix)) {
      finding.tensor = tensor.name;
      finding.tensor_listed = true;
      *where = fmt::format(" (the first {} in {})", what, listing.source);
      return finding;
    }
  }
  *where = fmt::format(" (the name the {} layout implies; the folder lists no {} tensor)", method,
                       finding.implied_suffix);
  return finding;
}

void NameListedTensor(ModelFinding* finding) {
  const size_t at = finding->message.find(kTensorPlaceholder);
  if (finding->tensor_listed && at != std::string::npos) {
    finding->message.replace(at, kTensorPlaceholder.size(), finding->tensor);
  }
}

// A folder whose method only a standalone file names, planned by a release that does not read it
// unless told the method: every layer unquantized, and one model-level finding naming the packed
// tensor the load then fails on.
QuantPlan UndetectedPlan(const ConfigSources& all_sources, const Dialect& dialect,
                         const std::vector<std::string>& unforced) {
  QuantPlan plan = UnquantizedPlan(dialect);
  std::string method;
  for (const Importer* importer : Importers()) {
    if (importer->Detect(all_sources)) {
      method = std::string(importer->name());
      break;
    }
  }
  const std::string files = Join(unforced, ", ");
  plan.default_action.message =
      fmt::format("{} does not read {} without --quantization", dialect.name, files);
  if (method.empty()) return plan;  // no importer reads the file either: nothing is packed
  std::string where;
  ModelFinding finding =
      FindingOnFirstTensor(all_sources, kPackedSuffix, "packed tensor", method, &where);
  finding.message = fmt::format(
      "{} will not detect the quantization method: config.json has no quantization_config and "
      "{} is read only with --quantization, so every layer is built unquantized and loading "
      "fails on {}{} unless --quantization {} is given",
      dialect.name, files, kTensorPlaceholder, where, method);
  NameListedTensor(&finding);
  plan.errors.push_back(std::move(finding));
  return plan;
}

// An MLX folder planned by a release that reads no MLX description: every layer unquantized, and
// the load fails on the first per-group scales tensor, which the unquantized model has no
// parameter for.
QuantPlan UnreadMlxPlan(const ConfigSources& sources, const Dialect& dialect, const Json& found) {
  QuantPlan plan = UnquantizedPlan(dialect);
  plan.default_action.message = fmt::format("{} does not read the MLX description at {}",
                                            dialect.name, Where("config.json", found));
  std::string where;
  ModelFinding finding =
      FindingOnFirstTensor(sources, "scales", "per-group scales tensor", "MLX", &where);
  finding.message = fmt::format(
      "{} will not detect the quantization method: it reads config.json's quantization_config, "
      "not the MLX description at {}, so every layer is built unquantized and loading fails on "
      "{}{}; no --quantization reads MLX's per-group scales and biases",
      dialect.name, Where("config.json", found), kTensorPlaceholder, where);
  NameListedTensor(&finding);
  plan.errors.push_back(std::move(finding));
  return plan;
}

}  // namespace

Result<QuantPlan> OnlinePlan(const QuantPlan& unquantized, const QuantScheme& scheme) {
  const std::string name = scheme.CanonicalName();
  if (unquantized.quant_method != "none") {
    std::vector<std::string> files;
    for (const Provenance& where : unquantized.sources) files.push_back(where.ToString());
    return InvalidInput(fmt::format(
        "--online {}: quantizing at load reads a high-precision checkpoint, but the model's "
        "files describe {} ({})",
        name, unquantized.quant_method, Join(files, ", ")));
  }
  QuantPlan plan = UnquantizedPlan(unquantized.dialect);
  plan.quant_method = "online";
  plan.importer = "online";
  plan.notes = unquantized.notes;
  plan.default_action = {ActionKind::kQuantize, scheme,
                         fmt::format("--online {} applies to every linear layer", name),
                         "quantized at load"};
  plan.linear = KindPolicy::kRules;
  plan.moe = KindPolicy::kRules;
  return plan;
}

const std::vector<const Importer*>& Importers() {
  // Detection order matters where files could satisfy two importers: the formats that key on a
  // dedicated file or an explicit quant_method come before those that infer from field shapes.
  static const std::vector<const Importer*> importers = MakeImporterList();
  return importers;
}

const Importer* FindImporter(std::string_view name) {
  for (const Importer* importer : Importers()) {
    if (importer->name() == name) return importer;
    for (std::string_view alias : importer->aliases()) {
      if (alias == name) return importer;
    }
  }
  return nullptr;
}

Result<const Checkpoint*> SmallTensors::Opened() const {
  if (!checkpoint_) checkpoint_ = Checkpoint::Open(dir_);
  if (checkpoint_->ok()) return &**checkpoint_;
  if (checkpoint_->status().code() == ErrorCode::kNotFound) {
    return static_cast<const Checkpoint*>(nullptr);
  }
  return checkpoint_->status();
}

Result<std::vector<std::string>> SmallTensors::Names() const {
  QP_ASSIGN_OR_RETURN(const Checkpoint* checkpoint, Opened());
  if (checkpoint == nullptr) return std::vector<std::string>();
  return checkpoint->TensorNames();
}

Result<TensorView> SmallTensors::Read(std::string_view name) const {
  QP_ASSIGN_OR_RETURN(const Checkpoint* checkpoint, Opened());
  if (checkpoint == nullptr) return NotFound(fmt::format("{}: no checkpoint", dir_));
  QP_ASSIGN_OR_RETURN(TensorView view, checkpoint->Get(name));
  if (static_cast<int64_t>(view.bytes.size()) > max_bytes_) {
    return LimitError(
        fmt::format("{}: tensor {} holds {} bytes, more than the {} a plan's "
                    "refinement reads",
                    view.file, name, view.bytes.size(), max_bytes_));
  }
  return view;
}

std::vector<FormatOption> FormatOptionsDeclared() {
  std::vector<FormatOption> options;
  for (const Importer* importer : Importers()) {
    for (FormatOption& option : importer->options()) options.push_back(std::move(option));
  }
  return options;
}

Status CheckFormatOption(std::string_view name, std::string_view value) {
  const std::vector<FormatOption> options = FormatOptionsDeclared();
  for (const FormatOption& option : options) {
    if (option.name != name) continue;
    if (std::find(option.values.begin(), option.values.end(), value) != option.values.end()) {
      return {};
    }
    return InvalidInput(fmt::format("--{}: expected {}, got {}", name,
                                    Join({option.values.begin(), option.values.end()}, " or "),
                                    value));
  }
  std::vector<std::string> names;
  for (const FormatOption& option : options) names.push_back("--" + std::string(option.name));
  return InvalidInput(
      fmt::format("--{}: no importer reads this option (they read {})", name, Join(names, ", ")));
}

Status RefinePlan(const SmallTensors& tensors, QuantPlan* plan) {
  const Importer* importer = FindImporter(plan->importer);
  return importer != nullptr ? importer->Refine(tensors, plan) : Status();
}

namespace {

// vLLM 0.34's DeepseekV4FP8Config.override_quantization_method: a DeepSeek-V4 model's fp8
// description is read as deepseek_v4_fp8. CUDA builds the v4.1 class
// (models/deepseek_v41/quant_config.py), which claims four model types; a CPU the v4 one, which
// claims deepseek_v4 alone.
const Importer* EngineOverride(const ConfigSources& sources, const Dialect& dialect,
                               const Importer* detected) {
  constexpr std::array<std::string_view, 4> kDeepseekV4 = {"deepseek_v4", "deepseek_v4_text",
                                                           "deepseek_v41", "deepseek_v41_text"};
  if (detected != Fp8Importer() || !Since(dialect, DialectId::kVllm034)) return detected;
  const auto claimed = sources.launch().platform == Platform::kCuda
                           ? std::span<const std::string_view>(kDeepseekV4)
                           : std::span<const std::string_view>(kDeepseekV4).first(1);
  const Json* config = sources.config();
  const Json* type = config != nullptr ? config->FindNonNull("model_type") : nullptr;
  if (type != nullptr && type->is_string() &&
      std::find(claimed.begin(), claimed.end(), type->string_value()) != claimed.end()) {
    return DeepseekV4Fp8Importer();
  }
  return detected;
}

}  // namespace

Result<QuantPlan> ImportPlan(const ConfigSources& all_sources, const Dialect& dialect,
                             const std::optional<std::string>& forced,
                             const std::optional<NameMapper>& mapper) {
  QP_RETURN_IF_ERROR(CheckPlatformReproduced(dialect, all_sources.launch().platform));
  const SourceSearch& search = SearchFor(dialect);
  std::vector<std::string> unforced;
  QP_ASSIGN_OR_RETURN(ConfigSources sources,
                      SearchedSources(all_sources, search, forced.has_value(), &unforced));
  const Importer* detected = nullptr;
  for (const Importer* importer : Importers()) {
    if (importer->Detect(sources)) {
      detected = importer;
      break;
    }
  }
  if (!forced) detected = EngineOverride(sources, dialect, detected);
  if (forced) {
    const Importer* chosen = FindImporter(*forced);
    if (chosen == nullptr) {
      std::vector<std::string> names;
      for (const Importer* importer : Importers()) names.emplace_back(importer->name());
      return InvalidInput(
          fmt::format("--quantization {}: unknown format (known: {})", *forced, Join(names, ", ")));
    }
    const std::vector<std::string_view> over = chosen->forced_over();
    const bool compatible =
        detected != nullptr && std::find(over.begin(), over.end(), detected->name()) != over.end();
    if (detected != nullptr && detected != chosen && !compatible) {
      return InvalidInput(
          fmt::format("--quantization {} disagrees with the model's files, which describe {} ({})",
                      *forced, detected->name(), Join(sources.FileNames(), ", ")));
    }
    if (detected == nullptr && !chosen->Detect(sources)) {
      QP_ASSIGN_OR_RETURN(std::optional<QuantPlan> plan,
                          chosen->PlanWithoutDescription(sources, dialect));
      if (plan) {
        plan->importer = std::string(chosen->name());
        plan->dialect = dialect;
        RefuseExperts(dialect, sources.launch().platform, &*plan);
        return std::move(*plan);
      }
      return InvalidInput(
          fmt::format("--quantization {}: the model's files ({}) hold no {} description{}", *forced,
                      Join(sources.FileNames(), ", "), chosen->name(),
                      EngineRaises(search, "Cannot find the config file for " + *forced)));
    }
    detected = chosen;
  }
  if (detected == MlxImporter() && !forced && search.ignores_mlx_description) {
    if (const Json* found = LocateMlx(sources)) return UnreadMlxPlan(all_sources, dialect, *found);
  }
  if (detected == nullptr) {
    // A description no importer recognises is an error, never a silent "unquantized".
    if (std::optional<Located> embedded = sources.Embedded()) {
      const Json* method = embedded->value->Find("quant_method");
      std::vector<std::string> names;
      for (const Importer* importer : Importers()) names.emplace_back(importer->name());
      return Unsupported(
          fmt::format("{}: quantization method {} is not known to quantpath (known: {})",
                      embedded->where.ToString(),
                      method && method->is_string() ? "\"" + method->string_value() + "\""
                                                    : std::string("(no quant_method)"),
                      Join(names, ", ")));
    }
    for (std::string_view name : kStandaloneConfigFiles) {
      if (sources.File(name) != nullptr) {
        return Unsupported(fmt::format("{}: no quantpath importer recognises this file", name));
      }
    }
    if (!unforced.empty()) return UndetectedPlan(all_sources, dialect, unforced);
    return UnquantizedPlan(dialect);
  }
  QP_RETURN_IF_ERROR(
      CheckPlatformReproduced(dialect, all_sources.launch().platform, detected->name()));
  std::vector<std::string> mapped_notes;
  if (mapper) {
    sources = ApplyNameMapper(sources, detected->name(), dialect, *mapper, &mapped_notes);
  }
  if (forced) sources.set_requested_method(*forced);
  QP_ASSIGN_OR_RETURN(QuantPlan plan, detected->BuildPlan(sources, dialect));
  plan.importer = std::string(detected->name());
  plan.dialect = dialect;
  plan.notes.insert(plan.notes.end(), mapped_notes.begin(), mapped_notes.end());
  CheckActDtype(sources, dialect, &plan);
  CheckPlatformMethod(sources, dialect, &plan);
  RefuseExperts(dialect, sources.launch().platform, &plan);
  return plan;
}

}  // namespace quantpath
