// BnbInt8Spec: bitsandbytes LLM.int8 weights (spec_id int8_rowwise_bnb, layout: bnb_family.h),
// and the family row. W8A16: activations stay in high precision (bnb_family.h says why).
//
// Source layout kBnb8bit, per leg `<prefix>` (bitsandbytes' Linear8bitLt._save_to_state_dict):
//   weight         I8 [N, K], copied as is (this rank's rows and columns);
//   SCB            F32 [N], each row's absmax, finite and not negative;
//   weight_format  optional U8 scalar, 0 ("row", the only format bitsandbytes still writes or
//                  loads).
// Non-goals (later): MoE experts.
#include <cmath>
#include <cstring>

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/bnb_family.h"
#include "src/specs/spec_common.h"

namespace quantpath {
namespace {

using specs_internal::ShardGeometry;

class BnbInt8Spec final : public specs_internal::KeyedSpec {
 public:
  using KeyedSpec::KeyedSpec;

  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, specs_internal::ComputeGeometry(request));
    LinearParams params = specs_internal::NewParams(request, g, key_);
    params.tensor(Slot::kWeight) = ParamTensor(QDType::kINT8, g.rows, g.cols);
    params.tensor(Slot::kWeightScale) = ParamTensor(QDType::kFP32, g.rows, 1);
    return params;
  }

  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, specs_internal::ComputeGeometry(request));
    return g.rows * (g.cols + 4) + specs_internal::BiasBytes(request, g);
  }

  Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
              LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLegPrefixes(*params, leg_prefixes));
    QP_RETURN_IF_ERROR(specs_internal::ExpectLayout(params->request.layer, key_, facts_.layout,
                                                    {SourceLayout::kBnb8bit}));
    QP_ASSIGN_OR_RETURN(ShardGeometry g, specs_internal::ComputeGeometry(params->request));
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      QP_RETURN_IF_ERROR(LoadLeg(checkpoint, leg_prefixes[leg], g, leg, params));
    }
    QP_RETURN_IF_ERROR(specs_internal::LoadBias(checkpoint, leg_prefixes, g, params));
    params->loaded = true;
    return {};
  }

 private:
  Status LoadLeg(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                 size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    const int64_t full_rows = g.full_leg_rows[leg];
    QP_ASSIGN_OR_RETURN(TensorView weight,
                        specs_internal::FindTensor(checkpoint, layer, prefix, ".weight"));
    if (weight.info->dtype != StDtype::kI8) {
      return InvalidInput(fmt::format("{}: tensor {} is {}, but {} expects I8", layer,
                                      weight.info->name, StDtypeName(weight.info->dtype),
                                      key_.ToId()));
    }
    QP_RETURN_IF_ERROR(specs_internal::ExpectShape(weight, layer, {full_rows, g.full_cols}));
    QP_ASSIGN_OR_RETURN(TensorView scb,
                        specs_internal::FindTensor(checkpoint, layer, prefix, ".SCB"));
    if (scb.info->dtype != StDtype::kF32) {
      return InvalidInput(fmt::format("{}: tensor {} is {}, expected F32", layer, scb.info->name,
                                      StDtypeName(scb.info->dtype)));
    }
    QP_RETURN_IF_ERROR(specs_internal::ExpectElements(scb, layer, full_rows, "one absmax per row"));
    QP_ASSIGN_OR_RETURN(std::vector<float> absmax, CopyTensor<float>(scb));
    const std::string format_name = prefix + ".weight_format";
    if (checkpoint.Has(format_name)) {
      QP_ASSIGN_OR_RETURN(TensorView format, checkpoint.Get(format_name));
      if (format.info->dtype != StDtype::kU8 || format.info->Elements() != 1 ||
          static_cast<uint8_t>(format.bytes[0]) != 0) {
        return InvalidInput(fmt::format(
            "{}: tensor {} must be the U8 value 0 (bitsandbytes' \"row\" weight format)", layer,
            format_name));
      }
    }
    ParamTensor& codes = params->tensor(Slot::kWeight);
    float* scales = params->tensor(Slot::kWeightScale).data<float>();
    for (int64_t r = 0; r < g.leg_rows[leg]; ++r) {
      const int64_t src_row = g.leg_src_rows[leg] + r;
      const int64_t dst_row = g.leg_offsets[leg] + r;
      const float s = absmax[static_cast<size_t>(src_row)];
      if (!std::isfinite(s) || s < 0.0f) {
        return InvalidInput(fmt::format("{}: tensor {} holds {} at row {}, expected a row absmax",
                                        layer, scb.info->name, s, src_row));
      }
      scales[dst_row] = s;
      std::memcpy(codes.raw() + dst_row * codes.row_bytes(),
                  weight.bytes.data() + src_row * g.full_cols + g.src_col,
                  static_cast<size_t>(g.cols));
    }
    return {};
  }
};

bool IsBnbInt8(const QuantScheme& s) {
  return s.weight.dtype == QDType::kINT8 && s.weight.load.layout == SourceLayout::kBnb8bit;
}

class BnbInt8Family final : public SpecFamilyRow {
 public:
  SpecFamily family() const override { return kBnbInt8Family; }
  std::string_view name() const override { return "int8_rowwise_bnb"; }
  std::string_view grammar() const override { return "int8_rowwise_bnb"; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    if (spec_id != name()) return std::nullopt;
    return SpecKey{kBnbInt8Family};
  }
  std::string Format(const SpecKey&) const override { return std::string(name()); }
  std::vector<Slot> Slots(const SpecKey&, const ActivationQuant&) const override {
    return {Slot::kWeight, Slot::kWeightScale, Slot::kBias};
  }
  // int8 codes and one fp32 absmax per row.
  int64_t BytesFor(const SpecKey&, int64_t rows, int64_t cols, int) const override {
    return rows * (cols + 4);
  }
  Result<std::unique_ptr<WeightSpec>> Make(const SpecKey& key, const ActivationQuant& act,
                                           const LoadFacts& facts) const override {
    if (facts.layout != SourceLayout::kBnb8bit) {
      return Unsupported(fmt::format("{}: weights in source layout {} cannot be loaded",
                                     Format(key), SourceLayoutName(facts.layout)));
    }
    if (act.mode != ActMode::kNone) {
      return Unsupported(
          fmt::format("{} with {} activations has no kernel mode", Format(key), act.ToString()));
    }
    return std::unique_ptr<WeightSpec>(std::make_unique<BnbInt8Spec>(key, act, facts));
  }
  // As the 4-bit families: exact fp32 weights, fp32 accumulation.
  double Tolerance(const SpecKey&, ActMode) const override { return 1e-4; }
  // Above the integer per-channel candidate, which would round SCB / 127 to a 16-bit scale.
  std::vector<SpecCandidate> Candidates() const override {
    return {{"bitsandbytes LLM.int8 weights (int8, fp32 absmax per row)", "any", IsBnbInt8,
             specs_internal::AnyDevice,
             [](const QuantScheme& s) -> Result<SpecKey> {
               if (s.online) {
                 return Unsupported(fmt::format(
                     "{}: quantizing high-precision weights to LLM.int8 at load time is not "
                     "implemented",
                     s.CanonicalName()));
               }
               return SpecKey{kBnbInt8Family};
             },
             20}};
  }
};

const SpecFamilyRegistrar kRegister(std::make_unique<BnbInt8Family>());

}  // namespace
}  // namespace quantpath
