// The relayout registry and the default move: each tensor under the other layout's name
// (relayout.h).
#include "src/export/relayout.h"

#include <algorithm>
#include <deque>
#include <mutex>

#include "src/export/layer_names.h"

namespace quantpath::export_internal {
namespace {

struct Registry {
  std::mutex mu;
  std::deque<RelayoutRow> rows;
};

Registry& Rows() {
  static Registry* registry = new Registry();  // never destroyed: rows register at start-up
  return *registry;
}

// The same bytes under layout `to`'s names.
Result<ExportUnit> RenamedUnit(const Checkpoint& checkpoint, const QuantScheme& scheme,
                               SourceLayout to, const Projection& p) {
  ExportUnit unit;
  unit.layer = p.layer;
  unit.inputs = LayoutTensors(checkpoint, scheme.weight.load.layout, p.prefix);
  std::vector<std::span<const std::byte>> views;
  for (const std::string& name : unit.inputs) {
    QP_ASSIGN_OR_RETURN(TensorView view, checkpoint.Get(name));
    QP_ASSIGN_OR_RETURN(std::string renamed,
                        RelaidName(name, p.prefix, scheme.weight.load.layout, to, p.layer));
    unit.outputs.push_back({renamed, view.info->dtype, view.info->shape});
    unit.bytes_in += static_cast<int64_t>(view.bytes.size());
    views.push_back(view.bytes);
  }
  unit.produce = [views]() -> Result<std::vector<OutputBytes>> {
    std::vector<OutputBytes> out;
    for (std::span<const std::byte> v : views) out.push_back(OutputBytes::View(v));
    return out;
  };
  return unit;
}

}  // namespace

const RelayoutRow* FindRelayout(SourceLayout from, SourceLayout to) {
  Registry& r = Rows();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const RelayoutRow& row : r.rows) {
    if (row.applies(from, to)) return &row;
  }
  return nullptr;
}

void AddRelayoutNote(const RelayoutRow& row, const QuantScheme& scheme,
                     std::vector<std::string>* notes) {
  const std::string note = row.note(scheme);
  if (!note.empty() && std::find(notes->begin(), notes->end(), note) == notes->end()) {
    notes->push_back(note);
  }
}

RelayoutRegistrar::RelayoutRegistrar(const RelayoutRow& row) {
  Registry& r = Rows();
  std::lock_guard<std::mutex> lock(r.mu);
  r.rows.push_back(row);
}

Result<ExportUnit> RelaidProjection(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                    SourceLayout to, const Projection& p, bool lossy,
                                    std::vector<std::string>* notes) {
  const RelayoutRow* row = FindRelayout(scheme.weight.load.layout, to);
  if (row == nullptr) return RenamedUnit(checkpoint, scheme, to, p);
  AddRelayoutNote(*row, scheme, notes);
  ExportUnit unit;
  unit.layer = p.layer;
  unit.inputs = LayoutTensors(checkpoint, scheme.weight.load.layout, p.prefix);
  std::vector<TensorHeader> stored;
  for (const std::string& name : unit.inputs) {
    QP_ASSIGN_OR_RETURN(TensorView view, checkpoint.Get(name));
    unit.bytes_in += static_cast<int64_t>(view.bytes.size());
    stored.push_back({name, view.info->dtype, view.info->shape});
  }
  QP_ASSIGN_OR_RETURN(unit.outputs, row->headers(stored, scheme, to, p));
  unit.produce = [&checkpoint, row, scheme, to, p, lossy]() {
    return row->produce(checkpoint, scheme, to, p, lossy);
  };
  return unit;
}

}  // namespace quantpath::export_internal
