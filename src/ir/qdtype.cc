// The one table of number-format facts, and the names of the IR enums.
#include <array>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"

#include "quantpath/ir.h"

namespace quantpath {
namespace {

constexpr std::array<QDTypeInfo, kQDTypeCount> kQDTypes = {{
    {QDType::kBF16, "bf16", "bf16", 16, true},
    {QDType::kFP16, "fp16", "fp16", 16, true},
    {QDType::kFP32, "fp32", "fp32", 32, true},
    {QDType::kFP8E4M3, "fp8_e4m3", "fp8", 8, true},
    {QDType::kFP8E5M2, "fp8_e5m2", "fp8e5m2", 8, true},
    {QDType::kINT8, "int8", "int8", 8, false},
    {QDType::kINT7, "int7", "int7", 7, false},
    {QDType::kINT6, "int6", "int6", 6, false},
    {QDType::kINT5, "int5", "int5", 5, false},
    {QDType::kINT4, "int4", "int4", 4, false},
    {QDType::kINT3, "int3", "int3", 3, false},
    {QDType::kINT2, "int2", "int2", 2, false},
    {QDType::kNVFP4, "nvfp4", "nvfp4", 4, true},
    {QDType::kMXFP4, "mxfp4", "mxfp4", 4, true},
    {QDType::kMXFP8, "mxfp8", "mxfp8", 8, true},
    {QDType::kNF4, "nf4", "nf4", 4, false},
    {QDType::kFP4, "fp4", "fp4", 4, true},
    {QDType::kLUTB, "lut_b", "lutb", 3, true},
}};

constexpr bool TableIsInEnumOrder() {
  for (size_t i = 0; i < kQDTypes.size(); ++i) {
    if (static_cast<size_t>(kQDTypes[i].type) != i) return false;
  }
  return true;
}
static_assert(TableIsInEnumOrder(), "kQDTypes must list QDType values in declaration order");

constexpr std::array<std::string_view, 7> kGranularityNames = {
    "tensor", "channel", "group", "block", "token", "tensor_group", "attn_head"};
constexpr std::array<std::string_view, 6> kSiteKindNames = {"linear", "lm_head", "embedding",
                                                            "router", "moe",     "attention"};

}  // namespace

const QDTypeInfo& Info(QDType type) { return kQDTypes[static_cast<size_t>(type)]; }
std::string_view QDTypeName(QDType type) { return Info(type).name; }

std::optional<QDType> ParseQDType(std::string_view name) {
  for (const QDTypeInfo& info : kQDTypes) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

std::optional<Platform> ParsePlatform(std::string_view name) {
  for (size_t i = 0; i < std::size(kPlatformNames); ++i) {
    if (kPlatformNames[i] == name) return static_cast<Platform>(i);
  }
  return std::nullopt;
}

Result<Launch> ParseLaunch(std::string_view dtype, int64_t tp_size, bool speculative,
                           std::string_view platform) {
  static constexpr std::array<std::pair<std::string_view, QDType>, 5> kSpellings = {{
      {"bfloat16", QDType::kBF16},
      {"float16", QDType::kFP16},
      {"half", QDType::kFP16},
      {"float32", QDType::kFP32},
      {"float", QDType::kFP32},
  }};
  Launch launch;
  if (dtype != "auto") {
    for (const auto& [spelling, type] : kSpellings) {
      if (spelling == dtype) launch.dtype = type;
    }
    if (!launch.dtype) {
      return InvalidInput(fmt::format(
          "--dtype: expected one of auto, bfloat16, float16, half, float32, float, got {}", dtype));
    }
  }
  if (tp_size < 1 || tp_size > kMaxTpSize) {
    return InvalidInput(fmt::format("--tp: expected a tensor-parallel size in [1, {}], got {}",
                                    kMaxTpSize, tp_size));
  }
  launch.tp_size = tp_size;
  launch.speculative = speculative;
  std::optional<Platform> parsed = ParsePlatform(platform);
  if (!parsed) {
    const std::vector<std::string> names(std::begin(kPlatformNames), std::end(kPlatformNames));
    return InvalidInput(
        fmt::format("--platform: expected one of {}, got {}", Join(names, ", "), platform));
  }
  launch.platform = *parsed;
  return launch;
}

std::string_view GranularityName(Granularity g) {
  return kGranularityNames[static_cast<size_t>(g)];
}

std::string_view SiteKindName(SiteKind kind) { return kSiteKindNames[static_cast<size_t>(kind)]; }

std::optional<SiteKind> ParseSiteKind(std::string_view name) {
  for (size_t i = 0; i < kSiteKindNames.size(); ++i) {
    if (kSiteKindNames[i] == name) return static_cast<SiteKind>(i);
  }
  return std::nullopt;
}

std::string_view SourceLayoutName(SourceLayout layout) {
  switch (layout) {
    case SourceLayout::kDense:
      return "dense";
    case SourceLayout::kFp8ScaleInv:
      return "fp8-scale-inv";
    case SourceLayout::kFp8Scale:
      return "fp8-scale";
    case SourceLayout::kAwqGemm:
      return "awq-gemm";
    case SourceLayout::kAwqGemv:
      return "awq-gemv";
    case SourceLayout::kGptqV1:
      return "gptq-v1";
    case SourceLayout::kGptqV2:
      return "gptq-v2";
    case SourceLayout::kCtPackQuantized:
      return "ct-pack-quantized";
    case SourceLayout::kCtNaiveQuantized:
      return "ct-naive-quantized";
    case SourceLayout::kCtFloatQuantized:
      return "ct-float-quantized";
    case SourceLayout::kCtNvfp4PackQuantized:
      return "ct-nvfp4-pack-quantized";
    case SourceLayout::kCtMxfp4PackQuantized:
      return "ct-mxfp4-pack-quantized";
    case SourceLayout::kModelOptFp8:
      return "modelopt-fp8";
    case SourceLayout::kModelOptNvfp4:
      return "modelopt-nvfp4";
    case SourceLayout::kModelOptW4A8Awq:
      return "modelopt-w4a8-awq";
    case SourceLayout::kBnb4bit:
      return "bnb-4bit";
    case SourceLayout::kBnb8bit:
      return "bnb-8bit";
    case SourceLayout::kGptOssMxfp4:
      return "gpt-oss-mxfp4";
    case SourceLayout::kModelSlim:
      return "modelslim";
    case SourceLayout::kW4afp8Experts:
      return "w4afp8-experts";
  }
  return "?";
}

}  // namespace quantpath
