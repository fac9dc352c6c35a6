// quantpath dot-product units: the instructions whose throughput bounds a CPU kernel's
// multiply-adds, and each unit's peak on this CPU from one table keyed by CPUID vendor, family and
// model, so that the dispatcher ranks kernels by the unit they multiply on, deterministically:
// never timed at run time, where a noisy neighbour would change the choice and so the results.
// `quantpath bench` measures the units and says where the table disagrees.
//
// Peaks are multiply-adds per cycle per core at each unit's vector width; only their ratios on one
// CPU matter. QUANTPATH_DOT_UNITS overrides entries: "bf16-pair-512=16,fp32-512=32".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "quantpath/base.h"
#include "quantpath/cpu_features.h"

namespace quantpath {

// The instruction whose throughput bounds a kernel's multiply-adds.
enum class DotUnit : uint8_t {
  kFp32,       // scalar or fp32 FMA vectors, at the kernel's level's width
  kBf16Pair,   // vdpbf16ps: bf16 pairs into fp32
  kInt8Quad,   // vpdpbusd: u8 × s8 quads into int32
  kInt16Pair,  // vpmaddwd (+ vpaddd): s16 pairs into int32, the int8 dot of CPUs without VNNI
  kInt4Pair,   // vpmaddubsw on 4-bit codes (+ vpaddw, a vpmaddwd every 4 steps): u4 × s8 pairs
               // into int16, AVX2's dot of int4 weights with int8 activations
};

// A unit at a vector width: what the table holds a peak for. Names: "fp32-1", "fp32-256",
// "fp32-512", "bf16-pair-512", "int8-quad-512", "int16-pair-256", "int4-pair-256".
enum class UnitWidth : uint8_t {
  kFp32Scalar,
  kFp32x256,
  kFp32x512,
  kBf16Pair512,
  kInt8Quad512,
  kInt16Pair256,
  kInt4Pair256,
};
inline constexpr int kUnitWidthCount = 7;
std::string_view UnitWidthName(UnitWidth unit);

// The unit a kernel of `unit` compiled for `features` (its level's widest vectors) multiplies on.
UnitWidth UnitWidthOf(DotUnit unit, const CpuFeatures& features);

// What CPUID says the CPU is.
struct CpuModel {
  std::string vendor;  // "AuthenticAMD", "GenuineIntel", …
  int family = 0;      // with the extended family
  int model = 0;       // with the extended model
};
CpuModel DetectCpuModel();

// The peaks of one CPU: the table's row for it (or the default row), with overrides applied.
struct DotUnitPeaks {
  std::string row;  // the table row's name ("AMD Zen 4", "default", …)
  double peak[kUnitWidthCount] = {};
  bool overridden = false;
  double Peak(UnitWidth unit) const { return peak[static_cast<int>(unit)]; }
};

// The environment variable that overrides table entries (ParseDotUnitOverrides syntax).
inline constexpr char kDotUnitsEnv[] = "QUANTPATH_DOT_UNITS";

// The table's row for `cpu`, with `overrides` ("name=peak,…"; empty for none) applied. An unknown
// unit name or a peak that is not a positive number is an error naming the variable and the value.
Result<DotUnitPeaks> DotUnitPeaksFor(const CpuModel& cpu, std::string_view overrides);
// DotUnitPeaksFor(DetectCpuModel(), $QUANTPATH_DOT_UNITS).
Result<DotUnitPeaks> ResolveDotUnitPeaks();

}  // namespace quantpath
