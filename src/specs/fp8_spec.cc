// Fp8Spec: fp8 e4m3 weights with per-tensor, per-channel or 2-D block scales
// (spec_ids fp8_per_tensor, fp8_per_channel, fp8_block_<bn>_<bk>), and the three families' rows.
//
// Layouts: Fp8RowScaledLayout (per-tensor, per-channel) and Fp8BlockLayout (block), in
// fp8_family.h. Source layouts (SourceTensors names them; the scheme's LoadFacts choose one):
// kFp8ScaleInv (DeepSeek: `weight_scale_inv` *multiplies*, despite the name), kFp8Scale,
// kCtFloatQuantized and kModelOptFp8 (`weight_scale`). Per leg `<prefix>`:
//   weight              F8_E4M3 [rows, K]; W = weight × scale.
//   per-tensor scale    one value ([] or [1]); broadcast after loading to the rows of its leg, so
//                       fused legs keep their own scales (lossless).
//   per-channel scale   [rows] or [rows, 1].
//   block scale         [ceil(rows/bn), ceil(K/bk)] (ModelOpt FP8_PB_WO: [ceil(rows/bn), 1,
//                       ceil(K/bk), 1], a scalar for one block); each leg keeps its own grid
//                       (fp8_family.h).
//   input_scale         static activations: one value per leg; the layer uses their max, since
//                       the legs share one X.
// Fused legs on block grids: any leg widths (one grid per leg). A tensor-parallel split keeps
// whole blocks: each leg's slice starts on a block row and is a multiple of bn rows or ends with
// the leg (a replicated KV head), and K's slice is a multiple of bk (row parallel).
// High-precision checkpoints are quantized at load into these layouts by online/fp8_quantize.cc.
// Non-goals: e5m2 weights, MoE experts.
#include <algorithm>
#include <span>

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/fp8_family.h"
#include "src/specs/spec_common.h"
#include "src/specs/spec_id_grammar.h"

namespace quantpath {
namespace {

using specs_internal::ComputeGeometry;
using specs_internal::ExpectSourceRule;
using specs_internal::FindSlotTensor;
using specs_internal::ReadScales;
using specs_internal::ShardGeometry;

std::string LegName(const AllocationRequest& request, size_t leg) {
  if (leg < request.leg_names.size()) return request.leg_names[leg];
  return fmt::format("leg {}", leg);
}

std::string LegList(const AllocationRequest& request, const std::vector<int64_t>& rows) {
  std::vector<std::string> parts;
  for (size_t leg = 0; leg < rows.size(); ++leg) {
    parts.push_back(fmt::format("{} = {}", LegName(request, leg), rows[leg]));
  }
  return Join(parts, ", ");
}

// A tensor-parallel slice keeps whole blocks of each leg's grid.
Status CheckBlockAlignment(const AllocationRequest& request, const ShardGeometry& g,
                           const Fp8BlockLayout& block, const SpecKey& key) {
  if (g.cols != g.full_cols && g.cols % block.block_k != 0) {
    return InvalidInput(fmt::format(
        "{}: {} with tensor-parallel size {} splits K = {} into slices of {} columns, which is "
        "not a multiple of the block's {} columns",
        request.layer, key.ToId(), request.tp_size, g.full_cols, g.cols, block.block_k));
  }
  for (size_t leg = 0; leg < g.leg_rows.size(); ++leg) {
    const bool ends_leg = g.leg_src_rows[leg] + g.leg_rows[leg] == g.full_leg_rows[leg];
    if (g.leg_src_rows[leg] % block.block_n == 0 &&
        (g.leg_rows[leg] % block.block_n == 0 || ends_leg)) {
      continue;
    }
    return InvalidInput(fmt::format(
        "{}: {} with tensor-parallel size {} gives each rank slices of {} ({}), and {} is not "
        "a multiple of the block's {} rows",
        request.layer, key.ToId(), request.tp_size,
        g.leg_rows.size() > 1 ? "the fused legs" : "the weight", LegList(request, g.leg_rows),
        LegName(request, leg), block.block_n));
  }
  return {};
}

// Bytes of this rank's weight of an fp8 key, scales included.
int64_t BytesOf(const SpecKey& key, const ShardGeometry& g) {
  if (key.family == kFp8BlockFamily) {
    return Fp8BlockLayout{key.block[0], key.block[1]}.BytesForLegs(g.leg_rows, g.cols);
  }
  return Fp8RowScaledLayout{}.BytesFor(g.rows, g.cols);
}

class Fp8Spec final : public specs_internal::KeyedSpec {
 public:
  using KeyedSpec::KeyedSpec;

  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    LinearParams params = specs_internal::NewParams(request, g, key_);
    params.tensor(Slot::kWeight) = ParamTensor(QDType::kFP8E4M3, g.rows, g.cols);
    if (key_.family == kFp8BlockFamily) {
      const Fp8BlockLayout block = Layout();
      params.tensor(Slot::kWeightScale) =
          ParamTensor(QDType::kFP32, block.ScaleRowsOfLegs(g.leg_rows), block.ScaleCols(g.cols));
    } else {
      params.tensor(Slot::kWeightScale) = ParamTensor(QDType::kFP32, g.rows, 1);
    }
    if (key_.family == kFp8PerTensorFamily) {
      params.leg_weight_scales.assign(g.leg_rows.size(), 0.0f);
    }
    if (activation_.mode == ActMode::kStaticPerTensor) {
      params.tensor(Slot::kInputScale) = ParamTensor(QDType::kFP32, 1, 1);
      params.leg_input_scales.assign(g.leg_rows.size(), 0.0f);
    }
    return params;
  }

  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    return BytesOf(key_, g) + specs_internal::BiasBytes(request, g);
  }

  Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
              LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLegPrefixes(*params, leg_prefixes));
    QP_RETURN_IF_ERROR(specs_internal::ExpectLayout(
        params->request.layer, key_, facts_.layout,
        {SourceLayout::kFp8ScaleInv, SourceLayout::kFp8Scale, SourceLayout::kCtFloatQuantized,
         SourceLayout::kModelOptFp8}));
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(params->request));
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      QP_RETURN_IF_ERROR(LoadWeight(checkpoint, leg_prefixes[leg], g, leg, params));
      QP_RETURN_IF_ERROR(LoadScale(checkpoint, leg_prefixes[leg], g, leg, params));
      if (activation_.mode == ActMode::kStaticPerTensor) {
        QP_RETURN_IF_ERROR(LoadInputScale(checkpoint, leg_prefixes[leg], leg, params));
      }
    }
    QP_RETURN_IF_ERROR(specs_internal::LoadBias(checkpoint, leg_prefixes, g, params));
    params->loaded = true;
    return {};
  }

  Status ProcessAfterLoading(LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLoadedNotProcessed(*params));
    if (key_.family == kFp8PerTensorFamily) {
      // Broadcast each leg's scalar to its rows: exact, and one per-row layout for kernels.
      float* rows = params->tensor(Slot::kWeightScale).data<float>();
      int64_t offset = 0;
      for (size_t leg = 0; leg < params->leg_rows.size(); ++leg) {
        std::fill(rows + offset, rows + offset + params->leg_rows[leg],
                  params->leg_weight_scales[leg]);
        offset += params->leg_rows[leg];
      }
      params->leg_weight_scales.clear();
    }
    if (activation_.mode == ActMode::kStaticPerTensor) {
      params->tensor(Slot::kInputScale).data<float>()[0] =
          *std::max_element(params->leg_input_scales.begin(), params->leg_input_scales.end());
      params->leg_input_scales.clear();
    }
    params->processed = true;
    return {};
  }

 private:
  Fp8BlockLayout Layout() const { return {key_.block[0], key_.block[1]}; }

  // Leg `leg` whole, as the source layout's rules see it: the key's scale granularity.
  SourceLeg Leg(const ShardGeometry& g, size_t leg) const {
    SourceLeg source;
    source.rows = g.full_leg_rows[leg];
    source.cols = g.full_cols;
    source.weight.dtype = QDType::kFP8E4M3;
    source.weight.load = facts_;
    if (key_.family == kFp8BlockFamily) {
      source.weight.granularity = Granularity::kBlock;
      source.weight.block_shape = key_.block;
    } else {
      source.weight.granularity =
          key_.family == kFp8PerTensorFamily ? Granularity::kPerTensor : Granularity::kPerChannel;
    }
    return source;
  }

  // The request's geometry, with the block grid's alignment rules.
  Result<ShardGeometry> Geometry(const AllocationRequest& request) const {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, ComputeGeometry(request));
    if (key_.family == kFp8BlockFamily) {
      QP_RETURN_IF_ERROR(CheckBlockAlignment(request, g, Layout(), key_));
    }
    return g;
  }

  Status LoadWeight(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                    size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(TensorView view,
                        FindSlotTensor(checkpoint, layer, prefix, facts_.layout, Slot::kWeight));
    QP_RETURN_IF_ERROR(ExpectSourceRule(view, layer, facts_.layout, Slot::kWeight, Leg(g, leg)));
    QP_RETURN_IF_ERROR(specs_internal::CopyRows(view, layer, g.leg_src_rows[leg], g.src_col,
                                                g.leg_rows[leg], g.leg_offsets[leg],
                                                &params->tensor(Slot::kWeight)));
    // e4m3fn NaN is S.1111.111; a checkpoint weight is never NaN.
    const uint8_t* bytes =
        params->tensor(Slot::kWeight).data<uint8_t>() + g.leg_offsets[leg] * g.cols;
    const int64_t count = g.leg_rows[leg] * g.cols;
    for (int64_t i = 0; i < count; ++i) {
      if ((bytes[i] & 0x7F) == 0x7F) {
        return InvalidInput(
            fmt::format("{}: tensor {} holds an fp8 NaN (0x{:02X}) at row {}, "
                        "column {} of this rank's slice",
                        layer, view.info->name, bytes[i], i / g.cols, i % g.cols));
      }
    }
    return {};
  }

  Status LoadScale(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                   size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(TensorView view, FindSlotTensor(checkpoint, layer, prefix, facts_.layout,
                                                        Slot::kWeightScale));
    QP_RETURN_IF_ERROR(
        ExpectSourceRule(view, layer, facts_.layout, Slot::kWeightScale, Leg(g, leg)));
    ParamTensor& scales = params->tensor(Slot::kWeightScale);
    if (key_.family == kFp8PerTensorFamily) {
      QP_ASSIGN_OR_RETURN(std::vector<float> scale, ReadScales(view, layer));
      params->leg_weight_scales[leg] = scale[0];
      return {};
    }
    if (key_.family == kFp8PerChannelFamily) {
      QP_ASSIGN_OR_RETURN(std::vector<float> scale, ReadScales(view, layer));
      float* dst = scales.data<float>() + g.leg_offsets[leg];
      std::copy_n(scale.begin() + g.leg_src_rows[leg], g.leg_rows[leg], dst);
      return {};
    }
    {
      const Fp8BlockLayout block = Layout();
      QP_ASSIGN_OR_RETURN(std::vector<float> scale, ReadScales(view, layer));
      // Slices start on block boundaries (CheckBlockAlignment), so they are whole grid cells; the
      // leg's grid follows the grids of the legs before it.
      const int64_t src_cols = block.ScaleCols(g.full_cols);
      const int64_t first_row = g.leg_src_rows[leg] / block.block_n;
      const int64_t first_col = g.src_col / block.block_k;
      const int64_t dst_row =
          block.ScaleRowsOfLegs(std::span<const int64_t>(g.leg_rows).first(leg));
      const int64_t cols = scales.cols();
      for (int64_t r = 0; r < block.ScaleRows(g.leg_rows[leg]); ++r) {
        std::copy_n(scale.begin() + (first_row + r) * src_cols + first_col, cols,
                    scales.data<float>() + (dst_row + r) * cols);
      }
      return {};
    }
  }

  Status LoadInputScale(const Checkpoint& checkpoint, const std::string& prefix, size_t leg,
                        LinearParams* params) const {
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(TensorView view, FindSlotTensor(checkpoint, layer, prefix, facts_.layout,
                                                        Slot::kInputScale));
    QP_RETURN_IF_ERROR(ExpectSourceRule(view, layer, facts_.layout, Slot::kInputScale, {}));
    QP_ASSIGN_OR_RETURN(std::vector<float> scale, ReadScales(view, layer));
    if (!(scale[0] > 0.0f)) {
      return InvalidInput(
          fmt::format("{}: tensor {} is {}, but an activation scale divides and "
                      "must be positive",
                      layer, view.info->name, scale[0]));
    }
    params->leg_input_scales[leg] = scale[0];
    return {};
  }
};

// ---------------------------------------------------------------------------------------------
// The family rows: fp8_per_tensor, fp8_per_channel, fp8_block_<bn>_<bk>.

template <Granularity kGranularity>
bool IsFp8With(const QuantScheme& scheme) {
  return scheme.weight.dtype == QDType::kFP8E4M3 && scheme.weight.granularity == kGranularity;
}

// What every fp8 family refuses: asymmetric weights.
Status CheckStorable(const QuantScheme& scheme) {
  if (!scheme.weight.symmetric) {
    return Unsupported(
        fmt::format("{}: asymmetric fp8 weights have no spec", scheme.CanonicalName()));
  }
  return {};
}

template <const SpecKey& kKey>
Result<SpecKey> RowScaledKeyFor(const QuantScheme& scheme) {
  QP_RETURN_IF_ERROR(CheckStorable(scheme));
  return kKey;
}

Result<SpecKey> BlockKeyFor(const QuantScheme& scheme) {
  QP_RETURN_IF_ERROR(CheckStorable(scheme));
  const auto& shape = scheme.weight.block_shape;
  if (!shape || (*shape)[0] <= 0 || (*shape)[1] <= 0) {
    return InvalidInput(fmt::format("{}: block fp8 weights need a positive block_shape [n, k]",
                                    scheme.CanonicalName()));
  }
  return Fp8BlockKey((*shape)[0], (*shape)[1]);
}

// One fp8 row: everything but the id grammar and the candidate is shared.
class Fp8FamilyRow : public SpecFamilyRow {
 public:
  std::vector<Slot> Slots(const SpecKey&, const ActivationQuant& act) const override {
    std::vector<Slot> slots = {Slot::kWeight, Slot::kWeightScale, Slot::kBias};
    if (act.mode == ActMode::kStaticPerTensor) slots.push_back(Slot::kInputScale);
    return slots;
  }
  int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols, int) const override {
    if (key.family == kFp8BlockFamily) {
      return Fp8BlockLayout{key.block[0], key.block[1]}.BytesFor(rows, cols);
    }
    return Fp8RowScaledLayout{}.BytesFor(rows, cols);
  }
  Result<std::unique_ptr<WeightSpec>> Make(const SpecKey& key, const ActivationQuant& act,
                                           const LoadFacts& facts) const override {
    if (act.mode != ActMode::kNone && (act.dtype != QDType::kFP8E4M3 || !act.symmetric)) {
      return Unsupported(
          fmt::format("{} with {} activations has no kernel mode", Format(key), act.ToString()));
    }
    return std::unique_ptr<WeightSpec>(std::make_unique<Fp8Spec>(key, act, facts));
  }
  // fp32 accumulation differs from double by about sqrt(K) · 2^-24 (1e-4 leaves room); with X
  // rounded to fp8, a value near a rounding tie may round the other way in fp32 than in double,
  // moving one product by an fp8 step (2^-3 · |x_k · w_k|), within 2e-2 of the largest output for
  // the K of real layers (256 and up).
  double Tolerance(const SpecKey&, ActMode mode) const override {
    return mode == ActMode::kNone ? 1e-4 : 2e-2;
  }
};

template <const SpecKey& kKey>
class Fp8RowScaledFamily final : public Fp8FamilyRow {
 public:
  Fp8RowScaledFamily(std::string_view name, std::string_view accepts)
      : name_(name), accepts_(accepts) {}
  SpecFamily family() const override { return kKey.family; }
  std::string_view name() const override { return name_; }
  std::string_view grammar() const override { return name_; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto params = specs_internal::IdParameters(spec_id, name_);
    if (!params || !params->empty()) return std::nullopt;
    return kKey;
  }
  std::string Format(const SpecKey&) const override { return std::string(name_); }
  std::vector<SpecCandidate> Candidates() const override;

 private:
  std::string_view name_;
  std::string_view accepts_;
};

template <>
std::vector<SpecCandidate> Fp8RowScaledFamily<kFp8PerTensorKey>::Candidates() const {
  return {{accepts_, "any", IsFp8With<Granularity::kPerTensor>, specs_internal::AnyDevice,
           RowScaledKeyFor<kFp8PerTensorKey>, 10}};
}
template <>
std::vector<SpecCandidate> Fp8RowScaledFamily<kFp8PerChannelKey>::Candidates() const {
  return {{accepts_, "any", IsFp8With<Granularity::kPerChannel>, specs_internal::AnyDevice,
           RowScaledKeyFor<kFp8PerChannelKey>, 10}};
}

class Fp8BlockFamily final : public Fp8FamilyRow {
 public:
  SpecFamily family() const override { return kFp8BlockFamily; }
  std::string_view name() const override { return "fp8_block"; }
  std::string_view grammar() const override { return "fp8_block_<bn>_<bk>"; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto params = specs_internal::IdParameters(spec_id, name());
    if (!params || params->size() != 2) return std::nullopt;
    std::optional<int64_t> n = specs_internal::ParsePositive((*params)[0]);
    std::optional<int64_t> k = specs_internal::ParsePositive((*params)[1]);
    if (!n || !k) return std::nullopt;
    return Fp8BlockKey(*n, *k);
  }
  std::string Format(const SpecKey& key) const override {
    return fmt::format("fp8_block_{}_{}", key.block[0], key.block[1]);
  }
  std::vector<SpecCandidate> Candidates() const override {
    return {{"fp8 e4m3 weights with 2-D block scales", "any", IsFp8With<Granularity::kBlock>,
             specs_internal::AnyDevice, BlockKeyFor, 10}};
  }
};

const SpecFamilyRegistrar kRegisterPerTensor(std::make_unique<Fp8RowScaledFamily<kFp8PerTensorKey>>(
    "fp8_per_tensor", "fp8 e4m3 weights with per-tensor scales"));
const SpecFamilyRegistrar kRegisterPerChannel(
    std::make_unique<Fp8RowScaledFamily<kFp8PerChannelKey>>(
        "fp8_per_channel", "fp8 e4m3 weights with per-channel scales"));
const SpecFamilyRegistrar kRegisterBlock(std::make_unique<Fp8BlockFamily>());

}  // namespace
std::vector<int64_t> Fp8BlockGridRows(const Fp8BlockLayout& layout, const LinearParams& params) {
  const std::vector<int64_t> legs =
      params.leg_rows.empty() ? std::vector<int64_t>{params.rows} : params.leg_rows;
  std::vector<int64_t> grid_row;
  grid_row.reserve(static_cast<size_t>(params.rows));
  int64_t first = 0;
  for (int64_t rows : legs) {
    for (int64_t r = 0; r < rows; ++r) grid_row.push_back(first + r / layout.block_n);
    first += layout.ScaleRows(rows);
  }
  return grid_row;
}

}  // namespace quantpath
