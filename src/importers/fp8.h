// Fp8Config's reading of an embedded description (fp8.cc), shared with the formats the engines
// build on it (W4AFP8Config subclasses vLLM's Fp8Config).
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string_view>

#include "quantpath/importers.h"

namespace quantpath {

// How a config class built on Fp8Config reads the description.
struct Fp8Reading {
  std::string_view method = "fp8";  // plan.quant_method
  // from_config passes activation_scheme "dynamic" whatever the description says.
  bool dynamic_activations_only = false;
  // weight_block_size when the key is absent (Fp8Config: per-tensor weights).
  std::optional<std::array<int64_t, 2>> default_block;
  std::span<const std::string_view> more_keys;  // keys the variant reads itself (for the notes)
};

// The plan Fp8Config builds from `embedded` for `dialect`: the exclusion group, the fp8 default
// action and kind policies, the attention method and the block-shape checks.
Result<QuantPlan> Fp8DescribedPlan(const Located& embedded, const Dialect& dialect,
                                   const Fp8Reading& reading);

}  // namespace quantpath
