// Checkpoint reads shared by the reference entries.
#include "src/specs/reference/reference_io.h"

#include "fmt/format.h"

namespace quantpath::reference {

Result<std::vector<double>> ReadDoubles(const Checkpoint& checkpoint, std::string_view layer,
                                        const std::string& name, TensorInfo* info) {
  Result<TensorView> view = checkpoint.Get(name);
  if (!view.ok()) return view.status().WithContext(layer);
  *info = *view->info;
  Result<std::vector<float>> values = TensorToFloat(*view);
  if (!values.ok()) return values.status().WithContext(layer);
  return std::vector<double>(values->begin(), values->end());
}

Result<std::string> SlotTensorName(SourceLayout layout, Slot slot, std::string_view layer,
                                   const std::string& prefix, std::string_view what) {
  const std::optional<std::string_view> suffix = SourceSuffix(layout, slot);
  if (!suffix) {
    return InvalidInput(
        fmt::format("{}: source layout {} stores no {}", layer, SourceLayoutName(layout), what));
  }
  return prefix + std::string(*suffix);
}

Result<ReferenceLeg> ReadWeight(const Checkpoint& checkpoint, SourceLayout layout,
                                std::string_view layer, const std::string& prefix) {
  const std::optional<std::string_view> suffix = SourceSuffix(layout, Slot::kWeight);
  if (!suffix) {
    return InvalidInput(
        fmt::format("{}: source layout {} has no weight", layer, SourceLayoutName(layout)));
  }
  TensorInfo info;
  ReferenceLeg leg;
  QP_ASSIGN_OR_RETURN(leg.weight,
                      ReadDoubles(checkpoint, layer, prefix + std::string(*suffix), &info));
  if (info.shape.size() != 2) {
    return InvalidInput(fmt::format("{}: tensor {} is not a matrix", layer, info.name));
  }
  leg.rows = info.shape[0];
  leg.cols = info.shape[1];
  return leg;
}

Result<ReferenceLeg> ReadInt8Weight(const Checkpoint& checkpoint, std::string_view layer,
                                    const std::string& name) {
  Result<TensorView> view = checkpoint.Get(name);
  if (!view.ok()) return view.status().WithContext(layer);
  const TensorInfo& info = *view->info;
  if (info.dtype != StDtype::kI8 || info.shape.size() != 2) {
    return InvalidInput(fmt::format("{}: tensor {} is {} {}, expected an I8 matrix", layer, name,
                                    StDtypeName(info.dtype), info.shape.size()));
  }
  ReferenceLeg leg{info.shape[0], info.shape[1], {}};
  leg.weight.resize(static_cast<size_t>(leg.rows * leg.cols));
  for (size_t i = 0; i < leg.weight.size(); ++i)
    leg.weight[i] = static_cast<int8_t>(view->bytes[i]);
  return leg;
}

Status ApplyRowScaleAndOffset(std::string_view layer, const std::string& prefix,
                              const std::vector<double>& scale, const std::vector<double>& offset,
                              ReferenceLeg* leg) {
  if (static_cast<int64_t>(scale.size()) != leg->rows || offset.size() != scale.size()) {
    return InvalidInput(fmt::format("{}: {} has {} rows, but weight_scale {} and weight_offset {}",
                                    layer, prefix, leg->rows, scale.size(), offset.size()));
  }
  for (int64_t r = 0; r < leg->rows; ++r) {
    for (int64_t c = 0; c < leg->cols; ++c) {
      double& v = leg->weight[r * leg->cols + c];
      v = (v - offset[r]) * scale[r];
    }
  }
  return {};
}

}  // namespace quantpath::reference
