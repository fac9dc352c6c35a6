// The int4 parts of the double-precision reference (int4_reference.cc): ModelSlim's int4
// weights in both packings, and int4 per-token activation rounding.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/specs.h"

namespace quantpath::reference {

// A ModelSlim W4A4_DYNAMIC / W4A8_DYNAMIC leg: W = (w − weight_offset) · weight_scale, w the
// signed int4 codes of `weight` in the packing scheme.weight.load.int4_pairs names.
Result<ReferenceLeg> DequantizeModelSlimInt4Leg(const Checkpoint& checkpoint,
                                                const QuantScheme& scheme, std::string_view layer,
                                                const std::string& prefix);

// X [m, k] quantized per row to int4 and dequantized, as QuantizeActivationsReference documents.
std::vector<double> QuantizeInt4Reference(std::span<const double> x, int64_t m, int64_t k);

}  // namespace quantpath::reference
