// The checks MoeForward and MoeReference share (moe_checks.h).
#include "src/moe/moe_checks.h"

#include <cmath>

#include "fmt/format.h"

namespace quantpath::moe_internal {
namespace {

std::string ShapeText(const std::array<int64_t, 2>& shape) {
  return fmt::format("[{}, {}]", shape[0], shape[1]);
}

std::string ExpertText(const ExpertShape& expert) {
  std::vector<std::string> w13;
  for (const auto& shape : expert.w13) w13.push_back(ShapeText(shape));
  return fmt::format("w13 {}, w2 {}", Join(w13, " + "), ShapeText(expert.w2));
}

// Whether `expert` is gate and up with down: w13 one [2I, H] or two [I, H], w2 [H, I].
bool IsExpert(const ExpertShape& expert) {
  const auto [hidden, intermediate] = expert.w2;
  if (hidden < 1 || intermediate < 1) return false;
  const int64_t legs = static_cast<int64_t>(expert.w13.size());
  if (legs != 1 && legs != 2) return false;
  for (const auto& [rows, cols] : expert.w13) {
    if (cols != hidden || rows != 2 * intermediate / legs) return false;
  }
  return true;
}

}  // namespace

Result<MoeDims> CheckExperts(std::span<const ExpertShape> experts, std::string_view layer) {
  if (experts.empty()) return InvalidInput(fmt::format("{}: no experts", layer));
  const ExpertShape& first = experts.front();
  if (!IsExpert(first)) {
    return InvalidInput(fmt::format(
        "{}, expert 0: {}: expected gate and up (w13: one [2I, H] or two [I, H]) with down (w2: "
        "[H, I])",
        layer, ExpertText(first)));
  }
  for (size_t e = 1; e < experts.size(); ++e) {
    if (experts[e].w13 != first.w13 || experts[e].w2 != first.w2) {
      return InvalidInput(fmt::format("{}, expert {}: {}: expected expert 0's {}", layer, e,
                                      ExpertText(experts[e]), ExpertText(first)));
    }
  }
  return MoeDims{first.w2[0], first.w2[1]};
}

Status CheckRouting(const MoeRouting& routing, int64_t experts, std::string_view layer) {
  if (routing.tokens < 0 || routing.top_k < 1 || routing.top_k > experts) {
    return InvalidInput(fmt::format("{}: routing of {} tokens to top-{}: expected top-1 to top-{}",
                                    layer, routing.tokens, routing.top_k, experts));
  }
  const size_t slots = static_cast<size_t>(routing.tokens * routing.top_k);
  if (routing.ids.size() != slots || routing.weights.size() != slots) {
    return InvalidInput(fmt::format(
        "{}: routing of {} tokens to top-{} has {} ids and {} weights: expected {} of "
        "each",
        layer, routing.tokens, routing.top_k, routing.ids.size(), routing.weights.size(), slots));
  }
  // seen[e]: the last token routed to e, and its slot, to find an id given twice.
  std::vector<std::pair<int64_t, int64_t>> seen(static_cast<size_t>(experts), {-1, 0});
  for (int64_t t = 0; t < routing.tokens; ++t) {
    for (int64_t j = 0; j < routing.top_k; ++j) {
      const int64_t slot = t * routing.top_k + j;
      const int32_t id = routing.ids[slot];
      if (id < 0 || id >= experts) {
        return InvalidInput(
            fmt::format("{}: token {}, slot {}: expert {} is out of range (the layer has experts "
                        "0 to {})",
                        layer, t, j, id, experts - 1));
      }
      if (seen[id].first == t) {
        return InvalidInput(
            fmt::format("{}: token {} is routed to expert {} twice (slots {} and "
                        "{}): a top-k names distinct experts",
                        layer, t, id, seen[id].second, j));
      }
      seen[id] = {t, j};
      if (!std::isfinite(routing.weights[slot])) {
        return InvalidInput(fmt::format("{}: token {}, slot {}: routing weight {} is not finite",
                                        layer, t, j, routing.weights[slot]));
      }
    }
  }
  return Status();
}

Status CheckActivation(const ActivationQuant& act, std::string_view layer) {
  if (act.mode != ActMode::kDynamicPerTensor) return Status();
  return Unsupported(fmt::format(
      "{}: activations quantized dynamically per tensor: their one scale over X would depend on "
      "which tokens share an expert, which the grouped forward does not reproduce",
      layer));
}

}  // namespace quantpath::moe_internal
