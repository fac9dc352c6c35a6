// Units every folder shares (export_unit.h).
#include "src/export/export_unit.h"

#include <map>

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

Result<std::vector<ExportUnit>> UnitsInOrder(const Checkpoint& checkpoint,
                                             std::vector<ExportUnit> layers,
                                             const std::function<bool(const std::string&)>& drop,
                                             std::vector<std::string>* dropped) {
  std::map<std::string, size_t, std::less<>> unit_of;
  for (size_t i = 0; i < layers.size(); ++i) {
    for (const std::string& input : layers[i].inputs) unit_of[input] = i;
  }
  std::vector<ExportUnit> units;
  std::vector<bool> placed(layers.size(), false);
  for (const std::string& name : checkpoint.TensorNames()) {
    if (auto it = unit_of.find(name); it != unit_of.end()) {
      if (!placed[it->second]) units.push_back(std::move(layers[it->second]));
      placed[it->second] = true;
      continue;
    }
    if (drop && drop(name)) {
      dropped->push_back(name);
      continue;
    }
    QP_ASSIGN_OR_RETURN(TensorView view, checkpoint.Get(name));
    units.push_back(CopyUnit(view));
  }
  return units;
}

}  // namespace quantpath::export_internal
