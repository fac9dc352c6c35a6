// The NVFP4 parts of the double-precision reference (nvfp4_reference.cc): W4A4 activation
// rounding for QuantizeActivationsReference, and the E2M1 element conversions the MX reference
// shares.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "quantpath/specs.h"

namespace quantpath::reference {

// The E2M1 value of a code's low 4 bits (OCP MX FP4: bit 3 sign, bits 2..1 exponent, bit 0
// mantissa).
double DecodeE2M1(unsigned nibble);
// The nearest E2M1 value of `v`, ties to the even code, saturating at ±6.
double RoundToE2M1(double v);

// X [m, k] rounded to NVFP4 per `group` columns of each row against the layer's input divisor,
// or without one each row's own, and dequantized, by nvfp4_family.h's rule (its fp32 roundings
// reproduced).
std::vector<double> QuantizeNvfp4Reference(std::span<const double> x, int64_t m, int64_t k,
                                           int64_t group, std::optional<double> layer_divisor);

}  // namespace quantpath::reference
