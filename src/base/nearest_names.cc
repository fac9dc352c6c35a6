#include "src/base/nearest_names.h"

#include <algorithm>
#include <utility>

namespace quantpath {
namespace {

// Levenshtein distance of a and b, or `limit` + 1 once every path exceeds `limit`.
size_t EditDistance(std::string_view a, std::string_view b, size_t limit) {
  const size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (gap > limit) return limit + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    size_t best = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
      best = std::min(best, row[j]);
    }
    if (best > limit) return limit + 1;
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> NearestNames(std::string_view name,
                                      std::span<const std::string> candidates, size_t count) {
  const size_t limit = std::max<size_t>(2, name.size() / 5);
  std::vector<std::pair<size_t, size_t>> near;  // (distance, candidate index)
  for (size_t i = 0; i < candidates.size(); ++i) {
    const size_t d = EditDistance(name, candidates[i], limit);
    if (d <= limit) near.emplace_back(d, i);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t k = 0; k < near.size() && out.size() < count; ++k) {
    const std::string& candidate = candidates[near[k].second];
    if (std::find(out.begin(), out.end(), candidate) == out.end()) out.push_back(candidate);
  }
  return out;
}

}  // namespace quantpath
