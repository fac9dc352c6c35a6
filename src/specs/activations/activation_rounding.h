// The fp32 roundings of X that activation kinds share with the reference kernels
// (src/kernels/reference/reference_gemm.h's PrepareActivations and PrepareFp8Codes) and their
// tests: each kind's RoundFloats is one of these, values q × scale as the products see them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "quantpath/activation_kinds.h"

namespace quantpath::reference {

// Rounds X [m, k] in place to e4m3 values cut into `runs` (specs.h's convention: a measured
// scale is max(absmax, kActAbsMaxFloor) / 448 in fp32) and returns the scales, one per row and
// run: X' = x[r · k + c] · scales[r · ⌈k / group⌉ + c / group].
std::vector<float> RoundToE4m3Runs(std::vector<float>* xs, int64_t m, int64_t k,
                                   const E4m3Runs& runs);

// Rounds each row of X [m, k] in place to signed codes of at most `code_max` (127: int8, 7: int4)
// with the row's own scale (w4a_family.h's QuantizeActRow), and stores q · s.
void QuantizeIntRows(std::vector<float>* xs, int64_t m, int64_t k, int code_max);

// W4A4 NVFP4: rounds X [m, k] in place to E2M1 values with one E4M3 scale per `group` columns of
// a row, against the layer's input divisor, or without one each row's own (nvfp4_family.h's rule,
// in fp32), and stores q · s / d.
void QuantizeNvfp4Activations(std::vector<float>* xs, int64_t m, int64_t k, int64_t group,
                              std::optional<float> divisor);

// MX activations: rounds X [m, k] in place to `element` (kMXFP4: E2M1, kMXFP8: E4M3) with one
// E8M0 scale per `group` columns of a row (mx_family.h's rule, in fp32), and stores q · 2^e.
void QuantizeMxActivations(std::vector<float>* xs, int64_t m, int64_t k, int64_t group,
                           QDType element);

}  // namespace quantpath::reference
