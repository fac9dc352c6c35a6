// `quantpath run --layer …mlp.experts [--expert K]` (docs/json/run.md): the JSON keys, both
// projections with one expert's shapes, and the usage errors of --expert. On given activations
// (--input/--output): every expert's y [E, M, H], one expert's [M, H] equal to its slice of the
// first, and at --tp 2 the two ranks' partial sums adding up to the whole experts' output.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "quantpath/checkpoint.h"
#include "quantpath/checkpoint_writer.h"
#include "quantpath/numeric.h"
#include "tests/cli/cli_test_util.h"

namespace quantpath {
namespace {

using testing::CommandResult;
using testing::ParseOrDie;
using testing::RunCli;

constexpr char kMoe[] = "run tests/data/producers/ct_qwen3moe_w4a16_g64_sym";

TEST(RunExpertsCli, OneExpertAsJson) {
  CommandResult r = RunCli(std::string(kMoe) +
                           " --layer model.layers.1.mlp.experts --expert 2 "
                           "--m 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Json j = ParseOrDie(r.out);
  std::vector<std::string> keys;
  for (const auto& member : j.members()) keys.push_back(member.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"layer", "resolved", "spec_id", "activation", "m",
                                            "seed", "expert", "experts", "projections", "pass",
                                            "quantized_at_load", "input", "output"}));
  EXPECT_EQ(j.Find("spec_id")->string_value(), "int4_group_64");
  EXPECT_EQ(j.Find("expert")->int_value(), 2);
  EXPECT_EQ(j.Find("experts")->int_value(), 1);
  const std::vector<Json>& projections = j.Find("projections")->items();
  ASSERT_EQ(projections.size(), 2u);
  EXPECT_EQ(projections[0].Find("name")->string_value(), "w13");
  EXPECT_EQ(projections[0].Find("n")->int_value(), 256);
  EXPECT_EQ(projections[0].Find("legs")->items().size(), 2u);
  EXPECT_EQ(projections[1].Find("name")->string_value(), "w2");
  EXPECT_EQ(projections[1].Find("legs")->items()[0].string_value(), "down_proj");
  EXPECT_TRUE(projections[1].Find("pass")->bool_value());
}

TEST(RunExpertsCli, EveryExpertAsText) {
  // An expert's checkpoint name resolves to its layer; without --expert every expert runs.
  CommandResult r = RunCli(std::string(kMoe) + " --layer model.layers.0.mlp.experts.3.down_proj");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("is an expert weight of model.layers.0.mlp.experts"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("experts  all 4, one input"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("w13   gate_proj+up_proj"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("w2    down_proj"), std::string::npos) << r.out;
}

TEST(RunExpertsCli, ExpertUsageErrors) {
  CommandResult out_of_range =
      RunCli(std::string(kMoe) + " --layer model.layers.0.mlp.experts --expert 4", true);
  EXPECT_EQ(out_of_range.exit_code, 2) << out_of_range.out;
  EXPECT_NE(out_of_range.out.find("expert 4 is out of range (the layer has experts 0 to 3)"),
            std::string::npos)
      << out_of_range.out;
  CommandResult dense =
      RunCli(std::string(kMoe) + " --layer model.layers.0.self_attn.o_proj --expert 0", true);
  EXPECT_EQ(dense.exit_code, 2) << dense.out;
  EXPECT_NE(dense.out.find("--expert: only an MoE layer"), std::string::npos) << dense.out;
}

// y of a --output file, with its shape.
std::vector<float> ReadY(const std::string& path, std::vector<int64_t>* shape) {
  Result<std::shared_ptr<const SafetensorsFile>> file = SafetensorsFile::Open(path);
  EXPECT_TRUE(file.ok()) << path;
  if (!file.ok()) return {};
  const TensorInfo* info = (*file)->Find("y");
  EXPECT_NE(info, nullptr) << path;
  if (info == nullptr) return {};
  *shape = info->shape;
  Result<std::vector<float>> y = CopyTensor<float>((*file)->View(*info));
  EXPECT_TRUE(y.ok()) << path;
  return y.ok() ? *y : std::vector<float>{};
}

TEST(RunExpertsCli, GivenInputWritesEveryExpertsOutput) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("qp_experts_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  constexpr int64_t kM = 3;
  constexpr int64_t kHidden = 128;
  std::vector<uint16_t> x(kM * kHidden);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = FloatToBf16(static_cast<float>(std::sin(0.37 * static_cast<double>(i))));
  }
  const TensorToWrite xt{
      "x", StDtype::kBF16, {kM, kHidden}, std::as_bytes(std::span<const uint16_t>(x))};
  const std::string input = (dir / "x.safetensors").string();
  ASSERT_TRUE(WriteSafetensors(input, std::span<const TensorToWrite>(&xt, 1)).ok());
  const std::string base = std::string(kMoe) + " --layer model.layers.1.mlp.experts --input " +
                           input + " --output " + (dir / "y").string();

  CommandResult all = RunCli(base + "_all.safetensors --json");
  ASSERT_EQ(all.exit_code, 0) << all.out;
  const Json j = ParseOrDie(all.out);
  EXPECT_TRUE(j.Find("seed")->is_null());
  EXPECT_EQ(j.Find("input")->string_value(), input);
  std::vector<int64_t> shape;
  const std::vector<float> y_all = ReadY((dir / "y_all.safetensors").string(), &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{4, kM, kHidden}));

  CommandResult one = RunCli(base + "_2.safetensors --expert 2");
  ASSERT_EQ(one.exit_code, 0) << one.out;
  EXPECT_NE(one.out.find("input    "), std::string::npos) << one.out;
  const std::vector<float> y_2 = ReadY((dir / "y_2.safetensors").string(), &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{kM, kHidden}));
  ASSERT_EQ(y_all.size(), 4 * y_2.size());
  for (size_t i = 0; i < y_2.size(); ++i) ASSERT_EQ(y_2[i], y_all[2 * y_2.size() + i]) << i;

  // Each rank holds half of every expert's intermediate rows: down's partial sums add up.
  std::vector<double> sum(y_all.size(), 0.0);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string out = "_tp" + std::to_string(rank) + ".safetensors";
    CommandResult r = RunCli(base + out + " --tp 2 --rank " + std::to_string(rank));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const std::vector<float> y = ReadY((dir / ("y" + out)).string(), &shape);
    ASSERT_EQ(y.size(), y_all.size());
    for (size_t i = 0; i < y.size(); ++i) sum[i] += y[i];
  }
  double max_diff = 0;
  double max_ref = 0;
  for (size_t i = 0; i < sum.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(sum[i] - y_all[i]));
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(y_all[i])));
  }
  // The same h on both sides (gate and up rows are the whole expert's), so only fp32 order.
  EXPECT_LE(max_diff / max_ref, 1e-5);
  EXPECT_GT(max_ref, 0);

  CommandResult wrong =
      RunCli(std::string(kMoe) +
                 " --layer model.layers.1.mlp.experts --input "
                 "tests/data/producers/ct_qwen3moe_w4a16_g64_sym/dequant.safetensors",
             true);
  EXPECT_EQ(wrong.exit_code, 2) << wrong.out;
  EXPECT_NE(wrong.out.find("no tensor x"), std::string::npos) << wrong.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace quantpath
