// Integer weight families: int<b>_group_<g>[_zp][_actorder], int<b>_channel[_zp], int<b>_tensor
// (b = 2 … 8): id grammar, slots, bytes and materialize candidates. The canonical layout is
// documented bit by bit in int_family.h; the spec and its loaders are int_spec.cc and
// int_source_*.cc. Bytes, as `plan` counts them:
//   W        N · ceil(K·b / 8).
//   scales   16-bit: group N · ceil(K / g) · 2, channel N · 2; tensor: one fp32 value.
//   zeros    _zp only, b-bit codes: group N · ceil(ceil(K / g)·b / 8), channel ceil(N·b / 8).
//   perm     _actorder only: K · 4 (int32).
#include "fmt/format.h"
#include "src/specs/int_family.h"
#include "src/specs/spec_common.h"
#include "src/specs/spec_id_grammar.h"

namespace quantpath {
namespace {

using specs_internal::ParsePositive;

constexpr int64_t kScaleBytes = 2;

int64_t Packed(int64_t count, int bits) { return (count * bits + 7) / 8; }

bool IsInt(QDType dtype) { return dtype >= QDType::kINT8 && dtype <= QDType::kINT2; }

// "int4_group_128_zp" → bits 4 and the parameters after "group"; nullopt when not `kind`.
std::optional<std::pair<int, std::vector<std::string_view>>> IntId(std::string_view spec_id,
                                                                   std::string_view kind) {
  if (!spec_id.starts_with("int")) return std::nullopt;
  const size_t cut = spec_id.find('_');
  if (cut == std::string_view::npos) return std::nullopt;
  std::optional<int64_t> bits = ParsePositive(spec_id.substr(3, cut - 3));
  if (!bits || *bits < 2 || *bits > 8) return std::nullopt;
  auto params = specs_internal::IdParameters(spec_id.substr(cut + 1), kind);
  if (!params) return std::nullopt;
  return std::make_pair(static_cast<int>(*bits), *params);
}

SpecKey IntKey(SpecFamily family, const QuantScheme& scheme) {
  SpecKey key{family};
  key.bits = Info(scheme.weight.dtype).bits;
  key.zero_point = !scheme.weight.symmetric;
  return key;
}

constexpr SpecFamily kIntGroup = kIntGroupFamily;
constexpr SpecFamily kIntChannel = kIntChannelFamily;
constexpr SpecFamily kIntTensor = kIntTensorFamily;

// What the three rows share: the spec and its tolerance.
class IntFamilyRow : public SpecFamilyRow {
 public:
  Result<std::unique_ptr<WeightSpec>> Make(const SpecKey& key, const ActivationQuant& act,
                                           const LoadFacts& facts) const final {
    return specs_internal::MakeIntSpec(key, act, facts);
  }
  // Dequantized weights are exact in fp32 ((q − z) has at most 9 bits, the scale 11 or 8), so
  // only the fp32 accumulation differs from double: about sqrt(K) · 2^-24 of the output's scale,
  // well inside 1e-4 for real K.
  // With int8 activations (W8A8) the reference rounds X with the kernels' fp32 arithmetic and
  // the int32 sum is exact, so the reference kernel differs by a few fp32 roundings of the
  // epilogue. 1e-2 leaves room for fast kernels that round a few elements of X to the
  // neighbouring code (x / scale instead of x · (127 / absmax), fused multiplies): each moves
  // y by one activation quantum (absmax / 127, 0.8% of a row's largest |x|) times one weight.
  double Tolerance(const SpecKey&, ActMode mode) const final {
    return mode == ActMode::kNone ? 1e-4 : 1e-2;
  }
};

class IntGroupFamily final : public IntFamilyRow {
 public:
  SpecFamily family() const override { return kIntGroup; }
  std::string_view name() const override { return "int_group"; }
  std::string_view grammar() const override { return "int<b>_group_<g>[_zp][_actorder]"; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto id = IntId(spec_id, "group");
    if (!id || id->second.empty()) return std::nullopt;
    const std::vector<std::string_view>& p = id->second;
    std::optional<int64_t> group = ParsePositive(p[0]);
    if (!group) return std::nullopt;
    SpecKey key{kIntGroup};
    key.bits = id->first;
    key.group = *group;
    size_t i = 1;
    if (i < p.size() && p[i] == "zp") key.zero_point = (++i, true);
    if (i < p.size() && p[i] == "actorder") key.act_order = (++i, true);
    if (i != p.size()) return std::nullopt;
    return key;
  }
  std::string Format(const SpecKey& key) const override {
    return fmt::format("int{}_group_{}{}{}", key.bits, key.group, key.zero_point ? "_zp" : "",
                       key.act_order ? "_actorder" : "");
  }
  std::vector<Slot> Slots(const SpecKey& key, const ActivationQuant&) const override {
    std::vector<Slot> slots = {Slot::kWeight, Slot::kWeightScale};
    if (key.zero_point) slots.push_back(Slot::kWeightZero);
    if (key.act_order) slots.push_back(Slot::kGIdx);
    slots.push_back(Slot::kBias);
    return slots;
  }
  int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols, int) const override {
    const int64_t groups = (cols + key.group - 1) / key.group;
    return rows * Packed(cols, key.bits) + rows * groups * kScaleBytes +
           (key.zero_point ? rows * Packed(groups, key.bits) : 0) + (key.act_order ? cols * 8 : 0);
  }
  std::vector<SpecCandidate> Candidates() const override {
    return {{"integer weights with 1-D group scales", "any",
             [](const QuantScheme& s) {
               return IsInt(s.weight.dtype) && s.weight.granularity == Granularity::kGroup;
             },
             specs_internal::AnyDevice,
             [](const QuantScheme& s) -> Result<SpecKey> {
               if (!s.weight.group_size || *s.weight.group_size <= 0) {
                 return InvalidInput(fmt::format("{}: group weights need a positive group_size",
                                                 s.CanonicalName()));
               }
               SpecKey key = IntKey(kIntGroup, s);
               key.group = *s.weight.group_size;
               key.act_order = s.weight.load.act_order;
               return key;
             },
             10}};
  }
};

class IntChannelFamily final : public IntFamilyRow {
 public:
  SpecFamily family() const override { return kIntChannel; }
  std::string_view name() const override { return "int_channel"; }
  std::string_view grammar() const override { return "int<b>_channel[_zp]"; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto id = IntId(spec_id, "channel");
    if (!id || id->second.size() > 1) return std::nullopt;
    if (!id->second.empty() && id->second[0] != "zp") return std::nullopt;
    SpecKey key{kIntChannel};
    key.bits = id->first;
    key.zero_point = !id->second.empty();
    return key;
  }
  std::string Format(const SpecKey& key) const override {
    return fmt::format("int{}_channel{}", key.bits, key.zero_point ? "_zp" : "");
  }
  std::vector<Slot> Slots(const SpecKey& key, const ActivationQuant& act) const override {
    std::vector<Slot> slots = {Slot::kWeight, Slot::kWeightScale};
    if (key.zero_point) slots.push_back(Slot::kWeightZero);
    if (act.mode == ActMode::kStaticPerTensor) slots.push_back(Slot::kInputScale);
    if (act.mode == ActMode::kStaticPerTensor && !act.symmetric) {
      slots.push_back(Slot::kInputOffset);
      slots.push_back(Slot::kQuantBias);  // the zero point's row correction (w8a8_family.h)
    }
    slots.push_back(Slot::kBias);
    return slots;
  }
  int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols, int) const override {
    return rows * Packed(cols, key.bits) + rows * kScaleBytes +
           (key.zero_point ? Packed(rows, key.bits) : 0);
  }
  std::vector<SpecCandidate> Candidates() const override {
    return {{"integer weights with per-channel scales", "any",
             [](const QuantScheme& s) {
               return IsInt(s.weight.dtype) && s.weight.granularity == Granularity::kPerChannel;
             },
             specs_internal::AnyDevice,
             [](const QuantScheme& s) -> Result<SpecKey> { return IntKey(kIntChannel, s); }, 10}};
  }
};

class IntTensorFamily final : public IntFamilyRow {
 public:
  SpecFamily family() const override { return kIntTensor; }
  std::string_view name() const override { return "int_tensor"; }
  std::string_view grammar() const override { return "int<b>_tensor"; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto id = IntId(spec_id, "tensor");
    if (!id || !id->second.empty()) return std::nullopt;
    SpecKey key{kIntTensor};
    key.bits = id->first;
    return key;
  }
  std::string Format(const SpecKey& key) const override {
    return fmt::format("int{}_tensor", key.bits);
  }
  std::vector<Slot> Slots(const SpecKey&, const ActivationQuant& act) const override {
    std::vector<Slot> slots = {Slot::kWeight, Slot::kWeightScale};
    if (act.mode == ActMode::kStaticPerTensor) slots.push_back(Slot::kInputScale);
    if (act.mode == ActMode::kStaticPerTensor && !act.symmetric) {
      slots.push_back(Slot::kInputOffset);
      slots.push_back(Slot::kQuantBias);
    }
    slots.push_back(Slot::kBias);
    return slots;
  }
  int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols, int) const override {
    return rows * Packed(cols, key.bits) + 4;
  }
  std::vector<SpecCandidate> Candidates() const override {
    return {{"symmetric integer weights with one per-tensor scale", "any",
             [](const QuantScheme& s) {
               return IsInt(s.weight.dtype) && s.weight.granularity == Granularity::kPerTensor;
             },
             specs_internal::AnyDevice,
             [](const QuantScheme& s) -> Result<SpecKey> {
               if (!s.weight.symmetric) {
                 return Unsupported(fmt::format(
                     "{}: asymmetric per-tensor integer weights have no spec", s.CanonicalName()));
               }
               return IntKey(kIntTensor, s);
             },
             10}};
  }
};

const SpecFamilyRegistrar kRegisterGroup(std::make_unique<IntGroupFamily>());
const SpecFamilyRegistrar kRegisterChannel(std::make_unique<IntChannelFamily>());
const SpecFamilyRegistrar kRegisterTensor(std::make_unique<IntTensorFamily>());

}  // namespace
}  // namespace quantpath
