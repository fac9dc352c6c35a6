// Devices, spec_id parsing and layout sizes: everything here reads kSpecFamilies.
#include <charconv>

#include "fmt/format.h"
#include "quantpath/specs.h"

namespace quantpath {
namespace {

// The devices materialize knows, with their compute capability × 10.
struct KnownDevice {
  std::string_view name;
  int sm;
};
constexpr KnownDevice kDevices[] = {{"cpu", 0}, {"sm80", 80}, {"sm90", 90}, {"sm100", 100}};

std::optional<int64_t> ParsePositive(std::string_view text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

std::string KnownFamilies() {
  std::vector<std::string> ids;
  for (const SpecFamilyInfo& info : kSpecFamilies) {
    ids.push_back(info.parameterized ? std::string(info.id) + "_<n>_<k>" : std::string(info.id));
  }
  return Join(ids, ", ");
}

}  // namespace

Result<DeviceCaps> ParseDevice(std::string_view name) {
  for (const KnownDevice& device : kDevices) {
    if (device.name == name) return DeviceCaps{std::string(device.name), device.sm};
  }
  return InvalidInput(
      fmt::format("unknown device '{}' (expected one of cpu, sm80, sm90, sm100)", name));
}

std::string ActivationQuant::ToString() const {
  switch (mode) {
    case ActMode::kNone:
      return "none";
    case ActMode::kDynamicPerToken:
      return "fp8 dynamic per-token";
    case ActMode::kDynamicPerTensor:
      return "fp8 dynamic per-tensor";
    case ActMode::kDynamicGroup:
      return fmt::format("fp8 dynamic group {}", group_size);
    case ActMode::kStaticPerTensor:
      return "fp8 static per-tensor";
  }
  return "?";
}

std::string SpecKey::ToId() const {
  const SpecFamilyInfo& info = FamilyInfo(family);
  if (!info.parameterized) return std::string(info.id);
  return fmt::format("{}_{}_{}", info.id, block[0], block[1]);
}

Result<SpecKey> ParseSpecId(std::string_view spec_id) {
  for (const SpecFamilyInfo& info : kSpecFamilies) {
    if (!info.parameterized) {
      if (spec_id == info.id) return SpecKey{info.family, {0, 0}};
      continue;
    }
    // "<id>_<n>_<k>"
    if (!spec_id.starts_with(info.id) || spec_id.size() <= info.id.size() ||
        spec_id[info.id.size()] != '_') {
      continue;
    }
    std::vector<std::string> parts = Split(spec_id.substr(info.id.size() + 1), '_');
    if (parts.size() != 2) continue;
    std::optional<int64_t> n = ParsePositive(parts[0]);
    std::optional<int64_t> k = ParsePositive(parts[1]);
    if (n && k) return SpecKey{info.family, {*n, *k}};
  }
  return InvalidInput(fmt::format("unknown spec_id '{}' (known: {})", spec_id, KnownFamilies()));
}

int64_t LayoutBytes(const SpecKey& key, int64_t rows, int64_t cols, int dense_bits) {
  const SpecFamilyInfo& info = FamilyInfo(key.family);
  switch (info.scales) {
    case ScaleLayout::kNone:
      return DenseLayout{info.weight_dtype_from_request ? dense_bits : Info(info.weight_dtype).bits}
          .BytesFor(rows, cols);
    case ScaleLayout::kPerRow:
      return Fp8RowScaledLayout{}.BytesFor(rows, cols);
    case ScaleLayout::kBlock2d:
      return Fp8BlockLayout{key.block[0], key.block[1]}.BytesFor(rows, cols);
  }
  return 0;
}

}  // namespace quantpath
