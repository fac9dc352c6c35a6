// W4aSpec: int4_channel weights with int4 (ModelSlim W4A4_DYNAMIC) or int8 (W4A8_DYNAMIC)
// dynamic per-token activations, in the layout of w4a_family.h, loaded from ModelSlim's tensors
// (SGLang's ModelSlimW4A4Int4 / W4A8 schemes and their NPU methods):
//   weight         I8, signed int4 codes w in [−8, 8): packing old [N, K], one code per byte;
//                  packing new [N / 2, K], rows 2j and 2j + 1 in the low and high nibble of
//                  byte [j][k] (SGLang's _pack_int4 along N, which SGLANG_NPU_W4A4_NEW_PACKING
//                  makes the stored form);
//   weight_scale   [N, 1] in the model dtype;
//   weight_offset  [N, 1], which must be 0 (npu_quant_matmul takes no weight offset).
// The files do not say which packing they hold, so the packing comes from the option
// (LoadFacts::int4_pairs); a weight whose shape is the other packing's is an error naming both.
// Codes are stored as q = w + 8, the scales exactly in their 16-bit dtype.
// Tensor-parallel slices: a column split takes each leg's rows (whole row pairs in packing new),
// a row split its columns, every row's scale whole; the layer's bias stays on rank 0 (spec_common).
// The files hold no other per-layer term (no quant_bias), so no rank adds more than its product.
// Non-goals: grouped W4A8_DYNAMIC (weight_scale_second, a second scale level per group). SGLang's
// NPUW4A8DynamicLinearMethod and vllm-ascend's AscendW4A8DynamicLinearMethod run it through
// npu_weight_quant_batchmatmul: X stays in the model dtype and W = w · (weight_scale ·
// weight_scale_second) per group (_process_scale_second / process_scale_second; the offsets are
// not read), a W4A16 product that this spec's int8 activations do not describe.
#include "fmt/format.h"
#include "src/specs/int_family.h"
#include "src/specs/spec_common.h"
#include "src/specs/w4a_family.h"

namespace quantpath {
namespace {

using specs_internal::ShardGeometry;

std::string_view PackingName(bool pairs) { return pairs ? "new" : "old"; }

// The stored weight's shape under a packing: [N, K] one code per byte, [N / 2, K] two.
std::vector<int64_t> StoredShape(bool pairs, int64_t rows, int64_t cols) {
  return {pairs ? rows / 2 : rows, cols};
}

int SignedNibble(uint8_t nibble) { return nibble >= 8 ? static_cast<int>(nibble) - 16 : nibble; }

class W4aSpec final : public specs_internal::KeyedSpec {
 public:
  using KeyedSpec::KeyedSpec;

  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    LinearParams params = specs_internal::NewParams(request, g, key_);
    params.tensor(Slot::kWeight) = ParamTensor(QDType::kINT4, g.rows, g.cols);
    // The 16-bit dtype is replaced by the checkpoint's own at load (same bytes).
    const QDType scale = request.params_dtype == QDType::kFP16 ? QDType::kFP16 : QDType::kBF16;
    params.tensor(Slot::kWeightScale) = ParamTensor(scale, g.rows, 1);
    return params;
  }

  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    QP_ASSIGN_OR_RETURN(int64_t bytes, LayoutBytes(key_, g.rows, g.cols, 16));
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
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      QP_RETURN_IF_ERROR(LoadWeight(checkpoint, leg_prefixes[leg], g, leg, params));
      QP_RETURN_IF_ERROR(LoadScales(checkpoint, leg_prefixes[leg], g, leg, params));
    }
    QP_RETURN_IF_ERROR(specs_internal::LoadBias(checkpoint, leg_prefixes, g, params));
    params->loaded = true;
    return {};
  }

 private:
  bool pairs() const { return facts_.int4_pairs; }

  // This rank's rows and columns (spec_common.h). With two rows per byte (packing new) a column
  // split must keep whole row pairs, as SGLang's loader cuts the stored [N / 2, K] tensor along
  // its first dimension: an odd count of rows per rank is an error.
  Result<ShardGeometry> Geometry(const AllocationRequest& request) const {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, specs_internal::ComputeGeometry(request));
    if (!pairs() || request.tp_size == 1) return g;
    for (size_t leg = 0; leg < g.leg_rows.size(); ++leg) {
      if (g.leg_rows[leg] % 2 == 0) continue;
      return InvalidInput(fmt::format(
          "{}: {} with tensor-parallel size {} gives N = {} of {} {} rows per rank; "
          "--modelslim-packing new stores two rows per int8, so each rank needs an even count",
          request.layer, key_.ToId(), request.tp_size, g.full_leg_rows[leg],
          specs_internal::LegLabel(request, leg), g.leg_rows[leg]));
    }
    return g;
  }

  // The weight's shape against the packing: a shape that is the other packing's names both.
  Status CheckShape(const TensorView& w, std::string_view layer, int64_t rows, int64_t cols) const {
    const std::vector<int64_t> want = StoredShape(pairs(), rows, cols);
    if (pairs() && rows % 2 != 0) {
      return InvalidInput(fmt::format(
          "{}: tensor {} has {} rows; --modelslim-packing new stores two rows per int8, so the "
          "leg's row count must be even",
          layer, w.info->name, rows));
    }
    if (w.info->shape == want) return {};
    const std::vector<int64_t> other = StoredShape(!pairs(), rows, cols);
    if (w.info->shape == other && (pairs() || rows % 2 == 0)) {
      return InvalidInput(fmt::format(
          "{}: tensor {} has shape {}, the shape of --modelslim-packing {} ({}); "
          "--modelslim-packing {} expects {} ({})",
          layer, w.info->name, specs_internal::ShapeString(w.info->shape), PackingName(!pairs()),
          pairs() ? "one code per int8" : "two codes per int8 along N", PackingName(pairs()),
          specs_internal::ShapeString(want),
          pairs() ? "two codes per int8 along N" : "one code per int8"));
    }
    return InvalidInput(
        fmt::format("{}: tensor {} has shape {}, expected {} (--modelslim-packing {})", layer,
                    w.info->name, specs_internal::ShapeString(w.info->shape),
                    specs_internal::ShapeString(want), PackingName(pairs())));
  }

  Status LoadWeight(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                    size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(TensorView w, specs_internal::FindSlotTensor(checkpoint, layer, prefix,
                                                                     facts_.layout, Slot::kWeight));
    if (w.info->dtype != StDtype::kI8) {
      return InvalidInput(fmt::format("{}: tensor {} has dtype {}, expected I8", layer,
                                      w.info->name, StDtypeName(w.info->dtype)));
    }
    const int64_t rows = g.full_leg_rows[leg];
    const int64_t cols = g.full_cols;
    QP_RETURN_IF_ERROR(CheckShape(w, layer, rows, cols));
    ParamTensor& dst = params->tensor(Slot::kWeight);
    const auto* src = reinterpret_cast<const uint8_t*>(w.bytes.data());
    // This rank's rows [leg_src_rows, + leg_rows) and columns [src_col, + cols) of the leg.
    for (int64_t i = 0; i < g.leg_rows[leg]; ++i) {
      const int64_t r = g.leg_src_rows[leg] + i;
      uint8_t* to = dst.data<uint8_t>() + (g.leg_offsets[leg] + i) * dst.row_bytes();
      for (int64_t j = 0; j < g.cols; ++j) {
        const int64_t c = g.src_col + j;
        int code = 0;
        if (pairs()) {
          const uint8_t byte = src[(r / 2) * cols + c];
          code = SignedNibble(r % 2 == 0 ? byte & 0x0F : byte >> 4);
        } else {
          code = static_cast<int8_t>(src[r * cols + c]);
          if (code < -8 || code > 7) {
            return InvalidInput(
                fmt::format("{}: tensor {} holds {} at [{}, {}], not an int4 code in [-8, 7] "
                            "(--modelslim-packing old: one code per int8)",
                            layer, w.info->name, code, r, c));
          }
        }
        WriteCode(to, j, 4, static_cast<uint32_t>(code + 8));
      }
    }
    return CheckZeroOffset(checkpoint, prefix, rows, layer);
  }

  // npu_quant_matmul has no weight offset, so ModelSlim's must be zero.
  Status CheckZeroOffset(const Checkpoint& checkpoint, const std::string& prefix, int64_t rows,
                         const std::string& layer) const {
    const std::string name = prefix + ".weight_offset";
    if (!checkpoint.Has(name)) return {};
    QP_ASSIGN_OR_RETURN(TensorView z, checkpoint.Get(name));
    QP_RETURN_IF_ERROR(
        specs_internal::ExpectElements(z, layer, rows, fmt::format("[{}, 1]", rows)));
    QP_ASSIGN_OR_RETURN(std::vector<float> zeros, specs_internal::ReadScales(z, layer));
    for (size_t i = 0; i < zeros.size(); ++i) {
      if (zeros[i] == 0) continue;
      return InvalidInput(fmt::format(
          "{}: tensor {} holds weight offset {} at row {}; {} with {} activations needs "
          "symmetric weights (offset 0)",
          layer, name, zeros[i], i, key_.ToId(), activation_.ToString()));
    }
    return {};
  }

  Status LoadScales(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                    size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(TensorView view,
                        specs_internal::FindSlotTensor(checkpoint, layer, prefix, facts_.layout,
                                                       Slot::kWeightScale));
    const int64_t rows = g.full_leg_rows[leg];
    QP_RETURN_IF_ERROR(
        specs_internal::ExpectElements(view, layer, rows, fmt::format("[{}, 1]", rows)));
    QP_ASSIGN_OR_RETURN(std::vector<float> values, specs_internal::ReadScales(view, layer));
    ParamTensor& s = params->tensor(Slot::kWeightScale);
    const std::optional<QDType> stored = SixteenBitScaleDtype(view.info->dtype);
    if (leg == 0 && stored && *stored != s.dtype()) s = ParamTensor(*stored, s.rows(), 1);
    // A row split keeps every row's scale; a column split this rank's rows.
    for (int64_t j = 0; j < g.leg_rows[leg]; ++j) {
      const int64_t r = g.leg_src_rows[leg] + j;
      const int64_t i = g.leg_offsets[leg] + j;
      specs_internal::StoreFloat(&s, i, values[r]);
      if (LoadFloat(s, i) == values[r]) continue;
      return InvalidInput(fmt::format(
          "{}: tensor {} holds {} at row {}, which {} cannot hold exactly; {} keeps 16-bit "
          "scales",
          layer, view.info->name, values[r], r, QDTypeName(s.dtype()), key_.ToId()));
    }
    return {};
  }
};

}  // namespace

namespace specs_internal {

Result<std::unique_ptr<WeightSpec>> MakeW4aSpec(const SpecKey& key, const ActivationQuant& act,
                                                const LoadFacts& facts) {
  const std::string id = key.ToId();
  if (key.family != kIntChannelFamily || key.bits != 4 || key.zero_point) {
    return Unsupported(fmt::format(
        "{} with {} activations: ModelSlim's int4 weights load per channel, symmetric "
        "(int4_channel){}",
        id, act.ToString(),
        key.family == kIntGroupFamily
            ? "; grouped W4A8_DYNAMIC (weight_scale_second) is not loaded: the NPU methods run it "
              "as a weight-dequant product with unquantized activations, not int8 ones"
            : ""));
  }
  if (!act.SymmetricPerToken(QDType::kINT4) && !act.SymmetricPerToken(QDType::kINT8)) {
    return Unsupported(
        fmt::format("{} with {} activations has no kernel mode yet", id, act.ToString()));
  }
  if (facts.layout != SourceLayout::kModelSlim) {
    return Unsupported(
        fmt::format("{}: int4 weights with {} activations in source layout {} "
                    "cannot be loaded",
                    id, act.ToString(), SourceLayoutName(facts.layout)));
  }
  return std::unique_ptr<WeightSpec>(std::make_unique<W4aSpec>(key, act, facts));
}

}  // namespace specs_internal
}  // namespace quantpath
