// Request validation, tensor-parallel geometry and checkpoint slice copies shared by the specs.
#include "src/specs/spec_common.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "fmt/format.h"
#include "quantpath/numeric.h"

namespace quantpath::specs_internal {
namespace {

// This rank's slice [*start, *start + *size) of a dimension of `full` cut into whole blocks of
// request.split_block, c = ⌈blocks / tp⌉ per rank, the last rank holding the rest (vLLM's gpt-oss
// loader: `cdiv(intermediate_size // 32, tp_size) * 32` per rank, clipped at the end). Every rank
// must hold at least one block, so the check does not depend on the rank asked for.
Status BlockSlice(const AllocationRequest& request, int64_t full, std::string_view what,
                  int64_t* start, int64_t* size) {
  const int64_t block = request.split_block;
  const int64_t tp = request.tp_size;
  const int64_t blocks = (full + block - 1) / block;
  const int64_t rank_blocks = (blocks + tp - 1) / tp;
  const int64_t span = rank_blocks * block;
  if ((tp - 1) * span >= full) {
    return InvalidInput(fmt::format(
        "{}: {} = {} is {} blocks of {}; ⌈{} / {}⌉ = {} per tensor-parallel rank leaves rank {} "
        "without one",
        request.layer, what, full, blocks, block, blocks, tp, rank_blocks, tp - 1));
  }
  *start = request.tp_rank * span;
  *size = std::min(span, full - *start);
  return {};
}

// A stacked projection (AllocationRequest::stacked) is one expert of its tensors, one leg, and
// rows first_row::row_step of that expert's.
Status CheckStacked(const AllocationRequest& request, size_t legs) {
  if (!request.stacked) return {};
  const StackedExpert& s = *request.stacked;
  if (s.expert < 0 || s.expert >= s.experts || s.row_step < 1 || s.first_row < 0 ||
      s.first_row >= s.row_step || legs != 1) {
    return InvalidInput(fmt::format(
        "{}: expert {} of {}, rows {}::{} of {} leg(s), is not one projection of stacked expert "
        "tensors",
        request.layer, s.expert, s.experts, s.first_row, s.row_step, legs));
  }
  return {};
}

}  // namespace

void StoreFloat(ParamTensor* tensor, int64_t i, float value) {
  switch (tensor->dtype()) {
    case QDType::kBF16:
      tensor->data<uint16_t>()[i] = FloatToBf16(value);
      break;
    case QDType::kFP16:
      tensor->data<uint16_t>()[i] = FloatToFp16(value);
      break;
    default:
      tensor->data<float>()[i] = value;
      break;
  }
}

Status ExpectSourceRule(const TensorView& view, std::string_view layer, SourceLayout layout,
                        Slot slot, const SourceLeg& leg) {
  const std::optional<SourceTensorRule> rule = SourceRule(layout, slot, leg);
  if (!rule) return {};
  if (!rule->AcceptsDtype(view.info->dtype)) {
    return InvalidInput(fmt::format("{}: tensor {} is {}, expected {}", layer, view.info->name,
                                    StDtypeName(view.info->dtype), rule->DtypesText()));
  }
  if (!rule->AcceptsShape(view.info->shape)) {
    return InvalidInput(fmt::format("{}: tensor {} has shape {}, expected {}", layer,
                                    view.info->name, ShapeString(view.info->shape),
                                    rule->ShapesText()));
  }
  return {};
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t d : shape) parts.push_back(std::to_string(d));
  return "[" + Join(parts, ", ") + "]";
}

std::optional<StDtype> StorageDtypeOf(QDType dtype) {
  switch (dtype) {
    case QDType::kBF16:
      return StDtype::kBF16;
    case QDType::kFP16:
      return StDtype::kF16;
    case QDType::kFP32:
      return StDtype::kF32;
    case QDType::kFP8E4M3:
      return StDtype::kF8E4M3;
    case QDType::kFP8E5M2:
      return StDtype::kF8E5M2;
    default:
      return std::nullopt;
  }
}

std::string LegLabel(const AllocationRequest& request, size_t leg) {
  if (leg < request.leg_names.size()) return "leg " + request.leg_names[leg];
  if (request.leg_rows.size() > 1) return fmt::format("leg {}", leg);
  return "the weight";
}

Result<ShardGeometry> ComputeGeometry(const AllocationRequest& request) {
  const auto [n, k] = request.shape;
  const std::string& layer = request.layer;
  if (n <= 0 || k <= 0) {
    return InvalidInput(fmt::format("{}: weight shape [{}, {}] is not positive", layer, n, k));
  }
  const QDType dtype = request.params_dtype;
  if (dtype != QDType::kBF16 && dtype != QDType::kFP16 && dtype != QDType::kFP32) {
    return InvalidInput(
        fmt::format("{}: params dtype {} is not bf16, fp16 or fp32", layer, QDTypeName(dtype)));
  }
  if (request.experts > 0) {
    return Unsupported(
        fmt::format("{}: an MoE layer ({} experts) is allocated expert by expert, as the "
                    "projection requests ExpertProjectionRequests makes",
                    layer, request.experts));
  }
  if (request.tp_size < 1 || request.tp_rank < 0 || request.tp_rank >= request.tp_size) {
    return InvalidInput(fmt::format("{}: tensor-parallel rank {} of size {} is out of range", layer,
                                    request.tp_rank, request.tp_size));
  }
  ShardGeometry g;
  g.full_leg_rows = request.leg_rows.empty() ? std::vector<int64_t>{n} : request.leg_rows;
  int64_t sum = 0;
  for (int64_t rows : g.full_leg_rows) {
    if (rows <= 0) {
      return InvalidInput(fmt::format("{}: fused leg widths {} must be positive", layer,
                                      ShapeString(g.full_leg_rows)));
    }
    sum += rows;
  }
  if (sum != n) {
    return InvalidInput(fmt::format("{}: fused leg widths {} add up to {}, not N = {}", layer,
                                    ShapeString(g.full_leg_rows), sum, n));
  }
  QP_RETURN_IF_ERROR(CheckStacked(request, g.full_leg_rows.size()));
  const int tp = request.tp_size;
  const bool column = request.parallel == Parallel::kColumn && tp > 1;
  const bool row = request.parallel == Parallel::kRow && tp > 1;
  const bool blocks = request.split_block > 0;
  g.full_cols = k;
  g.cols = row ? k / tp : k;
  g.src_col = row ? g.cols * request.tp_rank : 0;
  if (row && k % tp != 0) {
    return InvalidInput(
        fmt::format("{}: K = {} is not divisible by tensor-parallel size {}", layer, k, tp));
  }
  if (row && blocks) QP_RETURN_IF_ERROR(BlockSlice(request, k, "K", &g.src_col, &g.cols));
  const std::vector<int64_t>& rank_rows = request.rank_leg_rows;
  if (column && !rank_rows.empty() && (blocks || rank_rows.size() != g.full_leg_rows.size())) {
    return InvalidInput(fmt::format("{}: {} per-rank leg widths given for {} legs{}", layer,
                                    rank_rows.size(), g.full_leg_rows.size(),
                                    blocks ? " split in whole blocks" : ""));
  }
  for (size_t leg = 0; leg < g.full_leg_rows.size(); ++leg) {
    const int64_t full = g.full_leg_rows[leg];
    int64_t rows = full;
    int64_t src = 0;
    if (column && blocks) {
      if (full % tp != 0) {
        return InvalidInput(
            fmt::format("{}: N = {} of {} is not divisible by tensor-parallel size {}", layer, full,
                        LegLabel(request, leg), tp));
      }
      QP_RETURN_IF_ERROR(BlockSlice(request, full, "N of " + LegLabel(request, leg), &src, &rows));
    } else if (column) {
      // `slices` distinct slices of `rows` rows, each held by tp / slices consecutive ranks.
      rows = rank_rows.empty() ? full / tp : rank_rows[leg];
      const int64_t slices = rows > 0 && full % rows == 0 ? full / rows : 0;
      if (slices == 0 || tp % slices != 0) {
        return InvalidInput(
            fmt::format("{}: N = {} of {} is not divisible by tensor-parallel size {}", layer, full,
                        LegLabel(request, leg), tp));
      }
      src = request.tp_rank / (tp / slices) * rows;
    }
    g.leg_offsets.push_back(g.rows);
    g.leg_rows.push_back(rows);
    g.leg_src_rows.push_back(src);
    g.rows += rows;
  }
  g.has_bias = request.bias && (!row || request.tp_rank == 0);
  return g;
}

Result<ShardGeometry> BlockScaledGeometry(const AllocationRequest& request, const SpecKey& key,
                                          int64_t block, bool packed) {
  QP_ASSIGN_OR_RETURN(ShardGeometry g, ComputeGeometry(request));
  if (packed && g.full_cols % 2 != 0) {
    return InvalidInput(fmt::format("{}: {} packs two values per byte, but K = {} is odd",
                                    request.layer, key.ToId(), g.full_cols));
  }
  if (g.cols != g.full_cols && g.cols % block != 0) {
    return InvalidInput(fmt::format(
        "{}: {} with tensor-parallel size {} splits K = {} into slices of {} columns, which is "
        "not a multiple of the {}-column scale block",
        request.layer, key.ToId(), request.tp_size, g.full_cols, g.cols, block));
  }
  return g;
}

}  // namespace quantpath::specs_internal

namespace quantpath {

Result<std::vector<AllocationRequest>> ExpertProjectionRequests(const AllocationRequest& request) {
  const std::string& layer = request.layer;
  if (request.experts <= 0) {
    return InvalidInput(
        fmt::format("{}: not an MoE request (experts = {})", layer, request.experts));
  }
  std::vector<std::string> names = request.leg_names;
  if (names.empty()) names = {"gate_proj", "up_proj", "down_proj"};
  // gpt-oss stores gate and up as one gate_up_proj: its halves are still two [I, H] products,
  // its rows interleaved (gate 0::2, up 1::2).
  const bool interleaved = names.size() == 2;
  if (interleaved) names = {names[0], names[0], names[1]};
  if (names.size() != 3) {
    return InvalidInput(
        fmt::format("{}: an expert has gate, up and down projections, found {} leg names", layer,
                    names.size()));
  }
  const auto [intermediate, hidden] = request.shape;
  std::vector<AllocationRequest> projections;
  for (size_t leg = 0; leg < names.size(); ++leg) {
    AllocationRequest& p = projections.emplace_back(request);
    const bool down = leg == 2;
    p.experts = 0;
    p.shape = down ? std::array<int64_t, 2>{hidden, intermediate}
                   : std::array<int64_t, 2>{intermediate, hidden};
    p.leg_rows = {};
    p.leg_names = {names[leg]};
    p.parallel = down ? Parallel::kRow : Parallel::kColumn;
    if (p.stacked && interleaved && !down) {
      p.stacked->row_step = 2;
      p.stacked->first_row = static_cast<int64_t>(leg);
    }
  }
  return projections;
}

}  // namespace quantpath

namespace quantpath::specs_internal {

int64_t BiasBytes(const AllocationRequest& request, const ShardGeometry& geometry) {
  return geometry.has_bias ? geometry.rows * Info(request.params_dtype).bits / 8 : 0;
}

LinearParams NewParams(const AllocationRequest& request, const ShardGeometry& geometry,
                       const SpecKey& key) {
  LinearParams params;
  params.request = request;
  params.key = key;
  params.rows = geometry.rows;
  params.cols = geometry.cols;
  params.leg_rows = geometry.leg_rows;
  if (geometry.has_bias) {
    params.tensor(Slot::kBias) = ParamTensor(request.params_dtype, geometry.rows, 1);
  }
  return params;
}

Result<TensorView> FindSlotTensor(const Checkpoint& checkpoint, std::string_view layer,
                                  std::string_view prefix, SourceLayout layout, Slot slot) {
  std::optional<std::string_view> suffix = SourceSuffix(layout, slot);
  if (!suffix) {
    return InvalidInput(fmt::format("{}: source layout {} has no {} tensor", layer,
                                    SourceLayoutName(layout), SlotName(slot)));
  }
  return FindTensor(checkpoint, layer, prefix, *suffix);
}

Status ExpectLayout(std::string_view layer, const SpecKey& key, SourceLayout layout,
                    std::initializer_list<SourceLayout> accepted) {
  for (SourceLayout a : accepted) {
    if (a == layout) return {};
  }
  std::vector<std::string> names;
  for (SourceLayout a : accepted) names.emplace_back(SourceLayoutName(a));
  return InvalidInput(
      fmt::format("{}: spec {} does not load checkpoints in source layout {} (it "
                  "reads {})",
                  layer, key.ToId(), SourceLayoutName(layout), Join(names, ", ")));
}

Result<TensorView> FindTensor(const Checkpoint& checkpoint, std::string_view layer,
                              std::string_view prefix, std::string_view suffix) {
  std::string name = fmt::format("{}{}", prefix, suffix);
  if (!checkpoint.Has(name)) {
    return NotFound(fmt::format("{}: tensor {} is not in the checkpoint", layer, name));
  }
  Result<TensorView> view = checkpoint.Get(name);
  if (!view.ok()) return view.status().WithContext(layer);
  return view;
}

Status ExpectShape(const TensorView& view, std::string_view layer,
                   const std::vector<int64_t>& shape) {
  if (view.info->shape != shape) {
    return InvalidInput(fmt::format("{}: tensor {} has shape {}, expected {}", layer,
                                    view.info->name, ShapeString(view.info->shape),
                                    ShapeString(shape)));
  }
  return {};
}

Status ExpectElements(const TensorView& view, std::string_view layer, int64_t elements,
                      std::string_view what) {
  if (view.info->Elements() != elements) {
    return InvalidInput(fmt::format("{}: tensor {} has shape {}, expected {} ({} values)", layer,
                                    view.info->name, ShapeString(view.info->shape), what,
                                    elements));
  }
  return {};
}

Result<std::vector<float>> ReadScales(const TensorView& view, std::string_view layer) {
  Result<std::vector<float>> values = TensorToFloat(view);
  if (!values.ok()) return values.status().WithContext(layer);
  for (size_t i = 0; i < values->size(); ++i) {
    if (!std::isfinite((*values)[i])) {
      return InvalidInput(fmt::format("{}: tensor {} holds a non-finite scale ({}) at index {}",
                                      layer, view.info->name, (*values)[i], i));
    }
  }
  return values;
}

Status CopyRows(const TensorView& view, std::string_view layer, int64_t src_row, int64_t src_col,
                int64_t rows, int64_t dst_row, ParamTensor* dst) {
  const TensorInfo& info = *view.info;
  const int64_t src_cols = info.shape.size() == 2 ? info.shape[1] : 0;
  if (info.shape.size() != 2 || src_row + rows > info.shape[0] ||
      src_col + dst->cols() > src_cols) {
    return InvalidInput(
        fmt::format("{}: tensor {} of shape {} has no slice rows [{}, {}) x "
                    "columns [{}, {})",
                    layer, info.name, ShapeString(info.shape), src_row, src_row + rows, src_col,
                    src_col + dst->cols()));
  }
  const int64_t cols = dst->cols();
  if (StorageDtypeOf(dst->dtype()) == info.dtype) {
    const int64_t element = StDtypeBits(info.dtype) / 8;
    for (int64_t r = 0; r < rows; ++r) {
      const std::byte* from = view.bytes.data() + ((src_row + r) * src_cols + src_col) * element;
      std::memcpy(dst->raw() + (dst_row + r) * cols * element, from, cols * element);
    }
    return {};
  }
  if (!IsUnquantized(dst->dtype())) {
    return InvalidInput(fmt::format("{}: tensor {} is {}, expected {}", layer, info.name,
                                    StDtypeName(info.dtype),
                                    StDtypeName(*StorageDtypeOf(dst->dtype()))));
  }
  Result<std::vector<float>> values = TensorToFloat(view);
  if (!values.ok()) return values.status().WithContext(layer);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      StoreFloat(dst, (dst_row + r) * cols + c, (*values)[(src_row + r) * src_cols + src_col + c]);
    }
  }
  return {};
}

std::vector<int64_t> SourceRowsShape(const AllocationRequest& request, const ShardGeometry& g,
                                     size_t leg) {
  if (!request.stacked) return {g.full_leg_rows[leg]};
  return {request.stacked->experts, request.stacked->row_step * g.full_leg_rows[leg]};
}

int64_t SourceRow(const AllocationRequest& request, const ShardGeometry& g, size_t leg, int64_t r) {
  const int64_t row = g.leg_src_rows[leg] + r;
  if (!request.stacked) return row;
  const StackedExpert& s = *request.stacked;
  return (s.expert * g.full_leg_rows[leg] + row) * s.row_step + s.first_row;
}

Status CopyByteRows(const TensorView& view, const AllocationRequest& request,
                    const ShardGeometry& g, size_t leg, const SpecKey& key, StDtype dtype,
                    const std::vector<int64_t>& shape, int64_t src_row_bytes, int64_t first_byte,
                    ParamTensor* dst) {
  if (view.info->dtype != dtype) {
    return InvalidInput(fmt::format("{}: tensor {} is {}, but {} expects {}", request.layer,
                                    view.info->name, StDtypeName(view.info->dtype), key.ToId(),
                                    StDtypeName(dtype)));
  }
  QP_RETURN_IF_ERROR(ExpectShape(view, request.layer, shape));
  const int64_t row_bytes = dst->row_bytes();
  for (int64_t r = 0; r < g.leg_rows[leg]; ++r) {
    std::memcpy(dst->raw() + (g.leg_offsets[leg] + r) * row_bytes,
                view.bytes.data() + SourceRow(request, g, leg, r) * src_row_bytes + first_byte,
                static_cast<size_t>(row_bytes));
  }
  return {};
}

Status LoadBias(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
                const ShardGeometry& geometry, LinearParams* params, std::string_view suffix) {
  ParamTensor& bias = params->tensor(Slot::kBias);
  if (bias.empty()) return {};
  const AllocationRequest& request = params->request;
  const std::string& layer = request.layer;
  for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
    QP_ASSIGN_OR_RETURN(TensorView view, FindTensor(checkpoint, layer, leg_prefixes[leg], suffix));
    QP_RETURN_IF_ERROR(ExpectShape(view, layer, SourceRowsShape(request, geometry, leg)));
    Result<std::vector<float>> values = TensorToFloat(view);
    if (!values.ok()) return values.status().WithContext(layer);
    for (int64_t r = 0; r < geometry.leg_rows[leg]; ++r) {
      StoreFloat(&bias, geometry.leg_offsets[leg] + r,
                 (*values)[SourceRow(request, geometry, leg, r)]);
    }
  }
  return {};
}

Status ExpectLegPrefixes(const LinearParams& params, const std::vector<std::string>& leg_prefixes) {
  if (leg_prefixes.size() != params.leg_rows.size()) {
    return InvalidInput(fmt::format("{}: {} checkpoint prefixes given for {} fused legs",
                                    params.request.layer, leg_prefixes.size(),
                                    params.leg_rows.size()));
  }
  if (params.loaded) {
    return InvalidInput(fmt::format("{}: parameters are already loaded", params.request.layer));
  }
  return {};
}

bool AnyDevice(const DeviceCaps&) { return true; }

Status ExpectLoadedNotProcessed(const LinearParams& params) {
  if (!params.loaded || params.processed) {
    return InvalidInput(fmt::format("{}: parameters are {}", params.request.layer,
                                    params.processed ? "already processed" : "not loaded"));
  }
  return {};
}

}  // namespace quantpath::specs_internal

namespace quantpath {

Result<RankSlice> RankSliceOf(const AllocationRequest& request) {
  QP_ASSIGN_OR_RETURN(specs_internal::ShardGeometry g, specs_internal::ComputeGeometry(request));
  RankSlice slice;
  int64_t leg_start = 0;
  for (size_t leg = 0; leg < g.leg_rows.size(); ++leg) {
    for (int64_t r = 0; r < g.leg_rows[leg]; ++r) {
      slice.rows.push_back(leg_start + g.leg_src_rows[leg] + r);
    }
    leg_start += g.full_leg_rows[leg];
  }
  slice.first_col = g.src_col;
  slice.cols = g.cols;
  slice.bias = g.has_bias;
  return slice;
}

}  // namespace quantpath
