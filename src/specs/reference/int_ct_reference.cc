// Reference entry of compressed-tensors pack-quantized, decoded as the library's
// unpack_from_int32 and dequantize do: signed values q = unsigned − 2^(b-1) from a dense bit
// stream per row (zero points: per column of weight_zero_point, along N), then
//   W[n][k] = (q[n][k] − zp[n][group]) · scale[n][group], zp = 0 when symmetric,
// with group = weight_g_idx[k] under actorder "group", k / g otherwise (one group for channel,
// the single scale for tensor).
#include <cstring>

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/reference/int_reference.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace {

Result<std::array<int64_t, 2>> WeightShape(const Checkpoint& checkpoint, std::string_view layer,
                                           const std::string& name) {
  Result<TensorView> view = checkpoint.Get(name);
  if (!view.ok()) return view.status().WithContext(layer);
  if (view->info->dtype != StDtype::kI64 || view->info->Elements() != 2) {
    return InvalidInput(fmt::format("{}: tensor {} is not two I64 values", layer, name));
  }
  std::array<int64_t, 2> shape;
  std::memcpy(shape.data(), view->bytes.data(), 16);
  if (shape[0] <= 0 || shape[1] <= 0) {
    return InvalidInput(
        fmt::format("{}: tensor {} holds [{}, {}]", layer, name, shape[0], shape[1]));
  }
  return shape;
}

Result<ReferenceLeg> DequantizeCtLeg(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                     std::string_view layer, const std::string& prefix) {
  QP_ASSIGN_OR_RETURN(const int bits, reference::IntBits(scheme, layer));
  QP_ASSIGN_OR_RETURN(const auto shape, WeightShape(checkpoint, layer, prefix + ".weight_shape"));
  const auto [n, k] = shape;
  QP_ASSIGN_OR_RETURN(reference::Int32Tensor packed,
                      reference::ReadInt32(checkpoint, layer, prefix + ".weight_packed", 2));
  TensorInfo info;
  QP_ASSIGN_OR_RETURN(std::vector<double> scales,
                      reference::ReadDoubles(checkpoint, layer, prefix + ".weight_scale", &info));
  const bool tensor = scheme.weight.granularity == Granularity::kPerTensor;
  const int64_t row_words = packed.shape[1];
  const int64_t g = reference::GroupSize(scheme, k);
  auto mismatch = [&] {
    return InvalidInput(fmt::format(
        "{}: {} [{}, {}] and {} scales do not make a {}-bit [{}, {}] weight in groups of {}", layer,
        packed.name, packed.shape[0], row_words, scales.size(), bits, n, k, g));
  };
  // The packed words bound N and K (weight_shape is only two numbers), so the sizes below
  // cannot overflow once they hold.
  if (packed.shape[0] != n || k > row_words * 32 / bits) return mismatch();
  const int64_t groups = k / g + (k % g != 0 ? 1 : 0);  // g comes from the config: no k + g
  if (static_cast<int64_t>(scales.size()) != (tensor ? 1 : n * groups)) return mismatch();
  const int64_t offset = int64_t{1} << (bits - 1);
  std::vector<int64_t> zp(static_cast<size_t>(n * groups), 0);
  if (!scheme.weight.symmetric) {
    QP_ASSIGN_OR_RETURN(reference::Int32Tensor z,
                        reference::ReadInt32(checkpoint, layer, prefix + ".weight_zero_point", 2));
    if (z.shape[1] != groups || z.shape[0] * 32 < n * bits) {
      return InvalidInput(fmt::format("{}: tensor {} is [{}, {}], not {} groups of {} rows", layer,
                                      z.name, z.shape[0], z.shape[1], groups, n));
    }
    for (int64_t gi = 0; gi < groups; ++gi) {
      for (int64_t row = 0; row < n; ++row) {
        zp[row * groups + gi] =
            reference::BitField(z.values, gi, groups, row * bits, bits) - offset;
      }
    }
  }
  QP_ASSIGN_OR_RETURN(
      std::vector<int32_t> group_of,
      reference::GroupOfColumns(checkpoint, scheme, layer, prefix + ".weight_g_idx", k, g, groups));
  ReferenceLeg leg{n, k, std::vector<double>(static_cast<size_t>(n * k))};
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t c = 0; c < k; ++c) {
      const int64_t gi = group_of[c];
      const int64_t q =
          reference::BitField(packed.values, row * row_words, 1, c * bits, bits) - offset;
      const double s = tensor ? scales[0] : scales[row * groups + gi];
      leg.weight[row * k + c] = static_cast<double>(q - zp[row * groups + gi]) * s;
    }
  }
  return leg;
}

const ReferenceRegistrar kRegister(SourceLayout::kCtPackQuantized, &DequantizeCtLeg);

}  // namespace
}  // namespace quantpath
