// CPU features: names, detection (cpuid, the OS's register state, Linux's AMX grant), the levels of
// QUANTPATH_CPU_ISA and the QUANTPATH_CPU_DISABLE list.
#include "quantpath/cpu_features.h"

#include <cstdlib>
#include <utility>
#include <vector>

#include "fmt/format.h"

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

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
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

CpuFeatures Detect() {
  CpuFeatures found;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the registers (XCR0): AVX state for the
  // VEX features, opmask and ZMM state for AVX-512, tile state for AMX.
  const std::pair<CpuFeature, bool> probes[] = {
      {CpuFeature::kAvx2, __builtin_cpu_supports("avx2")},
      {CpuFeature::kFma, __builtin_cpu_supports("fma")},
      {CpuFeature::kF16c, __builtin_cpu_supports("f16c")},
      {CpuFeature::kAvx512F, __builtin_cpu_supports("avx512f")},
      {CpuFeature::kAvx512Bw, __builtin_cpu_supports("avx512bw")},
      {CpuFeature::kAvx512Vl, __builtin_cpu_supports("avx512vl")},
      {CpuFeature::kAvx512Dq, __builtin_cpu_supports("avx512dq")},
      {CpuFeature::kAvx512Vnni, __builtin_cpu_supports("avx512vnni")},
      {CpuFeature::kAvx512Bf16, __builtin_cpu_supports("avx512bf16")},
      {CpuFeature::kAvx512Fp16, __builtin_cpu_supports("avx512fp16")},
      {CpuFeature::kAmxTile, __builtin_cpu_supports("amx-tile")},
      {CpuFeature::kAmxBf16, __builtin_cpu_supports("amx-bf16")},
      {CpuFeature::kAmxInt8, __builtin_cpu_supports("amx-int8")},
      {CpuFeature::kAvxVnni, __builtin_cpu_supports("avxvnni")},
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
    const std::string_view name = Trim(item);
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
