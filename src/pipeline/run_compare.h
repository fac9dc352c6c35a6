// Internal to src/pipeline: the seeded input, the error measure of `run` and the legal
// tensor-parallel sizes, shared by dense and MoE layers so that both are measured and split the
// same way (pipeline.h RunSeeded states the formulas).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/pipeline.h"
#include "quantpath/specs.h"

namespace quantpath::pipeline_internal {

// Seeded input values, bf16-representable, in [-1, 1).
std::vector<uint16_t> RandomInput(uint64_t seed, int64_t count);
// bf16 values in double.
std::vector<double> Bf16ToDouble(std::span<const uint16_t> x);
// A given input (`run --input`) in double: bf16, fp16 or fp32; another dtype is an error naming
// the layer.
Result<std::vector<double>> InputToDouble(const ConstMatrix& x, std::string_view layer);

// "1, 2, 4": the tensor-parallel sizes up to 64 for which `fits` holds, for the "; legal --tp: …"
// of a split that does not divide.
std::string LegalTpSizes(const std::function<bool(int64_t)>& fits);
// "[64, 128]": a shape in the pipeline's messages.
std::string ShapeText(std::span<const int64_t> shape);
// Whether `spec` holds rank 0's share of `site` at `tp` as the engines split it: a dense layer's
// rows or columns (and QKVParallelLinear's heads), or every expert projection of an moe site.
// The error names the layer and why.
Status LayerFits(const Model& model, const LayerSite& site, const WeightSpec& spec, int64_t tp);
Status ExpertsFit(const WeightSpec& spec, const Model& model, const LayerSite& site, int64_t tp);

// How `run` measures a layer of `scheme` (pipeline.h RunSeeded): against X' · W_refᵀ, X' quantized
// as the kernels do, within the family's tolerance; or, quantized at load, against the
// unquantized layer (X in high precision; the reference's W is the checkpoint's), without a
// tolerance.
struct Measure {
  ActivationQuant reference_act;  // how the reference quantizes X
  double tol = 0;                 // NaN when quantized at load
  bool quantized_at_load = false;
  // Fills the run's tol and flags, and its weight error from `params` (the largest over calls).
  void Apply(const LinearParams& params, LayerRun* run) const;
};
Measure MeasureFor(const QuantScheme& scheme, const SpecKey& key, const ActivationQuant& act);

// Errors of Y against the reference product, accumulated over one or several products (the
// experts of an MoE layer), so that rel divides by the largest reference value of them all.
struct ErrorStats {
  double max_abs = 0;
  double sum_abs = 0;
  int64_t count = 0;
  double max_ref = 0;

  // Adds Y [m, ref.rows] against ReferenceForward(ref, act, X, m) (X' · W_refᵀ + bias, X' =
  // X [m, ref.cols] as the kernels read it), X in double. `y_stride` is the distance between rows
  // of Y (ref.rows when Y holds only this product).
  void Add(std::span<const float> y, int64_t y_stride, const ReferenceLayer& ref,
           const ActivationQuant& act, std::span<const double> x, int64_t m);
  double mean_abs() const { return count > 0 ? sum_abs / static_cast<double>(count) : 0; }
  // max_abs / max_ref; NaN (0/0) where the reference is zero everywhere, which `run` fails.
  double rel() const;
  // The run's max_abs, mean_abs, rel and zero_reference.
  void Fill(LayerRun* run) const;
};

}  // namespace quantpath::pipeline_internal
