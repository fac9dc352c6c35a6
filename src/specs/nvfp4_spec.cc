// Nvfp4Spec: NVFP4 weights in the linear layout (nvfp4_block_16_linear) or Blackwell's 128x4
// scale layout (nvfp4_block_16_128x4), and the family's row.
//
// Layout and global-scale conventions: nvfp4_family.h. Source layouts (SourceTensors names them):
// kModelOptNvfp4 (`weight`, `weight_scale`, `weight_scale_2` multiplies, `input_scale`) and
// kCtNvfp4PackQuantized (`weight_packed`, `weight_scale`, `weight_global_scale` divides,
// `input_global_scale`). Per leg `<prefix>`:
//   weight / weight_packed  U8 [rows, K/2], this rank's bytes copied as they are (both producers
//                           pack the even element in the low nibble);
//   weight_scale            F8_E4M3 [rows, K/16], this rank's bytes copied (a NaN is an error);
//   global                  one F32 value per leg (shape [] or [1]), positive and finite;
//   input global            W4A4 only, one F32 value per leg.
// Tensor parallel: a column rank keeps its rows of each leg's weight and scales, a row rank its
// columns, which must be whole 16-blocks (so whole bytes); the globals are whole on every rank.
// ProcessAfterLoading keeps one weight multiplier and one input divisor for the layer, as the
// engines pick them (nvfp4_family.h), and for 128x4 pads and swizzles the loaded linear scales.
// MoE experts load one projection at a time; ShareAcrossExperts gives them the engines' shared
// globals (gate's for up, one input global over the experts).
// High-precision checkpoints are quantized at load into the linear layout by
// online/nvfp4_quantize.cc.
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/activation_kinds.h"
#include "quantpath/specs.h"
#include "src/specs/nvfp4_family.h"
#include "src/specs/spec_common.h"
#include "src/specs/spec_id_grammar.h"

namespace quantpath {
namespace {

using specs_internal::CopyByteRows;
using specs_internal::ExpectElements;
using specs_internal::FindSlotTensor;
using specs_internal::ReadScales;
using specs_internal::ShardGeometry;

// W4A4 whose activation kind reads the checkpoint's calibrated input global (the input slot);
// with per-token globals X brings its own.
bool StoresInputGlobal(const ActivationQuant& act) {
  if (act.dtype != QDType::kNVFP4) return false;
  const std::vector<Slot> inputs = ActivationKindOf(act).StaticSlots(act);
  return std::find(inputs.begin(), inputs.end(), Slot::kInputScale) != inputs.end();
}

class Nvfp4Spec final : public specs_internal::KeyedSpec {
 public:
  using KeyedSpec::KeyedSpec;

  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    LinearParams params = specs_internal::NewParams(request, g, key_);
    params.tensor(Slot::kWeight) = ParamTensor(QDType::kNVFP4, g.rows, g.cols);
    // Linear as loaded; ProcessAfterLoading tiles them for 128x4.
    params.tensor(Slot::kWeightScale) =
        ParamTensor(QDType::kFP8E4M3, g.rows, Layout().ScaleCols(g.cols));
    params.tensor(Slot::kWeightGlobalScale) = ParamTensor(QDType::kFP32, 1, 1);
    params.leg_weight_scales.assign(g.leg_rows.size(), 0.0f);
    if (StoresInputGlobal(activation_)) {
      params.tensor(Slot::kInputScale) = ParamTensor(QDType::kFP32, 1, 1);
      params.leg_input_scales.assign(g.leg_rows.size(), 0.0f);
    }
    return params;
  }

  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    return Layout().BytesFor(g.rows, g.cols) + specs_internal::BiasBytes(request, g);
  }

  Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
              LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLegPrefixes(*params, leg_prefixes));
    QP_RETURN_IF_ERROR(specs_internal::ExpectLayout(
        params->request.layer, key_, facts_.layout,
        {SourceLayout::kModelOptNvfp4, SourceLayout::kCtNvfp4PackQuantized}));
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(params->request));
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      QP_RETURN_IF_ERROR(LoadLeg(checkpoint, leg_prefixes[leg], g, leg, params));
    }
    QP_RETURN_IF_ERROR(specs_internal::LoadBias(checkpoint, leg_prefixes, g, params));
    params->loaded = true;
    return {};
  }

  Status ProcessAfterLoading(LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLoadedNotProcessed(*params));
    params->tensor(Slot::kWeightGlobalScale).data<float>()[0] =
        Nvfp4WeightMultiplier(facts_.layout, params->leg_weight_scales);
    params->leg_weight_scales.clear();
    if (StoresInputGlobal(activation_)) {
      params->tensor(Slot::kInputScale).data<float>()[0] =
          Nvfp4InputDivisor(facts_.layout, params->leg_input_scales);
      params->leg_input_scales.clear();
    }
    if (Layout().tiled) TileScales(params);
    params->processed = true;
    return {};
  }

  // vLLM's FusedMoE NVFP4 methods (nvfp4_family.h): up takes gate's stored weight global; W4A4
  // experts take one stored input global over every expert's gate and up (w13), and one over
  // every expert's down (w2). ProcessAfterLoading then turns them into the multiplier and divisor.
  Status ShareAcrossExperts(std::span<std::vector<LinearParams>> experts) const override {
    std::vector<float> inputs[2];  // w13, w2
    for (std::vector<LinearParams>& expert : experts) {
      if (expert.size() != 3) {
        return InvalidInput(fmt::format(
            "{}: an NVFP4 expert has gate, up and down projections, not {}",
            expert.empty() ? std::string("experts") : expert[0].request.layer, expert.size()));
      }
      for (size_t p = 0; p < expert.size(); ++p) {
        QP_RETURN_IF_ERROR(specs_internal::ExpectLoadedNotProcessed(expert[p]));
        const std::vector<float>& stored = expert[p].leg_input_scales;
        inputs[p / 2].insert(inputs[p / 2].end(), stored.begin(), stored.end());
      }
      expert[1].leg_weight_scales = expert[0].leg_weight_scales;
    }
    if (!StoresInputGlobal(activation_) || inputs[0].empty() || inputs[1].empty()) return {};
    const float shared[2] = {Nvfp4SharedExpertInput(facts_.layout, inputs[0]),
                             Nvfp4SharedExpertInput(facts_.layout, inputs[1])};
    for (std::vector<LinearParams>& expert : experts) {
      for (size_t p = 0; p < expert.size(); ++p) {
        expert[p].leg_input_scales.assign(expert[p].leg_input_scales.size(), shared[p / 2]);
      }
    }
    return {};
  }

 private:
  Nvfp4Layout Layout() const { return {key_.group, key_.scales == ScaleVariant::kTiled128x4}; }

  Result<ShardGeometry> Geometry(const AllocationRequest& request) const {
    return specs_internal::BlockScaledGeometry(request, key_, key_.group, true);
  }

  // The loaded [N, blocks] scales padded with zeros to [Np, Bp] and swizzled (nvfp4_family.h).
  void TileScales(LinearParams* params) const {
    const Nvfp4Layout layout = Layout();
    const ParamTensor& linear = params->tensor(Slot::kWeightScale);
    ParamTensor tiled(QDType::kFP8E4M3, layout.StoredScaleRows(params->rows),
                      layout.StoredScaleCols(params->cols));  // zero-filled: the padding
    const uint8_t* from = linear.data<uint8_t>();
    uint8_t* to = tiled.data<uint8_t>();
    for (int64_t n = 0; n < linear.rows(); ++n) {
      for (int64_t j = 0; j < linear.cols(); ++j) {
        to[layout.ScaleOffset(n, j, tiled.cols())] = from[n * linear.cols() + j];
      }
    }
    params->tensor(Slot::kWeightScale) = std::move(tiled);
  }

  // One positive, finite fp32 global value (weight or input) of a leg.
  Result<float> ReadGlobal(const Checkpoint& checkpoint, const std::string& layer,
                           const std::string& prefix, Slot slot) const {
    QP_ASSIGN_OR_RETURN(TensorView view,
                        FindSlotTensor(checkpoint, layer, prefix, facts_.layout, slot));
    QP_RETURN_IF_ERROR(ExpectElements(view, layer, 1, "one global scale"));
    QP_ASSIGN_OR_RETURN(std::vector<float> value, ReadScales(view, layer));
    if (!(value[0] > 0.0f)) {
      return InvalidInput(
          fmt::format("{}: tensor {} is {}, but an NVFP4 global scale must be positive", layer,
                      view.info->name, value[0]));
    }
    return value[0];
  }

  Status LoadLeg(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                 size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    const Nvfp4Layout layout = Layout();
    const std::vector<int64_t> rows = specs_internal::SourceRowsShape(params->request, g, leg);
    std::vector<int64_t> weight_shape = rows;
    weight_shape.push_back(layout.WeightRowBytes(g.full_cols));
    std::vector<int64_t> scale_shape = rows;
    scale_shape.push_back(layout.ScaleCols(g.full_cols));
    QP_ASSIGN_OR_RETURN(TensorView weight,
                        FindSlotTensor(checkpoint, layer, prefix, facts_.layout, Slot::kWeight));
    // A row rank's columns start on a 16-block, so on a whole byte.
    QP_RETURN_IF_ERROR(CopyByteRows(
        weight, params->request, g, leg, key_, StDtype::kU8, weight_shape, weight_shape.back(),
        layout.WeightRowBytes(g.src_col), &params->tensor(Slot::kWeight)));
    QP_ASSIGN_OR_RETURN(TensorView scale, FindSlotTensor(checkpoint, layer, prefix, facts_.layout,
                                                         Slot::kWeightScale));
    ParamTensor& scales = params->tensor(Slot::kWeightScale);
    const int64_t first_block = g.src_col / layout.group;
    QP_RETURN_IF_ERROR(CopyByteRows(scale, params->request, g, leg, key_, StDtype::kF8E4M3,
                                    scale_shape, scale_shape.back(), first_block, &scales));
    // e4m3fn NaN is S.1111.111; a block scale is never NaN.
    const uint8_t* bytes = scales.data<uint8_t>() + g.leg_offsets[leg] * scales.cols();
    for (int64_t i = 0; i < g.leg_rows[leg] * scales.cols(); ++i) {
      if ((bytes[i] & 0x7F) == 0x7F) {
        return InvalidInput(
            fmt::format("{}: tensor {} holds an fp8 NaN (0x{:02X}) at row {}, block {}", layer,
                        scale.info->name, bytes[i],
                        specs_internal::SourceRow(params->request, g, leg, i / scales.cols()),
                        first_block + i % scales.cols()));
      }
    }
    QP_ASSIGN_OR_RETURN(params->leg_weight_scales[leg],
                        ReadGlobal(checkpoint, layer, prefix, Slot::kWeightGlobalScale));
    if (StoresInputGlobal(activation_)) {
      QP_ASSIGN_OR_RETURN(params->leg_input_scales[leg],
                          ReadGlobal(checkpoint, layer, prefix, Slot::kInputScale));
    }
    return {};
  }
};

// ---------------------------------------------------------------------------------------------
// The family row.

Result<SpecKey> KeyWith(const QuantScheme& s, ScaleVariant scales) {
  SpecKey key{kNvfp4Family};
  key.group = s.weight.group_size.value_or(kNvfp4Group);
  key.scales = scales;
  return key;
}

bool IsNvfp4(const QuantScheme& s) { return s.weight.dtype == QDType::kNVFP4; }

class Nvfp4Family final : public SpecFamilyRow {
 public:
  SpecFamily family() const override { return kNvfp4Family; }
  std::string_view name() const override { return "nvfp4_block"; }
  std::string_view grammar() const override { return "nvfp4_block_<g>_linear|128x4"; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto p = specs_internal::IdParameters(spec_id, name());
    if (!p || p->size() != 2) return std::nullopt;
    std::optional<int64_t> group = specs_internal::ParsePositive((*p)[0]);
    if (!group) return std::nullopt;
    SpecKey key{kNvfp4Family};
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
    if (StoresInputGlobal(act)) slots.push_back(Slot::kInputScale);  // the input divisor
    slots.push_back(Slot::kBias);
    return slots;
  }
  // 128x4: scales padded to [ceil(N, 128), ceil(ceil(K / g), 4)] and swizzled the way Blackwell
  // block-scaled GEMMs read them; materialize picks it for sm100 and newer.
  int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols, int) const override {
    return Nvfp4Layout{key.group, key.scales == ScaleVariant::kTiled128x4}.BytesFor(rows, cols);
  }
  Result<std::unique_ptr<WeightSpec>> Make(const SpecKey& key, const ActivationQuant& act,
                                           const LoadFacts& facts) const override {
    if (key.group != kNvfp4Group) {
      return Unsupported(fmt::format(
          "spec {}: loading this layout is not implemented in this build", Format(key)));
    }
    if (facts.layout != SourceLayout::kModelOptNvfp4 &&
        facts.layout != SourceLayout::kCtNvfp4PackQuantized) {
      return Unsupported(fmt::format("{}: NVFP4 weights in source layout {} cannot be loaded",
                                     Format(key), SourceLayoutName(facts.layout)));
    }
    // int8 per token: --int8-activations on W4A16 weights.
    const bool int8 = act.SymmetricPerToken(QDType::kINT8) && key.scales == ScaleVariant::kLinear;
    if (act.mode != ActMode::kNone && !int8 &&
        (act.dtype != QDType::kNVFP4 || act.mode != ActMode::kDynamicGroup ||
         act.group_size != kNvfp4Group)) {
      return Unsupported(
          fmt::format("{} with {} activations has no kernel mode", Format(key), act.ToString()));
    }
    return std::unique_ptr<WeightSpec>(std::make_unique<Nvfp4Spec>(key, act, facts));
  }
  // W4A16: fp32 accumulation against double, about sqrt(K) · 2^-24 (1e-4 leaves room). W4A4: X
  // rounded to E2M1 in fp32 and in the double reference agree but for values on a rounding tie,
  // where one product moves by an E2M1 step (up to 2 of 6, a third of its block's largest
  // value); 5e-2 of the largest output holds that for the K of real layers (128 and up).
  double Tolerance(const SpecKey&, ActMode mode) const override {
    return mode == ActMode::kNone ? 1e-4 : 5e-2;
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
