// `plan --device`: the device chooses the layout of a scheme (materialize's device predicates),
// and the kernel registry says separately whether this build can run it; `load` and `run` lay
// layers out for the same device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
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
    EXPECT_FALSE(layer.Find("kernel_available")->bool_value())
        << layer.Find("path")->string_value();
  }
}

std::string FileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Blackwell's NVFP4 layout on the host: `load --device sm100` holds what plan says it stores,
// and `run --device sm100` writes the linear layout's y byte for byte.
TEST(PlanDeviceCli, LoadAndRunLayTheLayersOutForTheDevice) {
  const std::string dir = "tests/data/producers/ct_llama_nvfp4";
  const Json plan = ParseOrDie(RunCli("plan " + dir + " --device sm100 --json").out);
  const auto load = RunCli("load " + dir + " --device sm100 --json");
  ASSERT_EQ(load.exit_code, 0) << RunCli("load " + dir + " --device sm100", true).out;
  const auto& planned = plan.Find("layers")->items();
  const Json loaded = ParseOrDie(load.out);
  const auto& sites = loaded.Find("sites")->items();
  ASSERT_EQ(sites.size(), planned.size());
  int tiled = 0;
  for (size_t i = 0; i < sites.size(); ++i) {
    if (!sites[i].Find("loaded")->bool_value()) continue;
    EXPECT_EQ(sites[i].Find("spec_id")->string_value(), planned[i].Find("spec_id")->string_value());
    EXPECT_EQ(sites[i].Find("bytes_held")->int_value(), planned[i].Find("bytes")->int_value());
    if (sites[i].Find("spec_id")->string_value() == "nvfp4_block_16_128x4") ++tiled;
  }
  EXPECT_EQ(tiled, 8);

  const std::filesystem::path out = std::filesystem::temp_directory_path() / "quantpath_device";
  std::filesystem::create_directories(out);
  const std::string run = "run " + dir + " --layer model.layers.0.mlp.gate_up_proj --m 3 --json";
  // The reference kernel on the host, as for sm100's layout, which only it reads.
  setenv("QUANTPATH_CPU_ISA", "reference", 1);
  const auto on_cpu = RunCli(run + " --output " + (out / "cpu.safetensors").string());
  unsetenv("QUANTPATH_CPU_ISA");
  const auto on_sm100 =
      RunCli(run + " --device sm100 --output " + (out / "sm100.safetensors").string());
  ASSERT_EQ(on_cpu.exit_code, 0) << on_cpu.out;
  ASSERT_EQ(on_sm100.exit_code, 0) << on_sm100.out;
  EXPECT_EQ(ParseOrDie(on_sm100.out).Find("spec_id")->string_value(), "nvfp4_block_16_128x4");
  const std::string y = FileBytes(out / "cpu.safetensors");
  EXPECT_GT(y.size(), 3u * 512 * 4);  // y [3, 512] fp32 and its header
  EXPECT_EQ(y, FileBytes(out / "sm100.safetensors"));
  // A layer without a kernel on that device is unusable input, naming the spec.
  const auto bf16 = RunCli("run " + dir + " --layer lm_head --device sm100", true);
  EXPECT_EQ(bf16.exit_code, 2) << bf16.out;
  EXPECT_NE(bf16.out.find("bf16"), std::string::npos) << bf16.out;
}

}  // namespace
}  // namespace quantpath
