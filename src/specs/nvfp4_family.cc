// NVFP4 weights: nvfp4_block_<g>_linear and nvfp4_block_<g>_128x4 (g = 16). Layout, as `plan`
// counts it (the loader arrives with the NVFP4 spec):
//   W        [N, K] E2M1 codes, two per byte, the even element in the low nibble: N · ceil(K / 2).
//   scales   one E4M3 per g along K. linear: [N, ceil(K / g)], row-major (the CPU and reference
//            layout). 128x4: padded to [ceil(N, 128), ceil(ceil(K / g), 4)] and swizzled the way
//            Blackwell block-scaled GEMMs read them; materialize picks it for sm100 and newer.
//   global   one fp32 second-level scale.
#include "fmt/format.h"
#include "src/specs/spec_id_grammar.h"
#include "src/specs/storage_only_family.h"

namespace quantpath {
namespace {

constexpr SpecFamily kNvfp4{"nvfp4_block"};
constexpr int64_t kDefaultGroup = 16;

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

Result<SpecKey> KeyWith(const QuantScheme& s, ScaleVariant scales) {
  if (s.online) {
    return Unsupported(
        fmt::format("{}: quantizing high-precision weights to NVFP4 at load time is "
                    "not implemented",
                    s.CanonicalName()));
  }
  SpecKey key{kNvfp4};
  key.group = s.weight.group_size.value_or(kDefaultGroup);
  key.scales = scales;
  return key;
}

bool IsNvfp4(const QuantScheme& s) { return s.weight.dtype == QDType::kNVFP4; }

class Nvfp4Family final : public specs_internal::StorageOnlyFamily {
 public:
  SpecFamily family() const override { return kNvfp4; }
  std::string_view name() const override { return "nvfp4_block"; }
  std::string_view grammar() const override { return "nvfp4_block_<g>_linear|128x4"; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto p = specs_internal::IdParameters(spec_id, name());
    if (!p || p->size() != 2) return std::nullopt;
    std::optional<int64_t> group = specs_internal::ParsePositive((*p)[0]);
    if (!group) return std::nullopt;
    SpecKey key{kNvfp4};
    key.group = *group;
    if ((*p)[1] == "linear") {
      key.scales = ScaleVariant::kLinear;
    } else if ((*p)[1] == "128x4") {
      key.scales = ScaleVariant::kTiled128x4;
    } else {
      return std::nullopt;
    }
    return key;
  }
  std::string Format(const SpecKey& key) const override {
    return fmt::format("nvfp4_block_{}_{}", key.group,
                       key.scales == ScaleVariant::kTiled128x4 ? "128x4" : "linear");
  }
  std::vector<Slot> Slots(const SpecKey&, const ActivationQuant& act) const override {
    std::vector<Slot> slots = {Slot::kWeight, Slot::kWeightScale, Slot::kWeightGlobalScale};
    if (act.mode != ActMode::kNone) slots.push_back(Slot::kInputScale);  // the input global scale
    slots.push_back(Slot::kBias);
    return slots;
  }
  int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols, int) const override {
    const int64_t groups = (cols + key.group - 1) / key.group;
    const int64_t scales = key.scales == ScaleVariant::kTiled128x4
                               ? RoundUp(rows, 128) * RoundUp(groups, 4)
                               : rows * groups;
    return rows * ((cols + 1) / 2) + scales + 4;
  }
  std::vector<SpecCandidate> Candidates() const override {
    return {{"NVFP4 weights (E2M1, E4M3 scale per 16, fp32 global)", "sm100 and newer", IsNvfp4,
             [](const DeviceCaps& d) { return d.sm >= 100; },
             [](const QuantScheme& s) { return KeyWith(s, ScaleVariant::kTiled128x4); }, 20},
            {"NVFP4 weights (E2M1, E4M3 scale per 16, fp32 global)", "any", IsNvfp4,
             specs_internal::AnyDevice,
             [](const QuantScheme& s) { return KeyWith(s, ScaleVariant::kLinear); }, 10}};
  }
};

const SpecFamilyRegistrar kRegister(std::make_unique<Nvfp4Family>());

}  // namespace
}  // namespace quantpath
