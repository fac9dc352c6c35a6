// SeededRouting (moe.h): uniform top-k routings from a seed.
#include <numeric>
#include <random>
#include <vector>

#include "quantpath/moe.h"

namespace quantpath {

RoutingTable SeededRouting(uint64_t seed, int64_t tokens, int64_t top_k, int64_t experts) {
  std::mt19937_64 rng(seed);
  RoutingTable table{tokens, top_k, {}, {}};
  table.ids.reserve(static_cast<size_t>(tokens * top_k));
  table.weights.reserve(static_cast<size_t>(tokens * top_k));
  std::vector<int32_t> pool(static_cast<size_t>(experts));
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (int64_t t = 0; t < tokens; ++t) {
    // The first top_k places of a partial Fisher–Yates shuffle: distinct, uniform.
    std::iota(pool.begin(), pool.end(), 0);
    float sum = 0;
    for (int64_t j = 0; j < top_k; ++j) {
      std::uniform_int_distribution<int64_t> pick(j, experts - 1);
      std::swap(pool[j], pool[pick(rng)]);
      table.ids.push_back(pool[j]);
      table.weights.push_back(uniform(rng) + 0x1p-24f);  // never 0
      sum += table.weights.back();
    }
    for (int64_t j = 0; j < top_k; ++j) table.weights[t * top_k + j] /= sum;
  }
  return table;
}

}  // namespace quantpath
