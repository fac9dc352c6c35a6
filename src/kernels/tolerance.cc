// Kernel tolerances against the double-precision reference, per spec family and activation
// handling, in one table.
#include <iterator>

#include "quantpath/kernels.h"

namespace quantpath {
namespace {

struct ToleranceRow {
  SpecFamily family;
  double weight_only;    // X in high precision: only fp32 accumulation order differs
  double act_quantized;  // X rounded to fp8: a value near a rounding tie may round the other
                         // way in fp32 than in double, moving one product by an fp8 step
};

// fp32 accumulation over K terms drifts by about sqrt(K) · 2^-24 relative; 1e-4 leaves room for
// K in the hundreds of thousands. One fp8 step of one element of X changes an output by up to
// 2^-3 · |x_k · w_k|, which is within 2e-2 of the largest output for the K of real layers (256
// and up).
constexpr ToleranceRow kTolerances[] = {
    {SpecFamily::kBf16, 1e-4, 1e-4},
    {SpecFamily::kFp8PerTensor, 1e-4, 2e-2},
    {SpecFamily::kFp8PerChannel, 1e-4, 2e-2},
    {SpecFamily::kFp8Block, 1e-4, 2e-2},
};
static_assert(std::size(kTolerances) == kSpecFamilyCount, "one tolerance row per spec family");

}  // namespace

double ToleranceFor(SpecFamily family, ActMode mode) {
  for (const ToleranceRow& row : kTolerances) {
    if (row.family == family) return mode == ActMode::kNone ? row.weight_only : row.act_quantized;
  }
  return 0;
}

}  // namespace quantpath
