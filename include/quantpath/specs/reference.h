// quantpath specs: double-precision reference: reads a layer's checkpoint tensors directly, without
// a spec, and dequantizes them to double. `run` and the kernel tests compare kernels against it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/device.h"
#include "quantpath/ir.h"
#include "quantpath/specs/source_layouts.h"

namespace quantpath {

struct ReferenceLayer {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> weight;         // [rows, cols], dequantized
  std::vector<double> bias;           // [rows], or empty
  std::optional<double> input_scale;  // static activation scale: the max over the legs (NVFP4
                                      // activations: the layer's input divisor)
  // Static int8 activations: the zero point (asymmetric), with input_scale the one grid of all
  // the legs (w8a8_family.h's CombineStaticInputs; ModelSlim's legs share theirs).
  std::optional<double> input_zero_point;
  // [cols] multipliers of X before it is quantized (ModelOpt W4A8_AWQ `pre_quant_scale`), or
  // empty; the legs of a fused layer share theirs.
  std::vector<double> input_prescale;
};

// One leg's weight, dequantized: what a reference entry returns.
struct ReferenceLeg {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> weight;  // [rows, cols]
};

// A reference dequantizer for one checkpoint source layout, registered from its own file:
//   const ReferenceRegistrar kRegister(SourceLayout::kFp8ScaleInv, &DequantizeFp8Leg);
using ReferenceLegFn = Result<ReferenceLeg> (*)(const Checkpoint& checkpoint,
                                                const QuantScheme& scheme, std::string_view layer,
                                                const std::string& prefix);
// The same for a layout that stacks every expert of a layer (StacksExperts): `expert` says which
// expert and which of its rows are the projection's.
using StackedReferenceLegFn = Result<ReferenceLeg> (*)(const Checkpoint& checkpoint,
                                                       const QuantScheme& scheme,
                                                       std::string_view layer,
                                                       const std::string& prefix,
                                                       const StackedExpert& expert);
struct ReferenceRegistrar {
  ReferenceRegistrar(SourceLayout layout, ReferenceLegFn dequantize);
  ReferenceRegistrar(SourceLayout layout, StackedReferenceLegFn dequantize);
};

// Dequantizes the legs of one layer with the entry of the scheme's source layout
// (scheme.weight.load.layout), stacking legs in order, and reads the static inputs of the
// activation kind that claims scheme.input (ActivationKindRow::ReadReferenceInputs), the input
// prescale (which the legs must share) and biases. A layout without an entry is an error
// naming it. `layer` names the layer in errors. `stacked`: one expert's projection of a layout
// that stacks experts (its one prefix names the stacked tensors), read through the layout's
// stacked entry, its bias rows too; a stacked layout without it, or a plain one with it, is an
// error naming the layout.
Result<ReferenceLayer> DequantizeReference(
    const Checkpoint& checkpoint, const QuantScheme& scheme, std::string_view layer,
    const std::vector<std::string>& leg_prefixes, bool bias,
    const std::optional<StackedExpert>& stacked = std::nullopt);

// DequantizeReference of one expert projection (`prefix`, `stacked` as for DequantizeReference)
// of an MoE layer. The engines quantize
// the input of every expert's gate and up, and of every expert's down, against one NVFP4 global
// (nvfp4_family.h, Nvfp4SharedExpertInput), so NVFP4 activations take their divisor from
// `input_peers`, that projection's prefixes in every expert; other activations keep the
// projection's own scales, as their specs load them (ActivationKindRow::ShareExpertInputs).
Result<ReferenceLayer> DequantizeExpertReference(const Checkpoint& checkpoint,
                                                 const QuantScheme& scheme, std::string_view layer,
                                                 const std::string& prefix,
                                                 const std::vector<std::string>& input_peers,
                                                 bool bias,
                                                 const std::optional<StackedExpert>& stacked = {});

// The rank's slice of a whole layer's reference (`whole` from DequantizeReference, `slice` from
// RankSliceOf): its rows and columns of the weight, the bias where the rank adds it, its columns
// of the input prescale, the same input scale and zero point.
ReferenceLayer SliceReference(const ReferenceLayer& whole, const RankSlice& slice);
// The rank's slice of `whole` (its `request`, of a scheme of `facts` and `act`) as the engines
// compute on that rank: SliceReference, and for a ModelSlim static layer's row-parallel rank its
// quant_bias share (−offset · Σ_k q over all of K is added by rank 0 only, and no rank subtracts
// the offset's share of its own columns, w8a8_spec.cc), so that rank r's product is its columns'
// plus offset · s_x · (Σ_{its columns} W − [r = 0] · Σ_k W) per row, which the ranks' sum cancels.
ReferenceLayer RankReference(const ReferenceLayer& whole, const RankSlice& slice,
                             const AllocationRequest& request, const LoadFacts& facts,
                             const ActivationQuant& act);

// Quantizes X [m, k] as the kind of `act` rounds it for the fp64 reference
// (ActivationKindRow::RoundReference, activation_kinds.h) and returns the dequantized values (X
// itself for kNone), in double: fp8 e4m3 with the conventions above, int8 and int4 as their
// kernels do it, their fp32 operations reproduced exactly (a double product or quotient of two
// floats rounds to the fp32 result; src/specs/activations/), NVFP4 and MX by their families'
// rules. `static_scale` and `static_zero_point` are the layer's static inputs (ReferenceLayer's
// input_scale and input_zero_point: NVFP4's input divisor) where the kind reads them.
std::vector<double> QuantizeActivationsReference(
    std::span<const double> x, int64_t m, int64_t k, const ActivationQuant& act,
    std::optional<double> static_scale, std::optional<double> static_zero_point = std::nullopt);

// Y [m, ref.rows] = X' · W_refᵀ + bias in double, X' = X [m, ref.cols] as the layer's kernels
// read it: multiplied by the input prescale where the layer has one (one fp32 product per element,
// as the kernels take it, so that both round the same values), then quantized as `act` says with
// the layer's static scale and zero point (QuantizeActivationsReference).
std::vector<double> ReferenceForward(const ReferenceLayer& ref, const ActivationQuant& act,
                                     std::span<const double> x, int64_t m);

// Rounds to the nearest e4m3fn value (ties to even), saturating at ±448, in double.
double RoundToE4M3(double value);

}  // namespace quantpath
