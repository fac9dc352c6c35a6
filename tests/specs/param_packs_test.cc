// ParamPacks: a kernel's pack is made once per owner and kept, moves with the parameters, and
// concurrent first calls make one.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "quantpath/specs.h"

namespace quantpath {
namespace {

struct Pack {
  int value;
};

TEST(ParamPacksTest, MadeOncePerOwner) {
  ParamPacks packs;
  int made = 0;
  const auto make = [&made](int value) {
    return [&made, value] {
      ++made;
      return std::make_unique<Pack>(Pack{value});
    };
  };
  const int owner_a = 0, owner_b = 0;
  EXPECT_EQ(packs.Get<Pack>(&owner_a, make(1)).value, 1);
  EXPECT_EQ(packs.Get<Pack>(&owner_a, make(2)).value, 1);  // kept, not remade
  EXPECT_EQ(packs.Get<Pack>(&owner_b, make(3)).value, 3);
  EXPECT_EQ(made, 2);
  EXPECT_EQ(packs.size(), 2u);
}

TEST(ParamPacksTest, MovesWithTheParameters) {
  LinearParams params;
  const int owner = 0;
  const Pack* first =
      &params.packs.Get<Pack>(&owner, [] { return std::make_unique<Pack>(Pack{7}); });
  LinearParams moved = std::move(params);
  ASSERT_EQ(moved.packs.size(), 1u);
  EXPECT_EQ(&moved.packs.Get<Pack>(&owner, [] { return std::make_unique<Pack>(Pack{8}); }), first);
  LinearParams assigned;
  assigned.packs.Get<Pack>(&owner, [] { return std::make_unique<Pack>(Pack{9}); });
  assigned = std::move(moved);
  EXPECT_EQ(assigned.packs.Get<Pack>(&owner, [] { return std::make_unique<Pack>(Pack{10}); }).value,
            7);
}

TEST(ParamPacksTest, ConcurrentFirstCallsMakeOne) {
  ParamPacks packs;
  std::atomic<int> made{0};
  const int owner = 0;
  std::vector<std::thread> threads;
  std::vector<const Pack*> seen(8);
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] {
      seen[i] = &packs.Get<Pack>(&owner, [&made] {
        made.fetch_add(1);
        return std::make_unique<Pack>(Pack{1});
      });
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(made.load(), 1);
  for (const Pack* p : seen) EXPECT_EQ(p, seen[0]);
}

}  // namespace
}  // namespace quantpath
