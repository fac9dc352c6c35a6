// NearestNames: the "did you mean" list of a miss.
#include "src/base/nearest_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace quantpath {
namespace {

TEST(NearestNames, NearestFirstWithinAFifthOfTheName) {
  const std::vector<std::string> names = {"model.layers.0.mlp.down_proj",
                                          "model.layers.0.mlp.gate_up_proj",
                                          "model.layers.1.mlp.down_proj", "lm_head"};
  EXPECT_EQ(
      NearestNames("model.layers.0.mlp.down_prj", names),
      (std::vector<std::string>{"model.layers.0.mlp.down_proj", "model.layers.1.mlp.down_proj"}));
  // Equal distances keep the candidates' order; the count bounds the list.
  EXPECT_EQ(NearestNames("model.layers.2.mlp.down_proj", names, 1),
            (std::vector<std::string>{"model.layers.0.mlp.down_proj"}));
  EXPECT_TRUE(NearestNames("vision_tower.blocks.3.attn.proj", names).empty());
  // Short names still allow two edits.
  EXPECT_EQ(NearestNames("lm_haed", names), (std::vector<std::string>{"lm_head"}));
  EXPECT_TRUE(NearestNames("x", {}).empty());
}

}  // namespace
}  // namespace quantpath
