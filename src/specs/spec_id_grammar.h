// The spec_id grammar every family row shares: the family's name, then its parameters in a fixed
// order, '_'-separated ("int4_group_128_zp", "fp8_block_128_128"). docs/spec_ids.md lists them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace quantpath::specs_internal {

// The '_'-separated parameters of `spec_id` after `family` ("fp8_block_128_64" with "fp8_block" →
// {"128", "64"}; "bf16" with "bf16" → {}), or nullopt when `spec_id` is neither `family` nor
// `family_…`, or has an empty parameter.
std::optional<std::vector<std::string_view>> IdParameters(std::string_view spec_id,
                                                          std::string_view family);
// A decimal integer > 0 without sign, leading zeros or other characters; nullopt otherwise.
std::optional<int64_t> ParsePositive(std::string_view text);

}  // namespace quantpath::specs_internal
