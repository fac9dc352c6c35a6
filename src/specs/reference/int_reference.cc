// Reads shared by the integer reference entries.
#include "src/specs/reference/int_reference.h"

#include <cstring>

#include "fmt/format.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath::reference {

Result<Int32Tensor> ReadInt32(const Checkpoint& checkpoint, std::string_view layer,
                              const std::string& name, size_t rank) {
  Result<TensorView> view = checkpoint.Get(name);
  if (!view.ok()) return view.status().WithContext(layer);
  if (view->info->dtype != StDtype::kI32 || view->info->shape.size() != rank) {
    return InvalidInput(fmt::format("{}: tensor {} is {} with {} dimensions, expected I32 with {}",
                                    layer, name, StDtypeName(view->info->dtype),
                                    view->info->shape.size(), rank));
  }
  Int32Tensor t{name, view->info->shape, {}};
  t.values.resize(static_cast<size_t>(view->info->Elements()));
  std::memcpy(t.values.data(), view->bytes.data(), t.values.size() * 4);
  return t;
}

int64_t BitField(const std::vector<int32_t>& words, int64_t offset, int64_t stride, int64_t first,
                 int bits) {
  int64_t value = 0;
  for (int b = 0; b < bits; ++b) {
    const int64_t bit = first + b;
    const uint32_t word = static_cast<uint32_t>(words[offset + (bit / 32) * stride]);
    value |= static_cast<int64_t>((word >> (bit % 32)) & 1u) << b;
  }
  return value;
}

Result<int> IntBits(const QuantScheme& scheme, std::string_view layer) {
  const QDType d = scheme.weight.dtype;
  if (d < QDType::kINT8 || d > QDType::kINT2) {
    return Unsupported(fmt::format("{}: the integer reference reads int2 … int8 weights, not {}",
                                   layer, QDTypeName(d)));
  }
  return Info(d).bits;
}

int64_t GroupSize(const QuantScheme& scheme, int64_t k) {
  if (scheme.weight.granularity == Granularity::kGroup && scheme.weight.group_size &&
      *scheme.weight.group_size > 0) {
    return *scheme.weight.group_size;
  }
  return k;
}

Result<std::vector<int32_t>> GroupOfColumns(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                            std::string_view layer, const std::string& g_idx_name,
                                            int64_t k, int64_t g, int64_t groups) {
  std::vector<int32_t> group_of(static_cast<size_t>(k));
  for (int64_t c = 0; c < k; ++c) group_of[c] = static_cast<int32_t>(c / g);
  if (!scheme.weight.load.act_order) return group_of;
  QP_ASSIGN_OR_RETURN(Int32Tensor g_idx, ReadInt32(checkpoint, layer, g_idx_name, 1));
  if (g_idx.shape[0] != k) {
    return InvalidInput(fmt::format("{}: tensor {} has {} entries, not K = {}", layer, g_idx.name,
                                    g_idx.shape[0], k));
  }
  for (int64_t c = 0; c < k; ++c) {
    if (g_idx.values[c] < 0 || g_idx.values[c] >= groups) {
      return InvalidInput(
          fmt::format("{}: tensor {} names group {}", layer, g_idx.name, g_idx.values[c]));
    }
  }
  return g_idx.values;
}

Result<PackedIntTensors> ReadPackedIntTensors(const Checkpoint& checkpoint, std::string_view layer,
                                              const std::string& prefix) {
  PackedIntTensors t;
  QP_ASSIGN_OR_RETURN(t.qweight, ReadInt32(checkpoint, layer, prefix + ".qweight", 2));
  QP_ASSIGN_OR_RETURN(t.qzeros, ReadInt32(checkpoint, layer, prefix + ".qzeros", 2));
  QP_ASSIGN_OR_RETURN(t.scales, ReadDoubles(checkpoint, layer, prefix + ".scales", &t.scales_info));
  return t;
}

}  // namespace quantpath::reference
