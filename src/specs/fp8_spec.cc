// Fp8Spec: fp8 e4m3 weights with per-tensor, per-channel or 2-D block scales
// (spec_ids fp8_per_tensor, fp8_per_channel, fp8_block_<bn>_<bk>).
//
// Layouts: Fp8RowScaledLayout (per-tensor, per-channel) and Fp8BlockLayout (block), in specs.h.
// Source layouts, per leg `<prefix>`:
//   <prefix>.weight            F8_E4M3 [rows, K]; W = weight × scale.
//   per-tensor:  <prefix>.weight_scale  one value ([] or [1]); broadcast after loading to the
//                rows of its leg, so fused legs keep their own scales (lossless).
//   per-channel: <prefix>.weight_scale  [rows] or [rows, 1].
//   block:       <prefix>.weight_scale_inv (DeepSeek: it *multiplies*, despite the name) or
//                <prefix>.weight_scale (compressed-tensors), [ceil(rows/bn), ceil(K/bk)].
//   static activations: <prefix>.input_scale, one value per leg; the layer uses their max, since
//                the legs share one X.
// Fused legs on a block grid: every leg but the last must be a multiple of bn rows (DeepSeek's
// fused_qkv_a_proj = 1536 + 576 is legal); with a tensor-parallel split every leg's slice must be
// (column parallel) and K's slice must be a multiple of bk (row parallel), as vLLM requires.
// Non-goals: e5m2 weights, quantizing high-precision checkpoints at load time, MoE experts.
#include <algorithm>

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/spec_common.h"

namespace quantpath {
namespace {

using specs_internal::ComputeGeometry;
using specs_internal::ExpectElements;
using specs_internal::ExpectShape;
using specs_internal::FindTensor;
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

// The block grid's alignment rules for fused legs and tensor-parallel slices.
Status CheckBlockAlignment(const AllocationRequest& request, const ShardGeometry& g,
                           const Fp8BlockLayout& block, const std::string& spec_id) {
  const bool tp_split = request.tp_size > 1 && request.parallel == Parallel::kColumn;
  if (request.tp_size > 1 && request.parallel == Parallel::kRow && g.cols % block.block_k != 0) {
    return InvalidInput(fmt::format(
        "{}: {} with tensor-parallel size {} splits K = {} into slices of {} columns, which is "
        "not a multiple of the block's {} columns",
        request.layer, spec_id, request.tp_size, g.full_cols, g.cols, block.block_k));
  }
  const size_t legs = g.leg_rows.size();
  const size_t checked = tp_split ? legs : legs - 1;
  for (size_t leg = 0; leg < checked; ++leg) {
    if (g.leg_rows[leg] % block.block_n == 0) continue;
    if (tp_split) {
      return InvalidInput(fmt::format(
          "{}: {} with tensor-parallel size {} gives each rank slices of {} ({}), and {} is not "
          "a multiple of the block's {} rows",
          request.layer, spec_id, request.tp_size, legs > 1 ? "the fused legs" : "the weight",
          LegList(request, g.leg_rows), LegName(request, leg), block.block_n));
    }
    return InvalidInput(fmt::format(
        "{}: {} needs every fused leg but the last to be a multiple of the block's {} rows; legs "
        "{}: {} is not",
        request.layer, spec_id, block.block_n, LegList(request, g.full_leg_rows),
        LegName(request, leg)));
  }
  return {};
}

class Fp8Spec final : public WeightSpec {
 public:
  Fp8Spec(const SpecKey& key, const ActivationQuant& activation)
      : key_(key), id_(key.ToId()), activation_(activation) {}

  const std::string& spec_id() const override { return id_; }
  const SpecKey& key() const override { return key_; }
  const ActivationQuant& activation() const override { return activation_; }

  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    LinearParams params = specs_internal::NewParams(request, g, id_);
    params.weight = ParamTensor(FamilyInfo(key_.family).weight_dtype, g.rows, g.cols);
    if (key_.family == SpecFamily::kFp8Block) {
      const Fp8BlockLayout block = Layout();
      params.weight_scale =
          ParamTensor(QDType::kFP32, block.ScaleRows(g.rows), block.ScaleCols(g.cols));
    } else {
      params.weight_scale = ParamTensor(QDType::kFP32, g.rows, 1);
    }
    if (key_.family == SpecFamily::kFp8PerTensor) {
      params.leg_weight_scales.assign(g.leg_rows.size(), 0.0f);
    }
    if (activation_.mode == ActMode::kStaticPerTensor) {
      params.input_scale = ParamTensor(QDType::kFP32, 1, 1);
      params.leg_input_scales.assign(g.leg_rows.size(), 0.0f);
    }
    return params;
  }

  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    return LayoutBytes(key_, g.rows, g.cols, 0) + specs_internal::BiasBytes(request, g);
  }

  Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
              LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLegPrefixes(*params, leg_prefixes));
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
    if (key_.family == SpecFamily::kFp8PerTensor) {
      // Broadcast each leg's scalar to its rows: exact, and one per-row layout for kernels.
      float* rows = params->weight_scale.data<float>();
      int64_t offset = 0;
      for (size_t leg = 0; leg < params->leg_rows.size(); ++leg) {
        std::fill(rows + offset, rows + offset + params->leg_rows[leg],
                  params->leg_weight_scales[leg]);
        offset += params->leg_rows[leg];
      }
      params->leg_weight_scales.clear();
    }
    if (activation_.mode == ActMode::kStaticPerTensor) {
      params->input_scale.data<float>()[0] =
          *std::max_element(params->leg_input_scales.begin(), params->leg_input_scales.end());
      params->leg_input_scales.clear();
    }
    params->processed = true;
    return {};
  }

 private:
  Fp8BlockLayout Layout() const { return {key_.block[0], key_.block[1]}; }

  // The request's geometry, with the block grid's alignment rules.
  Result<ShardGeometry> Geometry(const AllocationRequest& request) const {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, ComputeGeometry(request));
    if (key_.family == SpecFamily::kFp8Block) {
      QP_RETURN_IF_ERROR(CheckBlockAlignment(request, g, Layout(), id_));
    }
    return g;
  }

  Status LoadWeight(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                    size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(TensorView view, FindTensor(checkpoint, layer, prefix, "weight"));
    if (view.info->dtype != StDtype::kF8E4M3) {
      return InvalidInput(fmt::format("{}: tensor {} is {}, but {} expects F8_E4M3 weights", layer,
                                      view.info->name, StDtypeName(view.info->dtype), id_));
    }
    QP_RETURN_IF_ERROR(ExpectShape(view, layer, {g.full_leg_rows[leg], g.full_cols}));
    QP_RETURN_IF_ERROR(specs_internal::CopyRows(view, layer, g.leg_src_rows[leg], g.src_col,
                                                g.leg_rows[leg], g.leg_offsets[leg],
                                                &params->weight));
    // e4m3fn NaN is S.1111.111; a checkpoint weight is never NaN.
    const uint8_t* bytes = params->weight.data<uint8_t>() + g.leg_offsets[leg] * g.cols;
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

  // The name of a leg's weight scale: block scales may be DeepSeek's weight_scale_inv or
  // compressed-tensors' weight_scale, and both multiply.
  Result<TensorView> FindScale(const Checkpoint& checkpoint, const std::string& layer,
                               const std::string& prefix) const {
    if (key_.family != SpecFamily::kFp8Block) {
      return FindTensor(checkpoint, layer, prefix, "weight_scale");
    }
    const std::string inv = prefix + ".weight_scale_inv";
    const std::string plain = prefix + ".weight_scale";
    if (checkpoint.Has(inv) && checkpoint.Has(plain)) {
      return InvalidInput(fmt::format("{}: both {} and {} exist; a block-fp8 leg has one scale",
                                      layer, inv, plain));
    }
    if (!checkpoint.Has(inv) && !checkpoint.Has(plain)) {
      return NotFound(fmt::format("{}: neither {} nor {} is in the checkpoint", layer, inv, plain));
    }
    return FindTensor(checkpoint, layer, prefix,
                      checkpoint.Has(inv) ? "weight_scale_inv" : "weight_scale");
  }

  Status LoadScale(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                   size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(TensorView view, FindScale(checkpoint, layer, prefix));
    const int64_t full_rows = g.full_leg_rows[leg];
    switch (key_.family) {
      case SpecFamily::kFp8PerTensor: {
        QP_RETURN_IF_ERROR(ExpectElements(view, layer, 1, "one per-tensor scale"));
        QP_ASSIGN_OR_RETURN(std::vector<float> scale, ReadScales(view, layer));
        params->leg_weight_scales[leg] = scale[0];
        return {};
      }
      case SpecFamily::kFp8PerChannel: {
        QP_RETURN_IF_ERROR(ExpectElements(view, layer, full_rows, "one scale per output row"));
        QP_ASSIGN_OR_RETURN(std::vector<float> scale, ReadScales(view, layer));
        float* dst = params->weight_scale.data<float>() + g.leg_offsets[leg];
        std::copy_n(scale.begin() + g.leg_src_rows[leg], g.leg_rows[leg], dst);
        return {};
      }
      case SpecFamily::kFp8Block: {
        const Fp8BlockLayout block = Layout();
        QP_RETURN_IF_ERROR(
            ExpectShape(view, layer, {block.ScaleRows(full_rows), block.ScaleCols(g.full_cols)}));
        QP_ASSIGN_OR_RETURN(std::vector<float> scale, ReadScales(view, layer));
        // Slices start on block boundaries (CheckBlockAlignment), so they are whole grid cells.
        const int64_t src_cols = block.ScaleCols(g.full_cols);
        const int64_t first_row = g.leg_src_rows[leg] / block.block_n;
        const int64_t first_col = g.src_col / block.block_k;
        const int64_t dst_row = g.leg_offsets[leg] / block.block_n;
        const int64_t cols = params->weight_scale.cols();
        for (int64_t r = 0; r < block.ScaleRows(g.leg_rows[leg]); ++r) {
          std::copy_n(scale.begin() + (first_row + r) * src_cols + first_col, cols,
                      params->weight_scale.data<float>() + (dst_row + r) * cols);
        }
        return {};
      }
      case SpecFamily::kBf16:
        break;
    }
    return InternalError(fmt::format("{}: {} has no fp8 scale layout", layer, id_));
  }

  Status LoadInputScale(const Checkpoint& checkpoint, const std::string& prefix, size_t leg,
                        LinearParams* params) const {
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(TensorView view, FindTensor(checkpoint, layer, prefix, "input_scale"));
    QP_RETURN_IF_ERROR(ExpectElements(view, layer, 1, "one static activation scale"));
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

  const SpecKey key_;
  const std::string id_;
  const ActivationQuant activation_;
};

}  // namespace

std::unique_ptr<WeightSpec> MakeFp8Spec(const SpecKey& key, const ActivationQuant& activation) {
  return std::make_unique<Fp8Spec>(key, activation);
}

}  // namespace quantpath
