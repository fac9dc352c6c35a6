// compressed-tensors, as llmcompressor saves a model (`save_compressed=True`): one config group
// targeting every Linear, its weights' and activations' QuantizationArgs, the format its
// compressor decompresses (float-quantized, pack-quantized, nvfp4-pack-quantized,
// mxfp4-pack-quantized) and the `ignore` list. Field values follow compressed-tensors 0.19.0's
// serialization (the fixtures in tests/data/producers/ct_*), whose `version` the folder records.
#include "fmt/format.h"
#include "src/export/format_row.h"

namespace quantpath::export_internal {
namespace {

std::string_view FormatName(SourceLayout layout) {
  switch (layout) {
    case SourceLayout::kCtPackQuantized:
      return "pack-quantized";
    case SourceLayout::kCtNaiveQuantized:
      return "int-quantized";
    case SourceLayout::kCtNvfp4PackQuantized:
      return "nvfp4-pack-quantized";
    case SourceLayout::kCtMxfp4PackQuantized:
      return "mxfp4-pack-quantized";
    default:
      return "float-quantized";
  }
}

Result<SourceLayout> Layout(const QuantScheme& scheme) {
  const TensorQuant& w = scheme.weight;
  const std::string name = scheme.CanonicalName();
  switch (w.dtype) {
    case QDType::kFP8E4M3:
      return SourceLayout::kCtFloatQuantized;
    case QDType::kNVFP4:
      return SourceLayout::kCtNvfp4PackQuantized;
    case QDType::kMXFP4:
      return SourceLayout::kCtMxfp4PackQuantized;
    default:
      break;
  }
  if (!Info(w.dtype).is_float && Info(w.dtype).bits <= 8) {
    // Integer activations: llmcompressor saves W8A8 int8 codes unpacked (int-quantized).
    const bool int_inputs = scheme.input && !Info(scheme.input->dtype).is_float;
    return int_inputs ? SourceLayout::kCtNaiveQuantized : SourceLayout::kCtPackQuantized;
  }
  return Unsupported(
      fmt::format("{}: no compressed-tensors format stores {} weights", name, QDTypeName(w.dtype)));
}

Json OptionalInt(const std::optional<int64_t>& v) { return v ? Json::Int(*v) : Json::Null(); }

// QuantizationArgs as compressed-tensors serializes them.
Json Args(const TensorQuant& t, bool weights) {
  const QDTypeInfo& info = Info(t.dtype);
  Json block = Json::Null();
  if (t.block_shape) {
    block = Json::Array({Json::Int((*t.block_shape)[0]), Json::Int((*t.block_shape)[1])});
  }
  Json dynamic = Json::Bool(t.dynamic == Dynamic::kDynamic);
  if (t.dynamic == Dynamic::kLocal) dynamic = Json::String("local");
  std::string strategy(GranularityName(t.granularity));
  if (t.granularity == Granularity::kPerToken) strategy = "token";
  Json scale_dtype = Json::Null();
  if (t.dtype == QDType::kNVFP4) scale_dtype = Json::String("torch.float8_e4m3fn");
  if (t.dtype == QDType::kMXFP4) scale_dtype = Json::String("torch.uint8");
  // Zero points are stored only for asymmetric integers, in int8 (QuantizationArgs' default).
  Json zp_dtype = Json::Null();
  if (!t.symmetric && !info.is_float) zp_dtype = Json::String("torch.int8");
  return Json::Object({
      {"actorder", t.load.act_order ? Json::String("group") : Json::Null()},
      {"block_structure", block},
      {"dynamic", dynamic},
      {"group_size", OptionalInt(t.group_size)},
      {"num_bits", Json::Int(info.bits)},
      {"observer", weights                        ? Json::String("memoryless_minmax")
                   : t.dynamic == Dynamic::kLocal ? Json::String("static_minmax")
                                                  : Json::Null()},
      {"observer_kwargs", Json::Object()},
      {"scale_dtype", scale_dtype},
      {"strategy", Json::String(strategy)},
      {"symmetric", Json::Bool(t.symmetric)},
      {"type", Json::String(info.is_float ? "float" : "int")},
      {"zp_dtype", zp_dtype},
  });
}

Json Config(const QuantScheme& scheme, SourceLayout layout,
            const std::vector<std::string>& ignore) {
  const std::string_view format = FormatName(layout);
  std::vector<Json> ignored;
  for (const std::string& name : ignore) ignored.push_back(Json::String(name));
  Json group = Json::Object({
      {"format", Json::String(std::string(format))},
      {"input_activations", scheme.input ? Args(*scheme.input, false) : Json::Null()},
      {"output_activations", Json::Null()},
      {"targets", Json::Array({Json::String("Linear")})},
      {"weights", Args(scheme.weight, true)},
  });
  return Json::Object({
      {"config_groups", Json::Object({{"group_0", std::move(group)}})},
      {"format", Json::String(std::string(format))},
      {"global_compression_ratio", Json::Null()},
      {"ignore", Json::Array(std::move(ignored))},
      {"kv_cache_scheme", Json::Null()},
      {"quant_method", Json::String("compressed-tensors")},
      {"quantization_status", Json::String("compressed")},
      {"sparsity_config", Json::Object()},
      {"transform_config", Json::Object()},
      {"version", Json::String("0.19.0")},
  });
}

const FormatRegistrar kRegister({CheckpointFormat::kCompressedTensors, "compressed-tensors", Layout,
                                 Config, true});

}  // namespace
}  // namespace quantpath::export_internal
