// Bnb4Spec: bitsandbytes 4-bit weights, nf4_block_<b> and fp4_block_<b> (layout: bnb_family.h),
// and the two family rows.
//
// Source layout kBnb4bit, per leg `<prefix>` (bitsandbytes' QuantState.as_dict(packed=True)):
//   weight                  U8, ceil(N·K / 2) bytes of the flattened [N, K] weight (transformers
//                           writes [N·K/2, 1]), element 2i in bits 7..4 of byte i;
//   weight.absmax           F32 [blocks], or U8 [blocks] under double quantization with
//   weight.nested_absmax    F32 [ceil(blocks / nested_blocksize)] and
//   weight.nested_quant_map F32 [256];
//   weight.quant_map        F32 [16], the family's map bit for bit;
//   weight.quant_state.bitsandbytes__nf4|fp4  the JSON quant state (bnb_quant_state.h), whose
//                           blocksize must be the spec's b and whose shape must be [N, K].
// Non-goals (later): MoE experts.

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/bnb_family.h"
#include "src/specs/bnb_quant_state.h"
#include "src/specs/spec_common.h"
#include "src/specs/spec_id_grammar.h"

namespace quantpath {
namespace {

using specs_internal::BnbQuantState;
using specs_internal::ComputeGeometry;
using specs_internal::ShardGeometry;

constexpr int64_t kDefaultBlock = 64;

class Bnb4Spec final : public specs_internal::KeyedSpec {
 public:
  using KeyedSpec::KeyedSpec;

  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    LinearParams params = specs_internal::NewParams(request, g, key_);
    params.tensor(Slot::kWeight) = ParamTensor(CodeDtype(), g.rows, g.cols);
    params.tensor(Slot::kWeightScale) =
        ParamTensor(QDType::kFP32, 1, Layout().Blocks(g.rows, g.cols));
    return params;
  }

  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    return Layout().BytesFor(g.rows, g.cols) + specs_internal::BiasBytes(request, g);
  }

  Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
              LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLegPrefixes(*params, leg_prefixes));
    QP_RETURN_IF_ERROR(specs_internal::ExpectLayout(params->request.layer, key_, facts_.layout,
                                                    {SourceLayout::kBnb4bit}));
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(params->request));
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      QP_RETURN_IF_ERROR(LoadLeg(checkpoint, leg_prefixes[leg], g, leg, params));
    }
    QP_RETURN_IF_ERROR(specs_internal::LoadBias(checkpoint, leg_prefixes, g, params));
    params->loaded = true;
    return {};
  }

 private:
  Bnb4Layout Layout() const { return {key_.group}; }
  QDType CodeDtype() const { return key_.family == kNf4Family ? QDType::kNF4 : QDType::kFP4; }
  std::string_view QuantType() const { return key_.family == kNf4Family ? "nf4" : "fp4"; }

  // The geometry, with the block rules of bnb_family.h: every leg's slice starts on a block and
  // holds whole blocks (the last leg may end on its own short tail block); a row-parallel slice
  // needs K and its own K to be multiples of b.
  Result<ShardGeometry> Geometry(const AllocationRequest& request) const {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, ComputeGeometry(request));
    const std::string id = key_.ToId();
    const int64_t b = key_.group;
    if (g.cols % 2 != 0) {
      return InvalidInput(fmt::format("{}: {} packs two codes per byte of a row, but K = {} is odd",
                                      request.layer, id, g.cols));
    }
    if (g.cols != g.full_cols && (g.full_cols % b != 0 || g.cols % b != 0)) {
      return InvalidInput(fmt::format(
          "{}: {} blocks of {} run over the flattened weight, so a row-parallel rank's {} of K = "
          "{} columns would cut blocks (both must be multiples of {})",
          request.layer, id, b, g.cols, g.full_cols, b));
    }
    for (size_t leg = 0; leg < g.leg_rows.size(); ++leg) {
      const int64_t start = g.leg_src_rows[leg] * g.full_cols;
      const int64_t size = g.leg_rows[leg] * g.cols;
      const bool reaches_end = g.leg_src_rows[leg] + g.leg_rows[leg] == g.full_leg_rows[leg];
      const bool tail_allowed = leg + 1 == g.leg_rows.size() && reaches_end;
      if (start % b != 0 || (size % b != 0 && !tail_allowed)) {
        return InvalidInput(fmt::format(
            "{}: {} blocks of {} run over each leg's flattened weight; {}'s rows [{}, {}) of K "
            "= {} are not whole blocks, so they cannot be {}",
            request.layer, id, b, specs_internal::LegLabel(request, leg), g.leg_src_rows[leg],
            g.leg_src_rows[leg] + g.leg_rows[leg], g.full_cols,
            request.tp_size > 1 ? "this rank's shard" : "stacked with the next leg"));
      }
    }
    return g;
  }

  Status LoadLeg(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                 size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    const int64_t full_rows = g.full_leg_rows[leg];
    const int64_t k = g.full_cols;
    QP_ASSIGN_OR_RETURN(BnbQuantState state,
                        specs_internal::ReadBnbQuantState(checkpoint, layer, prefix));
    if (state.quant_type != QuantType()) {
      return InvalidInput(fmt::format("{}: {} holds {} codes, but the spec is {}", layer, prefix,
                                      state.quant_type, key_.ToId()));
    }
    if (state.blocksize != key_.group) {
      return InvalidInput(fmt::format(
          "{}: {}'s quant_state says blocksize {}, but the plan chose {} (the block size of "
          "the checkpoint's first 4-bit quant_state: one model, one block size; {} without "
          "weights)",
          layer, prefix, state.blocksize, key_.ToId(), kDefaultBlock));
    }
    if (state.shape != std::vector<int64_t>{full_rows, k}) {
      return InvalidInput(fmt::format("{}: {}'s quant_state shape is {}, expected [{}, {}]", layer,
                                      prefix, specs_internal::ShapeString(state.shape), full_rows,
                                      k));
    }
    QP_ASSIGN_OR_RETURN(TensorView weight,
                        specs_internal::FindTensor(checkpoint, layer, prefix, ".weight"));
    if (weight.info->dtype != StDtype::kU8 || weight.info->Elements() != full_rows * k / 2) {
      return InvalidInput(
          fmt::format("{}: tensor {} is {} {}, expected {} U8 bytes of packed codes", layer,
                      weight.info->name, StDtypeName(weight.info->dtype),
                      specs_internal::ShapeString(weight.info->shape), full_rows * k / 2));
    }
    QP_RETURN_IF_ERROR(CheckQuantMap(checkpoint, layer, prefix));
    const Bnb4Layout layout = Layout();
    QP_ASSIGN_OR_RETURN(std::vector<float> absmax,
                        specs_internal::ReadBnbAbsmax(checkpoint, layer, prefix, state,
                                                      layout.Blocks(full_rows, k)));
    ParamTensor& codes = params->tensor(Slot::kWeight);
    float* scales = params->tensor(Slot::kWeightScale).data<float>();
    const int64_t b = key_.group;
    for (int64_t r = 0; r < g.leg_rows[leg]; ++r) {
      const int64_t src_row = g.leg_src_rows[leg] + r;
      const int64_t dst_row = g.leg_offsets[leg] + r;
      uint8_t* dst = codes.data<uint8_t>() + dst_row * codes.row_bytes();
      for (int64_t c = 0; c < g.cols; ++c) {
        const int64_t f = src_row * k + g.src_col + c;  // flattened checkpoint element
        const auto byte = static_cast<uint8_t>(weight.bytes[static_cast<size_t>(f / 2)]);
        const uint8_t code = f % 2 == 0 ? byte >> 4 : byte & 0xF;
        dst[c / 2] |= static_cast<uint8_t>(c % 2 == 0 ? code : code << 4);
        // Whole blocks map to whole blocks (Geometry): every element of a block writes the
        // same absmax.
        scales[(dst_row * g.cols + c) / b] = absmax[f / b];
      }
    }
    return {};
  }

  // The checkpoint's quant_map must be the family's map bit for bit: the kernels use theirs.
  Status CheckQuantMap(const Checkpoint& checkpoint, const std::string& layer,
                       const std::string& prefix) const {
    QP_ASSIGN_OR_RETURN(TensorView map,
                        specs_internal::FindTensor(checkpoint, layer, prefix, ".weight.quant_map"));
    if (map.info->dtype != StDtype::kF32 || map.info->Elements() != 16) {
      return InvalidInput(fmt::format("{}: tensor {} is {} {}, expected 16 F32 values", layer,
                                      map.info->name, StDtypeName(map.info->dtype),
                                      specs_internal::ShapeString(map.info->shape)));
    }
    QP_ASSIGN_OR_RETURN(std::vector<uint32_t> bits, CopyTensor<uint32_t>(map));
    const std::array<uint32_t, 16>& expected = Bnb4Map(key_.family);
    for (size_t i = 0; i < 16; ++i) {
      if (bits[i] != expected[i]) {
        return InvalidInput(fmt::format(
            "{}: tensor {} entry {} is 0x{:08X}, but bitsandbytes' {} map holds 0x{:08X}", layer,
            map.info->name, i, bits[i], QuantType(), expected[i]));
      }
    }
    return {};
  }
};

// ---------------------------------------------------------------------------------------------
// The family rows.

template <QDType kDtype>
class Bnb4Family final : public SpecFamilyRow {
 public:
  explicit Bnb4Family(std::string_view name) : name_(name), family_(name) {}
  SpecFamily family() const override { return family_; }
  std::string_view name() const override { return name_; }
  std::string_view grammar() const override { return grammar_; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto p = specs_internal::IdParameters(spec_id, name_);
    if (!p || p->size() != 1) return std::nullopt;
    std::optional<int64_t> block = specs_internal::ParsePositive((*p)[0]);
    if (!block) return std::nullopt;
    SpecKey key{family_};
    key.group = *block;
    return key;
  }
  std::string Format(const SpecKey& key) const override {
    return fmt::format("{}_{}", name_, key.group);
  }
  std::vector<Slot> Slots(const SpecKey&, const ActivationQuant&) const override {
    return {Slot::kWeight, Slot::kWeightScale, Slot::kBias};
  }
  int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols, int) const override {
    return Bnb4Layout{key.group}.BytesFor(rows, cols);
  }
  Result<std::unique_ptr<WeightSpec>> Make(const SpecKey& key, const ActivationQuant& act,
                                           const LoadFacts& facts) const override {
    if (facts.layout != SourceLayout::kBnb4bit) {
      return Unsupported(fmt::format("{}: weights in source layout {} cannot be loaded",
                                     Format(key), SourceLayoutName(facts.layout)));
    }
    if (act.mode != ActMode::kNone) {
      return Unsupported(
          fmt::format("{} with {} activations has no kernel mode", Format(key), act.ToString()));
    }
    return std::unique_ptr<WeightSpec>(std::make_unique<Bnb4Spec>(key, act, facts));
  }
  // The reference's weights are exact fp32 products; the fast CPU kernels take each weight as
  // bf16 (the map value, or its product with the absmax, rounded once, as dequantize_4bit gives a
  // bf16 model), at most 2^-9 of itself off. Those errors are independent in sign, so their sum
  // stays near 2^-9 of the output's scale; 4e-3 leaves room (measured up to 1.6e-3).
  double Tolerance(const SpecKey&, ActMode) const override { return 4e-3; }
  std::vector<SpecCandidate> Candidates() const override {
    return {{kDtype == QDType::kNF4 ? "bitsandbytes NF4 weights" : "bitsandbytes FP4 weights",
             "any", [](const QuantScheme& s) { return s.weight.dtype == kDtype; },
             specs_internal::AnyDevice,
             [](const QuantScheme& s) -> Result<SpecKey> {
               if (s.online) {
                 return Unsupported(fmt::format(
                     "{}: quantizing high-precision weights to bitsandbytes 4-bit at load time "
                     "is not implemented",
                     s.CanonicalName()));
               }
               SpecKey key{kDtype == QDType::kNF4 ? kNf4Family : kFp4Family};
               key.group = s.weight.group_size.value_or(kDefaultBlock);
               return key;
             },
             10}};
  }

 private:
  std::string_view name_;
  SpecFamily family_;
  std::string grammar_ = std::string(name_) + "_<b>";
};

const SpecFamilyRegistrar kRegisterNf4(std::make_unique<Bnb4Family<QDType::kNF4>>("nf4_block"));
const SpecFamilyRegistrar kRegisterFp4(std::make_unique<Bnb4Family<QDType::kFP4>>("fp4_block"));

}  // namespace
}  // namespace quantpath
