// The int8 parts of the double-precision reference (int8_reference.cc): int8 activation
// rounding for QuantizeActivationsReference, and the static input grid of a layer's legs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "quantpath/specs.h"

namespace quantpath::reference {

// X [m, k] quantized to int8 and dequantized, as QuantizeActivationsReference documents.
std::vector<double> QuantizeInt8Reference(std::span<const double> x, int64_t m, int64_t k,
                                          const ActivationQuant& act, double static_scale,
                                          double static_zero_point);

// The static int8 input grid of a layer from its legs' `input_scale` / input zero point
// tensors (`scale_names`, `zero_names`: one per leg; the zero names are empty for symmetric
// inputs), stored in `layer`.
Status ReadStaticInt8Inputs(const Checkpoint& checkpoint, const QuantScheme& scheme,
                            std::string_view layer_name,
                            const std::vector<std::string>& scale_names,
                            const std::vector<std::string>& zero_names, ReferenceLayer* layer);

}  // namespace quantpath::reference
