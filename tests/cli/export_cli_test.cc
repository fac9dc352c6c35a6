// `quantpath quantize` and `quantpath convert`: exit codes (0 written, 2 refused with nothing left
// behind), the JSON report of docs/json/export.md, the text summary, --force and --lossy.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_test_util.h"

namespace quantpath {
namespace {

using testing::ParseOrDie;
using testing::RunCli;

std::string Data(const std::string& folder) {
  return std::string(QUANTPATH_TEST_DATA) + "/producers/" + folder;
}

std::filesystem::path Fresh(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "quantpath_tests" / ("ExportCli." + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ExportCli, QuantizeWritesTheFolderAndReportsItAsJson) {
  const std::filesystem::path out = Fresh("json") / "int4";
  auto run = RunCli("quantize " + Data("bf16_llama") + " " + out.string() +
                    " --scheme w4a16-int4-g128-asym --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const Json j = ParseOrDie(run.out);
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.members()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"out_dir", "format", "scheme", "layers_written",
                                            "tensors_in", "tensors_out", "bytes_in", "bytes_out",
                                            "seconds", "gb_per_s", "files", "notes"}));
  EXPECT_EQ(j.Find("format")->string_value(), "compressed-tensors");
  EXPECT_EQ(j.Find("scheme")->string_value(), "w4a16-int4-g128-asym");
  EXPECT_EQ(j.Find("layers_written")->int_value(), 8);
  EXPECT_TRUE(std::filesystem::exists(out / "model.safetensors"));
  // Written again without --force: exit 2, the folder as it was.
  auto again = RunCli(
      "quantize " + Data("bf16_llama") + " " + out.string() + " --scheme w4a16-int4-g128", true);
  EXPECT_EQ(again.exit_code, 2) << again.out;
  EXPECT_NE(again.out.find("--force"), std::string::npos) << again.out;
  auto forced = RunCli("quantize " + Data("bf16_llama") + " " + out.string() +
                       " --scheme w4a16-int4-g128 --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.out;
  EXPECT_NE(forced.out.find("layers quantized: 8"), std::string::npos) << forced.out;
}

TEST(ExportCli, ConvertToModelOptSaysWhatItChanged) {
  const std::filesystem::path out = Fresh("modelopt") / "mo";
  auto run = RunCli("convert " + Data("ct_llama_nvfp4") + " " + out.string() + " --to modelopt");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("within one fp32 ulp"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("hf_quant_config.json"), std::string::npos) << run.out;
}

TEST(ExportCli, ConvertRefusalsExitTwoAndLeaveNothing) {
  const std::filesystem::path dir = Fresh("refused");
  // A native fp8 folder has no per-channel scales.
  auto channel = RunCli(
      "convert " + Data("ct_llama_fp8_dynamic") + " " + (dir / "a").string() + " --to native-fp8",
      true);
  EXPECT_EQ(channel.exit_code, 2) << channel.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "a"));
  // --lossy is accepted where nothing needs it: the folder is the same as without it.
  auto lossy = RunCli("convert " + Data("ar_llama_auto_awq_w4g64_asym") + " " +
                      (dir / "b").string() + " --to compressed-tensors --lossy --json");
  EXPECT_EQ(lossy.exit_code, 0) << lossy.out;
  EXPECT_EQ(ParseOrDie(lossy.out).Find("format")->string_value(), "compressed-tensors");
}

}  // namespace
}  // namespace quantpath
