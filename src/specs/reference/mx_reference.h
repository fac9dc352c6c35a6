// The MX parts of the double-precision reference (mx_reference.cc): MXFP4 / MXFP8 weights of
// every source layout that stores them, and MX activation rounding.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/specs.h"

namespace quantpath::reference {

// A leg of MXFP4 or MXFP8 weights (scheme.weight.dtype) in `layout` (compressed-tensors
// mxfp4-pack-quantized or mxfp8-quantized, ModelSlim), for the entries that own those layouts.
Result<ReferenceLeg> DequantizeMxLeg(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                     SourceLayout layout, std::string_view layer,
                                     const std::string& prefix);

// X [m, k] rounded to `element` (kMXFP4: E2M1, kMXFP8: E4M3) with one E8M0 scale per `group`
// columns of each row, and dequantized, by mx_family.h's rule.
std::vector<double> QuantizeMxReference(std::span<const double> x, int64_t m, int64_t k,
                                        int64_t group, QDType element);

}  // namespace quantpath::reference
