// The dot-product unit table (dot_units.h): one row per CPU family the dispatcher ranks kernels
// on, CPUID's model, and QUANTPATH_DOT_UNITS.
#include "quantpath/dot_units.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

#include "fmt/format.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace quantpath {
namespace {

constexpr std::string_view kUnitNames[] = {"fp32-1",        "fp32-256",      "fp32-512",
                                           "bf16-pair-512", "int8-quad-512", "int16-pair-256",
                                           "int4-pair-256"};
static_assert(std::size(kUnitNames) == kUnitWidthCount);

// A range of models of one vendor and family.
struct ModelRange {
  int first, last;
};

// Multiply-adds per cycle per core, in UnitWidth order. Where a row has no figure for a unit (the
// CPU lacks it), the default's stands: no kernel of that unit runs there anyway.
struct UnitRow {
  std::string_view name;
  std::string_view vendor;  // empty: the default row
  int family;
  ModelRange models[3];
  double peak[kUnitWidthCount];
};

constexpr UnitRow kRows[] = {
    {"default", "", 0, {}, {2, 16, 32, 32, 64, 16, 32}},
    // Zen 3: AVX2 only, two 256-bit FMA pipes.
    {"AMD Zen 3", "AuthenticAMD", 0x19, {{0x00, 0x0F}, {0x20, 0x5F}}, {2, 16, 32, 32, 64, 16, 32}},
    // Zen 4 runs 512-bit operations on its 256-bit pipes in two halves: zmm FMA no faster than
    // ymm, vdpbf16ps twice its multiply-adds a cycle (measured 117 / 234 GFLOP/s a thread,
    // vpdpbusd 469 GOP/s, the AVX2 integer loops 107-153 and 137-191 GOP/s).
    {"AMD Zen 4",
     "AuthenticAMD",
     0x19,
     {{0x10, 0x1F}, {0x60, 0x7F}, {0xA0, 0xAF}},
     {2, 16, 16, 32, 64, 18, 24}},
    // Zen 5: a full 512-bit datapath.
    {"AMD Zen 5", "AuthenticAMD", 0x1A, {{0x00, 0xFF}}, {2, 16, 32, 64, 128, 16, 32}},
    // Intel server cores with two 512-bit FMA units: vdpbf16ps at half the FMA's multiply-adds
    // (190 against 395 GFLOP/s measured on two cores of one), vpdpbusd on both units.
    {"Intel Skylake / Cascade Lake / Cooper Lake server",
     "GenuineIntel",
     6,
     {{0x55, 0x55}},
     {2, 16, 32, 16, 128, 16, 32}},
    {"Intel Ice Lake server",
     "GenuineIntel",
     6,
     {{0x6A, 0x6A}, {0x6C, 0x6C}},
     {2, 16, 32, 16, 128, 16, 32}},
    {"Intel Sapphire / Emerald / Granite Rapids",
     "GenuineIntel",
     6,
     {{0x8F, 0x8F}, {0xCF, 0xCF}, {0xAD, 0xAE}},
     {2, 16, 32, 16, 128, 16, 32}},
};

const UnitRow& RowFor(const CpuModel& cpu) {
  for (const UnitRow& row : kRows) {
    if (row.vendor.empty() || row.vendor != cpu.vendor || row.family != cpu.family) continue;
    for (const ModelRange& range : row.models) {
      if (range.last > 0 && cpu.model >= range.first && cpu.model <= range.last) return row;
    }
  }
  return kRows[0];
}

}  // namespace

std::string_view UnitWidthName(UnitWidth unit) { return kUnitNames[static_cast<int>(unit)]; }

UnitWidth UnitWidthOf(DotUnit unit, const CpuFeatures& features) {
  switch (unit) {
    case DotUnit::kBf16Pair:
      return UnitWidth::kBf16Pair512;
    case DotUnit::kInt8Quad:
      return UnitWidth::kInt8Quad512;
    case DotUnit::kInt16Pair:
      return UnitWidth::kInt16Pair256;
    case DotUnit::kInt4Pair:
      return UnitWidth::kInt4Pair256;
    case DotUnit::kFp32:
      break;
  }
  const CpuLevel level = BestCpuLevel(features);
  if (level >= CpuLevel::kAvx512) return UnitWidth::kFp32x512;
  return level >= CpuLevel::kAvx2 ? UnitWidth::kFp32x256 : UnitWidth::kFp32Scalar;
}

CpuModel DetectCpuModel() {
  CpuModel cpu;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return cpu;
  char vendor[12];
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  cpu.vendor.assign(vendor, 12);
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return cpu;
  const int family = static_cast<int>((eax >> 8) & 0xF);
  const int model = static_cast<int>((eax >> 4) & 0xF);
  // Intel SDM vol. 2A, CPUID leaf 1: the extended fields count from family 0xF (and 6 for the
  // model).
  cpu.family = family == 0xF ? family + static_cast<int>((eax >> 20) & 0xFF) : family;
  cpu.model =
      family == 0xF || family == 6 ? model + (static_cast<int>((eax >> 16) & 0xF) << 4) : model;
#endif
  return cpu;
}

Result<DotUnitPeaks> DotUnitPeaksFor(const CpuModel& cpu, std::string_view overrides) {
  const UnitRow& row = RowFor(cpu);
  DotUnitPeaks peaks;
  peaks.row = std::string(row.name);
  std::copy(std::begin(row.peak), std::end(row.peak), peaks.peak);
  while (!TrimSpaces(overrides).empty()) {
    const size_t comma = overrides.find(',');
    const std::string_view entry = TrimSpaces(overrides.substr(0, comma));
    overrides = comma == std::string_view::npos ? std::string_view{} : overrides.substr(comma + 1);
    const size_t eq = entry.find('=');
    const std::string_view name = TrimSpaces(entry.substr(0, eq));
    const auto* unit = std::find(std::begin(kUnitNames), std::end(kUnitNames), name);
    if (eq == std::string_view::npos || unit == std::end(kUnitNames)) {
      return InvalidInput(fmt::format("{}: '{}' is not UNIT=PEAK with UNIT one of {}", kDotUnitsEnv,
                                      entry, fmt::join(kUnitNames, ", ")));
    }
    const std::string value(TrimSpaces(entry.substr(eq + 1)));
    char* end = nullptr;
    const double peak = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || !(peak > 0) || peak > 1e6) {
      return InvalidInput(fmt::format("{}: the peak of {} must be a positive number, not '{}'",
                                      kDotUnitsEnv, name, value));
    }
    peaks.peak[unit - std::begin(kUnitNames)] = peak;
    peaks.overridden = true;
  }
  return peaks;
}

Result<DotUnitPeaks> ResolveDotUnitPeaks() {
  const char* overrides = std::getenv(kDotUnitsEnv);
  return DotUnitPeaksFor(DetectCpuModel(), overrides == nullptr ? "" : overrides);
}

}  // namespace quantpath
