// quantpath specs: spec family rows.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/device.h"
#include "quantpath/ir.h"
#include "quantpath/specs/weight_spec.h"

namespace quantpath {

// One materialize candidate: a family stores the schemes `scheme` accepts on the devices `device`
// accepts, as the key `key` builds (an error for schemes the family cannot hold consistently).
// Candidates are tried by descending priority, then family name.
struct SpecCandidate {
  std::string_view accepts;  // the schemes, in words ("fp8 e4m3 weights with 2-D block scales")
  std::string_view devices;  // the devices, in words ("any", "sm100 and newer")
  bool (*scheme)(const QuantScheme& scheme);
  bool (*device)(const DeviceCaps& device);
  Result<SpecKey> (*key)(const QuantScheme& scheme);
  int priority = 0;
};

class SpecFamilyRow {
 public:
  virtual ~SpecFamilyRow() = default;
  virtual SpecFamily family() const = 0;
  // The family's name, which starts each of its spec_ids ("fp8_block").
  virtual std::string_view name() const = 0;
  // The spec_id grammar in words, for messages and docs ("fp8_block_<bn>_<bk>").
  virtual std::string_view grammar() const = 0;
  // The key `spec_id` names, or nullopt when it is not one of this family's ids.
  virtual std::optional<SpecKey> Parse(std::string_view spec_id) const = 0;
  virtual std::string Format(const SpecKey& key) const = 0;
  // The slots the family stores for `key`, with the static activation's slots when `act` is static.
  virtual std::vector<Slot> Slots(const SpecKey& key, const ActivationQuant& act) const = 0;
  // Bytes of one [rows, cols] weight of `key`, scales included; `dense_bits` is the element width
  // of families whose dtype comes from the request's params dtype.
  virtual int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols,
                           int dense_bits) const = 0;
  // The spec of `key`; kUnsupported when this build cannot load the family yet.
  virtual Result<std::unique_ptr<WeightSpec>> Make(const SpecKey& key, const ActivationQuant& act,
                                                   const LoadFacts& facts) const = 0;
  // rel = max |y − y_ref| / max |y_ref| a kernel of this family may reach against the fp64
  // reference, with X in high precision (kNone) or quantized (any other mode).
  virtual double Tolerance(const SpecKey& key, ActMode mode) const = 0;
  virtual std::vector<SpecCandidate> Candidates() const = 0;
};

// Registers a family row from its own file, before main():
//   const SpecFamilyRegistrar kRegister(std::make_unique<Fp8BlockFamily>());
// A second row with the same name or hash is kept out and reported by RegisteredFamilies().
struct SpecFamilyRegistrar {
  explicit SpecFamilyRegistrar(std::unique_ptr<SpecFamilyRow> row);
};
// The registered rows, by name; an error when two rows collided at registration.
Result<std::vector<const SpecFamilyRow*>> RegisteredFamilies();
// Every registered candidate with its row, by descending priority (rows by name within one
// priority): materialize's search order. Built once and kept until the next registration, so a
// registration after main() (a plugin) must not race a search.
struct RegisteredCandidate {
  const SpecFamilyRow* row;
  SpecCandidate candidate;
};
Result<std::span<const RegisteredCandidate>> RegisteredCandidates();
// The row of `family`, or nullptr.
const SpecFamilyRow* FindFamily(SpecFamily family);
// The row of `key`'s family; an unregistered family is an error naming it.
Result<const SpecFamilyRow*> FamilyRowFor(const SpecKey& key);

// The spec of `key` through its family's row. An unregistered family is an error, never a
// fallback to another family.
Result<std::unique_ptr<WeightSpec>> MakeSpec(const SpecKey& key, const ActivationQuant& act = {},
                                             const LoadFacts& facts = {});
// Bytes of one [rows, cols] weight of `key` (its row's BytesFor); an unregistered family is an
// error.
Result<int64_t> LayoutBytes(const SpecKey& key, int64_t rows, int64_t cols, int dense_bits);
// Bytes `request` takes in the layout of `key` on this rank (its row's BytesFor over the rank's
// slice, plus the bias), with the request checks every spec makes but without a spec: families
// whose loader is not in this build still have sizes. Spec-specific checks (fp8 block alignment)
// are the spec's StorageBytes.
Result<int64_t> LayoutStorageBytes(const SpecKey& key, const AllocationRequest& request);
// The tolerance of kernels of `key` against the fp64 reference (its row's Tolerance); 0 for an
// unregistered family.
double ToleranceFor(const SpecKey& key, ActMode mode);

}  // namespace quantpath
