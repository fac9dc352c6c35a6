// W4a8AwqSpec: ModelOpt W4A8_AWQ layers (int4_group_<g>_prescaled with static fp8 activations)
// in the layout of w4a8_awq_family.h, and the family's row. Source layout kModelOptW4A8Awq, as
// modelopt 0.47.0's export writes it (export/quant_utils.py pack_int4_in_uint8), per leg:
//   weight           U8 [N/2, K]: signed int4 codes w = round(W / s).clamp(−8, 7), row 2j in the
//                    low nibble and row 2j + 1 in the high nibble of byte [j][k] (two's
//                    complement), i.e. packed along N, not K;
//   weight_scale     F32 [N, K/g]: W = w · s, not divided by weight_scale_2;
//   weight_scale_2   one F32 value (positive, finite), checked and not kept (w4a8_awq_family.h);
//   pre_quant_scale  [K] (model dtype), optional per layer; multiplies X before quantization;
//   input_scale      one F32 value: X is quantized to e4m3 as X / input_scale.
// Fused legs (q/k/v, gate/up): X is quantized once, so the layer keeps the largest input_scale
// (TensorRT-LLM's W4A8_AWQ fused-MoE reference takes the max of gate's and up's too). A prescale
// cannot be shared by legs that differ without requantizing the weights, so legs must agree on
// having one and on its values (ModelOpt's export resmooths fused legs to one and folds it away);
// legs that differ are a load error naming both tensors, where TensorRT-LLM would take the max.
// Tensor parallelism: column ranks keep their rows (any row: codes are unpacked per element),
// row ranks their columns, whole groups only, with their columns of pre_quant_scale.
// Non-goals: MoE experts stacked across experts (experts load one projection at a time).
#include <algorithm>

#include "fmt/format.h"
#include "src/specs/int_family.h"
#include "src/specs/spec_common.h"
#include "src/specs/spec_id_grammar.h"
#include "src/specs/w4a8_awq_family.h"

namespace quantpath {
namespace {

using specs_internal::ExpectElements;
using specs_internal::ExpectShape;
using specs_internal::FindSlotTensor;
using specs_internal::ReadScales;
using specs_internal::ShardGeometry;

int SignedNibble(unsigned nibble) { return nibble >= 8 ? static_cast<int>(nibble) - 16 : nibble; }

class W4a8AwqSpec final : public specs_internal::KeyedSpec {
 public:
  using KeyedSpec::KeyedSpec;

  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    LinearParams params = specs_internal::NewParams(request, g, key_);
    params.tensor(Slot::kWeight) = ParamTensor(QDType::kINT4, g.rows, g.cols);
    params.tensor(Slot::kWeightScale) = ParamTensor(QDType::kFP32, g.rows, Layout().Groups(g.cols));
    params.tensor(Slot::kInputScale) = ParamTensor(QDType::kFP32, 1, 1);
    params.leg_input_scales.assign(g.leg_rows.size(), 0.0f);
    return params;
  }

  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    return Layout().BytesFor(g.rows, g.cols) + specs_internal::BiasBytes(request, g);
  }

  Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
              LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLegPrefixes(*params, leg_prefixes));
    const std::string& layer = params->request.layer;
    QP_RETURN_IF_ERROR(
        specs_internal::ExpectLayout(layer, key_, facts_.layout, {SourceLayout::kModelOptW4A8Awq}));
    if (params->key != key_) {
      return InvalidInput(fmt::format("{}: parameters allocated for {} cannot load as {}", layer,
                                      params->key.ToId(), key_.ToId()));
    }
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(params->request));
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      QP_RETURN_IF_ERROR(LoadWeight(checkpoint, leg_prefixes[leg], g, leg, params));
      QP_RETURN_IF_ERROR(LoadScales(checkpoint, leg_prefixes[leg], g, leg, params));
      QP_ASSIGN_OR_RETURN(
          params->leg_input_scales[leg],
          ReadPositive(checkpoint, layer, leg_prefixes[leg], Slot::kInputScale, true));
      QP_RETURN_IF_ERROR(
          ReadPositive(checkpoint, layer, leg_prefixes[leg], Slot::kWeightGlobalScale, false)
              .status());
    }
    QP_RETURN_IF_ERROR(LoadPrescale(checkpoint, leg_prefixes, g, params));
    QP_RETURN_IF_ERROR(specs_internal::LoadBias(checkpoint, leg_prefixes, g, params));
    params->loaded = true;
    return {};
  }

  Status ProcessAfterLoading(LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLoadedNotProcessed(*params));
    float top = 0.0f;
    for (float s : params->leg_input_scales) top = std::max(top, s);
    params->tensor(Slot::kInputScale).data<float>()[0] = top;
    params->leg_input_scales.clear();
    params->processed = true;
    return {};
  }

 private:
  Int4GroupPrescaledLayout Layout() const { return {key_.group}; }

  Result<ShardGeometry> Geometry(const AllocationRequest& request) const {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, specs_internal::ComputeGeometry(request));
    if (g.cols != g.full_cols && g.cols % key_.group != 0) {
      return InvalidInput(fmt::format(
          "{}: {} with tensor-parallel size {} splits K = {} into slices of {} columns, which "
          "is not a multiple of the group size {}",
          request.layer, key_.ToId(), request.tp_size, g.full_cols, g.cols, key_.group));
    }
    return g;
  }

  Status LoadWeight(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                    size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(TensorView w,
                        FindSlotTensor(checkpoint, layer, prefix, facts_.layout, Slot::kWeight));
    const int64_t full_rows = g.full_leg_rows[leg];
    if (w.info->dtype != StDtype::kU8 && w.info->dtype != StDtype::kI8) {
      return InvalidInput(fmt::format("{}: tensor {} has dtype {}, expected U8 (two int4 per byte)",
                                      layer, w.info->name, StDtypeName(w.info->dtype)));
    }
    if (full_rows % 2 != 0) {
      return InvalidInput(fmt::format(
          "{}: {} has {} rows, but tensor {} packs two rows per byte, so the count must be even",
          layer, specs_internal::LegLabel(params->request, leg), full_rows, w.info->name));
    }
    QP_RETURN_IF_ERROR(ExpectShape(w, layer, {full_rows / 2, g.full_cols}));
    const auto* src = reinterpret_cast<const uint8_t*>(w.bytes.data());
    ParamTensor& dst = params->tensor(Slot::kWeight);
    for (int64_t r = 0; r < g.leg_rows[leg]; ++r) {
      const int64_t src_row = g.leg_src_rows[leg] + r;
      const uint8_t* from = src + (src_row / 2) * g.full_cols + g.src_col;
      uint8_t* to = dst.data<uint8_t>() + (g.leg_offsets[leg] + r) * dst.row_bytes();
      const int shift = src_row % 2 == 0 ? 0 : 4;
      for (int64_t c = 0; c < g.cols; ++c) {
        const int code = SignedNibble((from[c] >> shift) & 0x0F);
        WriteCode(to, c, 4, static_cast<uint32_t>(code + 8));
      }
    }
    return {};
  }

  Status LoadScales(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                    size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(TensorView view, FindSlotTensor(checkpoint, layer, prefix, facts_.layout,
                                                        Slot::kWeightScale));
    const int64_t groups = Layout().Groups(g.full_cols);
    QP_RETURN_IF_ERROR(ExpectShape(view, layer, {g.full_leg_rows[leg], groups}));
    QP_ASSIGN_OR_RETURN(std::vector<float> values, ReadScales(view, layer));
    ParamTensor& s = params->tensor(Slot::kWeightScale);
    const int64_t first_group = g.src_col / key_.group;
    for (int64_t r = 0; r < g.leg_rows[leg]; ++r) {
      const int64_t src_row = g.leg_src_rows[leg] + r;
      for (int64_t j = 0; j < s.cols(); ++j) {
        s.data<float>()[(g.leg_offsets[leg] + r) * s.cols() + j] =
            values[src_row * groups + first_group + j];
      }
    }
    return {};
  }

  // One positive, finite F32 value of a leg (input_scale, weight_scale_2); a tensor the layout
  // marks optional may be absent (then 0).
  Result<float> ReadPositive(const Checkpoint& checkpoint, const std::string& layer,
                             const std::string& prefix, Slot slot, bool required) const {
    const std::optional<std::string_view> suffix = SourceSuffix(facts_.layout, slot);
    if (!required && (!suffix || !checkpoint.Has(prefix + std::string(*suffix)))) return 0.0f;
    QP_ASSIGN_OR_RETURN(TensorView view,
                        FindSlotTensor(checkpoint, layer, prefix, facts_.layout, slot));
    QP_RETURN_IF_ERROR(ExpectElements(view, layer, 1, "one scale"));
    QP_ASSIGN_OR_RETURN(std::vector<float> value, ReadScales(view, layer));
    if (!(value[0] > 0.0f)) {
      return InvalidInput(fmt::format("{}: tensor {} is {}, but {} needs a positive scale", layer,
                                      view.info->name, value[0], key_.ToId()));
    }
    return value[0];
  }

  // The legs' pre_quant_scale: absent on every leg, or present on every leg with equal values;
  // this rank keeps its columns, in the stored dtype.
  Status LoadPrescale(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
                      const ShardGeometry& g, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    const std::string suffix(*SourceSuffix(facts_.layout, Slot::kPreQuantScale));
    std::optional<TensorView> first;
    for (const std::string& prefix : leg_prefixes) {
      const std::string name = prefix + suffix;
      if (!checkpoint.Has(name)) {
        if (first) {
          return InvalidInput(fmt::format(
              "{}: tensor {} is not in the checkpoint, but {} is; the legs of a fused layer "
              "share one input, so they must share one pre_quant_scale",
              layer, name, first->info->name));
        }
        continue;
      }
      QP_ASSIGN_OR_RETURN(TensorView view, checkpoint.Get(name));
      QP_RETURN_IF_ERROR(
          ExpectElements(view, layer, g.full_cols, fmt::format("[{}]", g.full_cols)));
      QP_ASSIGN_OR_RETURN(std::vector<float> values, ReadScales(view, layer));
      if (!first) {
        if (prefix != leg_prefixes.front()) {
          return InvalidInput(fmt::format(
              "{}: tensor {} is in the checkpoint, but {}{} is not; the legs of a fused layer "
              "share one input, so they must share one pre_quant_scale",
              layer, name, leg_prefixes.front(), suffix));
        }
        first = view;
        const QDType stored = SixteenBitScaleDtype(view.info->dtype).value_or(QDType::kFP32);
        ParamTensor& p = params->tensor(Slot::kPreQuantScale);
        p = ParamTensor(stored, 1, g.cols);
        for (int64_t c = 0; c < g.cols; ++c) {
          specs_internal::StoreFloat(&p, c, values[g.src_col + c]);
          if (LoadFloat(p, c) == values[g.src_col + c]) continue;
          return InvalidInput(
              fmt::format("{}: tensor {} holds {} at column {}, which {} cannot "
                          "hold exactly",
                          layer, name, values[g.src_col + c], g.src_col + c, QDTypeName(stored)));
        }
        continue;
      }
      QP_ASSIGN_OR_RETURN(std::vector<float> reference, ReadScales(*first, layer));
      for (int64_t c = 0; c < g.full_cols; ++c) {
        if (values[c] == reference[c]) continue;
        return InvalidInput(fmt::format(
            "{}: tensors {} and {} differ at column {} ({} and {}); the legs of a fused layer "
            "share one input, so they must share one pre_quant_scale",
            layer, first->info->name, name, c, reference[c], values[c]));
      }
    }
    return {};
  }
};

// ---------------------------------------------------------------------------------------------
// The family row.

bool IsW4a8Awq(const QuantScheme& s) {
  return s.weight.load.layout == SourceLayout::kModelOptW4A8Awq &&
         s.weight.dtype == QDType::kINT4 && s.weight.granularity == Granularity::kGroup;
}

class W4a8AwqFamily final : public SpecFamilyRow {
 public:
  SpecFamily family() const override { return kIntGroupPrescaledFamily; }
  std::string_view name() const override { return "int_group_prescaled"; }
  std::string_view grammar() const override { return "int4_group_<g>_prescaled"; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto p = specs_internal::IdParameters(spec_id, "int4_group");
    if (!p || p->size() != 2 || (*p)[1] != "prescaled") return std::nullopt;
    std::optional<int64_t> group = specs_internal::ParsePositive((*p)[0]);
    if (!group) return std::nullopt;
    return Key(*group);
  }
  std::string Format(const SpecKey& key) const override {
    return fmt::format("int4_group_{}_prescaled", key.group);
  }
  std::vector<Slot> Slots(const SpecKey&, const ActivationQuant&) const override {
    // pre_quant_scale is allocated at load where the checkpoint has one.
    return {Slot::kWeight, Slot::kWeightScale, Slot::kInputScale, Slot::kPreQuantScale,
            Slot::kBias};
  }
  int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols, int) const override {
    return Int4GroupPrescaledLayout{key.group}.BytesFor(rows, cols);
  }
  // W is exact in fp32 ((q − 8) has 4 bits, s 24), and X is rounded to e4m3 in fp32 by the
  // kernel and in double by the reference, as for the fp8 specs with static activations: a value
  // on a rounding tie may round the other way, moving one product by an fp8 step (2^-3 of it),
  // within 2e-2 of the largest output for the K of real layers.
  double Tolerance(const SpecKey&, ActMode mode) const override {
    return mode == ActMode::kNone ? 1e-4 : 2e-2;
  }
  std::vector<SpecCandidate> Candidates() const override {
    return {{"ModelOpt W4A8_AWQ: int4 group weights, fp32 scales, input prescale", "any", IsW4a8Awq,
             specs_internal::AnyDevice,
             [](const QuantScheme& s) -> Result<SpecKey> {
               if (s.online || !s.weight.symmetric || !s.weight.group_size ||
                   *s.weight.group_size <= 0) {
                 return Unsupported(
                     fmt::format("{}: W4A8_AWQ stores symmetric int4 groups of a positive size",
                                 s.CanonicalName()));
               }
               return Key(*s.weight.group_size);
             },
             20}};
  }
  Result<std::unique_ptr<WeightSpec>> Make(const SpecKey& key, const ActivationQuant& act,
                                           const LoadFacts& facts) const override {
    if (facts.layout != SourceLayout::kModelOptW4A8Awq) {
      return Unsupported(fmt::format("{}: source layout {} cannot be loaded", Format(key),
                                     SourceLayoutName(facts.layout)));
    }
    if (act.mode != ActMode::kStaticPerTensor || act.dtype != QDType::kFP8E4M3 || !act.symmetric) {
      return Unsupported(
          fmt::format("{} with {} activations has no kernel mode", Format(key), act.ToString()));
    }
    return std::unique_ptr<WeightSpec>(std::make_unique<W4a8AwqSpec>(key, act, facts));
  }

 private:
  static SpecKey Key(int64_t group) {
    SpecKey key{kIntGroupPrescaledFamily};
    key.bits = 4;
    key.group = group;
    return key;
  }
};

const SpecFamilyRegistrar kRegister(std::make_unique<W4a8AwqFamily>());

}  // namespace
}  // namespace quantpath
