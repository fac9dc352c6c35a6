// MxSpec: OCP microscaling weights, mxfp4_block_32 (E2M1) and mxfp8_block_32 (E4M3), with one
// E8M0 scale per 32 along K, and the two families' rows.
//
// Layout: mx_family.h. Source layouts (SourceTensors names them), per leg `<prefix>`:
//   kCtMxfp4PackQuantized  weight_packed U8 [rows, K/2], weight_scale U8 [rows, K/32];
//   kCtFloatQuantized      (compressed-tensors mxfp8-quantized) weight F8_E4M3 [rows, K],
//                          weight_scale U8 [rows, K/32];
//   kModelSlim             W4A4_MXFP4 / W4A8_MXFP: weight U8 [rows, K/2]; W8A8_MXFP8: weight
//                          F8_E4M3 [rows, K]; weight_scale U8 [rows, K/32] (seed 003).
// Every one is the canonical layout, so Load copies this rank's bytes; an E8M0 NaN (0xFF) is an
// error. Tensor parallel: column slices are whole rows; a row-parallel slice of K must be a
// multiple of 32 columns (whole scale blocks), else the error names the layer.
// High-precision checkpoints are quantized at load into mxfp4_block_32 by online/mx_quantize.cc.
// Non-goals (later): gpt-oss's `*_blocks` / `*_scales` experts.
#include <cstring>

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/mx_family.h"
#include "src/specs/spec_common.h"
#include "src/specs/spec_id_grammar.h"

namespace quantpath {
namespace {

using specs_internal::ComputeGeometry;
using specs_internal::ExpectShape;
using specs_internal::FindSlotTensor;
using specs_internal::ShardGeometry;

class MxSpec final : public specs_internal::KeyedSpec {
 public:
  using KeyedSpec::KeyedSpec;

  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    LinearParams params = specs_internal::NewParams(request, g, key_);
    params.tensor(Slot::kWeight) =
        ParamTensor(Fp4() ? QDType::kMXFP4 : QDType::kFP8E4M3, g.rows, g.cols);
    // E8M0 bytes: no QDType of their own, stored as 8-bit cells.
    params.tensor(Slot::kWeightScale) =
        ParamTensor(QDType::kINT8, g.rows, Layout().ScaleCols(g.cols));
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
        {Fp4() ? SourceLayout::kCtMxfp4PackQuantized : SourceLayout::kCtFloatQuantized,
         SourceLayout::kModelSlim}));
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(params->request));
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      QP_RETURN_IF_ERROR(LoadLeg(checkpoint, leg_prefixes[leg], g, leg, params));
    }
    QP_RETURN_IF_ERROR(specs_internal::LoadBias(checkpoint, leg_prefixes, g, params));
    params->loaded = true;
    return {};
  }

 private:
  bool Fp4() const { return key_.family == kMxfp4Family; }
  MxLayout Layout() const { return {Fp4(), key_.group}; }

  Result<ShardGeometry> Geometry(const AllocationRequest& request) const {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, ComputeGeometry(request));
    if (Fp4() && g.full_cols % 2 != 0) {
      return InvalidInput(fmt::format("{}: {} packs two values per byte, but K = {} is odd",
                                      request.layer, key_.ToId(), g.full_cols));
    }
    if (g.cols != g.full_cols && g.cols % key_.group != 0) {
      return InvalidInput(fmt::format(
          "{}: {} with tensor-parallel size {} splits K = {} into slices of {} columns, which is "
          "not a multiple of the {}-column scale block",
          request.layer, key_.ToId(), request.tp_size, g.full_cols, g.cols, key_.group));
    }
    return g;
  }

  // Copies this rank's rows of a [full rows, full_row_bytes] byte tensor of dtype `dtype`, from
  // byte column `first_byte`, `row_bytes` per row, into rows of `dst` from `dst_row`.
  Status CopySlice(const TensorView& view, std::string_view layer, StDtype dtype,
                   const std::vector<int64_t>& shape, int64_t src_row, int64_t rows,
                   int64_t first_byte, int64_t dst_row, ParamTensor* dst) const {
    if (view.info->dtype != dtype) {
      return InvalidInput(fmt::format("{}: tensor {} is {}, but {} expects {}", layer,
                                      view.info->name, StDtypeName(view.info->dtype), key_.ToId(),
                                      StDtypeName(dtype)));
    }
    QP_RETURN_IF_ERROR(ExpectShape(view, layer, shape));
    const int64_t row_bytes = dst->row_bytes();
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(dst->raw() + (dst_row + r) * row_bytes,
                  view.bytes.data() + (src_row + r) * shape[1] + first_byte,
                  static_cast<size_t>(row_bytes));
    }
    return {};
  }

  Status LoadLeg(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                 size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    const MxLayout layout = Layout();
    const int64_t full_rows = g.full_leg_rows[leg];
    QP_ASSIGN_OR_RETURN(TensorView weight,
                        FindSlotTensor(checkpoint, layer, prefix, facts_.layout, Slot::kWeight));
    // Column offsets are whole bytes: a slice starts on a 32-block, so on an even element.
    QP_RETURN_IF_ERROR(CopySlice(
        weight, layer, Fp4() ? StDtype::kU8 : StDtype::kF8E4M3,
        {full_rows, layout.WeightRowBytes(g.full_cols)}, g.leg_src_rows[leg], g.leg_rows[leg],
        layout.WeightRowBytes(g.src_col), g.leg_offsets[leg], &params->tensor(Slot::kWeight)));
    QP_ASSIGN_OR_RETURN(TensorView scale, FindSlotTensor(checkpoint, layer, prefix, facts_.layout,
                                                         Slot::kWeightScale));
    ParamTensor& scales = params->tensor(Slot::kWeightScale);
    QP_RETURN_IF_ERROR(CopySlice(
        scale, layer, StDtype::kU8, {full_rows, layout.ScaleCols(g.full_cols)}, g.leg_src_rows[leg],
        g.leg_rows[leg], g.src_col / layout.group, g.leg_offsets[leg], &scales));
    const uint8_t* bytes = scales.data<uint8_t>() + g.leg_offsets[leg] * scales.cols();
    for (int64_t i = 0; i < g.leg_rows[leg] * scales.cols(); ++i) {
      if (bytes[i] == kE8M0Nan) {
        return InvalidInput(fmt::format(
            "{}: tensor {} holds an E8M0 NaN (0xFF) at row {}, block {}", layer, scale.info->name,
            g.leg_src_rows[leg] + i / scales.cols(), g.src_col / layout.group + i % scales.cols()));
      }
    }
    return {};
  }
};

// ---------------------------------------------------------------------------------------------
// The families' rows.

template <QDType kDtype>
class MxFamily final : public SpecFamilyRow {
 public:
  static constexpr bool kFp4 = kDtype == QDType::kMXFP4;
  SpecFamily family() const override { return kFp4 ? kMxfp4Family : kMxfp8Family; }
  std::string_view name() const override { return kFp4 ? "mxfp4_block" : "mxfp8_block"; }
  std::string_view grammar() const override { return kFp4 ? "mxfp4_block_<g>" : "mxfp8_block_<g>"; }
  std::optional<SpecKey> Parse(std::string_view spec_id) const override {
    auto p = specs_internal::IdParameters(spec_id, name());
    if (!p || p->size() != 1) return std::nullopt;
    std::optional<int64_t> group = specs_internal::ParsePositive((*p)[0]);
    if (!group) return std::nullopt;
    SpecKey key{family()};
    key.group = *group;
    return key;
  }
  std::string Format(const SpecKey& key) const override {
    return fmt::format("{}_{}", name(), key.group);
  }
  std::vector<Slot> Slots(const SpecKey&, const ActivationQuant&) const override {
    return {Slot::kWeight, Slot::kWeightScale, Slot::kBias};
  }
  int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols, int) const override {
    return MxLayout{kFp4, key.group}.BytesFor(rows, cols);
  }
  Result<std::unique_ptr<WeightSpec>> Make(const SpecKey& key, const ActivationQuant& act,
                                           const LoadFacts& facts) const override {
    if (key.group != kMxGroup) {
      return Unsupported(fmt::format(
          "spec {}: loading this layout is not implemented in this build (groups of {} only)",
          Format(key), kMxGroup));
    }
    const SourceLayout own =
        kFp4 ? SourceLayout::kCtMxfp4PackQuantized : SourceLayout::kCtFloatQuantized;
    if (facts.layout != own && facts.layout != SourceLayout::kModelSlim) {
      return Unsupported(
          fmt::format("{}: loading {} weights in source layout {} is not implemented in this build",
                      Format(key), kFp4 ? "MXFP4" : "MXFP8", SourceLayoutName(facts.layout)));
    }
    if (act.mode != ActMode::kNone &&
        (act.mode != ActMode::kDynamicGroup || act.group_size != kMxGroup ||
         (act.dtype != QDType::kMXFP4 && act.dtype != QDType::kMXFP8))) {
      return Unsupported(
          fmt::format("{} with {} activations has no kernel mode", Format(key), act.ToString()));
    }
    return std::unique_ptr<WeightSpec>(std::make_unique<MxSpec>(key, act, facts));
  }
  // fp32 accumulation against double, about sqrt(K) · 2^-24 (1e-4 leaves room), in both modes:
  // MX activations are scaled by powers of two, so the kernel's fp32 rounding and the double
  // reference's give the same values (mx_family.h).
  double Tolerance(const SpecKey&, ActMode) const override { return 1e-4; }
  std::vector<SpecCandidate> Candidates() const override {
    return {{kFp4 ? "MXFP4 weights (E2M1, E8M0 scale per 32)"
                  : "MXFP8 weights (E4M3, E8M0 scale per 32)",
             "any", [](const QuantScheme& s) { return s.weight.dtype == kDtype; },
             specs_internal::AnyDevice,
             [](const QuantScheme& s) -> Result<SpecKey> {
               SpecKey key{kFp4 ? kMxfp4Family : kMxfp8Family};
               key.group = s.weight.group_size.value_or(kMxGroup);
               return key;
             },
             10}};
  }
};

const SpecFamilyRegistrar kRegisterMxfp4(std::make_unique<MxFamily<QDType::kMXFP4>>());
const SpecFamilyRegistrar kRegisterMxfp8(std::make_unique<MxFamily<QDType::kMXFP8>>());

}  // namespace
}  // namespace quantpath
