// Reference entry of AutoAWQ's gemm layout, decoded as AutoAWQ's own unpacking does: unpack the
// eight nibbles of each word in bit order, then undo the pack order [0, 2, 4, 6, 1, 3, 5, 7]:
//   K = rows(qweight), N = 8 · cols(qweight); packed position i of a word holds column
//   8j + order[i]; W[n][k] = (q − z) · scales[k / g][n], zeros stored as they are.
#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/reference/int_reference.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace {

constexpr int kPackOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

// [rows, 8 · cols] codes of an AWQ-packed int32 matrix.
std::vector<int64_t> Unpack(const reference::Int32Tensor& t) {
  const int64_t rows = t.shape[0];
  const int64_t cols = t.shape[1];
  std::vector<int64_t> out(static_cast<size_t>(rows * cols * 8));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) {
      for (int i = 0; i < 8; ++i) {
        out[r * cols * 8 + j * 8 + kPackOrder[i]] =
            reference::BitField(t.values, r * cols + j, 1, 4 * i, 4);
      }
    }
  }
  return out;
}

Result<ReferenceLeg> DequantizeAwqLeg(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                      std::string_view layer, const std::string& prefix) {
  QP_ASSIGN_OR_RETURN(const int bits, reference::IntBits(scheme, layer));
  if (bits != 4) {
    return Unsupported(fmt::format("{}: AWQ gemm stores 4-bit weights, not {}-bit", layer, bits));
  }
  QP_ASSIGN_OR_RETURN(reference::PackedIntTensors t,
                      reference::ReadPackedIntTensors(checkpoint, layer, prefix));
  const reference::Int32Tensor& qweight = t.qweight;
  const reference::Int32Tensor& qzeros = t.qzeros;
  const std::vector<double>& scales = t.scales;
  const TensorInfo& info = t.scales_info;
  const int64_t k = qweight.shape[0];
  const int64_t n = qweight.shape[1] * 8;
  if (n <= 0 || k <= 0) {
    return InvalidInput(fmt::format("{}: tensor {} has shape [{}, {}]", layer, qweight.name,
                                    qweight.shape[0], qweight.shape[1]));
  }
  const int64_t g = reference::GroupSize(scheme, k);
  const int64_t groups = (k + g - 1) / g;
  if (info.shape != std::vector<int64_t>{groups, n} || qzeros.shape[0] != groups ||
      qzeros.shape[1] * 8 != n) {
    return InvalidInput(fmt::format(
        "{}: {} [{}, {}], qzeros [{}, {}] and scales of {} values do not make a 4-bit [{}, {}] "
        "weight in groups of {}",
        layer, qweight.name, qweight.shape[0], qweight.shape[1], qzeros.shape[0], qzeros.shape[1],
        scales.size(), n, k, g));
  }
  const std::vector<int64_t> q = Unpack(qweight);
  const std::vector<int64_t> z = Unpack(qzeros);
  ReferenceLeg leg{n, k, std::vector<double>(static_cast<size_t>(n * k))};
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t col = 0; col < n; ++col) {
      const int64_t gi = c / g;
      leg.weight[col * k + c] =
          static_cast<double>(q[c * n + col] - z[gi * n + col]) * scales[gi * n + col];
    }
  }
  return leg;
}

const ReferenceRegistrar kRegisterGemm(SourceLayout::kAwqGemm, &DequantizeAwqLeg);

}  // namespace
}  // namespace quantpath
