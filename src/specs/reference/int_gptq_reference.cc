// Reference entries of GPTQ v1 and v2 (AutoGPTQ / GPTQModel / AutoRound's gptq export), decoded
// from the tensors as the producers' own dequantization does:
//   K = rows(qweight) · 32 / b, N = cols(qweight); code of (k, n) = bits [k·b, k·b + b) of column
//   n's words; zero of (group i, n) = bits [n·b, n·b + b) of row i of qzeros, plus one modulo
//   2^b in v1; group of k = g_idx[k] with act-order, else k / g;
//   W[n][k] = (q − z) · scales[group][n].
#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/reference/int_reference.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace {

template <SourceLayout kLayout>
Result<ReferenceLeg> DequantizeGptqLeg(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                       std::string_view layer, const std::string& prefix) {
  QP_ASSIGN_OR_RETURN(const int bits, reference::IntBits(scheme, layer));
  QP_ASSIGN_OR_RETURN(reference::PackedIntTensors t,
                      reference::ReadPackedIntTensors(checkpoint, layer, prefix));
  const reference::Int32Tensor& qweight = t.qweight;
  const reference::Int32Tensor& qzeros = t.qzeros;
  const std::vector<double>& scales = t.scales;
  const TensorInfo& info = t.scales_info;
  const int64_t n = qweight.shape[1];
  const int64_t k = qweight.shape[0] * 32 / bits;
  if (n <= 0 || k <= 0) {
    return InvalidInput(fmt::format("{}: tensor {} has shape [{}, {}]", layer, qweight.name,
                                    qweight.shape[0], qweight.shape[1]));
  }
  const int64_t g = reference::GroupSize(scheme, k);
  const int64_t groups = (k + g - 1) / g;
  if (info.shape != std::vector<int64_t>{groups, n} || qzeros.shape[0] != groups ||
      qzeros.shape[1] * 32 < n * bits) {
    return InvalidInput(fmt::format(
        "{}: {} [{}, {}], qzeros [{}, {}] and scales of {} values do not make a {}-bit [{}, {}] "
        "weight in groups of {}",
        layer, qweight.name, qweight.shape[0], qweight.shape[1], qzeros.shape[0], qzeros.shape[1],
        scales.size(), bits, n, k, g));
  }
  QP_ASSIGN_OR_RETURN(
      std::vector<int32_t> group_of,
      reference::GroupOfColumns(checkpoint, scheme, layer, prefix + ".g_idx", k, g, groups));
  const bool minus_one = kLayout == SourceLayout::kGptqV1;
  const int64_t mask = (int64_t{1} << bits) - 1;
  ReferenceLeg leg{n, k, std::vector<double>(static_cast<size_t>(n * k))};
  for (int64_t col = 0; col < n; ++col) {
    for (int64_t c = 0; c < k; ++c) {
      const int64_t gi = group_of[c];
      const int64_t q = reference::BitField(qweight.values, col, n, c * bits, bits);
      int64_t z = reference::BitField(qzeros.values, gi * qzeros.shape[1], 1, col * bits, bits);
      if (minus_one) z = (z + 1) & mask;
      leg.weight[col * k + c] = static_cast<double>(q - z) * scales[gi * n + col];
    }
  }
  return leg;
}

const ReferenceRegistrar kRegisterV1(SourceLayout::kGptqV1,
                                     &DequantizeGptqLeg<SourceLayout::kGptqV1>);
const ReferenceRegistrar kRegisterV2(SourceLayout::kGptqV2,
                                     &DequantizeGptqLeg<SourceLayout::kGptqV2>);

}  // namespace
}  // namespace quantpath
