// MoeReference and MoeTolerance (moe.h): the grouped forward's oracle, one token and one chosen
// expert at a time, in double from the dequantized weights, without sorting or gathering.
#include <cmath>
#include <vector>

#include "fmt/format.h"
#include "quantpath/moe.h"
#include "quantpath/numeric.h"
#include "src/moe/moe_checks.h"

namespace quantpath {

Result<std::vector<double>> MoeReference(std::span<const MoeExpertReference> experts,
                                         const ExpertActivation& activation,
                                         const ActivationQuant& act, const MoeRouting& routing,
                                         std::span<const double> x, std::string_view layer) {
  std::vector<moe_internal::ExpertShape> shapes;
  for (const MoeExpertReference& expert : experts) {
    shapes.push_back({{{expert.w13.rows, expert.w13.cols}}, {expert.w2.rows, expert.w2.cols}});
  }
  QP_ASSIGN_OR_RETURN(const moe_internal::MoeDims dims, moe_internal::CheckExperts(shapes, layer));
  const int64_t hidden = dims.hidden, inter = dims.intermediate;
  QP_RETURN_IF_ERROR(
      moe_internal::CheckRouting(routing, static_cast<int64_t>(experts.size()), layer));
  QP_RETURN_IF_ERROR(moe_internal::CheckActivation(act, layer));
  if (static_cast<int64_t>(x.size()) != routing.tokens * hidden) {
    return InvalidInput(fmt::format("{}: X has {} values: expected {} tokens of {}", layer,
                                    x.size(), routing.tokens, hidden));
  }
  std::vector<double> y(static_cast<size_t>(routing.tokens * hidden), 0.0);
  std::vector<double> h(static_cast<size_t>(inter));
  for (int64_t t = 0; t < routing.tokens; ++t) {
    const std::span<const double> token = x.subspan(static_cast<size_t>(t * hidden), hidden);
    for (int64_t j = 0; j < routing.top_k; ++j) {
      const int64_t slot = t * routing.top_k + j;
      const MoeExpertReference& expert = experts[routing.ids[slot]];
      const std::vector<double> gate_up = ReferenceForward(expert.w13, act, token, 1);
      for (int64_t i = 0; i < inter; ++i) {
        h[i] = Bf16ToFloat(activation.ApplyBf16(gate_up[i], gate_up[inter + i]));
      }
      const std::vector<double> out = ReferenceForward(expert.w2, act, h, 1);
      for (int64_t c = 0; c < hidden; ++c) {
        y[t * hidden + c] += static_cast<double>(routing.weights[slot]) * out[c];
      }
    }
  }
  return y;
}

double MoeTolerance(const SpecKey& key, ActMode mode) {
  return ToleranceFor(key, mode) + std::ldexp(1.0, -8);
}

}  // namespace quantpath
