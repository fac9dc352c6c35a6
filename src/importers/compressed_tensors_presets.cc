// compressed-tensors presets (QuantizationConfig groups given as a preset name with a list of
// targets) and compression formats.
//
// Goals: the library's PRESET_SCHEMES and CompressionFormat tables in one place, as data.
// Non-goals: validating the presets' args (ParseGroup parses them like any group).
// Documentation followed: compressed-tensors@ac8e2ba8 quantization/quant_scheme.py
// (PRESET_SCHEMES, _int_wnam), config/base.py (CompressionFormat), llm-compressor's format
// inference for groups that name none.
#include <cstdio>
#include <utility>

#include "fmt/format.h"
#include "src/importers/compressed_tensors.h"

namespace quantpath::ct {
namespace {

// CompressionFormat values (config/base.py) plus the library's default "fakequant".
constexpr FormatInfo kFormats[] = {
    {"dense", SourceLayout::kDense, true},
    {"fakequant", SourceLayout::kDense, true},
    {"int-quantized", SourceLayout::kCtNaiveQuantized, true},
    {"float-quantized", SourceLayout::kCtFloatQuantized, true},
    {"naive-quantized", SourceLayout::kCtNaiveQuantized, true},
    {"pack-quantized", SourceLayout::kCtPackQuantized, true},
    {"nvfp4-pack-quantized", SourceLayout::kCtNvfp4PackQuantized, true},
    {"mxfp4-pack-quantized", SourceLayout::kCtMxfp4PackQuantized, true},
    // E4M3 `weight` and `weight_scale` as float-quantized, the scales E8M0 bytes.
    {"mxfp8-quantized", SourceLayout::kCtFloatQuantized, true},
    {"marlin-24", SourceLayout::kDense, false},
    {"sparse-bitmask", SourceLayout::kDense, false},
    {"sparse-24-bitmask", SourceLayout::kDense, false},
    {"mixed-precision", SourceLayout::kDense, true},
};

// PRESET_SCHEMES other than the integer WnAm family (built by IntWnAm below), as the JSON the
// library's QuantizationArgs would serialise to.
constexpr std::pair<std::string_view, std::string_view> kPresets[] = {
    {"UNQUANTIZED", R"({})"},
    {"W4A16_ASYM",
     R"({"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
                     "symmetric": false}})"},
    {"W8A8",
     R"({"weights": {"num_bits": 8, "type": "int", "strategy": "channel"},
         "input_activations": {"num_bits": 8, "type": "int", "strategy": "token",
                               "dynamic": true}})"},
    {"INT8",
     R"({"weights": {"num_bits": 8, "type": "int", "strategy": "channel"},
         "input_activations": {"num_bits": 8, "type": "int", "strategy": "token",
                               "dynamic": true}})"},
    {"W4AFP8",
     R"({"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128},
         "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                               "dynamic": true}})"},
    {"FP8",
     R"({"weights": {"num_bits": 8, "type": "float", "strategy": "tensor"},
         "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor",
                               "observer": "static_minmax"}})"},
    {"FP8_DYNAMIC",
     R"({"weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
         "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                               "dynamic": true}})"},
    {"FP8_BLOCK",
     R"({"weights": {"num_bits": 8, "type": "float", "strategy": "block",
                     "block_structure": [128, 128]},
         "input_activations": {"num_bits": 8, "type": "float", "strategy": "group",
                               "group_size": 128, "dynamic": true}})"},
    {"NVFP4A16",
     R"({"weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                     "group_size": 16, "scale_dtype": "float8_e4m3fn"}})"},
    {"NVFP4",
     R"({"weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                     "group_size": 16, "scale_dtype": "float8_e4m3fn"},
         "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                               "group_size": 16, "dynamic": "local",
                               "scale_dtype": "float8_e4m3fn"}})"},
    {"MXFP4A16",
     R"({"weights": {"num_bits": 4, "type": "float", "strategy": "group", "group_size": 32,
                     "scale_dtype": "uint8"}})"},
    {"MXFP4",
     R"({"weights": {"num_bits": 4, "type": "float", "strategy": "group", "group_size": 32,
                     "scale_dtype": "uint8"},
         "input_activations": {"num_bits": 4, "type": "float", "strategy": "group",
                               "group_size": 32, "dynamic": true, "scale_dtype": "uint8"}})"},
    {"MXFP8A16",
     R"({"weights": {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 32,
                     "scale_dtype": "uint8"}})"},
    {"MXFP8",
     R"({"weights": {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 32,
                     "scale_dtype": "uint8"},
         "input_activations": {"num_bits": 8, "type": "float", "strategy": "group",
                               "group_size": 32, "dynamic": true, "scale_dtype": "uint8"}})"},
};

// The library's _int_wnam(w, a): W{2..8}A{4,8,16} with w <= a; int weights per group of 128,
// int activations dynamic per token below 16 bits.
std::optional<std::string> IntWnAm(std::string_view name) {
  int w = 0;
  int a = 0;
  if (std::sscanf(std::string(name).c_str(), "W%dA%d", &w, &a) != 2) return std::nullopt;
  if (name != fmt::format("W{}A{}", w, a)) return std::nullopt;
  if (w < 2 || w > 8 || (a != 4 && a != 8 && a != 16) || w > a) return std::nullopt;
  std::string json = fmt::format(
      R"({{"weights": {{"num_bits": {}, "type": "int", "strategy": "group", "group_size": 128}})",
      w);
  if (a < 16) {
    json += fmt::format(
        R"(, "input_activations": {{"num_bits": {}, "type": "int", "strategy": "token",
             "dynamic": true}})",
        a);
  }
  return json + "}";
}

}  // namespace

std::optional<std::string> PresetJson(std::string_view upper) {
  for (const auto& [name, json] : kPresets) {
    if (name == upper) return std::string(json);
  }
  return IntWnAm(upper);
}

const FormatInfo* FindFormat(std::string_view name) {
  for (const FormatInfo& f : kFormats) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string_view InferFormat(const Args& w) {
  if (!w.is_float) return w.num_bits <= 4 ? "pack-quantized" : "int-quantized";
  if (w.num_bits == 4) {
    return w.strategy == Strategy::kTensorGroup ? "nvfp4-pack-quantized" : "mxfp4-pack-quantized";
  }
  return "float-quantized";
}

}  // namespace quantpath::ct
