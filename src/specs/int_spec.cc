// IntSpec: integer weight-only layers (int<b>_group_<g>[_zp][_actorder], int<b>_channel[_zp],
// int<b>_tensor) in the canonical layout of int_family.h, loaded from GPTQ v1 / v2, AWQ gemm and
// compressed-tensors pack-quantized checkpoints through the decoders of int_source.h.
//
// Load, per leg: decode the source into unpacked codes, zero points and scales; check what the
// key implies (a symmetric key needs the source's zero points, where it stores them, to be
// 2^(b-1); an act-order key needs groups of exactly g columns, and every fused leg the same
// g_idx, since the legs share X); then pack the codes along K in act-order column order, the
// scales in the 16-bit dtype the checkpoint stores (kept exactly: no rounding), and the zero
// points. ProcessAfterLoading has nothing left to convert.
// Tensor-parallel ranks decode each whole leg and keep their slice: rows [leg_src_rows,
// +leg_rows) of each leg, columns [src_col, +cols), and the groups of those columns. A row split
// keeps whole groups and both splits cut the source's int32 words on a word (PackedDimsOf), as
// vLLM's create_weights requires. An act-order rank sorts its own columns by group and keeps
// every group's scales (ActOrderOf, int_family.h).
// Non-goals: activation quantization (W8A8: w8a8_spec.cc, over the same weight layout),
// quantizing high-precision weights at load time.
#include <algorithm>
#include <numeric>

#include "fmt/format.h"
#include "src/specs/int_family.h"
#include "src/specs/int_source.h"
#include "src/specs/spec_common.h"
#include "src/specs/w4a_family.h"
#include "src/specs/w8a8_family.h"

namespace quantpath {
namespace {

using specs_internal::IntLegCodes;
using specs_internal::IntSourceRequest;
using specs_internal::ShardGeometry;

// Stores `value` as element i of a 16- or 32-bit float tensor; false when the tensor's dtype
// cannot hold it exactly.
bool StoreExact(ParamTensor* tensor, int64_t i, float value) {
  specs_internal::StoreFloat(tensor, i, value);
  return LoadFloat(*tensor, i) == value;
}

// An act-order rank's column order: perm[j] = the rank's input column of canonical column j,
// its columns [first_col, first_col + cols) sorted by group, stably; group[j] = that column's
// group. Every group of the whole leg must hold exactly g columns (the last one the remainder),
// so that unsplit, group[j] = j / g.
struct ActOrder {
  std::vector<int32_t> perm;
  std::vector<int32_t> group;
};
Result<ActOrder> ActOrderOf(const IntLegCodes& leg, const IntSourceRequest& r, int64_t first_col,
                            int64_t cols) {
  QP_RETURN_IF_ERROR(specs_internal::CheckGroupMap(leg, r));
  const int32_t* g_idx = leg.g_idx.data() + first_col;
  ActOrder order;
  order.perm.resize(static_cast<size_t>(cols));
  std::iota(order.perm.begin(), order.perm.end(), 0);
  std::stable_sort(order.perm.begin(), order.perm.end(),
                   [&](int32_t a, int32_t b) { return g_idx[a] < g_idx[b]; });
  for (int32_t c : order.perm) order.group.push_back(g_idx[c]);
  return order;
}

class IntSpec final : public specs_internal::KeyedSpec {
 public:
  using KeyedSpec::KeyedSpec;

  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    LinearParams params = specs_internal::NewParams(request, g, key_);
    const QDType code = IntCodeDtype(key_.bits);
    params.tensor(Slot::kWeight) = ParamTensor(code, g.rows, g.cols);
    // The 16-bit dtype is replaced by the checkpoint's own at load (same bytes).
    const QDType scale = request.params_dtype == QDType::kFP16 ? QDType::kFP16 : QDType::kBF16;
    if (key_.family == kIntTensorFamily) {
      params.tensor(Slot::kWeightScale) = ParamTensor(QDType::kFP32, 1, 1);
    } else {
      params.tensor(Slot::kWeightScale) = ParamTensor(scale, g.rows, ScaleGroups(g));
    }
    if (key_.zero_point) {
      params.tensor(Slot::kWeightZero) = key_.family == kIntGroupFamily
                                             ? ParamTensor(code, g.rows, ScaleGroups(g))
                                             : ParamTensor(code, 1, g.rows);
    }
    // Rows perm and group of int32 values, in a 32-bit slot.
    if (key_.act_order) params.tensor(Slot::kGIdx) = ParamTensor(QDType::kFP32, 2, g.cols);
    return params;
  }

  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    QP_ASSIGN_OR_RETURN(int64_t bytes, LayoutBytes(key_, g.rows, g.cols, 16));
    // An act-order row rank keeps every group's scales (and zeros), not only its columns'.
    const int64_t more = ScaleGroups(g) - Groups(g.cols);
    if (more > 0) {
      const int64_t groups = ScaleGroups(g);
      bytes += g.rows * more * 2;
      if (key_.zero_point) {
        bytes += g.rows * ((groups * key_.bits + 7) / 8 - (Groups(g.cols) * key_.bits + 7) / 8);
      }
    }
    return bytes + specs_internal::BiasBytes(request, g);
  }

  Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
              LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLegPrefixes(*params, leg_prefixes));
    const std::string& layer = params->request.layer;
    if (params->key != key_) {
      return InvalidInput(fmt::format("{}: parameters allocated for {} cannot load as {}", layer,
                                      params->key.ToId(), key_.ToId()));
    }
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(params->request));
    QP_ASSIGN_OR_RETURN(specs_internal::IntSourceFn decode,
                        specs_internal::FindIntSource(facts_.layout, layer));
    ActOrder order;
    std::vector<int32_t> first_g_idx;
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      IntSourceRequest r;
      r.layer = layer;
      r.prefix = leg_prefixes[leg];
      r.layout = facts_.layout;
      r.bits = key_.bits;
      r.group = IntGroupOf(key_, g.full_cols);
      r.tensor = key_.family == kIntTensorFamily;
      r.zero_point = key_.zero_point;
      r.act_order = key_.act_order;
      r.rows = g.full_leg_rows[leg];
      r.cols = g.full_cols;
      QP_ASSIGN_OR_RETURN(IntLegCodes codes, decode(checkpoint, r));
      QP_RETURN_IF_ERROR(specs_internal::CheckZeroPoints(codes, r));
      if (key_.act_order) {
        if (leg == 0) {
          QP_ASSIGN_OR_RETURN(order, ActOrderOf(codes, r, g.src_col, g.cols));
          first_g_idx = codes.g_idx;
          int32_t* slot = params->tensor(Slot::kGIdx).data<int32_t>();
          std::copy(order.perm.begin(), order.perm.end(), slot);
          std::copy(order.group.begin(), order.group.end(), slot + g.cols);
        } else if (codes.g_idx != first_g_idx) {
          return InvalidInput(fmt::format(
              "{}: tensor {} differs from the first leg's g_idx; the fused legs share one input "
              "order",
              layer, codes.g_idx_tensor));
        }
      }
      StoreCodes(codes, r, order.perm, g, leg, params);
      QP_RETURN_IF_ERROR(StoreScales(codes, r, g, leg, params));
    }
    QP_RETURN_IF_ERROR(specs_internal::LoadBias(checkpoint, leg_prefixes, g, params));
    params->loaded = true;
    return {};
  }

 private:
  int64_t Groups(int64_t cols) const {
    const int64_t group = IntGroupOf(key_, cols);
    return (cols + group - 1) / group;
  }
  // Groups of scales a rank stores: its columns', or with act-order every group of the whole K
  // (a rank's columns fall in whichever groups g_idx says, as in vLLM's exllama path).
  int64_t ScaleGroups(const ShardGeometry& g) const {
    return key_.act_order ? (g.full_cols + key_.group - 1) / key_.group : Groups(g.cols);
  }
  // The first group of this rank's scales in the checkpoint's.
  int64_t FirstGroup(const ShardGeometry& g) const {
    return key_.act_order ? 0 : g.src_col / IntGroupOf(key_, g.full_cols);
  }

  Result<ShardGeometry> Geometry(const AllocationRequest& request) const {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, specs_internal::ComputeGeometry(request));
    const int tp = request.tp_size;
    const int64_t group = IntGroupOf(key_, g.full_cols);
    const specs_internal::IntPackedDims packed =
        specs_internal::PackedDimsOf(facts_.layout, key_.zero_point);
    if (g.cols != g.full_cols) {
      if (key_.family == kIntGroupFamily && g.cols % group != 0) {
        return InvalidInput(fmt::format(
            "{}: {} with tensor-parallel size {} splits K = {} into slices of {} columns, which "
            "is not a multiple of the group size {}",
            request.layer, key_.ToId(), tp, g.full_cols, g.cols, group));
      }
      if (packed.k && g.cols * key_.bits % 32 != 0) {
        return InvalidInput(fmt::format(
            "{}: {} with tensor-parallel size {} splits K = {} into slices of {} columns, which "
            "do not fill whole int32 words of {}-bit codes ({})",
            request.layer, key_.ToId(), tp, g.full_cols, g.cols, key_.bits,
            SourceLayoutName(facts_.layout)));
      }
    }
    for (size_t leg = 0; leg < g.leg_rows.size(); ++leg) {
      if (!packed.n || g.leg_rows[leg] == g.full_leg_rows[leg] ||
          (g.leg_rows[leg] * key_.bits % 32 == 0 && g.leg_src_rows[leg] * key_.bits % 32 == 0)) {
        continue;
      }
      return InvalidInput(fmt::format(
          "{}: {} with tensor-parallel size {} splits N = {} of {} into slices of {} rows, which "
          "do not fill whole int32 words of {}-bit codes ({})",
          request.layer, key_.ToId(), tp, g.full_leg_rows[leg],
          specs_internal::LegLabel(request, leg), g.leg_rows[leg], key_.bits,
          SourceLayoutName(facts_.layout)));
    }
    return g;
  }

  // Packs this rank's slice of one decoded leg: rows [leg_src_rows, +leg_rows), columns
  // [src_col, +cols) (in the rank's act-order order with act-order), and its groups' zeros.
  void StoreCodes(const IntLegCodes& codes, const IntSourceRequest& r,
                  const std::vector<int32_t>& perm, const ShardGeometry& g, size_t leg,
                  LinearParams* params) const {
    ParamTensor& w = params->tensor(Slot::kWeight);
    const int64_t row_offset = g.leg_offsets[leg];
    const int64_t src_row = g.leg_src_rows[leg];
    for (int64_t row = 0; row < g.leg_rows[leg]; ++row) {
      uint8_t* dst = w.data<uint8_t>() + (row_offset + row) * w.row_bytes();
      const uint8_t* src = codes.codes.data() + (src_row + row) * r.cols + g.src_col;
      for (int64_t j = 0; j < g.cols; ++j) {
        WriteCode(dst, j, key_.bits, src[perm.empty() ? j : perm[j]]);
      }
    }
    if (!key_.zero_point) return;
    ParamTensor& z = params->tensor(Slot::kWeightZero);
    const int64_t groups = r.groups();
    const int64_t first_group = FirstGroup(g);
    const int64_t rank_groups = key_.family == kIntGroupFamily ? z.cols() : 1;
    for (int64_t row = 0; row < g.leg_rows[leg]; ++row) {
      for (int64_t i = 0; i < rank_groups; ++i) {
        const uint8_t zero = codes.zeros[(src_row + row) * groups + first_group + i];
        if (key_.family == kIntGroupFamily) {
          WriteCode(z.data<uint8_t>() + (row_offset + row) * z.row_bytes(), i, key_.bits, zero);
        } else {
          WriteCode(z.data<uint8_t>(), row_offset + row, key_.bits, zero);
        }
      }
    }
  }

  Status StoreScales(const IntLegCodes& codes, const IntSourceRequest& r, const ShardGeometry& g,
                     size_t leg, LinearParams* params) const {
    ParamTensor& s = params->tensor(Slot::kWeightScale);
    if (key_.family == kIntTensorFamily) {
      if (leg > 0 && s.data<float>()[0] != codes.scales[0]) {
        return InvalidInput(fmt::format(
            "{}: tensor {} is {}, the first leg's scale {}; {} stores one scale per layer", r.layer,
            codes.scales_tensor, codes.scales[0], s.data<float>()[0], key_.ToId()));
      }
      s.data<float>()[0] = codes.scales[0];
      return {};
    }
    // The first leg's 16-bit dtype is kept as stored (the bytes are the same either way).
    const std::optional<QDType> stored = SixteenBitScaleDtype(codes.scale_dtype);
    if (leg == 0 && stored && *stored != s.dtype()) s = ParamTensor(*stored, s.rows(), s.cols());
    const int64_t groups = s.cols();
    const int64_t src_groups = r.groups();
    const int64_t first_group = FirstGroup(g);
    for (int64_t row = 0; row < g.leg_rows[leg]; ++row) {
      const int64_t src_row = g.leg_src_rows[leg] + row;
      for (int64_t i = 0; i < groups; ++i) {
        const float value = codes.scales[src_row * src_groups + first_group + i];
        if (StoreExact(&s, (g.leg_offsets[leg] + row) * groups + i, value)) continue;
        return InvalidInput(fmt::format(
            "{}: tensor {} holds {} at row {}, group {}, which {} cannot hold exactly; {} keeps "
            "16-bit scales",
            r.layer, codes.scales_tensor, value, src_row, first_group + i, QDTypeName(s.dtype()),
            key_.ToId()));
      }
    }
    return {};
  }
};

}  // namespace

namespace specs_internal {

Result<std::unique_ptr<WeightSpec>> MakeIntSpec(const SpecKey& key, const ActivationQuant& act,
                                                const LoadFacts& facts) {
  // Quantized activations are the W8A8 spec's (w8a8_spec.cc), for ModelSlim's int4 weights the
  // W4A4 / W4A8 one (w4a_spec.cc), over the same weight layout, and for other int4 weights this
  // one.
  if (act.mode != ActMode::kNone && key.bits == 4 && facts.layout == SourceLayout::kModelSlim) {
    return MakeW4aSpec(key, act, facts);
  }
  if (act.mode != ActMode::kNone && key.bits != 4) return MakeW8a8Spec(key, act, facts);
  // int4 weights of the weight-only layouts below with int8 dynamic per-token activations
  // (compressed-tensors' W4A8 preset, or a W4A16 model run on int8 dot products): this spec, its
  // X quantized by the mixed int4 kernels (w4a_family.h).
  if (act.mode != ActMode::kNone &&
      (!act.SymmetricPerToken(QDType::kINT8) || key.act_order || key.family == kIntTensorFamily)) {
    return Unsupported(
        fmt::format("{} with {} activations: int4 weights take int8 activations dynamic per token, "
                    "symmetric, with group or channel scales and no act-order",
                    key.ToId(), act.ToString()));
  }
  switch (facts.layout) {
    case SourceLayout::kGptqV1:
    case SourceLayout::kGptqV2:
    case SourceLayout::kAwqGemm:
    case SourceLayout::kCtPackQuantized:
      break;
    case SourceLayout::kAwqGemv:
      return Unsupported(fmt::format(
          "{}: the AWQ gemv layout (qweight [N, K / 8], padded scales) is not supported; "
          "AutoAWQ's gemm export loads",
          key.ToId()));
    default:
      return Unsupported(fmt::format("{}: integer weights in source layout {} cannot be loaded",
                                     key.ToId(), SourceLayoutName(facts.layout)));
  }
  return std::unique_ptr<WeightSpec>(std::make_unique<IntSpec>(key, act, facts));
}

}  // namespace specs_internal
}  // namespace quantpath
