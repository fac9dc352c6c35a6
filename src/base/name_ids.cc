// NameIds (name_ids.h): linear probing over a power-of-two table kept under half full.
#include "src/base/name_ids.h"

#include <algorithm>
#include <bit>

namespace quantpath {

void NameIds::Reserve(size_t names, size_t bytes) {
  chars_.reserve(bytes);
  starts_.reserve(names + 1);
  hashes_.reserve(names);
  const size_t wanted = std::bit_ceil(std::max<size_t>(16, 2 * names + 1));
  if (wanted <= slots_.size()) return;
  slots_.assign(wanted, 0);
  for (uint32_t id = 0; id < hashes_.size(); ++id) {
    slots_[Probe(Name(id), hashes_[id])] = Slot(hashes_[id], id);
  }
}

void NameIds::Grow() { Reserve(std::max<size_t>(8, hashes_.size() * 2), chars_.size() * 2); }

size_t NameIds::Probe(std::string_view name, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
    const uint64_t held = slots_[slot];
    if (held == 0) return slot;
    if ((held >> 32) == (hash >> 32) && Name(IdOf(held)) == name) return slot;
  }
}

std::pair<uint32_t, bool> NameIds::Insert(std::string_view name, uint64_t hash) {
  if (2 * (hashes_.size() + 1) >= slots_.size()) Grow();
  const size_t slot = Probe(name, hash);
  if (slots_[slot] != 0) return {IdOf(slots_[slot]), false};
  const auto id = static_cast<uint32_t>(hashes_.size());
  chars_.append(name);
  starts_.push_back(chars_.size());
  hashes_.push_back(hash);
  slots_[slot] = Slot(hash, id);
  return {id, true};
}

std::optional<uint32_t> NameIds::Find(std::string_view name) const {
  return Find(name, HashOf(name));
}

std::optional<uint32_t> NameIds::Find(std::string_view name, uint64_t hash) const {
  if (slots_.empty()) return std::nullopt;
  const uint64_t held = slots_[Probe(name, hash)];
  if (held == 0) return std::nullopt;
  return IdOf(held);
}

}  // namespace quantpath
