// Reference entry of source layout kDense: bf16 / fp16 / fp32 weights as they are. For a scheme
// quantized at load (scheme.online) that is the unquantized layer, which `run` measures the
// quantization against.
#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace {

Result<ReferenceLeg> DequantizeDenseLeg(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                        std::string_view layer, const std::string& prefix) {
  const QDType dtype = scheme.weight.dtype;
  if (!scheme.online && dtype != QDType::kBF16 && dtype != QDType::kFP16 &&
      dtype != QDType::kFP32) {
    return Unsupported(
        fmt::format("{}: the reference reads dense {} weights only as bf16, fp16 or fp32, or "
                    "quantized at load",
                    layer, QDTypeName(dtype)));
  }
  return reference::ReadWeight(checkpoint, SourceLayout::kDense, layer, prefix);
}

const ReferenceRegistrar kRegisterDense(SourceLayout::kDense, &DequantizeDenseLeg);

}  // namespace
}  // namespace quantpath
