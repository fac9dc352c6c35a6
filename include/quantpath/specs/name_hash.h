// quantpath specs: names as values.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/device.h"
#include "quantpath/ir.h"

namespace quantpath {

// A registered row named by its name's 64-bit FNV-1a hash: a value that any file can spell
// (`constexpr SpecFamily kFp8Block{"fp8_block"}`) without a central enum. Each registry maps it to
// its row and rejects two names with one hash; `Tag` keeps one registry's ids from another's.
template <typename Tag>
class NameHash {
 public:
  constexpr NameHash() = default;
  explicit constexpr NameHash(std::string_view name) : id_(Fnv1a(name)) {}
  constexpr uint64_t id() const { return id_; }
  constexpr bool valid() const { return id_ != 0; }
  constexpr bool operator==(const NameHash&) const = default;

 private:
  static constexpr uint64_t Fnv1a(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
    return h;
  }
  uint64_t id_ = 0;
};

// A spec family (its row: SpecFamilyRow, below).
using SpecFamily = NameHash<struct SpecFamilyTag>;
// An activation kind (its row: ActivationKindRow, activation_kinds.h).
using ActivationKind = NameHash<struct ActivationKindTag>;

}  // namespace quantpath
