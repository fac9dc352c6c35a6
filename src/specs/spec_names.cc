// Names at the edges: devices, slots and the shared spec_id grammar.
#include <charconv>

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/spec_id_grammar.h"

namespace quantpath {
namespace {

// The devices materialize knows, with their compute capability × 10.
struct KnownDevice {
  std::string_view name;
  int sm;
};
constexpr KnownDevice kDevices[] = {{"cpu", 0}, {"sm80", 80}, {"sm90", 90}, {"sm100", 100}};

constexpr std::string_view kSlotNames[] = {
    "weight",      "weight_scale", "weight_zero_point", "g_idx", "weight_global_scale",
    "input_scale", "input_offset", "quant_bias",        "bias",  "pre_quant_scale"};
static_assert(std::size(kSlotNames) == kSlotCount);

}  // namespace

Result<DeviceCaps> ParseDevice(std::string_view name) {
  for (const KnownDevice& device : kDevices) {
    if (device.name == name) return DeviceCaps{std::string(device.name), device.sm};
  }
  return InvalidInput(fmt::format("unknown device '{}' (expected one of {})", name,
                                  fmt::join(DeviceNames(), ", ")));
}

std::vector<std::string_view> DeviceNames() {
  std::vector<std::string_view> names;
  for (const KnownDevice& device : kDevices) names.push_back(device.name);
  return names;
}

std::string_view SlotName(Slot slot) { return kSlotNames[static_cast<size_t>(slot)]; }

namespace specs_internal {

std::optional<std::vector<std::string_view>> IdParameters(std::string_view spec_id,
                                                          std::string_view family) {
  if (!spec_id.starts_with(family)) return std::nullopt;
  std::string_view rest = spec_id.substr(family.size());
  std::vector<std::string_view> parts;
  if (rest.empty()) return parts;
  if (rest[0] != '_') return std::nullopt;
  rest.remove_prefix(1);
  while (true) {
    const size_t cut = rest.find('_');
    const std::string_view part = rest.substr(0, cut);
    if (part.empty()) return std::nullopt;
    parts.push_back(part);
    if (cut == std::string_view::npos) return parts;
    rest.remove_prefix(cut + 1);
  }
}

std::optional<int64_t> ParsePositive(std::string_view text) {
  if (text.empty() || text[0] == '0') return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

}  // namespace specs_internal
}  // namespace quantpath
