// OCP microscaling weights: mxfp4_block_<g> and mxfp8_block_<g> (g = 32). Layout, as `plan`
// counts it (the loaders arrive with the MX specs):
//   W        [N, K] E2M1 codes two per byte (the even element in the low nibble), or E4M3 bytes.
//   scales   [N, ceil(K / g)] E8M0 (a power of two, bias 127; 0xFF is NaN), one byte each.
#include "fmt/format.h"
#include "src/specs/spec_id_grammar.h"
#include "src/specs/storage_only_family.h"

namespace quantpath {
namespace {

constexpr int64_t kDefaultGroup = 32;

template <QDType kDtype>
class MxFamily final : public specs_internal::StorageOnlyFamily {
 public:
  explicit MxFamily(std::string_view name) : name_(name), family_(name) {}
  SpecFamily family() const override { return family_; }
  std::string_view name() const override { return name_; }
  std::string_view grammar() const override { return grammar_; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto p = specs_internal::IdParameters(spec_id, name_);
    if (!p || p->size() != 1) return std::nullopt;
    std::optional<int64_t> group = specs_internal::ParsePositive((*p)[0]);
    if (!group) return std::nullopt;
    SpecKey key{family_};
    key.group = *group;
    return key;
  }
  std::string Format(const SpecKey& key) const override {
    return fmt::format("{}_{}", name_, key.group);
  }
  std::vector<Slot> Slots(const SpecKey&, const ActivationQuant&) const override {
    return {Slot::kWeight, Slot::kWeightScale, Slot::kBias};
  }
  int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols, int) const override {
    const int64_t codes = kDtype == QDType::kMXFP4 ? (cols + 1) / 2 : cols;
    return rows * codes + rows * ((cols + key.group - 1) / key.group);
  }
  std::vector<SpecCandidate> Candidates() const override {
    return {{kDtype == QDType::kMXFP4 ? "MXFP4 weights (E2M1, E8M0 scale per 32)"
                                      : "MXFP8 weights (E4M3, E8M0 scale per 32)",
             "any", [](const QuantScheme& s) { return s.weight.dtype == kDtype; },
             specs_internal::AnyDevice,
             [](const QuantScheme& s) -> Result<SpecKey> {
               if (s.online) {
                 return Unsupported(fmt::format("{}: quantizing at load time is not implemented",
                                                s.CanonicalName()));
               }
               SpecKey key{SpecFamily(kDtype == QDType::kMXFP4 ? "mxfp4_block" : "mxfp8_block")};
               key.group = s.weight.group_size.value_or(kDefaultGroup);
               return key;
             },
             10}};
  }

 private:
  std::string_view name_;
  SpecFamily family_;
  std::string grammar_ = std::string(name_) + "_<g>";
};

const SpecFamilyRegistrar kRegisterMxfp4(std::make_unique<MxFamily<QDType::kMXFP4>>("mxfp4_block"));
const SpecFamilyRegistrar kRegisterMxfp8(std::make_unique<MxFamily<QDType::kMXFP8>>("mxfp8_block"));

}  // namespace
}  // namespace quantpath
