// The activation kind registry: rows register themselves from their own files before main(), and
// every question about how X is quantized (which kind a scheme input is, its name, its roundings)
// is answered by a row.
#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "fmt/format.h"
#include "quantpath/activation_kinds.h"

namespace quantpath {
namespace {

struct Entry {
  ActivationKind id;
  std::unique_ptr<ActivationKindRow> row;
};

struct Registry {
  std::mutex mu;
  std::vector<Entry> rows;  // by descending priority, then name
  std::vector<std::string> collisions;
};

Registry& Kinds() {
  static Registry* registry = new Registry();  // never destroyed: rows are used at exit
  return *registry;
}

}  // namespace

bool ActivationKindRow::Describes(const ActivationQuant&) const { return false; }

std::string ActivationKindRow::Text(const ActivationQuant& act) const {
  return ActivationFieldsText(act);
}

std::optional<E4m3Runs> ActivationKindRow::RunsOf(const ActivationQuant&, int64_t,
                                                  const LinearParams&) const {
  return std::nullopt;
}

std::vector<Slot> ActivationKindRow::StaticSlots(const ActivationQuant&) const { return {}; }

Status ActivationKindRow::ReadReferenceInputs(const Checkpoint&, const QuantScheme&,
                                              std::string_view, const std::vector<std::string>&,
                                              ReferenceLayer*) const {
  return {};
}

Status ActivationKindRow::ShareExpertInputs(const Checkpoint&, const QuantScheme&, std::string_view,
                                            const std::vector<std::string>&,
                                            ReferenceLayer*) const {
  return {};
}

ActivationKindRegistrar::ActivationKindRegistrar(std::unique_ptr<ActivationKindRow> row) {
  Registry& r = Kinds();
  std::lock_guard<std::mutex> lock(r.mu);
  const ActivationKind id(row->name());
  for (const Entry& existing : r.rows) {
    if (existing.row->name() == row->name() || existing.id == id) {
      r.collisions.push_back(fmt::format("activation kinds {} and {} share an identity",
                                         existing.row->name(), row->name()));
      return;
    }
  }
  const auto before = [&row](const Entry& other) {
    return other.row->priority() > row->priority() ||
           (other.row->priority() == row->priority() && other.row->name() < row->name());
  };
  const auto at = std::find_if_not(r.rows.begin(), r.rows.end(), before);
  r.rows.insert(at, Entry{id, std::move(row)});
}

Result<std::vector<const ActivationKindRow*>> RegisteredActivationKinds() {
  Registry& r = Kinds();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.collisions.empty()) return InternalError(Join(r.collisions, "; "));
  std::vector<const ActivationKindRow*> rows;
  for (const Entry& e : r.rows) rows.push_back(e.row.get());
  return rows;
}

const ActivationKindRow* ActivationKindClaiming(const TensorQuant& in) {
  Registry& r = Kinds();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const Entry& e : r.rows) {
    if (e.row->Claims(in)) return e.row.get();
  }
  return nullptr;
}

const ActivationKindRow* FindActivationKind(const ActivationQuant& act) {
  Registry& r = Kinds();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const Entry& e : r.rows) {
    if (act.kind.valid() ? e.id == act.kind : e.row->Describes(act)) return e.row.get();
  }
  return nullptr;
}

const ActivationKindRow& ActivationKindOf(const ActivationQuant& act) {
  const ActivationKindRow* row = FindActivationKind(act);
  if (row == nullptr) std::abort();  // an id whose row's file is not linked in
  return *row;
}

std::string ActivationQuant::ToString() const {
  if (const ActivationKindRow* row = FindActivationKind(*this)) return row->Text(*this);
  return fmt::format("activation kind #{:016x} (not registered in this build)", kind.id());
}

std::string ActivationFieldsText(const ActivationQuant& act) {
  std::string mode;
  switch (act.mode) {
    case ActMode::kNone:
      return "none";
    case ActMode::kDynamicPerToken:
      mode = "dynamic per-token";
      break;
    case ActMode::kDynamicPerTensor:
      mode = "dynamic per-tensor";
      break;
    case ActMode::kDynamicGroup:
      mode = fmt::format("dynamic group {}", act.group_size);
      break;
    case ActMode::kStaticPerTensor:
      mode = "static per-tensor";
      break;
  }
  return fmt::format("{} {}{}", Info(act.dtype).name_short, mode, act.symmetric ? "" : " asym");
}

ActivationQuant ActivationFields(const TensorQuant& in, ActMode mode) {
  ActivationQuant act;
  act.mode = mode;
  act.dtype = in.dtype;
  act.symmetric = in.symmetric;
  if (mode == ActMode::kDynamicGroup) act.group_size = XGroupOf(in).value_or(0);
  return act;
}

std::optional<int64_t> XGroupOf(const TensorQuant& in) {
  switch (in.granularity) {
    case Granularity::kGroup:
    case Granularity::kTensorGroup:
      if (in.group_size && *in.group_size > 0) return *in.group_size;
      return std::nullopt;
    case Granularity::kBlock:
      // A 1 × k block of X is a group of k columns of one row.
      if (in.block_shape && (*in.block_shape)[0] == 1 && (*in.block_shape)[1] > 0) {
        return (*in.block_shape)[1];
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace quantpath
