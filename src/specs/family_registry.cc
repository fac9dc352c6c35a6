// The spec family registry: rows register themselves from their own files before main(), and
// every question about a SpecKey (its id, bytes, spec, tolerance) is answered by its row.
#include <algorithm>
#include <map>
#include <mutex>

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/spec_common.h"

namespace quantpath {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<SpecFamilyRow>, std::less<>> by_name;
  std::vector<std::string> collisions;
  std::vector<RegisteredCandidate> candidates;  // by priority; empty until first asked for
};

Registry& Families() {
  static Registry* registry = new Registry();  // never destroyed: rows are used at exit
  return *registry;
}

std::string KnownGrammars() {
  std::vector<std::string> grammars;
  for (const auto& [name, row] : Families().by_name) grammars.emplace_back(row->grammar());
  return Join(grammars, ", ");
}

}  // namespace

SpecFamilyRegistrar::SpecFamilyRegistrar(std::unique_ptr<SpecFamilyRow> row) {
  Registry& r = Families();
  std::lock_guard<std::mutex> lock(r.mu);
  const std::string name(row->name());
  if (row->family() != SpecFamily(name)) {
    r.collisions.push_back(fmt::format("family row {} reports another family's identity", name));
    return;
  }
  for (const auto& [other, existing] : r.by_name) {
    if (other == name || existing->family() == row->family()) {
      r.collisions.push_back(fmt::format("spec families {} and {} share an identity", other, name));
      return;
    }
  }
  r.by_name.emplace(name, std::move(row));
  r.candidates.clear();
}

Result<std::vector<const SpecFamilyRow*>> RegisteredFamilies() {
  Registry& r = Families();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.collisions.empty()) return InternalError(Join(r.collisions, "; "));
  std::vector<const SpecFamilyRow*> rows;
  for (const auto& [name, row] : r.by_name) rows.push_back(row.get());
  return rows;
}

Result<std::span<const RegisteredCandidate>> RegisteredCandidates() {
  Registry& r = Families();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.collisions.empty()) return InternalError(Join(r.collisions, "; "));
  if (r.candidates.empty()) {
    for (const auto& [name, row] : r.by_name) {
      for (const SpecCandidate& c : row->Candidates()) r.candidates.push_back({row.get(), c});
    }
    std::stable_sort(r.candidates.begin(), r.candidates.end(),
                     [](const RegisteredCandidate& a, const RegisteredCandidate& b) {
                       return a.candidate.priority > b.candidate.priority;
                     });
  }
  return std::span<const RegisteredCandidate>(r.candidates);
}

const SpecFamilyRow* FindFamily(SpecFamily family) {
  Registry& r = Families();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& [name, row] : r.by_name) {
    if (row->family() == family) return row.get();
  }
  return nullptr;
}

Result<const SpecFamilyRow*> FamilyRowFor(const SpecKey& key) {
  if (const SpecFamilyRow* row = FindFamily(key.family)) return row;
  std::lock_guard<std::mutex> lock(Families().mu);
  return InvalidInput(
      fmt::format("spec family #{:016x} is not registered in this build (known: {})",
                  key.family.id(), KnownGrammars()));
}

std::string SpecKey::ToId() const {
  const SpecFamilyRow* row = FindFamily(family);
  return row ? row->Format(*this) : "?";
}

size_t SpecKeyHash::operator()(const SpecKey& key) const {
  uint64_t h = key.family.id();
  auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(static_cast<uint64_t>(key.bits));
  mix(static_cast<uint64_t>(key.group));
  mix(static_cast<uint64_t>(key.block[0]));
  mix(static_cast<uint64_t>(key.block[1]));
  mix((static_cast<uint64_t>(key.zero_point) << 0) | (static_cast<uint64_t>(key.scales) << 1) |
      (static_cast<uint64_t>(key.act_order) << 5));
  return static_cast<size_t>(h);
}

Result<SpecKey> ParseSpecId(std::string_view spec_id) {
  Registry& r = Families();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& [name, row] : r.by_name) {
    if (std::optional<SpecKey> key = row->Parse(spec_id)) return *key;
  }
  return InvalidInput(fmt::format("unknown spec_id '{}' (known: {})", spec_id, KnownGrammars()));
}

Result<std::unique_ptr<WeightSpec>> MakeSpec(const SpecKey& key, const ActivationQuant& act,
                                             const LoadFacts& facts) {
  QP_ASSIGN_OR_RETURN(const SpecFamilyRow* row, FamilyRowFor(key));
  return row->Make(key, act, facts);
}

Result<int64_t> LayoutBytes(const SpecKey& key, int64_t rows, int64_t cols, int dense_bits) {
  QP_ASSIGN_OR_RETURN(const SpecFamilyRow* row, FamilyRowFor(key));
  return row->BytesFor(key, rows, cols, dense_bits);
}

Result<int64_t> LayoutStorageBytes(const SpecKey& key, const AllocationRequest& request) {
  QP_ASSIGN_OR_RETURN(const SpecFamilyRow* row, FamilyRowFor(key));
  QP_ASSIGN_OR_RETURN(specs_internal::ShardGeometry g, specs_internal::ComputeGeometry(request));
  return row->BytesFor(key, g.rows, g.cols, Info(request.params_dtype).bits) +
         specs_internal::BiasBytes(request, g);
}

double ToleranceFor(const SpecKey& key, ActMode mode) {
  const SpecFamilyRow* row = FindFamily(key.family);
  return row ? row->Tolerance(key, mode) : 0.0;
}

}  // namespace quantpath
