// quantpath specs: spec identity.
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
#include "quantpath/specs/activation.h"

namespace quantpath {

// Where a family's scales sit when it has layout variants (NVFP4 on the CPU vs Blackwell).
enum class ScaleVariant : uint8_t {
  kNone,
  kLinear,      // scales [N, K / group], row-major
  kTiled128x4,  // scales padded to [ceil(N, 128), ceil(K / group, 4)] and swizzled
};

// The physical identity of a weight layout: the family and its parameters, as a hashable value.
// Fields a family does not use stay zero / false. The expert count and the activation mode are
// not part of it (the request and the dispatcher key carry those).
struct SpecKey {
  SpecFamily family;
  int bits = 0;                    // element bits, for families with several (int2 … int8)
  int64_t group = 0;               // elements per scale along K (groups, micro-blocks)
  std::array<int64_t, 2> block{};  // 2-D scale blocks [rows, cols] (fp8 block)
  bool zero_point = false;         // asymmetric: stored zero points
  ScaleVariant scales = ScaleVariant::kNone;
  bool act_order = false;  // kernels permute X by g_idx at run time
  bool operator==(const SpecKey&) const = default;
  // The spec_id, written by the family's row ("fp8_block_128_128"); "?" for an unregistered family.
  std::string ToId() const;
};
struct SpecKeyHash {
  size_t operator()(const SpecKey& key) const;
};

// Parses a spec_id with every registered family's grammar. An unknown family or malformed
// parameters are an error listing the registered grammars.
Result<SpecKey> ParseSpecId(std::string_view spec_id);

}  // namespace quantpath
