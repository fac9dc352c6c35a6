// The names nearest a name a user typed, for "did you mean" suggestions on a miss.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace quantpath {

// Up to `count` of `candidates` nearest `name` by edit distance (insertions, deletions and
// substitutions of bytes), nearest first and in candidate order among equals; only candidates
// within a fifth of the name's length (at least 2 edits) count as near.
std::vector<std::string> NearestNames(std::string_view name,
                                      std::span<const std::string> candidates, size_t count = 3);

}  // namespace quantpath
