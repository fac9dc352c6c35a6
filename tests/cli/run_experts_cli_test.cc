// `quantpath run --layer …mlp.experts [--expert K]` (docs/json/run.md): the JSON keys, both
// projections with one expert's shapes, and the usage errors of --expert.
#include <gtest/gtest.h>

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
                                            "seed", "expert", "experts", "projections", "pass"}));
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

}  // namespace
}  // namespace quantpath
