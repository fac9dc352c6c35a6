// The NVFP4 parts of the double-precision reference (nvfp4_reference.cc): W4A4 activation
// rounding for QuantizeActivationsReference.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "quantpath/specs.h"

namespace quantpath::reference {

// X [m, k] rounded to NVFP4 per `group` columns of each row against the input divisor `divisor`
// and dequantized, by nvfp4_family.h's rule (its fp32 roundings reproduced).
std::vector<double> QuantizeNvfp4Reference(std::span<const double> x, int64_t m, int64_t k,
                                           int64_t group, double divisor);

}  // namespace quantpath::reference
