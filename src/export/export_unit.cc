// Units every folder shares (export_unit.h).
#include "src/export/export_unit.h"

namespace quantpath::export_internal {

ExportUnit CopyUnit(const TensorView& view) {
  const TensorInfo& info = *view.info;
  ExportUnit unit;
  unit.outputs = {{info.name, info.dtype, info.shape}};
  unit.inputs = {info.name};
  unit.bytes_in = static_cast<int64_t>(view.bytes.size());
  unit.produce = [bytes = view.bytes]() -> Result<std::vector<OutputBytes>> {
    std::vector<OutputBytes> out;
    out.push_back(OutputBytes::View(bytes));
    return out;
  };
  return unit;
}

}  // namespace quantpath::export_internal
