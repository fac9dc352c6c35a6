// MxSpec: OCP microscaling weights, mxfp4_block_32 (E2M1) and mxfp8_block_32 (E4M3), with one
// E8M0 scale per 32 along K, and the two families' rows.
//
// Layout: mx_family.h. Source layouts (SourceTensors names them), per leg `<prefix>`:
//   kCtMxfp4PackQuantized  weight_packed U8 [rows, K/2], weight_scale U8 [rows, K/32];
//   kCtFloatQuantized      (compressed-tensors mxfp8-quantized) weight F8_E4M3 [rows, K],
//                          weight_scale U8 [rows, K/32];
//   kModelSlim             W4A4_MXFP4 / W4A8_MXFP: weight U8 [rows, K/2]; W8A8_MXFP8: weight
//                          F8_E4M3 [rows, K]; weight_scale U8 [rows, K/32] (seed 003);
//   kGptOssMxfp4           every expert of a layer in one tensor per projection prefix
//                          (`<experts>.gate_up_proj`): _blocks U8 [E, R, K/32, 16] (a 32-block's
//                          16 bytes, low nibble first: the canonical row), _scales U8
//                          [E, R, K/32], _bias [E, R]; the request's StackedExpert names the
//                          expert and its rows (gate_up_proj: gate 0::2, up 1::2), so the
//                          interleave is undone here and gate and up load as two projections.
// Every one is the canonical layout, so Load copies this rank's bytes; an E8M0 NaN (0xFF) is an
// error. Tensor parallel: column slices are whole rows; a row-parallel slice of K must be a
// multiple of 32 columns (whole scale blocks), else the error names the layer.
// High-precision checkpoints are quantized at load into mxfp4_block_32 by online/mx_quantize.cc.
#include <cstring>

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/mx_family.h"
#include "src/specs/spec_common.h"
#include "src/specs/spec_id_grammar.h"

namespace quantpath {
namespace {

using specs_internal::CopyByteRows;
using specs_internal::FindSlotTensor;
using specs_internal::ShardGeometry;
using specs_internal::SourceRow;
using specs_internal::SourceRowsShape;

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
    const AllocationRequest& request = params->request;
    const std::string& layer = request.layer;
    QP_RETURN_IF_ERROR(
        Fp4() ? specs_internal::ExpectLayout(layer, key_, facts_.layout,
                                             {SourceLayout::kCtMxfp4PackQuantized,
                                              SourceLayout::kModelSlim, SourceLayout::kGptOssMxfp4})
              : specs_internal::ExpectLayout(
                    layer, key_, facts_.layout,
                    {SourceLayout::kCtFloatQuantized, SourceLayout::kModelSlim}));
    const bool stacked = StacksExperts(facts_.layout);
    if (stacked != request.stacked.has_value()) {
      return InvalidInput(fmt::format(
          "{}: source layout {} {}", layer, SourceLayoutName(facts_.layout),
          stacked ? "holds every expert of a layer in one tensor per projection, and this layer "
                    "is not one expert's projection of such tensors"
                  : "stores a tensor per projection, not every expert of a layer in one"));
    }
    QP_ASSIGN_OR_RETURN(ShardGeometry g, Geometry(request));
    if (stacked && g.full_cols % key_.group != 0) {
      return InvalidInput(
          fmt::format("{}: K = {} is not a whole number of {}-blocks, as {} stores it", layer,
                      g.full_cols, key_.group, SourceLayoutName(facts_.layout)));
    }
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      QP_RETURN_IF_ERROR(LoadLeg(checkpoint, leg_prefixes[leg], g, leg, params));
    }
    QP_RETURN_IF_ERROR(specs_internal::LoadBias(checkpoint, leg_prefixes, g, params,
                                                *SourceSuffix(facts_.layout, Slot::kBias)));
    params->loaded = true;
    return {};
  }

 private:
  bool Fp4() const { return key_.family == kMxfp4Family; }
  MxLayout Layout() const { return {Fp4(), key_.group}; }

  Result<ShardGeometry> Geometry(const AllocationRequest& request) const {
    return specs_internal::BlockScaledGeometry(request, key_, key_.group, Fp4());
  }

  Status LoadLeg(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                 size_t leg, LinearParams* params) const {
    const AllocationRequest& request = params->request;
    const std::string& layer = request.layer;
    const MxLayout layout = Layout();
    const int64_t groups = layout.ScaleCols(g.full_cols);
    const int64_t row_bytes = layout.WeightRowBytes(g.full_cols);
    // One leading entry per source row; a row is [K/2] or [K] bytes, in gpt-oss's layout [K/32,
    // 16]: each 32-block's 16 bytes, which is the same row.
    const std::vector<int64_t> rows = SourceRowsShape(request, g, leg);
    std::vector<int64_t> weight_shape = rows;
    if (request.stacked) {
      weight_shape.insert(weight_shape.end(), {groups, row_bytes / groups});
    } else {
      weight_shape.push_back(row_bytes);
    }
    std::vector<int64_t> scale_shape = rows;
    scale_shape.push_back(groups);
    QP_ASSIGN_OR_RETURN(TensorView weight,
                        FindSlotTensor(checkpoint, layer, prefix, facts_.layout, Slot::kWeight));
    // Column offsets are whole bytes: a slice starts on a 32-block, so on an even element.
    QP_RETURN_IF_ERROR(CopyByteRows(
        weight, request, g, leg, key_, Fp4() ? StDtype::kU8 : StDtype::kF8E4M3, weight_shape,
        row_bytes, layout.WeightRowBytes(g.src_col), &params->tensor(Slot::kWeight)));
    QP_ASSIGN_OR_RETURN(TensorView scale, FindSlotTensor(checkpoint, layer, prefix, facts_.layout,
                                                         Slot::kWeightScale));
    ParamTensor& scales = params->tensor(Slot::kWeightScale);
    QP_RETURN_IF_ERROR(CopyByteRows(scale, request, g, leg, key_, StDtype::kU8, scale_shape, groups,
                                    g.src_col / layout.group, &scales));
    const uint8_t* bytes = scales.data<uint8_t>() + g.leg_offsets[leg] * scales.cols();
    for (int64_t i = 0; i < g.leg_rows[leg] * scales.cols(); ++i) {
      if (bytes[i] == kE8M0Nan) {
        // The row as the tensor's first dimensions index it ([expert, row] when stacked).
        const int64_t row = SourceRow(request, g, leg, i / scales.cols());
        const std::string at = request.stacked
                                   ? fmt::format("expert {}, row {}", row / rows[1], row % rows[1])
                                   : fmt::format("row {}", row);
        return InvalidInput(fmt::format("{}: tensor {} holds an E8M0 NaN (0xFF) at {}, block {}",
                                        layer, scale.info->name, at,
                                        g.src_col / layout.group + i % scales.cols()));
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
    const bool gpt_oss = kFp4 && facts.layout == SourceLayout::kGptOssMxfp4;
    if (facts.layout != own && facts.layout != SourceLayout::kModelSlim && !gpt_oss) {
      return Unsupported(
          fmt::format("{}: loading {} weights in source layout {} is not implemented in this build",
                      Format(key), kFp4 ? "MXFP4" : "MXFP8", SourceLayoutName(facts.layout)));
    }
    // int8 per token: --int8-activations on MXFP4 weights.
    const bool int8 = kFp4 && act.SymmetricPerToken(QDType::kINT8);
    if (act.mode != ActMode::kNone && !int8 &&
        (act.mode != ActMode::kDynamicGroup || act.group_size != kMxGroup ||
         (act.dtype != QDType::kMXFP4 && act.dtype != QDType::kMXFP8))) {
      return Unsupported(
          fmt::format("{} with {} activations has no kernel mode", Format(key), act.ToString()));
    }
    return std::unique_ptr<WeightSpec>(std::make_unique<MxSpec>(key, act, facts));
  }
  // fp32 accumulation against double, about sqrt(K) · 2^-24 (1e-4 leaves room), in every mode:
  // MX activations are scaled by powers of two, so the kernel's fp32 rounding and the double
  // reference's give the same values (mx_family.h), and int8 ones are rounded by the reference
  // with the kernels' fp32 arithmetic, to the same codes.
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
