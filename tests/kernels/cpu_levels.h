// Test fixtures for exercising every compiled kernel path: the CPU levels this machine runs and
// what dispatch may use at each. Header-only; used by the kernels and linear tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "quantpath/cpu_features.h"

namespace quantpath::testing {

// reference, then every level up to the highest this CPU has, in order.
inline std::vector<CpuLevel> SupportedCpuLevels() {
  std::vector<CpuLevel> levels;
  const CpuLevel best = BestCpuLevel(DetectCpuFeatures());
  for (CpuLevel level : kCpuLevels) {
    if (level <= best) levels.push_back(level);
  }
  return levels;
}

// What dispatch may use on this CPU with QUANTPATH_CPU_ISA = `level`.
inline CpuFeatures FeaturesAt(CpuLevel level) {
  Result<CpuFeatures> features = AllowedCpuFeatures(DetectCpuFeatures(), CpuLevelName(level), "");
  EXPECT_TRUE(features.ok()) << features.status().message();
  return features.ok() ? *features : CpuFeatures{};
}

inline std::string CpuLevelTestName(const ::testing::TestParamInfo<CpuLevel>& info) {
  return std::string(CpuLevelName(info.param));
}

}  // namespace quantpath::testing
