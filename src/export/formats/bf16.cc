// bf16: no quantization_config; every layer's weight dequantized to bf16 (`convert --to bf16`).
#include "fmt/format.h"
#include "src/export/format_row.h"

namespace quantpath::export_internal {
namespace {

Result<SourceLayout> Layout(const QuantScheme& scheme) {
  if (!scheme.quantized()) return SourceLayout::kDense;
  return Unsupported(
      fmt::format("{}: the bf16 format stores no quantized layer", scheme.CanonicalName()));
}

Json Config(const QuantScheme&, SourceLayout, const std::vector<std::string>&) {
  return Json::Null();
}

const FormatRegistrar kRegister({CheckpointFormat::kBf16, "bf16", Layout, Config});

}  // namespace
}  // namespace quantpath::export_internal
