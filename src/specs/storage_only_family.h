// A family row whose layout is defined (id grammar, bytes, materialize candidates) but whose
// loader is not in this build yet: `plan` reports its spec_id and bytes, and Make says that
// loading is not implemented, so nothing falls back to another layout.
#pragma once

#include <memory>
#include <string>

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/spec_common.h"

namespace quantpath::specs_internal {

class StorageOnlyFamily : public SpecFamilyRow {
 public:
  Result<std::unique_ptr<WeightSpec>> Make(const SpecKey& key, const ActivationQuant&,
                                           const LoadFacts&) const final {
    return Unsupported(
        fmt::format("spec {}: loading this layout is not implemented in this build", Format(key)));
  }
  // No kernel of the family exists, so none can be held to a tolerance.
  double Tolerance(const SpecKey&, ActMode) const final { return 0.0; }
};

}  // namespace quantpath::specs_internal
