// compressed-tensors QuantizationArgs and QuantizationScheme: parsing with the library's
// validation rules, presets, compression formats, and the mapping to the IR's TensorQuant.
//
// Goals: accept exactly what the library accepts and reject the rest with a message naming the
// file and JSON pointer. Non-goals: target matching (compressed_tensors_targets.cc), calibration
// fields beyond showing them (observer, observer_kwargs).
// Documentation followed: compressed-tensors@ac8e2ba8 quantization/quant_args.py (field and model
// validators), quant_scheme.py (QuantizationScheme validator, PRESET_SCHEMES), config/base.py
// (CompressionFormat).
#include <algorithm>
#include <cstdlib>
#include <span>
#include <utility>

#include "fmt/format.h"
#include "src/importers/compressed_tensors.h"

namespace quantpath::ct {
namespace {

constexpr std::string_view kArgsKeys[] = {
    "num_bits", "type",     "symmetric",   "group_size", "strategy", "block_structure",
    "dynamic",  "actorder", "scale_dtype", "zp_dtype",   "observer", "observer_kwargs"};

constexpr std::string_view kSchemeKeys[] = {"targets", "weights", "input_activations",
                                            "output_activations", "format"};

constexpr std::pair<std::string_view, Strategy> kStrategies[] = {
    {"tensor", Strategy::kTensor},     {"channel", Strategy::kChannel},
    {"group", Strategy::kGroup},       {"block", Strategy::kBlock},
    {"token", Strategy::kToken},       {"tensor_group", Strategy::kTensorGroup},
    {"attn_head", Strategy::kAttnHead}};

// torch dtype attribute names pydantic's TorchDtype accepts (with or without "torch.").
constexpr std::string_view kTorchDtypes[] = {"float32",
                                             "float",
                                             "float64",
                                             "double",
                                             "float16",
                                             "half",
                                             "bfloat16",
                                             "uint8",
                                             "int8",
                                             "int16",
                                             "short",
                                             "int32",
                                             "int",
                                             "int64",
                                             "long",
                                             "bool",
                                             "float8_e4m3fn",
                                             "float8_e5m2",
                                             "float8_e4m3fnuz",
                                             "float8_e5m2fnuz",
                                             "float8_e8m0fnu",
                                             "float4_e2m1fn_x2"};

Status Invalid(const Json& at, std::string_view file, std::string_view what) {
  return InvalidInput(fmt::format("{}: {}", Where(file, at), what));
}

Status CheckKeys(const Json& object, std::string_view file, std::span<const std::string_view> keys,
                 std::string_view model) {
  for (const Json::Member& m : object.members()) {
    if (std::find(keys.begin(), keys.end(), m.first) == keys.end()) {
      return Invalid(
          m.second, file,
          fmt::format("{} has no field \"{}\" (the library forbids extra fields)", model, m.first));
    }
  }
  return {};
}

Result<std::optional<std::string>> ReadTorchDtype(const Json& object, std::string_view key,
                                                  std::string_view file) {
  QP_ASSIGN_OR_RETURN(std::optional<std::string> value, OptionalString(object, key, file));
  if (!value) return value;
  std::string name = value->starts_with("torch.") ? value->substr(6) : *value;
  if (std::find(std::begin(kTorchDtypes), std::end(kTorchDtypes), name) == std::end(kTorchDtypes)) {
    return Invalid(*object.Find(key), file, fmt::format("unknown torch dtype \"{}\"", *value));
  }
  return std::optional<std::string>(name);
}

// block_structure: [rows, cols] of positive ints, or the legacy "RxC" string.
Result<std::optional<std::array<int64_t, 2>>> ReadBlockStructure(const Json& object,
                                                                 std::string_view file) {
  const Json* v = object.FindNonNull("block_structure");
  if (v == nullptr) return std::optional<std::array<int64_t, 2>>();
  std::vector<int64_t> dims;
  bool ok = true;
  if (v->is_string()) {
    for (const std::string& part : Split(v->string_value(), 'x')) {
      char* end = nullptr;
      long long n = std::strtoll(part.c_str(), &end, 10);
      ok = ok && !part.empty() && end != nullptr && *end == '\0';
      dims.push_back(n);
    }
  } else if (v->is_array()) {
    for (const Json& item : v->items()) {
      ok = ok && item.is_int();
      dims.push_back(item.int_value());
    }
  } else {
    ok = false;
  }
  ok = ok && dims.size() == 2 && dims[0] > 0 && dims[1] > 0;
  if (!ok) {
    return Invalid(*v, file,
                   fmt::format("invalid block_structure {}: must be a list of positive ints "
                               "[rows, cols]",
                               ToJson(*v)));
  }
  return std::optional<std::array<int64_t, 2>>(std::array<int64_t, 2>{dims[0], dims[1]});
}

Status ReadDynamic(const Json& object, std::string_view file, Args* args) {
  const Json* v = object.FindNonNull("dynamic");
  if (v == nullptr) return {};
  if (v->is_bool()) {
    args->dynamic = v->bool_value() ? Dynamic::kDynamic : Dynamic::kStatic;
  } else if (v->is_string() && ToLower(v->string_value()) == "local") {
    args->dynamic = Dynamic::kLocal;
  } else {
    return Invalid(*v, file,
                   fmt::format("dynamic must be true, false or \"local\", found {}", ToJson(*v)));
  }
  return {};
}

// actorder: true → group, false → none; strings group|weight and their aliases dynamic|static.
Status ReadActOrder(const Json& object, std::string_view file, Args* args) {
  const Json* v = object.FindNonNull("actorder");
  if (v == nullptr) return {};
  if (v->is_bool()) {
    args->actorder = v->bool_value() ? ActOrder::kGroup : ActOrder::kNone;
    return {};
  }
  std::string s = v->is_string() ? ToLower(v->string_value()) : "";
  if (s == "group" || s == "dynamic") {
    args->actorder = ActOrder::kGroup;
  } else if (s == "weight" || s == "static") {
    args->actorder = ActOrder::kWeight;
  } else {
    return Invalid(*v, file,
                   fmt::format("actorder must be \"group\", \"weight\" (or the aliases "
                               "\"dynamic\", \"static\") or a boolean, found {}",
                               ToJson(*v)));
  }
  return {};
}

// QuantizationArgs.validate_model_after, in the library's order.
Status ValidateModel(const Json& object, std::string_view file, bool strategy_given, Args* a) {
  auto fail = [&](std::string what) { return Invalid(object, file, what); };
  if (!strategy_given) {
    a->strategy_inferred = true;
    if (!a->group_size) {
      a->strategy = Strategy::kTensor;
    } else if (*a->group_size > 0) {
      a->strategy = Strategy::kGroup;
    } else if (*a->group_size == -1) {
      a->strategy = Strategy::kChannel;
    } else {
      return fail(
          fmt::format("invalid group_size {}: use group_size > 0 for strategy 'group' "
                      "and group_size = -1 for 'channel'",
                      *a->group_size));
    }
  }
  const bool grouped = a->strategy == Strategy::kGroup || a->strategy == Strategy::kTensorGroup;
  if (a->strategy == Strategy::kToken && a->dynamic == Dynamic::kStatic) {
    return fail("strategy \"token\" needs dynamic: true (static token quantization is impossible)");
  }
  if (grouped && (!a->group_size || *a->group_size <= 0)) {
    return fail(
        fmt::format("strategy \"{}\" requires a positive group_size", StrategyName(a->strategy)));
  }
  if (a->group_size && *a->group_size > 0 && !grouped) {
    return fail(
        fmt::format("group_size {} requires strategy \"group\" or \"tensor_group\", found "
                    "\"{}\"",
                    *a->group_size, StrategyName(a->strategy)));
  }
  if (a->strategy == Strategy::kBlock && !a->block_structure) {
    return fail("strategy \"block\" requires block_structure");
  }
  if (a->block_structure && a->strategy != Strategy::kBlock) {
    return fail(fmt::format("block_structure requires strategy \"block\", found \"{}\"",
                            StrategyName(a->strategy)));
  }
  if (a->actorder == ActOrder::kGroup && !grouped) {
    return fail(
        fmt::format("actorder \"group\" requires strategy \"group\" or \"tensor_group\", "
                    "found \"{}\"",
                    StrategyName(a->strategy)));
  }
  if (a->dynamic != Dynamic::kStatic) {
    if (a->strategy != Strategy::kToken && a->strategy != Strategy::kTensor && !grouped) {
      return fail(
          fmt::format("dynamic quantization needs strategy token, tensor, tensor_group or "
                      "group, found \"{}\"",
                      StrategyName(a->strategy)));
    }
    if (a->dynamic == Dynamic::kLocal && a->strategy != Strategy::kTensorGroup) {
      return fail(
          fmt::format("dynamic \"local\" is only supported for strategy tensor_group, "
                      "found \"{}\"",
                      StrategyName(a->strategy)));
    }
  }
  return {};
}

Result<std::optional<Args>> ParseOptionalArgs(const Json& group, std::string_view key,
                                              std::string_view file) {
  const Json* v = group.FindNonNull(key);
  if (v == nullptr) return std::optional<Args>();
  QP_ASSIGN_OR_RETURN(Args args, ParseArgs(*v, file));
  return std::optional<Args>(std::move(args));
}

bool IsActivationStrategy(Strategy s) {
  return s == Strategy::kToken || s == Strategy::kTensor || s == Strategy::kGroup ||
         s == Strategy::kTensorGroup || s == Strategy::kAttnHead;
}

}  // namespace

std::string ToUpperAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::optional<Strategy> ParseStrategyExact(std::string_view name) {
  for (const auto& [spelling, value] : kStrategies) {
    if (spelling == name) return value;
  }
  return std::nullopt;
}

std::string_view StrategyName(Strategy s) {
  for (const auto& [name, value] : kStrategies) {
    if (value == s) return name;
  }
  return "?";
}

Result<Args> ParseArgs(const Json& object, std::string_view file) {
  if (!object.is_object()) {
    return Invalid(
        object, file,
        fmt::format("expected QuantizationArgs (an object), found {}", object.TypeName()));
  }
  QP_RETURN_IF_ERROR(CheckKeys(object, file, kArgsKeys, "QuantizationArgs"));
  Args a;
  a.where = Where(file, object);
  QP_ASSIGN_OR_RETURN(std::optional<int64_t> bits, OptionalInt(object, "num_bits", file));
  if (bits) {
    if (*bits <= 0) {
      return Invalid(*object.Find("num_bits"), file,
                     fmt::format("num_bits must be positive, found {}", *bits));
    }
    a.num_bits = *bits;
  }
  QP_ASSIGN_OR_RETURN(std::optional<std::string> type, OptionalString(object, "type", file));
  if (type) {
    std::string t = ToLower(*type);
    if (t != "int" && t != "float") {
      return Invalid(*object.Find("type"), file,
                     fmt::format("type must be \"int\" or \"float\", found \"{}\"", *type));
    }
    a.is_float = t == "float";
  }
  QP_ASSIGN_OR_RETURN(std::optional<bool> sym, OptionalBool(object, "symmetric", file));
  a.symmetric = sym.value_or(true);
  QP_ASSIGN_OR_RETURN(a.group_size, OptionalInt(object, "group_size", file));
  if (a.group_size && *a.group_size < -1) {
    return Invalid(*object.Find("group_size"), file,
                   fmt::format("invalid group_size {}: use group_size > 0 for strategy 'group' "
                               "and group_size = -1 for 'channel'",
                               *a.group_size));
  }
  QP_ASSIGN_OR_RETURN(std::optional<std::string> strategy,
                      OptionalString(object, "strategy", file));
  if (strategy) {
    std::optional<Strategy> parsed = ParseStrategyExact(ToLower(*strategy));
    if (!parsed) {
      return Invalid(*object.Find("strategy"), file,
                     fmt::format("unknown strategy \"{}\" (tensor, channel, group, block, token, "
                                 "tensor_group, attn_head)",
                                 *strategy));
    }
    a.strategy = *parsed;
  }
  QP_ASSIGN_OR_RETURN(a.block_structure, ReadBlockStructure(object, file));
  QP_RETURN_IF_ERROR(ReadDynamic(object, file, &a));
  QP_RETURN_IF_ERROR(ReadActOrder(object, file, &a));
  QP_ASSIGN_OR_RETURN(a.scale_dtype, ReadTorchDtype(object, "scale_dtype", file));
  QP_ASSIGN_OR_RETURN(a.zp_dtype, ReadTorchDtype(object, "zp_dtype", file));
  QP_ASSIGN_OR_RETURN(a.observer, OptionalString(object, "observer", file));
  if (const Json* kwargs = object.FindNonNull("observer_kwargs"); kwargs && !kwargs->is_object()) {
    return Invalid(*kwargs, file, "observer_kwargs must be an object");
  }
  QP_RETURN_IF_ERROR(ValidateModel(object, file, strategy.has_value(), &a));
  return a;
}

Result<TensorQuant> ToTensorQuant(const Args& a, SourceLayout layout) {
  TensorQuant t;
  const bool e8m0_scales = a.scale_dtype == "uint8" || a.scale_dtype == "float8_e8m0fnu";
  const int64_t group = a.group_size.value_or(0);
  if (!a.is_float) {
    constexpr QDType kInts[] = {QDType::kINT2, QDType::kINT3, QDType::kINT4, QDType::kINT5,
                                QDType::kINT6, QDType::kINT7, QDType::kINT8};
    if (a.num_bits < 2 || a.num_bits > 8) {
      return Unsupported(
          fmt::format("{}: {}-bit integers are not supported (2 to 8 bits)", a.where, a.num_bits));
    }
    t.dtype = kInts[a.num_bits - 2];
  } else if (a.num_bits == 8) {
    // Microscaling FP8: E4M3 values with one E8M0 (uint8) scale per 32 (the MXFP8 presets).
    const bool mx = a.strategy == Strategy::kGroup && group == 32 && e8m0_scales;
    t.dtype = mx ? QDType::kMXFP8 : QDType::kFP8E4M3;
    t.micro_scaled = mx;
  } else if (a.num_bits == 4 && a.strategy == Strategy::kTensorGroup && group == 16) {
    t.dtype = QDType::kNVFP4;  // E2M1, E4M3 scale per 16, fp32 global scale
    t.micro_scaled = true;
  } else if (a.num_bits == 4 && a.strategy == Strategy::kGroup && group == 32) {
    t.dtype = QDType::kMXFP4;  // E2M1, E8M0 scale per 32 (vLLM's _is_mxfp4 test)
    t.micro_scaled = true;
  } else {
    return Unsupported(fmt::format(
        "{}: {}-bit floats with strategy \"{}\" and group_size {} are not supported (fp8; nvfp4 = "
        "4-bit tensor_group 16; mxfp4 = 4-bit group 32)",
        a.where, a.num_bits, StrategyName(a.strategy), a.group_size ? *a.group_size : 0));
  }
  switch (a.strategy) {
    case Strategy::kTensor:
      t.granularity = Granularity::kPerTensor;
      break;
    case Strategy::kChannel:
      t.granularity = Granularity::kPerChannel;
      break;
    case Strategy::kGroup:
      t.granularity = Granularity::kGroup;
      break;
    case Strategy::kBlock:
      t.granularity = Granularity::kBlock;
      break;
    case Strategy::kToken:
      t.granularity = Granularity::kPerToken;
      break;
    case Strategy::kTensorGroup:
      t.granularity = Granularity::kTensorGroup;
      break;
    case Strategy::kAttnHead:
      t.granularity = Granularity::kAttnHead;
      break;
  }
  if (a.strategy == Strategy::kGroup || a.strategy == Strategy::kTensorGroup) {
    t.group_size = a.group_size;
  }
  t.block_shape = a.block_structure;
  t.symmetric = a.symmetric;
  t.dynamic = a.dynamic;
  t.load.layout = layout;
  // Integer asymmetric weights store a zero point (weight_zero_point) beside the scale.
  if (!a.symmetric && !a.is_float && layout != SourceLayout::kDense) {
    t.load.zero_point = ZeroPointConvention::kStored;
  }
  t.load.act_order = a.actorder == ActOrder::kGroup;  // "weight" changes calibration only
  if (a.scale_dtype && !e8m0_scales) {
    t.load.scale_dtype = ParseQDType(*a.scale_dtype == "float8_e4m3fn" ? "fp8_e4m3"
                                     : *a.scale_dtype == "bfloat16"    ? "bf16"
                                     : *a.scale_dtype == "float16"     ? "fp16"
                                     : *a.scale_dtype == "float32"     ? "fp32"
                                                                       : *a.scale_dtype);
  }
  return t;
}

std::string ArgsExtras(const Args& a) {
  std::vector<std::string> parts;
  if (a.strategy_inferred) {
    parts.push_back(fmt::format("strategy {} inferred from group_size", StrategyName(a.strategy)));
  }
  if (a.observer) parts.push_back("observer " + *a.observer);
  if (a.scale_dtype) parts.push_back("scale_dtype " + *a.scale_dtype);
  if (a.zp_dtype) parts.push_back("zp_dtype " + *a.zp_dtype);
  if (a.actorder == ActOrder::kWeight) parts.push_back("actorder weight (calibration only)");
  return Join(parts, ", ");
}

Result<Group> ParseGroup(const std::string& name, const Json& value, std::string_view file,
                         const GroupReading& reading) {
  Group g;
  g.name = name;
  g.where = ProvenanceOf(file, value);
  const Json* scheme = &value;
  Json expanded;
  std::string args_file(file);
  if (value.is_array()) {
    // QuantizationConfig.model_post_init: a list of targets under a preset's name.
    const std::string upper = ToUpperAscii(name);
    std::optional<std::string> preset = PresetJson(upper);
    if (!reading.presets || !preset) {
      return Invalid(value, file,
                     reading.presets
                         ? fmt::format("config group \"{}\" is a list of targets, but \"{}\" is "
                                       "not a preset scheme name",
                                       name, name)
                         : fmt::format("config group \"{}\" must be an object with targets and "
                                       "weights (preset lists are a library feature)",
                                       name));
    }
    args_file = "compressed-tensors preset " + upper;
    QP_ASSIGN_OR_RETURN(expanded, ParseJson(*preset, args_file));
    for (const Json& item : value.items()) {
      if (!item.is_string()) {
        return Invalid(item, file,
                       fmt::format("expected a target (string), found {}", item.TypeName()));
      }
      g.targets.push_back({item.string_value(), ProvenanceOf(file, item)});
    }
    g.preset = true;
    scheme = &expanded;
  } else {
    if (!value.is_object()) {
      return Invalid(
          value, file,
          fmt::format("config group \"{}\" must be an object, found {}", name, value.TypeName()));
    }
    if (reading.validate_scheme) {
      QP_RETURN_IF_ERROR(CheckKeys(value, file, kSchemeKeys, "QuantizationScheme"));
    }
    QP_ASSIGN_OR_RETURN(std::optional<std::vector<ListEntry>> targets,
                        ReadEntryList(value, "targets", file));
    if (!targets) {
      return Invalid(value, file, fmt::format("config group \"{}\" has no targets", name));
    }
    g.targets = std::move(*targets);
    QP_ASSIGN_OR_RETURN(g.format, OptionalString(value, "format", file));
  }
  if (reading.weights_required && scheme->FindNonNull("weights") == nullptr) {
    return Invalid(*scheme, file,
                   fmt::format("config group \"{}\" has no weights (QuantizationArgs "
                               "validation: Input should be a valid dictionary or instance of "
                               "QuantizationArgs, input_value=None)",
                               name));
  }
  QP_ASSIGN_OR_RETURN(g.weights, ParseOptionalArgs(*scheme, "weights", args_file));
  QP_ASSIGN_OR_RETURN(g.input, ParseOptionalArgs(*scheme, "input_activations", args_file));
  if (reading.parse_output) {
    QP_ASSIGN_OR_RETURN(g.output, ParseOptionalArgs(*scheme, "output_activations", args_file));
  }
  if (!reading.validate_scheme) return g;
  // QuantizationScheme.validate_model_after.
  if (g.input && !IsActivationStrategy(g.input->strategy)) {
    return Invalid(*scheme->Find("input_activations"), file,
                   fmt::format("strategy \"{}\" is not supported for activation quantization",
                               StrategyName(g.input->strategy)));
  }
  if (g.input && g.input->actorder != ActOrder::kNone) {
    return Invalid(*scheme->Find("input_activations"), file,
                   "actorder cannot be applied to input activations");
  }
  if (g.output && g.output->actorder != ActOrder::kNone) {
    return Invalid(*scheme->Find("output_activations"), file,
                   "actorder cannot be applied to output activations");
  }
  if (g.format == "mixed-precision") {
    return Invalid(*scheme->Find("format"), file,
                   "\"mixed-precision\" cannot be the format of one config group (it is the "
                   "global format of configs whose groups differ)");
  }
  return g;
}

}  // namespace quantpath::ct
