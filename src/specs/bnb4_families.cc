// bitsandbytes 4-bit weights: nf4_block_<b>[_dq] and fp4_block_<b>[_dq] (b = 64 unless the
// checkpoint's quant_state says otherwise). Layout, as `plan` counts it (the loaders arrive with
// the bitsandbytes specs): bitsandbytes quantizes the flattened weight, so blocks run over N · K.
//   W        4-bit codes, two per byte: ceil(N · K / 2) bytes.
//   absmax   one per block: fp32, or with double quantization (_dq) one byte per block plus an
//            fp32 scale per 256 blocks.
#include "fmt/format.h"
#include "src/specs/spec_id_grammar.h"
#include "src/specs/storage_only_family.h"

namespace quantpath {
namespace {

constexpr int64_t kDefaultBlock = 64;
constexpr int64_t kNestedBlock = 256;

template <QDType kDtype>
class Bnb4Family final : public specs_internal::StorageOnlyFamily {
 public:
  explicit Bnb4Family(std::string_view name) : name_(name), family_(name) {}
  SpecFamily family() const override { return family_; }
  std::string_view name() const override { return name_; }
  std::string_view grammar() const override { return grammar_; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto p = specs_internal::IdParameters(spec_id, name_);
    if (!p || p->empty() || p->size() > 2) return std::nullopt;
    std::optional<int64_t> block = specs_internal::ParsePositive((*p)[0]);
    if (!block || (p->size() == 2 && (*p)[1] != "dq")) return std::nullopt;
    SpecKey key{family_};
    key.group = *block;
    key.double_quant = p->size() == 2;
    return key;
  }
  std::string Format(const SpecKey& key) const override {
    return fmt::format("{}_{}{}", name_, key.group, key.double_quant ? "_dq" : "");
  }
  std::vector<Slot> Slots(const SpecKey& key, const ActivationQuant&) const override {
    std::vector<Slot> slots = {Slot::kWeight, Slot::kWeightScale};
    if (key.double_quant) slots.push_back(Slot::kWeightGlobalScale);
    slots.push_back(Slot::kBias);
    return slots;
  }
  int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols, int) const override {
    const int64_t elements = rows * cols;
    const int64_t blocks = (elements + key.group - 1) / key.group;
    const int64_t absmax =
        key.double_quant ? blocks + (blocks + kNestedBlock - 1) / kNestedBlock * 4 : blocks * 4;
    return (elements + 1) / 2 + absmax;
  }
  std::vector<SpecCandidate> Candidates() const override {
    return {{kDtype == QDType::kNF4 ? "bitsandbytes NF4 weights" : "bitsandbytes FP4 weights",
             "any", [](const QuantScheme& s) { return s.weight.dtype == kDtype; },
             specs_internal::AnyDevice,
             [](const QuantScheme& s) -> Result<SpecKey> {
               SpecKey key{SpecFamily(kDtype == QDType::kNF4 ? "nf4_block" : "fp4_block")};
               key.group = s.weight.group_size.value_or(kDefaultBlock);
               key.double_quant = s.weight.load.double_quant;
               return key;
             },
             10}};
  }

 private:
  std::string_view name_;
  SpecFamily family_;
  std::string grammar_ = std::string(name_) + "_<b>[_dq]";
};

const SpecFamilyRegistrar kRegisterNf4(std::make_unique<Bnb4Family<QDType::kNF4>>("nf4_block"));
const SpecFamilyRegistrar kRegisterFp4(std::make_unique<Bnb4Family<QDType::kFP4>>("fp4_block"));

}  // namespace
}  // namespace quantpath
