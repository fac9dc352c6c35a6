// AutoAWQ's gemm layout (also AutoRound's auto_awq export), per leg `<prefix>`, for a [N, K]
// weight with 4-bit codes and G = ceil(K / g) groups:
//   qweight  I32 [K, N / 8]: word (k, j) holds columns 8j … 8j + 7; nibble i (bits 4i … 4i + 3)
//            holds column 8j + [0, 2, 4, 6, 1, 3, 5, 7][i], so column 8j + c sits in nibble
//            [0, 4, 1, 5, 2, 6, 3, 7][c].
//   qzeros   I32 [G, N / 8], the zero points in the same order, stored as they are.
//   scales   [G, N] (F16 as written).
//   W[n][k] = (q[k][n] − z[k / g][n]) · s[k / g][n].
// The gemv layout (qweight [N, K / 8], scales padded to multiples of 8 groups) is refused when
// the spec is made (int_families.cc): no producer in use writes it.
#include "fmt/format.h"
#include "src/specs/int_source.h"

namespace quantpath::specs_internal {
namespace {

constexpr int kNibbleOfColumn[8] = {0, 4, 1, 5, 2, 6, 3, 7};

uint8_t Nibble(uint32_t word, int64_t column) {
  return static_cast<uint8_t>((word >> (4 * kNibbleOfColumn[column % 8])) & 0xF);
}

Result<IntLegCodes> DecodeAwqGemm(const Checkpoint& checkpoint, const IntSourceRequest& r) {
  const int64_t n = r.rows;
  const int64_t k = r.cols;
  const int64_t groups = r.groups();
  if (r.bits != 4 || n % 8 != 0) {
    return InvalidInput(fmt::format(
        "{}: AWQ gemm packs eight 4-bit codes per int32 along N; {}-bit codes with N = {} "
        "do not fit it",
        r.layer, r.bits, n));
  }
  IntLegCodes leg;
  if (r.weights) {
    std::string name;
    QP_ASSIGN_OR_RETURN(std::vector<uint32_t> qweight,
                        ReadInt32Words(checkpoint, r, Slot::kWeight, &name));
    leg.codes.resize(static_cast<size_t>(n * k));
    for (int64_t c = 0; c < k; ++c) {
      for (int64_t col = 0; col < n; ++col) {
        leg.codes[col * k + c] = Nibble(qweight[c * (n / 8) + col / 8], col);
      }
    }
  }
  QP_ASSIGN_OR_RETURN(std::vector<uint32_t> qzeros,
                      ReadInt32Words(checkpoint, r, Slot::kWeightZero, &leg.zeros_tensor));
  leg.zeros.resize(static_cast<size_t>(n * groups));
  for (int64_t i = 0; i < groups; ++i) {
    for (int64_t col = 0; col < n; ++col) {
      leg.zeros[col * groups + i] = Nibble(qzeros[i * (n / 8) + col / 8], col);
    }
  }
  if (r.weights) {
    QP_ASSIGN_OR_RETURN(std::vector<float> scales,
                        ReadIntScales(checkpoint, r, Slot::kWeightScale, &leg));
    leg.scales.resize(scales.size());
    for (int64_t i = 0; i < groups; ++i) {
      for (int64_t col = 0; col < n; ++col) leg.scales[col * groups + i] = scales[i * n + col];
    }
  }
  return leg;
}

const IntSourceRegistrar kRegisterGemm(SourceLayout::kAwqGemm, &DecodeAwqGemm);

}  // namespace
}  // namespace quantpath::specs_internal
