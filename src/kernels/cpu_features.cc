// CPU features: names, detection (cpuid, the OS's register state, Linux's AMX grant), the levels of
// QUANTPATH_CPU_ISA and the QUANTPATH_CPU_DISABLE list.
#include "quantpath/cpu_features.h"

#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "fmt/format.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#if defined(__linux__) && defined(__x86_64__)
#include <asm/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace quantpath {
namespace {

// Indexed by CpuFeature.
constexpr std::string_view kFeatureNames[] = {
    "avx2",       "fma",        "f16c",       "avx512f",  "avx512bw", "avx512vl", "avx512dq",
    "avx512vnni", "avx512bf16", "avx512fp16", "amx-tile", "amx-bf16", "amx-int8", "avxvnni"};
static_assert(std::size(kFeatureNames) == kCpuFeatureCount);

constexpr CpuFeatures kAmx = {CpuFeature::kAmxTile, CpuFeature::kAmxBf16, CpuFeature::kAmxInt8};

// One row per level, in kCpuLevels order: what the level adds to the one before it, as required
// and as optional features.
struct LevelRow {
  std::string_view name;
  CpuFeatures adds;
  CpuFeatures optional;
};
constexpr LevelRow kLevelRows[] = {
    {"reference", {}, {}},
    {"avx2", {CpuFeature::kAvx2, CpuFeature::kFma, CpuFeature::kF16c}, {CpuFeature::kAvxVnni}},
    {"avx512",
     {CpuFeature::kAvx512F, CpuFeature::kAvx512Bw, CpuFeature::kAvx512Vl, CpuFeature::kAvx512Dq},
     {}},
    {"avx512vnni", {CpuFeature::kAvx512Vnni, CpuFeature::kAvx512Bf16}, {}},
    {"amx", kAmx, {CpuFeature::kAvx512Fp16}},
};
static_assert(std::size(kLevelRows) == std::size(kCpuLevels));

std::string LevelNames() {
  std::string names;
  for (size_t i = 0; i < std::size(kLevelRows); ++i) {
    if (i > 0) names += i + 1 == std::size(kLevelRows) ? " or " : ", ";
    names += kLevelRows[i].name;
  }
  return names;
}

#if defined(__linux__) && defined(__x86_64__)
// The XSAVE state component of AMX tile data (Intel SDM vol. 1, 13.1); Linux's uapi headers use the
// number without naming it.
constexpr int kXfeatureXtileData = 18;

// Linux (5.16+) faults on the first tile instruction unless the process asked for tile data first;
// older kernels refuse the request, and so does a seccomp policy that forbids it.
bool LinuxGrantsAmxTileData() {
  return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, kXfeatureXtileData) == 0;
}
#endif

#if defined(__x86_64__) || defined(__i386__)
// One CPUID leaf's registers.
struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};
CpuidRegs Cpuid(uint32_t leaf, uint32_t subleaf) {
  CpuidRegs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return {};
  return r;
}
bool Bit(uint32_t reg, int bit) { return (reg >> bit) & 1; }
#endif

// Read from CPUID and XCR0 directly (Intel SDM vol. 2A, CPUID; vol. 1, 13.3): the same answers
// as GCC's __builtin_cpu_supports, which clang lacks for several of these names. A feature counts
// only when the OS saves its registers: YMM state for the VEX features, opmask and ZMM state for
// AVX-512, tile state for AMX.
CpuFeatures Detect() {
  CpuFeatures found;
#if defined(__x86_64__) || defined(__i386__)
  const CpuidRegs leaf1 = Cpuid(1, 0);
  if (!Bit(leaf1.ecx, 27)) return found;  // OSXSAVE: the OS manages extended state
  uint32_t xcr0_low = 0, xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  const bool ymm = (xcr0_low & 0x6) == 0x6;            // SSE and AVX state
  const bool zmm = ymm && (xcr0_low & 0xE0) == 0xE0;   // opmask, ZMM0-15 upper, ZMM16-31
  const bool tiles = (xcr0_low & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
  const CpuidRegs leaf7 = Cpuid(7, 0);
  const CpuidRegs leaf7_1 = leaf7.eax >= 1 ? Cpuid(7, 1) : CpuidRegs{};
  const std::pair<CpuFeature, bool> probes[] = {
      {CpuFeature::kAvx2, ymm && Bit(leaf7.ebx, 5)},
      {CpuFeature::kFma, ymm && Bit(leaf1.ecx, 12)},
      {CpuFeature::kF16c, ymm && Bit(leaf1.ecx, 29)},
      {CpuFeature::kAvx512F, zmm && Bit(leaf7.ebx, 16)},
      {CpuFeature::kAvx512Bw, zmm && Bit(leaf7.ebx, 30)},
      {CpuFeature::kAvx512Vl, zmm && Bit(leaf7.ebx, 31)},
      {CpuFeature::kAvx512Dq, zmm && Bit(leaf7.ebx, 17)},
      {CpuFeature::kAvx512Vnni, zmm && Bit(leaf7.ecx, 11)},
      {CpuFeature::kAvx512Bf16, zmm && Bit(leaf7_1.eax, 5)},
      {CpuFeature::kAvx512Fp16, zmm && Bit(leaf7.edx, 23)},
      {CpuFeature::kAmxTile, tiles && Bit(leaf7.edx, 24)},
      {CpuFeature::kAmxBf16, tiles && Bit(leaf7.edx, 22)},
      {CpuFeature::kAmxInt8, tiles && Bit(leaf7.edx, 25)},
      {CpuFeature::kAvxVnni, ymm && Bit(leaf7_1.eax, 4)},
  };
  for (const auto& [feature, present] : probes) {
    if (present) found = found | CpuFeatures{feature};
  }
  // AMX-BF16 and AMX-INT8 are instructions on tiles: without tiles there is no AMX.
  if (!found.Has(CpuFeature::kAmxTile)) found = found - kAmx;
#if defined(__linux__) && defined(__x86_64__)
  if (found.Has(CpuFeature::kAmxTile) && !LinuxGrantsAmxTileData()) found = found - kAmx;
#endif
#endif
  return found;
}

}  // namespace

std::string_view CpuFeatureName(CpuFeature feature) {
  return kFeatureNames[static_cast<size_t>(feature)];
}

std::optional<CpuFeature> ParseCpuFeature(std::string_view name) {
  for (size_t i = 0; i < std::size(kFeatureNames); ++i) {
    if (kFeatureNames[i] == name) return static_cast<CpuFeature>(i);
  }
  return std::nullopt;
}

std::string CpuFeatures::ToString() const {
  std::vector<std::string> names;
  for (int i = 0; i < kCpuFeatureCount; ++i) {
    if (Has(static_cast<CpuFeature>(i))) names.emplace_back(kFeatureNames[i]);
  }
  return names.empty() ? "none" : Join(names, ",");
}

Result<CpuFeatures> ParseCpuFeatureList(std::string_view list) {
  CpuFeatures features;
  for (const std::string& item : Split(list, ',')) {
    const std::string_view name = TrimSpaces(item);
    if (name.empty()) continue;
    if (name == "amx") {
      features = features | kAmx;
      continue;
    }
    std::optional<CpuFeature> feature = ParseCpuFeature(name);
    if (!feature) {
      std::vector<std::string> names(std::begin(kFeatureNames), std::end(kFeatureNames));
      return InvalidInput(
          fmt::format("'{}' is not a CPU feature (expected {}, or amx for the three AMX features)",
                      name, Join(names, ", ")));
    }
    features = features | CpuFeatures{*feature};
  }
  return features;
}

CpuFeatures DetectCpuFeatures() {
  static const CpuFeatures detected = Detect();  // once: the AMX request is made a single time
  return detected;
}

std::string_view CpuLevelName(CpuLevel level) {
  return kLevelRows[static_cast<size_t>(level)].name;
}

std::optional<CpuLevel> ParseCpuLevel(std::string_view name) {
  for (CpuLevel level : kCpuLevels) {
    if (CpuLevelName(level) == name) return level;
  }
  return std::nullopt;
}

CpuFeatures CpuLevelRequires(CpuLevel level) {
  CpuFeatures features;
  for (size_t i = 0; i <= static_cast<size_t>(level); ++i) features = features | kLevelRows[i].adds;
  return features;
}

CpuFeatures CpuLevelAllows(CpuLevel level) {
  CpuFeatures features = CpuLevelRequires(level);
  for (size_t i = 0; i <= static_cast<size_t>(level); ++i) {
    features = features | kLevelRows[i].optional;
  }
  return features;
}

CpuLevel BestCpuLevel(CpuFeatures features) {
  CpuLevel best = CpuLevel::kReference;
  for (CpuLevel level : kCpuLevels) {
    if (features.Covers(CpuLevelRequires(level))) best = level;
  }
  return best;
}

Result<CpuFeatures> AllowedCpuFeatures(CpuFeatures detected, std::optional<std::string_view> level,
                                       std::string_view disable) {
  CpuFeatures allowed = detected;
  if (level && !level->empty()) {
    std::optional<CpuLevel> parsed = ParseCpuLevel(*level);
    if (!parsed) {
      return InvalidInput(fmt::format("{} = '{}' is not a CPU level (expected {})", kCpuIsaEnv,
                                      *level, LevelNames()));
    }
    const CpuFeatures missing = CpuLevelRequires(*parsed) - detected;
    if (!missing.empty()) {
      return InvalidInput(fmt::format("{} = '{}', but this CPU lacks {} (its highest level is {})",
                                      kCpuIsaEnv, *level, missing.ToString(),
                                      CpuLevelName(BestCpuLevel(detected))));
    }
    allowed = allowed & CpuLevelAllows(*parsed);
  }
  Result<CpuFeatures> disabled = ParseCpuFeatureList(disable);
  if (!disabled.ok()) {
    return disabled.status().WithContext(fmt::format("{} = '{}'", kCpuDisableEnv, disable));
  }
  return allowed - *disabled;
}

Result<CpuFeatures> ResolveCpuFeatures() {
  const char* level = std::getenv(kCpuIsaEnv);
  const char* disable = std::getenv(kCpuDisableEnv);
  return AllowedCpuFeatures(
      DetectCpuFeatures(), level == nullptr ? std::nullopt : std::optional<std::string_view>(level),
      disable == nullptr ? "" : disable);
}

}  // namespace quantpath
