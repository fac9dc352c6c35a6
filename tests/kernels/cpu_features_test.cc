// CPU features: names, the level table, QUANTPATH_CPU_ISA / QUANTPATH_CPU_DISABLE on the feature
// sets of known CPUs, and detection against the kernel's own report (/proc/cpuinfo).
#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "quantpath/cpu_features.h"

namespace quantpath {
namespace {

using F = CpuFeature;

// CPUs by what they report (Intel ARK / AMD product pages): Haswell, Alder Lake (AVX-VNNI, no
// AVX-512), Skylake-SP, Zen 4 (AVX-512 with VNNI and BF16, no FP16, no AMX), Sapphire Rapids.
const CpuFeatures kHaswell = {F::kAvx2, F::kFma, F::kF16c};
const CpuFeatures kAlderLake = kHaswell | CpuFeatures{F::kAvxVnni};
const CpuFeatures kSkylakeSp =
    kHaswell | CpuFeatures{F::kAvx512F, F::kAvx512Bw, F::kAvx512Vl, F::kAvx512Dq};
const CpuFeatures kZen4 = kSkylakeSp | CpuFeatures{F::kAvx512Vnni, F::kAvx512Bf16};
const CpuFeatures kSapphireRapids = CpuFeatures::All();

bool Contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

TEST(CpuFeaturesTest, NamesRoundTripAndAreGccSpellings) {
  std::set<std::string_view> names;
  for (int i = 0; i < kCpuFeatureCount; ++i) {
    const CpuFeature feature = static_cast<CpuFeature>(i);
    EXPECT_EQ(ParseCpuFeature(CpuFeatureName(feature)), feature);
    names.insert(CpuFeatureName(feature));
  }
  EXPECT_EQ(names,
            (std::set<std::string_view>{"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                                        "avx512dq", "avx512vnni", "avx512bf16", "avx512fp16",
                                        "amx-tile", "amx-bf16", "amx-int8", "avxvnni"}));
  EXPECT_EQ(ParseCpuFeature("sse2"), std::nullopt);
  EXPECT_EQ(kHaswell.ToString(), "avx2,fma,f16c");
  EXPECT_EQ(CpuFeatures{}.ToString(), "none");
  EXPECT_EQ(*ParseCpuFeatureList(kZen4.ToString()), kZen4);
}

TEST(CpuFeaturesTest, SetOperations) {
  EXPECT_TRUE(kZen4.Covers(kHaswell));
  EXPECT_FALSE(kHaswell.Covers(kZen4));
  EXPECT_TRUE(kHaswell.Covers(CpuFeatures{}));
  EXPECT_EQ(kZen4 - kSkylakeSp, (CpuFeatures{F::kAvx512Vnni, F::kAvx512Bf16}));
  EXPECT_EQ(kAlderLake & kSkylakeSp, kHaswell);
  EXPECT_TRUE((kHaswell - kHaswell).empty());
  EXPECT_EQ(std::popcount(CpuFeatures::All().bits()), kCpuFeatureCount);
}

TEST(CpuFeaturesTest, DisableList) {
  EXPECT_EQ(*ParseCpuFeatureList("amx, avx512bf16"),
            (CpuFeatures{F::kAmxTile, F::kAmxBf16, F::kAmxInt8, F::kAvx512Bf16}));
  EXPECT_EQ(*ParseCpuFeatureList(""), CpuFeatures{});
  EXPECT_EQ(*ParseCpuFeatureList("avxvnni,,"), CpuFeatures{F::kAvxVnni});
  Result<CpuFeatures> bad = ParseCpuFeatureList("avx2,avx9");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "'avx9' is not a CPU feature (expected avx2, fma,"))
      << bad.status().message();
  EXPECT_TRUE(Contains(bad.status().message(), "amx-int8, avxvnni, or amx for the three AMX"));
}

TEST(CpuLevelsTest, TableAsDocumented) {
  for (CpuLevel level : kCpuLevels) EXPECT_EQ(ParseCpuLevel(CpuLevelName(level)), level);
  EXPECT_EQ(ParseCpuLevel("avx512bf16"), std::nullopt);
  EXPECT_TRUE(CpuLevelRequires(CpuLevel::kReference).empty());
  EXPECT_TRUE(CpuLevelAllows(CpuLevel::kReference).empty());
  EXPECT_EQ(CpuLevelRequires(CpuLevel::kAvx2), kHaswell);
  EXPECT_EQ(CpuLevelAllows(CpuLevel::kAvx2), kAlderLake);
  EXPECT_EQ(CpuLevelRequires(CpuLevel::kAvx512), kSkylakeSp);
  EXPECT_EQ(CpuLevelRequires(CpuLevel::kAvx512Vnni), kZen4);
  EXPECT_EQ(CpuLevelAllows(CpuLevel::kAvx512Vnni), kZen4 | CpuFeatures{F::kAvxVnni});
  EXPECT_EQ(CpuLevelRequires(CpuLevel::kAmx),
            (CpuFeatures::All() - CpuFeatures{F::kAvx512Fp16, F::kAvxVnni}));
  EXPECT_EQ(CpuLevelAllows(CpuLevel::kAmx), CpuFeatures::All());
  // Each level includes the one before it.
  for (size_t i = 1; i < std::size(kCpuLevels); ++i) {
    EXPECT_TRUE(CpuLevelRequires(kCpuLevels[i])
                    .Covers(CpuLevelAllows(kCpuLevels[i - 1]) - CpuFeatures{F::kAvxVnni}));
    EXPECT_TRUE(CpuLevelAllows(kCpuLevels[i]).Covers(CpuLevelAllows(kCpuLevels[i - 1])));
  }
}

TEST(CpuLevelsTest, BestLevelOfKnownCpus) {
  EXPECT_EQ(BestCpuLevel(CpuFeatures{}), CpuLevel::kReference);
  EXPECT_EQ(BestCpuLevel(CpuFeatures{F::kAvx2} | CpuFeatures{F::kFma}),
            CpuLevel::kReference);  // no F16C: no level
  EXPECT_EQ(BestCpuLevel(kHaswell), CpuLevel::kAvx2);
  EXPECT_EQ(BestCpuLevel(kAlderLake), CpuLevel::kAvx2);
  EXPECT_EQ(BestCpuLevel(kSkylakeSp), CpuLevel::kAvx512);
  EXPECT_EQ(BestCpuLevel(kZen4), CpuLevel::kAvx512Vnni);
  EXPECT_EQ(BestCpuLevel(kSapphireRapids), CpuLevel::kAmx);
  // AMX without the AVX-512 levels below it is no level above avx2.
  const CpuFeatures amx_only = kHaswell | *ParseCpuFeatureList("amx");
  EXPECT_EQ(BestCpuLevel(amx_only), CpuLevel::kAvx2);
}

TEST(AllowedCpuFeaturesTest, CapsAtTheLevelAndRemovesDisabled) {
  EXPECT_EQ(*AllowedCpuFeatures(kSapphireRapids, std::nullopt, ""), kSapphireRapids);
  EXPECT_EQ(*AllowedCpuFeatures(kSapphireRapids, "", ""), kSapphireRapids);
  EXPECT_EQ(*AllowedCpuFeatures(kSapphireRapids, "reference", ""), CpuFeatures{});
  EXPECT_EQ(*AllowedCpuFeatures(kSapphireRapids, "avx2", ""), kAlderLake);
  EXPECT_EQ(*AllowedCpuFeatures(kHaswell, "avx2", ""), kHaswell);
  EXPECT_EQ(*AllowedCpuFeatures(kSapphireRapids, "avx512", ""),
            kSkylakeSp | CpuFeatures{F::kAvxVnni});
  EXPECT_EQ(*AllowedCpuFeatures(kSapphireRapids, "avx512vnni", "avxvnni"), kZen4);
  EXPECT_EQ(*AllowedCpuFeatures(kSapphireRapids, "amx", ""), kSapphireRapids);
  EXPECT_EQ(*AllowedCpuFeatures(kSapphireRapids, std::nullopt, "amx,avx512bf16"),
            (kSapphireRapids - CpuFeatures{F::kAmxTile, F::kAmxBf16, F::kAmxInt8, F::kAvx512Bf16}));
  // Disabling what the CPU lacks changes nothing.
  EXPECT_EQ(*AllowedCpuFeatures(kHaswell, std::nullopt, "amx"), kHaswell);
  // The level is the CPU's; a disabled feature does not make the level unavailable.
  EXPECT_EQ(*AllowedCpuFeatures(kZen4, "avx512vnni", "avx512bf16"),
            kZen4 - CpuFeatures{F::kAvx512Bf16});
}

TEST(AllowedCpuFeaturesTest, ErrorsNameTheVariableAndWhatIsMissing) {
  Result<CpuFeatures> unknown = AllowedCpuFeatures(kZen4, "sse9", "");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "QUANTPATH_CPU_ISA = 'sse9' is not a CPU level (expected reference, avx2, avx512, "
            "avx512vnni or amx)");
  Result<CpuFeatures> lacking = AllowedCpuFeatures(kHaswell, "avx512", "");
  ASSERT_FALSE(lacking.ok());
  EXPECT_EQ(lacking.status().message(),
            "QUANTPATH_CPU_ISA = 'avx512', but this CPU lacks avx512f,avx512bw,avx512vl,avx512dq "
            "(its highest level is avx2)");
  Result<CpuFeatures> no_amx = AllowedCpuFeatures(kZen4, "amx", "");
  ASSERT_FALSE(no_amx.ok());
  EXPECT_TRUE(Contains(no_amx.status().message(),
                       "lacks amx-tile,amx-bf16,amx-int8 (its highest "
                       "level is avx512vnni)"))
      << no_amx.status().message();
  Result<CpuFeatures> bad_disable = AllowedCpuFeatures(kZen4, std::nullopt, "amx,avx512");
  ASSERT_FALSE(bad_disable.ok());
  EXPECT_EQ(bad_disable.status().code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(bad_disable.status().message(),
                       "QUANTPATH_CPU_DISABLE = 'amx,avx512': 'avx512' is not a CPU feature"))
      << bad_disable.status().message();
}

TEST(ResolveCpuFeaturesTest, ReadsTheEnvironment) {
  ASSERT_EQ(unsetenv(kCpuIsaEnv), 0);
  ASSERT_EQ(unsetenv(kCpuDisableEnv), 0);
  EXPECT_EQ(*ResolveCpuFeatures(), DetectCpuFeatures());
  ASSERT_EQ(setenv(kCpuIsaEnv, "reference", 1), 0);
  EXPECT_EQ(*ResolveCpuFeatures(), CpuFeatures{});
  ASSERT_EQ(setenv(kCpuIsaEnv, "bogus", 1), 0);
  Result<CpuFeatures> env = ResolveCpuFeatures();
  ASSERT_FALSE(env.ok());
  EXPECT_TRUE(Contains(env.status().message(), "QUANTPATH_CPU_ISA = 'bogus'"));
  ASSERT_EQ(unsetenv(kCpuIsaEnv), 0);
  ASSERT_EQ(setenv(kCpuDisableEnv, "avx2,fma", 1), 0);
  EXPECT_EQ(*ResolveCpuFeatures(), (DetectCpuFeatures() - CpuFeatures{F::kAvx2, F::kFma}));
  ASSERT_EQ(setenv(kCpuDisableEnv, "sse", 1), 0);
  EXPECT_FALSE(ResolveCpuFeatures().ok());
  ASSERT_EQ(unsetenv(kCpuDisableEnv), 0);
}

// The flags Linux prints for each feature, in CpuFeature order.
constexpr std::string_view kCpuinfoFlags[] = {
    "avx2",        "fma",         "f16c",        "avx512f",  "avx512bw", "avx512vl", "avx512dq",
    "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "avx_vnni"};
static_assert(std::size(kCpuinfoFlags) == kCpuFeatureCount);

TEST(DetectCpuFeaturesTest, AgreesWithProcCpuinfo) {
#if !defined(__linux__) || !defined(__x86_64__)
  GTEST_SKIP() << "needs Linux on x86-64";
#else
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string word; words >> word;) flags.insert(word);
    break;
  }
  if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line";
  const CpuFeatures detected = DetectCpuFeatures();
  for (int i = 0; i < kCpuFeatureCount; ++i) {
    const CpuFeature feature = static_cast<CpuFeature>(i);
    // Linux lists a feature only when it saves its registers; AMX can still be refused to the
    // process, so the list bounds AMX from above.
    const bool listed = flags.count(std::string(kCpuinfoFlags[i])) > 0;
    if (feature == F::kAmxTile || feature == F::kAmxBf16 || feature == F::kAmxInt8) {
      EXPECT_TRUE(listed || !detected.Has(feature)) << CpuFeatureName(feature);
    } else {
      EXPECT_EQ(detected.Has(feature), listed) << CpuFeatureName(feature);
    }
  }
  // AMX comes as one: tile data granted, or no AMX feature at all.
  EXPECT_TRUE(detected.Has(F::kAmxTile) ||
              (!detected.Has(F::kAmxBf16) && !detected.Has(F::kAmxInt8)));
  EXPECT_EQ(DetectCpuFeatures(), detected);  // cached
#endif
}

}  // namespace
}  // namespace quantpath
