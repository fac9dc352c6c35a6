// The dot-product unit table: CPUID models to rows, QUANTPATH_DOT_UNITS overrides and their
// errors, the unit a kernel multiplies on at its level, and the dispatcher ranking kernels by
// their unit's peak before their priority.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "quantpath/dot_units.h"
#include "quantpath/kernels.h"

namespace quantpath {
namespace {

const CpuModel kZen4{"AuthenticAMD", 0x19, 0x11};
const CpuModel kSapphireRapids{"GenuineIntel", 6, 0x8F};

TEST(DotUnitsTest, RowsByVendorFamilyAndModel) {
  const DotUnitPeaks zen4 = *DotUnitPeaksFor(kZen4, "");
  EXPECT_EQ(zen4.row, "AMD Zen 4");
  // Zen 4: vdpbf16ps at twice the fp32 FMA's multiply-adds; 512-bit FMA no faster than 256-bit.
  EXPECT_EQ(zen4.Peak(UnitWidth::kBf16Pair512), 2 * zen4.Peak(UnitWidth::kFp32x512));
  EXPECT_EQ(zen4.Peak(UnitWidth::kFp32x512), zen4.Peak(UnitWidth::kFp32x256));
  EXPECT_FALSE(zen4.overridden);
  // Intel's server cores: fp32 FMA over vdpbf16ps.
  const DotUnitPeaks spr = *DotUnitPeaksFor(kSapphireRapids, "");
  EXPECT_EQ(spr.row, "Intel Sapphire / Emerald / Granite Rapids");
  EXPECT_GT(spr.Peak(UnitWidth::kFp32x512), spr.Peak(UnitWidth::kBf16Pair512));
  EXPECT_EQ(DotUnitPeaksFor({"AuthenticAMD", 0x19, 0x21}, "")->row, "AMD Zen 3");
  EXPECT_EQ(DotUnitPeaksFor({"GenuineIntel", 6, 0x9A}, "")->row, "default");
  EXPECT_EQ(DotUnitPeaksFor({"", 0, 0}, "")->row, "default");
}

TEST(DotUnitsTest, OverridesAndTheirErrors) {
  const DotUnitPeaks peaks = *DotUnitPeaksFor(kZen4, " bf16-pair-512 = 8, fp32-512=64");
  EXPECT_TRUE(peaks.overridden);
  EXPECT_EQ(peaks.Peak(UnitWidth::kBf16Pair512), 8);
  EXPECT_EQ(peaks.Peak(UnitWidth::kFp32x512), 64);
  EXPECT_EQ(peaks.Peak(UnitWidth::kInt8Quad512),
            DotUnitPeaksFor(kZen4, "")->Peak(UnitWidth::kInt8Quad512));
  for (const char* bad : {"bogus=1", "fp32-512", "fp32-512=-1", "fp32-512=x", "fp32-512=0"}) {
    Result<DotUnitPeaks> refused = DotUnitPeaksFor(kZen4, bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("QUANTPATH_DOT_UNITS"), std::string::npos)
        << refused.status().message();
  }
}

TEST(DotUnitsTest, AKernelsUnitIsItsLevelsWidth) {
  EXPECT_EQ(UnitWidthOf(DotUnit::kFp32, CpuFeatures{}), UnitWidth::kFp32Scalar);
  EXPECT_EQ(UnitWidthOf(DotUnit::kFp32, CpuLevelRequires(CpuLevel::kAvx2)), UnitWidth::kFp32x256);
  EXPECT_EQ(UnitWidthOf(DotUnit::kFp32, CpuLevelRequires(CpuLevel::kAvx512Vnni)),
            UnitWidth::kFp32x512);
  EXPECT_EQ(UnitWidthOf(DotUnit::kBf16Pair, CpuLevelRequires(CpuLevel::kAvx512Vnni)),
            UnitWidth::kBf16Pair512);
  EXPECT_EQ(UnitWidthOf(DotUnit::kInt8Quad, CpuLevelRequires(CpuLevel::kAvx512Vnni)),
            UnitWidth::kInt8Quad512);
  EXPECT_EQ(UnitWidthName(UnitWidth::kInt4Pair256), "int4-pair-256");
}

// A kernel of every bf16 problem on a given unit.
class UnitKernel final : public LinearKernel {
 public:
  UnitKernel(std::string name, CpuLevel level, DotUnit unit, int priority)
      : name_(std::move(name)), level_(level), unit_(unit), priority_(priority) {}
  std::string_view name() const override { return name_; }
  CpuFeatures features() const override { return CpuLevelRequires(level_); }
  int priority() const override { return priority_; }
  DotUnit unit() const override { return unit_; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return key.family == SpecFamily("bf16") && device.is_cpu();
  }
  bool CanHandle(const KernelProbe&) const override { return true; }
  void Apply(const LinearParams&, const ActivationQuant&, const ConstMatrix&,
             const MutableMatrix&) const override {}

 private:
  std::string name_;
  CpuLevel level_;
  DotUnit unit_;
  int priority_;
};

std::string Chosen(const KernelRegistry& registry, const DotUnitPeaks& peaks) {
  KernelProbe probe;
  probe.spec = *ParseSpecId("bf16");
  probe.m = probe.n = probe.k = 64;
  Result<const LinearKernel*> kernel =
      Dispatcher(registry, CpuFeatures::All(), peaks).Select(probe);
  return kernel.ok() ? std::string((*kernel)->name()) : kernel.status().message();
}

TEST(DotUnitsTest, TheDispatcherRanksByTheUnitsPeakThenPriority) {
  KernelRegistry registry;
  registry.Register(std::make_unique<UnitKernel>("Fp32Zmm", CpuLevel::kAvx512, DotUnit::kFp32, 30));
  registry.Register(
      std::make_unique<UnitKernel>("Bf16", CpuLevel::kAvx512Vnni, DotUnit::kBf16Pair, 10));
  registry.Register(
      std::make_unique<UnitKernel>("Bf16Later", CpuLevel::kAvx512Vnni, DotUnit::kBf16Pair, 20));
  // Zen 4: vdpbf16ps is the faster unit, whatever the fp32 kernel's priority; among the bf16
  // kernels, the higher priority.
  EXPECT_EQ(Chosen(registry, *DotUnitPeaksFor(kZen4, "")), "Bf16Later");
  EXPECT_EQ(Chosen(registry, *DotUnitPeaksFor(kSapphireRapids, "")), "Fp32Zmm");
  EXPECT_EQ(Chosen(registry, *DotUnitPeaksFor(kZen4, "bf16-pair-512=8")), "Fp32Zmm");
  EXPECT_EQ(Chosen(registry, *DotUnitPeaksFor(kSapphireRapids, "fp32-512=8")), "Bf16Later");
}

}  // namespace
}  // namespace quantpath
