// Internal to src/moe: what MoeForward and MoeReference both check before they compute, so that
// the two refuse the same inputs with the same messages (moe.h lists them).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/moe.h"
#include "quantpath/specs.h"

namespace quantpath::moe_internal {

// One expert's projections as [rows, cols]: w13's one or two, then w2.
struct ExpertShape {
  std::vector<std::array<int64_t, 2>> w13;
  std::array<int64_t, 2> w2{};
};

struct MoeDims {
  int64_t hidden = 0;        // H
  int64_t intermediate = 0;  // I
};

// H and I of the first expert, every other expert the same: w13 one [2I, H] or two [I, H], w2
// [H, I]. Errors name the layer, the expert and the shapes.
Result<MoeDims> CheckExperts(std::span<const ExpertShape> experts, std::string_view layer);

// `routing` against `experts`: sizes, ids in range and distinct per token, finite weights.
Status CheckRouting(const MoeRouting& routing, int64_t experts, std::string_view layer);

// Refuses activations quantized dynamically per tensor: their one scale over X would depend on
// which tokens an expert gathers.
Status CheckActivation(const ActivationQuant& act, std::string_view layer);

}  // namespace quantpath::moe_internal
