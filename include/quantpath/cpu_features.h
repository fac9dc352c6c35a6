// quantpath CPU features: what the running CPU (and its operating system) lets kernels use, the
// named levels QUANTPATH_CPU_ISA caps dispatch at, and the features QUANTPATH_CPU_DISABLE removes.
//
// Goals: x86 extensions are a set, not a total order (AMX and AVX-VNNI fit no chain); a kernel
// declares the set it needs and the dispatcher compares sets. Detection asks the CPU (CPUID, and
// XCR0 for the register state the OS saves) and, for AMX, the kernel (Linux grants tile data per
// process). Non-goals: non-x86 extensions (elsewhere the set is empty and only portable kernels
// run), choosing kernels (the dispatcher in kernels.h does).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "quantpath/base.h"

namespace quantpath {

// One x86 extension. Names (CpuFeatureName) are GCC's -m flag spellings.
enum class CpuFeature : uint8_t {
  kAvx2,        // "avx2"
  kFma,         // "fma"
  kF16c,        // "f16c"
  kAvx512F,     // "avx512f"
  kAvx512Bw,    // "avx512bw"
  kAvx512Vl,    // "avx512vl"
  kAvx512Dq,    // "avx512dq"
  kAvx512Vnni,  // "avx512vnni"
  kAvx512Bf16,  // "avx512bf16"
  kAvx512Fp16,  // "avx512fp16"
  kAmxTile,     // "amx-tile"
  kAmxBf16,     // "amx-bf16"
  kAmxInt8,     // "amx-int8"
  kAvxVnni,     // "avxvnni" (the 256-bit VEX form)
};
inline constexpr int kCpuFeatureCount = 14;

std::string_view CpuFeatureName(CpuFeature feature);
std::optional<CpuFeature> ParseCpuFeature(std::string_view name);

// A set of CPU features: a value type, compared and combined as bits.
class CpuFeatures {
 public:
  constexpr CpuFeatures() = default;
  constexpr CpuFeatures(std::initializer_list<CpuFeature> features) {
    for (CpuFeature feature : features) bits_ |= Bit(feature);
  }
  static constexpr CpuFeatures All() { return FromBits((uint32_t{1} << kCpuFeatureCount) - 1); }

  constexpr bool Has(CpuFeature feature) const { return (bits_ & Bit(feature)) != 0; }
  // Whether every feature of `needed` is in this set.
  constexpr bool Covers(CpuFeatures needed) const { return (bits_ & needed.bits_) == needed.bits_; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint32_t bits() const { return bits_; }

  constexpr CpuFeatures operator|(CpuFeatures other) const { return FromBits(bits_ | other.bits_); }
  constexpr CpuFeatures operator&(CpuFeatures other) const { return FromBits(bits_ & other.bits_); }
  // The features of this set that `other` lacks.
  constexpr CpuFeatures operator-(CpuFeatures other) const {
    return FromBits(bits_ & ~other.bits_);
  }
  constexpr bool operator==(const CpuFeatures&) const = default;

  // Names in CpuFeature order, comma-separated ("avx2,fma,f16c"); "none" for the empty set.
  std::string ToString() const;

 private:
  static constexpr uint32_t Bit(CpuFeature feature) {
    return uint32_t{1} << static_cast<int>(feature);
  }
  static constexpr CpuFeatures FromBits(uint32_t bits) {
    CpuFeatures set;
    set.bits_ = bits;
    return set;
  }
  uint32_t bits_ = 0;
};

// Comma-separated feature names, as QUANTPATH_CPU_DISABLE takes them; "amx" stands for the three
// AMX features, and an empty list (or empty items) for none. An unknown name is an error listing
// the names.
Result<CpuFeatures> ParseCpuFeatureList(std::string_view list);

// The features the running process may use: those the CPU reports and the OS has enabled (AVX and
// AVX-512 register state), with AMX only where Linux granted tile data. The first call asks for
// that grant (arch_prctl ARCH_REQ_XCOMP_PERM); a refusal removes the AMX features. Cached.
CpuFeatures DetectCpuFeatures();

// The levels QUANTPATH_CPU_ISA names, each a set of features that includes the level before it:
//   reference    nothing (portable code only)
//   avx2         AVX2, FMA, F16C; also AVX-VNNI where present
//   avx512       + AVX-512 F, BW, VL, DQ
//   avx512vnni   + AVX512-VNNI, AVX512-BF16
//   amx          + AMX-TILE, AMX-BF16, AMX-INT8; also AVX512-FP16 where present
// A CPU has a level when it has the level's required features; the optional ones (AVX-VNNI,
// AVX512-FP16) do not make a level, but a capped level keeps them.
enum class CpuLevel : uint8_t { kReference, kAvx2, kAvx512, kAvx512Vnni, kAmx };
inline constexpr CpuLevel kCpuLevels[] = {CpuLevel::kReference, CpuLevel::kAvx2, CpuLevel::kAvx512,
                                          CpuLevel::kAvx512Vnni, CpuLevel::kAmx};

std::string_view CpuLevelName(
    CpuLevel level);  // "reference", "avx2", "avx512", "avx512vnni", "amx"
std::optional<CpuLevel> ParseCpuLevel(std::string_view name);
// What a CPU must have to run at `level`.
CpuFeatures CpuLevelRequires(CpuLevel level);
// What dispatch capped at `level` may use (the required features and the optional ones).
CpuFeatures CpuLevelAllows(CpuLevel level);
// The highest level whose required features `features` covers.
CpuLevel BestCpuLevel(CpuFeatures features);

// The environment variables: QUANTPATH_CPU_ISA caps dispatch at a level; QUANTPATH_CPU_DISABLE
// removes features (ParseCpuFeatureList syntax).
inline constexpr char kCpuIsaEnv[] = "QUANTPATH_CPU_ISA";
inline constexpr char kCpuDisableEnv[] = "QUANTPATH_CPU_DISABLE";

// The features dispatch may use on a CPU with `detected`, given the values of QUANTPATH_CPU_ISA
// (`level`, nullopt or empty = no cap) and QUANTPATH_CPU_DISABLE (`disable`): detected, capped at
// CpuLevelAllows(level), minus the disabled features. An unknown level or feature name, or a level
// `detected` lacks, is an error naming the variable, the value and what is missing.
Result<CpuFeatures> AllowedCpuFeatures(CpuFeatures detected, std::optional<std::string_view> level,
                                       std::string_view disable);
// AllowedCpuFeatures(DetectCpuFeatures(), $QUANTPATH_CPU_ISA, $QUANTPATH_CPU_DISABLE).
Result<CpuFeatures> ResolveCpuFeatures();

}  // namespace quantpath
