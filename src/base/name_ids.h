// NameIds: names to dense ids (0, 1, 2, … in the order added), for the tables a checkpoint's
// tensor names go into (a header's names, an index's weight map; 150k names for a large MoE).
// The names are copied into one arena and the table is open-addressed, so adding a name costs no
// allocation of its own, where a node-based map costs one or two per name.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace quantpath {

class NameIds {
 public:
  // Room for `names` names of `bytes` bytes in all, so that adding them does not grow the table.
  void Reserve(size_t names, size_t bytes);
  // The id of `name`, added when new; `second` is whether it was.
  std::pair<uint32_t, bool> Insert(std::string_view name) { return Insert(name, HashOf(name)); }
  // Insert with `hash` = HashOf(name), computed ahead so that the slot could be prefetched.
  std::pair<uint32_t, bool> Insert(std::string_view name, uint64_t hash);
  // Starts loading the slot a name of this hash is probed from: a table of 150k names is several
  // megabytes, and adding names one after another otherwise waits on memory for each.
  void Prefetch(uint64_t hash) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]);
  }
  // Multiply-and-rotate over 8-byte words, then MurmurHash3's 64-bit finaliser, so that the low
  // bits (the slot) and the high bits (the tag) both vary with every byte: a third of the cost of
  // std::hash, which matters at 150k names hashed twice.
  static uint64_t HashOf(std::string_view name) {
    constexpr uint64_t kMul = 0x9E3779B97F4A7C15;
    uint64_t hash = name.size() * kMul;
    for (size_t i = 0; i < name.size(); i += 8) {
      uint64_t word = 0;
      std::memcpy(&word, name.data() + i, std::min<size_t>(8, name.size() - i));
      hash = (std::rotl(hash, 5) ^ word) * kMul;
    }
    hash ^= hash >> 33;
    hash *= 0xFF51AFD7ED558CCD;
    hash ^= hash >> 33;
    hash *= 0xC4CEB9FE1A85EC53;
    return hash ^ (hash >> 33);
  }
  std::optional<uint32_t> Find(std::string_view name) const;
  // Find with the name's hash known, as another table holding it has it (Hash): one table's names
  // are looked up in another without hashing them again.
  std::optional<uint32_t> Find(std::string_view name, uint64_t hash) const;
  uint64_t Hash(uint32_t id) const { return hashes_[id]; }
  // Valid until the next Insert.
  std::string_view Name(uint32_t id) const {
    return std::string_view(chars_).substr(starts_[id], starts_[id + 1] - starts_[id]);
  }
  size_t size() const { return hashes_.size(); }

 private:
  static uint64_t Slot(uint64_t hash, uint32_t id) {
    return (hash >> 32 << 32) | (id + uint64_t{1});
  }
  static uint32_t IdOf(uint64_t slot) { return static_cast<uint32_t>(slot) - 1; }
  void Grow();
  // The slot holding `name` (hash `hash`), or the empty slot where it would go.
  size_t Probe(std::string_view name, uint64_t hash) const;

  std::string chars_;              // every name, back to back
  std::vector<size_t> starts_{0};  // name `id` is chars_[starts_[id], starts_[id + 1])
  std::vector<uint64_t> hashes_;   // per id
  // Per slot: the name's hash in the high 32 bits (so that a probe compares names only when those
  // agree) and id + 1 in the low 32, or 0 when empty. A power of two, under half full.
  std::vector<uint64_t> slots_;
};

}  // namespace quantpath
