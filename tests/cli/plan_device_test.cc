// `plan --device`: the device chooses the layout of a scheme (materialize's device predicates),
// and the kernel registry says separately whether this build can run it.
#include <gtest/gtest.h>

#include <map>

#include "tests/cli/cli_test_util.h"

namespace quantpath {
namespace {

using testing::ParseOrDie;
using testing::RunCli;

// The spec_ids of the quantized layers of a plan, counted.
std::map<std::string, int> QuantizedSpecIds(const Json& plan) {
  std::map<std::string, int> ids;
  for (const Json& layer : plan.Find("layers")->items()) {
    if (layer.Find("decision")->string_value() != "quantized") continue;
    const Json* id = layer.Find("spec_id");
    ids[id->is_null() ? "null" : id->string_value()]++;
  }
  return ids;
}

TEST(PlanDeviceCli, Nvfp4ScalesAreTiledForBlackwellOnly) {
  const std::string dir = "tests/data/reconstructed/peaceh-nv__TensorRT-LLM__DeepSeek-R1-NVFP4";
  auto cpu = RunCli("plan " + dir + " --json");
  auto sm100 = RunCli("plan " + dir + " --device sm100 --json");
  ASSERT_NE(cpu.exit_code, 2) << cpu.out;
  ASSERT_NE(sm100.exit_code, 2) << sm100.out;
  const std::map<std::string, int> on_cpu = QuantizedSpecIds(ParseOrDie(cpu.out));
  const std::map<std::string, int> on_sm100 = QuantizedSpecIds(ParseOrDie(sm100.out));
  ASSERT_GT(on_cpu.count("nvfp4_block_16_linear"), 0u);
  EXPECT_EQ(on_cpu.count("nvfp4_block_16_128x4"), 0u);
  ASSERT_GT(on_sm100.count("nvfp4_block_16_128x4"), 0u);
  EXPECT_EQ(on_sm100.count("nvfp4_block_16_linear"), 0u);
  // Same layers, another layout: as many on each device.
  EXPECT_EQ(on_cpu.at("nvfp4_block_16_linear"), on_sm100.at("nvfp4_block_16_128x4"));
}

TEST(PlanDeviceCli, AKernelMissingOnTheDeviceIsANoteNotAnotherLayout) {
  auto sm90 = RunCli("plan examples/llama-tiny-fp8 --device sm90 --json");
  ASSERT_EQ(sm90.exit_code, 0) << sm90.out;
  auto cpu = RunCli("plan examples/llama-tiny-fp8 --json");
  EXPECT_EQ(QuantizedSpecIds(ParseOrDie(sm90.out)), QuantizedSpecIds(ParseOrDie(cpu.out)));
  // The registry's answer sits beside the unchanged spec_id.
  const Json plan = ParseOrDie(sm90.out);
  for (const Json& layer : plan.Find("layers")->items()) {
    if (layer.Find("decision")->string_value() != "quantized") continue;
    EXPECT_FALSE(layer.Find("kernel_available")->bool_value()) << layer.Find("path")->string_value();
  }
}

}  // namespace
}  // namespace quantpath
