// Reading a ModelOpt description as the current engine releases do (vllm@0.33, sglang@0.5.23).
//
// Goals: each release's config-class choice (which of its ModelOpt configs the method resolution
// picks for the algorithm) and that class's from_config, with the engines' own error texts.
// Non-goals: matching (modelopt_rules.cc, modelopt_mixed.cc); the older recorded code
// (modelopt_config.cc).
// Documentation followed: vLLM 0.33.0 model_executor/layers/quantization/modelopt.py
// (ModelOptQuantConfigBase.from_config, ModelOptNvFp4Config._from_config,
// ModelOptMxFp8Config._from_config, ModelOptMixedPrecisionConfig._from_config, QUANT_ALGOS); SGLang
// 0.5.23 configs/model_config.py (_parse_modelopt_quant_config) and layers/quantization/
// modelopt_quant.py (ModelOptFp8Config / ModelOptFp4Config / ModelOptMixedPrecisionConfig
// .from_config), w4afp8.py (W4AFp8Config); tests/data/oracle/releases/*/cases/*-modelopt.json.
#include <algorithm>
#include <utility>

#include "fmt/format.h"
#include "src/importers/modelopt.h"

namespace quantpath::modelopt {
namespace {

// vLLM 0.33 QUANT_ALGOS, in its order (the error text prints the list).
constexpr std::string_view kVllmAlgos[] = {"FP8",
                                           "FP8_PER_CHANNEL_PER_TOKEN",
                                           "FP8_PB_WO",
                                           "NVFP4",
                                           "W4A16_NVFP4",
                                           "MXFP8",
                                           "MIXED_PRECISION"};
constexpr std::string_view kMixed = "MIXED_PRECISION";
constexpr std::string_view kSglangFindError =
    "ValueError: Cannot find 'quant_algo' in the model's quantization config. Expected either "
    "flat format (config.json) or nested format (hf_quant_config.json).";

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// Python's list repr of strings: ['a', 'b'].
std::string PyList(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const std::string& item : items) quoted.push_back(fmt::format("'{}'", item));
  return "[" + Join(quoted, ", ") + "]";
}

// The fields of `required` that `q` lacks (key presence; null counts as present).
std::vector<std::string> MissingFields(const Json& q,
                                       std::initializer_list<std::string_view> required) {
  std::vector<std::string> missing;
  for (std::string_view field : required) {
    if (q.Find(field) == nullptr) missing.emplace_back(field);
  }
  return missing;
}

void ReadPackedMapping(const Json& root, Description* d) {
  const Json* packed = root.FindNonNull("packed_modules_mapping");
  d->packed_mapping_in_config = packed != nullptr;
  if (packed == nullptr || !packed->is_object()) return;
  for (const auto& [fused, shards] : packed->members()) {
    std::vector<std::string> names;
    if (shards.is_array()) {
      for (const Json& shard : shards.items()) {
        if (shard.is_string()) names.push_back(shard.string_value());
      }
    }
    d->packed.emplace_back(fused, std::move(names));
  }
}

// The MIXED_PRECISION table; the engines raise when it is empty.
Status ReadMixedTable(const Json& q, std::string_view empty_error, Description* d) {
  const Json* table = q.FindNonNull("quantized_layers");
  if (!Truthy(table)) return EngineError(empty_error);
  if (!table->is_object()) {
    return InvalidInput(fmt::format("{}: quantized_layers must be an object, found {}",
                                    Where(d->file, *table), table->TypeName()));
  }
  d->mixed = true;
  d->engine_config = EngineConfig::kMixed;
  d->quantized_layers = table;
  d->quantized_layers_file = d->file;
  return {};
}

// vLLM 0.33 ModelOptNvFp4Config._from_config: quant_algo NVFP4 whose config groups all leave the
// activations unquantized runs as W4A16_NVFP4.
bool WeightOnlyGroups(const Json& root) {
  const Json* groups = root.FindNonNull("config_groups");
  if (groups == nullptr || !groups->is_object() || groups->members().empty()) return false;
  for (const auto& [name, group] : groups->members()) {
    if (!group.is_object() || group.FindNonNull("input_activations") != nullptr) return false;
  }
  return true;
}

// SGLang ModelOptFp4Config.common_group_size: the one integer group_size found at the top level,
// in "quantization", or in a config group (or its weights / input_activations); nullopt when
// there is none or several (it raises then).
std::optional<int64_t> CommonGroupSize(const Json& root) {
  std::vector<int64_t> sizes;
  auto add = [&](const Json* object) {
    const Json* v = object && object->is_object() ? object->FindNonNull("group_size") : nullptr;
    if (v == nullptr || !v->is_int()) return;
    if (std::find(sizes.begin(), sizes.end(), v->int_value()) == sizes.end()) {
      sizes.push_back(v->int_value());
    }
  };
  add(&root);
  add(root.FindNonNull("quantization"));
  if (const Json* groups = root.FindNonNull("config_groups"); groups && groups->is_object()) {
    for (const auto& [name, group] : groups->members()) {
      add(&group);
      if (!group.is_object()) continue;
      for (const auto& [key, sub] : group.members()) add(&sub);
    }
  }
  if (sizes.size() != 1) return std::nullopt;
  return sizes.front();
}

// SGLang ModelOptFp8Config.from_config.
Status ReadSglangFp8(const Json& root, Description* d) {
  const Json* q = &root;
  const Json* algo = root.FindNonNull("quant_algo");
  const Json* kv = nullptr;
  if (algo != nullptr) {
    const Json* scheme = root.FindNonNull("kv_cache_scheme");
    if (scheme == nullptr || !scheme->is_object()) kv = root.FindNonNull("kv_cache_quant_algo");
    d->kv_method = KvSchemeIsFp8(scheme) || Truthy(kv);
    d->exclude_key = "ignore";
  } else {
    const Json* section = root.Find("quantization");
    if (section == nullptr || !section->is_object()) return EngineError(kSglangFindError);
    q = section;
    algo = q->FindNonNull("quant_algo");
    kv = q->FindNonNull("kv_cache_quant_algo");
    d->kv_method = Truthy(kv);
    d->exclude_key = "exclude_modules";
  }
  if (algo == nullptr) {
    return EngineError("ValueError: Cannot find 'quant_algo' in the model's quantization config. ");
  }
  d->algo = PyStr(*algo);
  if (!algo->is_string() || d->algo != "FP8") {
    return EngineError(fmt::format(
        "ValueError: ModelOptFp8Config only supports regular FP8 quantization, but found '{}'. "
        "Use the native 'mxfp8' quantization method for MXFP8 or ModelOptFp4Config for FP4.",
        d->algo));
  }
  if (d->kv_method) d->kv = Fp8KvScheme();
  d->info = FindAlgo("FP8");
  QP_ASSIGN_OR_RETURN(d->exclude, ExcludeList(*q, d->exclude_key, d->file));
  return {};
}

// SGLang ModelOptFp4Config.from_config. The KV method is always attached: a missing
// kv_cache_quant_algo reads as "auto" (the cache follows --kv-cache-dtype).
Status ReadSglangFp4(const Json& root, Description* d) {
  const Json* q = &root;
  const Json* algo = root.FindNonNull("quant_algo");
  std::optional<int64_t> group_size;
  bool group_size_missing = false;
  bool fp8_kv = false;
  if (algo != nullptr) {
    const Json* scheme = root.FindNonNull("kv_cache_scheme");
    if (scheme != nullptr && scheme->is_object()) {
      fp8_kv = KvSchemeIsFp8(scheme);
    } else if (scheme != nullptr && scheme->is_string()) {
      std::string name = Upper(scheme->string_value());
      fp8_kv = name == "FP8" || name == "FLOAT8";
    } else if (const Json* kv = root.FindNonNull("kv_cache_quant_algo"); kv && kv->is_string()) {
      fp8_kv = Upper(kv->string_value()) == "FP8";
    }
    const Json* gs = root.FindNonNull("group_size");
    if (gs == nullptr) {
      const Json* groups = root.FindNonNull("config_groups");
      if (groups != nullptr && groups->is_object() && !groups->members().empty()) {
        const Json& first = groups->members().front().second;
        const Json* weights = first.is_object() ? first.FindNonNull("weights") : nullptr;
        gs = weights && weights->is_object() ? weights->FindNonNull("group_size") : nullptr;
      }
    }
    if (gs != nullptr && gs->is_int()) group_size = gs->int_value();
    if (gs == nullptr && algo->is_string() && Contains(algo->string_value(), "NVFP4")) {
      group_size = 16;
    }
    group_size_missing = gs == nullptr && !group_size;
    for (std::string_view key : {"ignore", "modules_to_not_convert", "exclude_modules"}) {
      if (root.Find(key) != nullptr) {
        d->exclude_key = std::string(key);
        break;
      }
    }
    if (d->exclude_key.empty()) d->exclude_key = "exclude_modules";
  } else {
    const Json* section = root.Find("quantization");
    if (section == nullptr || !section->is_object() || section->Find("quant_algo") == nullptr) {
      return EngineError(kSglangFindError);
    }
    q = section;
    algo = q->Find("quant_algo");
    const Json* kv = q->FindNonNull("kv_cache_quant_algo");
    fp8_kv = kv && kv->is_string() && Upper(kv->string_value()) == "FP8";
    group_size = CommonGroupSize(root);
    if (!group_size) return EngineError(kSglangFindError);  // its ValueError is caught and replaced
    d->exclude_key = "exclude_modules";
  }
  d->algo = PyStr(*algo);
  constexpr std::string_view kAccepted[] = {"FP8", "NVFP4", "NVFP4_AWQ", "W4A16_NVFP4"};
  if (!algo->is_string() ||
      std::find(std::begin(kAccepted), std::end(kAccepted), d->algo) == std::end(kAccepted)) {
    return EngineError(
        "ValueError: ModelOpt currently only supports: FP8, NVFP4, NVFP4_AWQ, W4A16_NVFP4 "
        "quantizations in sglang. Please check the quantization config for your model's "
        "configuration.");
  }
  const Json* exclude = q->Find(d->exclude_key);
  if (group_size_missing || (exclude != nullptr && exclude->is_null())) {
    return EngineError(
        "ValueError: NVFP4 quantization requires group_size and exclude_modules specified in the "
        "quantization config");
  }
  d->kv_method = true;
  if (fp8_kv) d->kv = Fp8KvScheme();
  d->group_size = group_size;
  d->info = FindAlgo(d->algo == "W4A16_NVFP4" ? "W4A16_NVFP4" : "NVFP4");
  if (d->algo == "NVFP4_AWQ") d->notes.push_back("quant_algo NVFP4_AWQ is read as NVFP4");
  QP_ASSIGN_OR_RETURN(d->exclude, ExcludeList(*q, d->exclude_key, d->file));
  return {};
}

// SGLang ModelOptMixedPrecisionConfig.from_config.
Status ReadSglangMixed(const Json& root, const Json* shell, Description* d) {
  const Json* q = &root;
  if (root.FindNonNull("quant_algo") != nullptr) {
    const Json* scheme = root.FindNonNull("kv_cache_scheme");
    if (scheme != nullptr && scheme->is_object()) {
      d->kv_method = true;  // FP8, NVFP4 or "auto"
      if (KvSchemeIsFp8(scheme)) d->kv = Fp8KvScheme();
    } else {
      const Json* kv = root.FindNonNull("kv_cache_quant_algo");
      d->kv_method = Truthy(kv);
      if (kv && kv->is_string() && Upper(kv->string_value()) == "FP8") d->kv = Fp8KvScheme();
    }
    d->exclude_key = root.Find("ignore") != nullptr ? "ignore" : "exclude_modules";
  } else {
    q = shell;
    const Json* kv = q->FindNonNull("kv_cache_quant_algo");
    d->kv_method = Truthy(kv);
    if (kv && kv->is_string() && Upper(kv->string_value()) == "FP8") d->kv = Fp8KvScheme();
    d->exclude_key = "exclude_modules";
  }
  d->algo = std::string(kMixed);
  QP_RETURN_IF_ERROR(ReadMixedTable(
      *q, "ValueError: MIXED_PRECISION quantization requires a non-empty quantized_layers map.",
      d));
  QP_ASSIGN_OR_RETURN(d->exclude, ExcludeList(*q, d->exclude_key, d->file));
  return {};
}

// Whether quantized_layers names an NVFP4 layer (SGLang then resolves modelopt_mixed, else
// w4afp8).
bool HasNvfp4Layer(const Json* table) {
  if (table == nullptr || !table->is_object()) return false;
  for (const auto& [path, entry] : table->members()) {
    const Json* algo = entry.is_object() ? entry.FindNonNull("quant_algo") : nullptr;
    std::string name = algo ? Upper(PyStr(*algo)) : "";
    if (name == "NVFP4" || name == "W4A16_NVFP4") return true;
  }
  return false;
}

}  // namespace

// vLLM 0.34 ModelOptNvFp4Config: weight_scale_encoding (the config's, else its `quantization`
// object's) names how the block scales are stored; only the CSF stream encodings are accepted.
Status ReadScaleEncoding(const Json& root, const Json* shell, Description* d) {
  const Json* encoding = root.FindNonNull("weight_scale_encoding");
  if (encoding == nullptr && shell != nullptr)
    encoding = shell->FindNonNull("weight_scale_encoding");
  if (encoding == nullptr) return {};
  const std::string value = PyStr(*encoding);
  if (!encoding->is_string() || (value != "csf" && value != "csf_32x2_v1")) {
    return EngineError(fmt::format("ValueError: unsupported weight_scale_encoding: {}", value));
  }
  d->notes.push_back(fmt::format(
      "{}: weight_scale_encoding {}: the block scales are stored as compressed streams, which "
      "vLLM 0.34 decodes while loading; quantpath plans the layers and does not read those "
      "tensors",
      Where(d->file, *encoding), value));
  return {};
}

// producer.name "modelopt", or the legacy shell holding modelopt_quant_config.
bool IsModelOptProducer(const Json& root, const Json& shell) {
  const Json* producer = root.FindNonNull("producer");
  const Json* name = producer != nullptr ? producer->FindNonNull("name") : nullptr;
  if (name != nullptr && name->is_string() && name->string_value() == "modelopt") return true;
  return shell.is_object() && shell.Find("modelopt_quant_config") != nullptr;
}

Status ReadVllmCurrent(const Json& root, const Json* shell, const Dialect& dialect,
                       Description* d) {
  ReadPackedMapping(root, d);
  const Json* q = &root;
  const Json* kv = nullptr;
  if (shell != nullptr) {
    if (!shell->is_object()) {
      return EngineError("ValueError: Expected 'quantization' to be a dictionary in config");
    }
    q = shell;
    kv = q->FindNonNull("kv_cache_quant_algo");
    d->exclude_key = "exclude_modules";
  } else {
    // The flat form reads the KV algorithm only from kv_cache_scheme.
    if (KvSchemeIsFp8(root.FindNonNull("kv_cache_scheme"))) d->kv = Fp8KvScheme();
    if (root.FindNonNull("kv_cache_quant_algo") != nullptr) {
      d->notes.push_back(
          "vLLM reads the flat form's KV algorithm from kv_cache_scheme only; "
          "kv_cache_quant_algo is ignored");
    }
    d->exclude_key = root.Find("ignore") != nullptr ? "ignore" : "exclude_modules";
  }
  const Json* algo = q->Find("quant_algo");
  // ModelArchConfigConvertorBase._normalize_quantization_config sets quant_method for a nested
  // ModelOpt description (producer modelopt) from its quant_algo, and knows only these.
  if (shell != nullptr && algo != nullptr && !algo->is_null() && IsModelOptProducer(root, *shell)) {
    constexpr std::string_view kNormalized[] = {"FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO",
                                                "NVFP4", "MIXED_PRECISION"};
    if (std::find(std::begin(kNormalized), std::end(kNormalized), Upper(PyStr(*algo))) ==
        std::end(kNormalized)) {
      return EngineError(fmt::format("ValueError: Unknown ModelOpt quant algo: {}", PyStr(*algo)));
    }
  }
  if (!Truthy(algo)) return EngineError("ValueError: Missing 'quant_algo' in quantization config");
  d->algo = Upper(PyStr(*algo));
  if (kv != nullptr) {
    if (!kv->is_string()) {
      return EngineError(
          fmt::format("ValueError: kv_cache_quant_algo must be a string, got {}", PyType(*kv)));
    }
    if (Upper(kv->string_value()) == "FP8") d->kv = Fp8KvScheme();
  }
  d->kv_method = d->kv.has_value() || Truthy(kv);
  if (const Json* excl = q->Find(d->exclude_key); excl && !excl->is_array()) {
    return EngineError(
        fmt::format("ValueError: exclude_modules must be a list, got {}", PyType(*excl)));
  }
  QP_ASSIGN_OR_RETURN(d->exclude, ExcludeList(*q, d->exclude_key, d->file));
  QP_ASSIGN_OR_RETURN(d->group_size, VllmGroupSize(q->FindNonNull("group_size")));
  if (std::find(std::begin(kVllmAlgos), std::end(kVllmAlgos), d->algo) == std::end(kVllmAlgos)) {
    std::vector<std::string> names(std::begin(kVllmAlgos), std::end(kVllmAlgos));
    return EngineError(fmt::format(
        "ValueError: ModelOpt currently only supports: {} quantizations in vLLM. Please check "
        "the `hf_quant_config.json` file for your model's quant configuration.",
        PyList(names)));
  }
  if (d->algo == kMixed) {
    return ReadMixedTable(*q,
                          "ValueError: MIXED_PRECISION quant_algo requires a non-empty "
                          "'quantized_layers' mapping in the quantization config.",
                          d);
  }
  if (d->algo == "NVFP4" && WeightOnlyGroups(root)) {
    d->algo = "W4A16_NVFP4";
    d->notes.push_back(
        "quant_algo NVFP4 whose config_groups leave every input_activations null: vLLM runs "
        "it as W4A16_NVFP4");
  }
  if (shell != nullptr && (Contains(d->algo, "NVFP4") || Contains(d->algo, "MXFP8"))) {
    const bool nvfp4 = Contains(d->algo, "NVFP4");
    std::vector<std::string> missing =
        nvfp4 ? MissingFields(*q, {"group_size", "kv_cache_quant_algo", "exclude_modules"})
              : MissingFields(*q, {"kv_cache_quant_algo", "exclude_modules"});
    if (!missing.empty()) {
      return EngineError(fmt::format(
          "ValueError: {} quantization requires the following fields in hf_quant_config.json: {}",
          nvfp4 ? "NVFP4" : "MXFP8", PyList(missing)));
    }
  }
  if (Since(dialect, DialectId::kVllm034) && Contains(d->algo, "NVFP4")) {
    QP_RETURN_IF_ERROR(ReadScaleEncoding(root, shell, d));
  }
  d->info = FindAlgo(d->algo);
  return {};
}

Status ReadSglangCurrent(const Json& root, const Json* shell, Description* d) {
  ReadPackedMapping(root, d);
  // ModelConfig._parse_modelopt_quant_config picks the config class from the algorithm as written.
  const Json* described = shell != nullptr && shell->is_object() ? shell : &root;
  const Json* algo = described->FindNonNull("quant_algo");
  const std::string name = algo && algo->is_string() ? algo->string_value() : "";
  if (name == kMixed) {
    if (HasNvfp4Layer(described->FindNonNull("quantized_layers"))) {
      return ReadSglangMixed(root, described, d);
    }
    // W4AFp8Config: every linear layer gets Fp8LinearMethod and the experts W4AFp8MoEMethod; it
    // reads no exclusion list and no KV algorithm.
    if (root.Find("quant_method") == nullptr) {
      return EngineError(
          "ValueError: Cannot find any of ['quant_method'] in the model's quantization config.");
    }
    d->algo = std::string(kMixed);
    d->engine_config = EngineConfig::kW4AFp8;
    d->notes.push_back(
        "MIXED_PRECISION without an NVFP4 layer: SGLang resolves w4afp8, which quantizes every "
        "linear layer (fp8) and the experts (int4 weights, fp8 activations) and ignores "
        "quantized_layers and the exclusion list");
    return {};
  }
  if (Contains(name, "FP4") || Contains(name, "NVFP4")) return ReadSglangFp4(root, d);
  if (name == "MXFP8") {
    // _parse_modelopt_quant_config rewrites a nested description into mxfp8's own dict
    // (activation_scheme dynamic, blocks [1, group_size]); a flat one reaches Fp8Config.from_config
    // as written, which requires activation_scheme.
    if (shell == nullptr) {
      return EngineError(
          "ValueError: Cannot find any of ['activation_scheme'] in the model's quantization "
          "config.");
    }
    d->algo = name;
    d->engine_config = EngineConfig::kMxfp8;
    d->exclude_key = described->Find("exclude_modules") != nullptr ? "exclude_modules" : "ignore";
    QP_ASSIGN_OR_RETURN(d->exclude, ExcludeList(*described, d->exclude_key, d->file));
    d->info = FindAlgo(d->algo);
    d->notes.push_back(
        "quant_algo MXFP8: SGLang resolves its own mxfp8 method (Fp8Config with MX blocks of 32), "
        "which reads exclude_modules as Fp8Config's ignored layers (no globs) and no other field");
    return {};
  }
  return ReadSglangFp8(root, d);
}

}  // namespace quantpath::modelopt
