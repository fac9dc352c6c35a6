// NameIds: dense ids in insertion order, duplicates found, lookups right across growth, against a
// std::map reference.
#include "src/base/name_ids.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

namespace quantpath {
namespace {

TEST(NameIds, GivesDenseIdsInOrderAndFindsDuplicates) {
  NameIds ids;
  EXPECT_EQ(ids.Find("a"), std::nullopt);
  EXPECT_EQ(ids.Insert("model.layers.0.weight"), std::pair(0u, true));
  EXPECT_EQ(ids.Insert(""), std::pair(1u, true));
  EXPECT_EQ(ids.Insert("model.layers.0.weight"), std::pair(0u, false));
  EXPECT_EQ(ids.Find(""), 1u);
  EXPECT_EQ(ids.Find("model.layers.0"), std::nullopt);
  EXPECT_EQ(ids.Name(0), "model.layers.0.weight");
  EXPECT_EQ(ids.size(), 2u);
}

TEST(NameIds, AgreesWithAMapAcrossGrowth) {
  std::mt19937 random(7);
  std::map<std::string, uint32_t> reference;
  NameIds ids;
  for (int i = 0; i < 20000; ++i) {
    // Names share long prefixes and repeat, as tensor names do.
    const std::string name = "model.layers." + std::to_string(random() % 300) + ".mlp.experts." +
                             std::to_string(random() % 40) + ".weight";
    auto [id, added] = ids.Insert(name);
    auto [it, new_in_reference] =
        reference.try_emplace(name, static_cast<uint32_t>(reference.size()));
    ASSERT_EQ(added, new_in_reference) << name;
    ASSERT_EQ(id, it->second) << name;
  }
  ASSERT_EQ(ids.size(), reference.size());
  for (const auto& [name, id] : reference) {
    ASSERT_EQ(ids.Find(name), id) << name;
    ASSERT_EQ(ids.Name(id), name);
  }
  EXPECT_EQ(ids.Find("model.layers.300.mlp.experts.0.weight"), std::nullopt);
}

TEST(NameIds, ReserveKeepsWhatIsThere) {
  NameIds ids;
  ids.Insert("x");
  ids.Insert("y");
  ids.Reserve(1000, 10000);
  EXPECT_EQ(ids.Find("x"), 0u);
  EXPECT_EQ(ids.Find("y"), 1u);
  EXPECT_EQ(ids.Insert("z"), std::pair(2u, true));
}

}  // namespace
}  // namespace quantpath
