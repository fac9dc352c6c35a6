// Reading a ModelOpt description: the algorithm table and each dialect's from_config.
//
// Goals: the hf_quant_config.json shell ({"producer", "quantization": {...}}) and the flat form
// embedded in config.json ({"quant_method": "modelopt", "quant_algo", "ignore", ...}), validated
// as the dialect does it, with the engines' own error texts. Non-goals: matching (rules file).
// Documentation followed: vLLM ModelOptQuantConfigBase.from_config and ModelOptFp8Config @c9a59901;
// SGLang ModelOptFp8Config.from_config as ENGINES.md 3.8 and the recorded cases describe it;
// ModelOpt's exported hf_quant_config.json files (tests/data/corpus).
#include <algorithm>
#include <cctype>
#include <utility>

#include "fmt/format.h"
#include "src/importers/modelopt.h"

namespace quantpath::modelopt {
namespace {

constexpr std::string_view kShellFile = "hf_quant_config.json";
constexpr std::string_view kMixed = "MIXED_PRECISION";

// A tensor description with the fields ModelOpt's algorithms vary; the rest keep their defaults.
TensorQuant Tensor(QDType dtype, Granularity granularity, std::optional<int64_t> group = {},
                   Dynamic dynamic = Dynamic::kStatic) {
  TensorQuant t;
  t.dtype = dtype;
  t.granularity = granularity;
  t.group_size = group;
  t.dynamic = dynamic;
  t.micro_scaled = dtype == QDType::kNVFP4;
  return t;
}

QuantScheme Fp8PerTensor(int64_t) {
  QuantScheme s;
  s.weight = Tensor(QDType::kFP8E4M3, Granularity::kPerTensor);
  s.weight.load.layout = SourceLayout::kModelOptFp8;
  s.input = Tensor(QDType::kFP8E4M3, Granularity::kPerTensor);
  return s;
}

QuantScheme Fp8ChannelToken(int64_t) {
  QuantScheme s;
  s.weight = Tensor(QDType::kFP8E4M3, Granularity::kPerChannel);
  s.weight.load.layout = SourceLayout::kModelOptFp8;
  s.input = Tensor(QDType::kFP8E4M3, Granularity::kPerToken, {}, Dynamic::kDynamic);
  return s;
}

// FP8_PB_WO: 128×128 weight blocks (`weight_scale` [out_blk, 1, in_blk, 1]), weight-only in
// ModelOpt's sense; vLLM runs it with dynamic 1×128 activation groups (a kernel choice).
QuantScheme Fp8BlockWeightOnly(int64_t) {
  QuantScheme s;
  s.weight = Tensor(QDType::kFP8E4M3, Granularity::kBlock);
  s.weight.block_shape = std::array<int64_t, 2>{128, 128};
  s.weight.load.layout = SourceLayout::kModelOptFp8;
  return s;
}

// NVFP4: E2M1 weights with an E4M3 scale per `group` and an fp32 `weight_scale_2` that multiplies;
// activations get their per-group scales at run time against a static `input_scale`.
QuantScheme Nvfp4(int64_t group) {
  QuantScheme s;
  s.weight = Tensor(QDType::kNVFP4, Granularity::kTensorGroup, group);
  s.weight.load.layout = SourceLayout::kModelOptNvfp4;
  s.weight.load.scale_dtype = QDType::kFP8E4M3;
  s.input = Tensor(QDType::kNVFP4, Granularity::kTensorGroup, group, Dynamic::kLocal);
  return s;
}

// W4A8_AWQ: symmetric int4 weights per group (AWQ pre-quant scales folded in), fp8 activations
// with a static per-tensor scale.
QuantScheme W4A8Awq(int64_t group) {
  QuantScheme s;
  s.weight = Tensor(QDType::kINT4, Granularity::kGroup, group);
  s.weight.load.layout = SourceLayout::kModelOptW4A8Awq;
  s.input = Tensor(QDType::kFP8E4M3, Granularity::kPerTensor);
  return s;
}

// W4A16_NVFP4: NVFP4 weights with 16-bit activations (ModelOpt's W4A16 NVFP4 export: the NVFP4
// tensors without an input_scale).
QuantScheme Nvfp4WeightOnly(int64_t group) {
  QuantScheme s = Nvfp4(group);
  s.input.reset();
  return s;
}

// MXFP8: E4M3 weights with an E8M0 scale per 32 values; activations quantized the same way at run
// time.
QuantScheme Mxfp8(int64_t group) {
  QuantScheme s;
  s.weight = Tensor(QDType::kMXFP8, Granularity::kGroup, group);
  s.weight.micro_scaled = true;
  s.weight.load.layout = SourceLayout::kModelOptFp8;
  s.weight.load.scale_dtype = QDType::kMXFP8;
  s.input = Tensor(QDType::kMXFP8, Granularity::kGroup, group, Dynamic::kDynamic);
  s.input->micro_scaled = true;
  return s;
}

struct AlgoRow {
  AlgoInfo info;
  QuantScheme (*scheme)(int64_t group);
};
const AlgoRow kAlgos[] = {
    {{"FP8", 0}, Fp8PerTensor},
    {{"FP8_PER_CHANNEL_PER_TOKEN", 0}, Fp8ChannelToken},
    {{"FP8_PB_WO", 0}, Fp8BlockWeightOnly},
    {{"NVFP4", 16}, Nvfp4},
    {{"W4A8_AWQ", 128}, W4A8Awq},
    {{"W4A16_NVFP4", 16}, Nvfp4WeightOnly},
    {{"MXFP8", 32, false}, Mxfp8},
};

// vLLM QUANT_ALGOS @c9a59901, in its order (the error text prints the list).
constexpr std::string_view kVllmAlgos[] = {"FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO",
                                           "NVFP4"};

// vLLM ModelOptQuantConfigBase.from_config.
Status ReadVllm(const Json& root, const Json* shell, Description* d) {
  const Json* q = &root;
  d->exclude_key = "ignore";
  if (shell != nullptr) {
    if (!shell->is_object()) {
      return EngineError("ValueError: Expected 'quantization' to be a dictionary in config");
    }
    q = shell;
    d->exclude_key = "exclude_modules";
  }
  const Json* algo = q->Find("quant_algo");
  if (!Truthy(algo)) return EngineError("ValueError: Missing 'quant_algo' in quantization config");
  d->algo = Upper(PyStr(*algo));
  if (const Json* kv = q->FindNonNull("kv_cache_quant_algo")) {
    if (!kv->is_string()) {
      return EngineError(
          fmt::format("ValueError: kv_cache_quant_algo must be a string, got {}", PyType(*kv)));
    }
    if (Upper(kv->string_value()) == "FP8") d->kv = Fp8KvScheme();
  }
  if (const Json* excl = q->Find(d->exclude_key); excl && !excl->is_array()) {
    return EngineError(
        fmt::format("ValueError: exclude_modules must be a list, got {}", PyType(*excl)));
  }
  QP_ASSIGN_OR_RETURN(d->exclude, ExcludeList(*q, d->exclude_key, d->file));
  QP_ASSIGN_OR_RETURN(d->group_size, VllmGroupSize(q->FindNonNull("group_size")));
  if (std::find(std::begin(kVllmAlgos), std::end(kVllmAlgos), d->algo) == std::end(kVllmAlgos)) {
    std::vector<std::string> quoted;
    for (std::string_view a : kVllmAlgos) quoted.push_back(fmt::format("'{}'", a));
    return EngineError(fmt::format(
        "ValueError: ModelOpt currently only supports: [{}] quantizations in vLLM. Please check "
        "the `hf_quant_config.json` file for your model's quant configuration.",
        Join(quoted, ", ")));
  }
  d->info = FindAlgo(d->algo);
  if (root.FindNonNull("kv_cache_scheme") != nullptr && shell == nullptr) {
    d->notes.push_back("vLLM reads the flat form's kv_cache_quant_algo, not kv_cache_scheme");
  }
  return {};
}

// SGLang ModelOptFp8Config / ModelOptFp4Config.from_config: the flat form first, then the shell.
Status ReadSglang(const Json& root, const Json* shell, Description* d) {
  d->packed_mapping_in_config = root.FindNonNull("packed_modules_mapping") != nullptr;
  const Json* algo = root.FindNonNull("quant_algo");
  const Json* q = &root;
  if (Truthy(algo)) {
    d->exclude_key = "ignore";
    if (KvSchemeIsFp8(root.FindNonNull("kv_cache_scheme"))) {
      d->kv = Fp8KvScheme();
      d->kv_method = true;
    }
  } else {
    q = shell != nullptr && shell->is_object() ? shell : &root;
    algo = q->FindNonNull("quant_algo");
    d->exclude_key = "exclude_modules";
    // Any truthy kv_cache_quant_algo attaches ModelOptFp8KVCacheMethod; it is not validated.
    if (Truthy(q->FindNonNull("kv_cache_quant_algo"))) {
      d->kv = Fp8KvScheme();
      d->kv_method = true;
    }
  }
  if (!Truthy(algo)) {
    return EngineError("ValueError: Cannot find 'quant_algo' in the model's quantization config. ");
  }
  d->algo = PyStr(*algo);
  const std::string upper = Upper(d->algo);
  if (upper.find("FP4") != std::string::npos) {
    d->info = FindAlgo("NVFP4");  // override_quantization_method → modelopt_fp4
  } else if (d->algo.find("FP8") != std::string::npos) {
    d->info = FindAlgo(d->algo) ? FindAlgo(d->algo) : FindAlgo("FP8");
  } else {
    return EngineError(
        "ValueError: ModelOptFp8Config only supports static FP8 quantization in SGLang. For FP4 "
        "quantization, use ModelOptFp4Config. Check the quantization config for your model's "
        "configuration.");
  }
  QP_ASSIGN_OR_RETURN(d->exclude, ExcludeList(*q, d->exclude_key, d->file));
  if (const Json* gs = q->FindNonNull("group_size"); gs && gs->is_int())
    d->group_size = gs->int_value();
  return {};
}

// quantized_layers for MIXED_PRECISION: the description's own, else hf_quant_config.json's (the
// engines read the standalone file when the embedded form lacks the table).
void FindQuantizedLayers(const ConfigSources& sources, const Json& q, Description* d) {
  if (const Json* table = q.FindNonNull("quantized_layers")) {
    d->quantized_layers = table;
    d->quantized_layers_file = d->file;
    return;
  }
  const SourceFile* shell_file = sources.File(kShellFile);
  if (shell_file == nullptr || d->file == kShellFile) return;
  const Json* shell = shell_file->root.FindNonNull("quantization");
  const Json* table = shell ? shell->FindNonNull("quantized_layers") : nullptr;
  if (table == nullptr) return;
  d->quantized_layers = table;
  d->quantized_layers_file = std::string(kShellFile);
  d->notes.push_back(fmt::format("{} has no quantized_layers; read from {}", d->where.ToString(),
                                 Where(kShellFile, *table)));
}

// The reference reading: ModelOpt's own fields, every algorithm, validated.
Status ReadNative(const ConfigSources& sources, const Json& root, const Json* shell,
                  Description* d) {
  const Json* q = &root;
  if (shell != nullptr) {
    if (!shell->is_object()) {
      return InvalidInput(fmt::format("{}: \"quantization\" must be an object, found {}",
                                      Where(d->file, *shell), shell->TypeName()));
    }
    q = shell;
  }
  if (const Json* producer = root.FindNonNull("producer"); producer && producer->is_object()) {
    d->notes.push_back(
        fmt::format("{}: producer {}", Where(d->file, *producer), ToJson(*producer)));
  }
  QP_ASSIGN_OR_RETURN(std::optional<std::string> algo, OptionalString(*q, "quant_algo", d->file));
  if (!algo || algo->empty()) {
    return InvalidInput(fmt::format("{}: quant_algo is required", Where(d->file, *q)));
  }
  d->algo = Upper(*algo);
  if (d->algo != *algo) {
    d->notes.push_back(fmt::format("{}: quant_algo \"{}\" read as {}",
                                   Where(d->file, *q->Find("quant_algo")), *algo, d->algo));
  }
  d->mixed = d->algo == kMixed;
  d->info = FindAlgo(d->algo);
  if (d->info != nullptr && !d->info->native) d->info = nullptr;
  if (!d->mixed && d->info == nullptr) {
    return Unsupported(fmt::format("{}: quant_algo \"{}\" is not supported (supported: {}, {})",
                                   Where(d->file, *q->Find("quant_algo")), *algo, NativeAlgoList(),
                                   kMixed));
  }
  QP_ASSIGN_OR_RETURN(std::optional<std::string> kv,
                      OptionalString(*q, "kv_cache_quant_algo", d->file));
  if (kv) {
    const AlgoInfo* kv_algo = FindAlgo(Upper(*kv));
    if (Upper(*kv) == "FP8") {
      d->kv = Fp8KvScheme();
    } else if (kv_algo && kv_algo->name == "NVFP4") {
      QP_ASSIGN_OR_RETURN(QuantScheme s, AlgoScheme(*kv_algo, std::nullopt, d->file));
      d->kv = QuantScheme();
      d->kv->weight = s.weight;
    } else {
      return Unsupported(fmt::format("{}: kv_cache_quant_algo \"{}\" is not supported (FP8, NVFP4)",
                                     Where(d->file, *q->Find("kv_cache_quant_algo")), *kv));
    }
  } else if (KvSchemeIsFp8(q->FindNonNull("kv_cache_scheme"))) {
    d->kv = Fp8KvScheme();
  }
  d->exclude_key = shell != nullptr || q->Find("ignore") == nullptr ? "exclude_modules" : "ignore";
  QP_ASSIGN_OR_RETURN(d->exclude, ExcludeList(*q, d->exclude_key, d->file));
  QP_ASSIGN_OR_RETURN(d->group_size, OptionalInt(*q, "group_size", d->file));
  if (d->mixed) {
    FindQuantizedLayers(sources, *q, d);
    if (d->quantized_layers == nullptr) {
      return InvalidInput(
          fmt::format("{}: quant_algo MIXED_PRECISION needs quantized_layers", Where(d->file, *q)));
    }
  }
  return {};
}

}  // namespace

std::string Upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

std::string_view PyType(const Json& v) {
  switch (v.type()) {
    case Json::Type::kNull:
      return "<class 'NoneType'>";
    case Json::Type::kBool:
      return "<class 'bool'>";
    case Json::Type::kInt:
      return "<class 'int'>";
    case Json::Type::kDouble:
      return "<class 'float'>";
    case Json::Type::kString:
      return "<class 'str'>";
    case Json::Type::kArray:
      return "<class 'list'>";
    case Json::Type::kObject:
      return "<class 'dict'>";
  }
  return "<class 'object'>";
}

bool Truthy(const Json* v) {
  if (v == nullptr) return false;
  switch (v->type()) {
    case Json::Type::kNull:
      return false;
    case Json::Type::kBool:
      return v->bool_value();
    case Json::Type::kInt:
      return v->int_value() != 0;
    case Json::Type::kDouble:
      return v->number_value() != 0;
    case Json::Type::kString:
      return !v->string_value().empty();
    case Json::Type::kArray:
      return !v->items().empty();
    case Json::Type::kObject:
      return !v->members().empty();
  }
  return false;
}

Result<std::optional<int64_t>> VllmGroupSize(const Json* gs) {
  if (gs == nullptr) return std::optional<int64_t>();
  if (gs->is_int() || gs->is_bool()) {
    return std::optional<int64_t>(gs->is_bool() ? int64_t{gs->bool_value()} : gs->int_value());
  }
  if (gs->is_number()) {
    return std::optional<int64_t>(static_cast<int64_t>(gs->number_value()));  // int() truncates
  }
  char* end = nullptr;
  std::string text = gs->is_string() ? gs->string_value() : "";
  long long n = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') {
    return EngineError(
        fmt::format("ValueError: group_size must be an integer, got {}", PyType(*gs)));
  }
  return std::optional<int64_t>(n);
}

std::string PyStr(const Json& v) { return v.is_string() ? v.string_value() : ToJson(v); }

Status EngineError(std::string_view text) { return InvalidInput(std::string(text)); }

Result<std::vector<ListEntry>> ExcludeList(const Json& q, std::string_view key,
                                           std::string_view file) {
  QP_ASSIGN_OR_RETURN(std::optional<std::vector<ListEntry>> list, ReadEntryList(q, key, file));
  return list.value_or(std::vector<ListEntry>{});
}

QuantScheme Fp8KvScheme() {
  QuantScheme s;
  s.weight = Tensor(QDType::kFP8E4M3, Granularity::kPerTensor);
  return s;
}

bool KvSchemeIsFp8(const Json* kv) {
  if (kv == nullptr || !kv->is_object()) return false;
  const Json* type = kv->FindNonNull("type");
  const Json* bits = kv->FindNonNull("num_bits");
  return type && type->is_string() && type->string_value() == "float" && bits && bits->is_int() &&
         bits->int_value() == 8;
}

const AlgoInfo* FindAlgo(std::string_view name) {
  for (const AlgoRow& row : kAlgos) {
    if (row.info.name == name) return &row.info;
  }
  return nullptr;
}

Result<QuantScheme> AlgoScheme(const AlgoInfo& algo, std::optional<int64_t> group_size,
                               std::string_view where) {
  int64_t group = group_size.value_or(algo.default_group);
  if ((algo.name == "NVFP4" || algo.name == "W4A16_NVFP4") && group != 16) {
    return InvalidInput(
        fmt::format("{}: NVFP4 has one scale per 16 values, found group_size {}", where, group));
  }
  if (algo.default_group != 0 && group <= 0) {
    return InvalidInput(fmt::format("{}: group_size must be positive, found {}", where, group));
  }
  for (const AlgoRow& row : kAlgos) {
    if (&row.info == &algo) return row.scheme(group);
  }
  return InternalError(fmt::format("no scheme for quant_algo {}", algo.name));
}

std::string NativeAlgoList() {
  std::vector<std::string> names;
  for (const AlgoRow& row : kAlgos) {
    if (row.info.native) names.emplace_back(row.info.name);
  }
  return Join(names, ", ");
}

const AlgoMethods* FindMethods(const std::vector<AlgoMethods>& table, std::string_view algo) {
  for (const AlgoMethods& row : table) {
    if (row.algo == algo) return &row;
  }
  return nullptr;
}

std::optional<Located> FindDescription(const ConfigSources& sources) {
  if (std::optional<Located> embedded = sources.Embedded()) {
    const Json* method = embedded->value->FindNonNull("quant_method");
    bool modelopt =
        method && method->is_string() && ToLower(method->string_value()).starts_with("modelopt");
    // An embedded shell (producer + quantization) without quant_method is ModelOpt's too.
    bool shell = method == nullptr && embedded->value->FindNonNull("quantization") != nullptr;
    if (modelopt || shell) return embedded;
    return std::nullopt;  // an embedded description of another format wins
  }
  if (const SourceFile* f = sources.File(kShellFile)) {
    return Located{&f->root, {f->name, ""}};
  }
  return std::nullopt;
}

Result<Description> ReadDescription(const ConfigSources& sources, const Located& located,
                                    const Dialect& dialect) {
  Description d;
  d.file = located.where.file;
  d.where = located.where;
  const Json& root = *located.value;
  if (!root.is_object()) {
    return InvalidInput(
        fmt::format("{}: expected an object, found {}", Where(d.file, root), root.TypeName()));
  }
  const Json* shell = root.Find("quantization");
  switch (dialect.engine) {
    case Engine::kNative:
      QP_RETURN_IF_ERROR(ReadNative(sources, root, shell, &d));
      break;
    case Engine::kVllm:
      QP_RETURN_IF_ERROR(Since(dialect, DialectId::kVllm033)
                             ? ReadVllmCurrent(root, shell, dialect, &d)
                             : ReadVllm(root, shell, &d));
      break;
    case Engine::kSglang:
      QP_RETURN_IF_ERROR(Since(dialect, DialectId::kSglang0523) ? ReadSglangCurrent(root, shell, &d)
                                                                : ReadSglang(root, shell, &d));
      break;
  }
  return d;
}

}  // namespace quantpath::modelopt
