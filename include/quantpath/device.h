// quantpath devices: what a layer is materialized for.
//
// Goals: one small value naming the target (the CPU or a CUDA compute capability), parsed from the
// names the CLI accepts. Non-goals: CPU instruction sets (kernels.h), choosing specs
// (materialize.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"

namespace quantpath {

struct DeviceCaps {
  std::string name = "cpu";  // "cpu", "sm80", "sm90", "sm100"
  int sm = 0;                // CUDA compute capability × 10 (90 for sm90); 0 for the CPU
  bool is_cpu() const { return sm == 0; }
  bool operator==(const DeviceCaps&) const = default;
};
// Parses "cpu", "sm80", "sm90" or "sm100"; anything else is an error listing those names.
Result<DeviceCaps> ParseDevice(std::string_view name);
// The names ParseDevice accepts, in that order.
std::vector<std::string_view> DeviceNames();

}  // namespace quantpath
