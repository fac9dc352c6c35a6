// quantpath pipeline: Loading one layer into its Linear, and measuring its Forward against the
// double-precision reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/checkpoint.h"
#include "quantpath/linear.h"
#include "quantpath/pipeline/decide.h"
#include "quantpath/specs.h"

namespace quantpath {

// A layer loaded from the checkpoint, ready to run.
struct LoadedLayer {
  ResolvedSite resolved;
  Decision decision;
  QuantScheme scheme;  // the decided scheme (unquantized when the layer is not quantized)
  SpecKey key;         // the materialized spec's identity
  ActivationQuant activation;
  Checkpoint checkpoint;
  std::vector<std::string> leg_prefixes;  // checkpoint module prefix of each fused leg
  RankSlice slice;                        // where this rank's rows and columns lie in the layer
  Linear linear;
};

// Resolves `path`, decides it, materializes its spec on the model's device, opens the checkpoint
// and loads rank `tp_rank`'s shard of the layer (of model.launch.tp_size ranks) into a Linear.
// Errors: a site kind that has no Forward (embedding, moe, attention), a decision of error, no
// spec or no weights, a rank out of range; each names the layer. A split that does not divide
// names the dimension and ends with the sizes that do ("; legal --tp: 1, 2, 4", up to 64).
//
// How sites split (docs/architecture.md, "Tensor parallelism"): by the TpStyle the models stage
// gives the module class, as vLLM does — RowParallelLinear along K (the bias on rank 0), the
// column classes along each fused leg's rows (QKVParallelLinear with fewer KV heads than ranks:
// one whole KV head per rank, as RankShapeOf says), the LM head along the vocabulary rows
// (unpadded), anything else replicated.
Result<LoadedLayer> LoadLayer(const Model& model, std::string_view path, int tp_rank = 0);
// The same for a site DecideAll or DecideOneSite has decided (LoadModel: one decision per site).
Result<LoadedLayer> LoadLayer(const Model& model, const LayerDecision& layer, int tp_rank = 0);

// The layer's weights dequantized to double straight from the checkpoint tensors, without the
// spec (the oracle LoadLayer's Linear is compared with): this rank's slice of the whole layer's
// (RankReference, specs.h: a ModelSlim static row rank shifted as the engines compute it).
Result<ReferenceLayer> LoadReference(const LoadedLayer& layer);

// RunSeeded's input of `layer`: the seeded X [m, K] of the whole layer (below), and of a
// row-parallel rank its columns, so the ranks of one seed add up to the whole layer's run.
std::vector<uint16_t> SeededInput(const LoadedLayer& layer, int64_t m, uint64_t seed);

// One Forward on seeded input compared with the double-precision reference.
//   X [m, K]: X[i] = bf16(2u − 1), u = (mt19937_64(seed)() >> 11) · 2^-53, in bf16, K the whole
//   layer's; a row-parallel rank takes its columns of it (SeededInput). Y is fp32: on a
//   row-parallel rank the partial sum of its columns (the bias on rank 0 only), on a column rank
//   its rows of the output.
//   Y_ref = X' · W_refᵀ + bias in double, X' = X quantized as the spec's activation mode says
//   (QuantizeActivationsReference). max_abs = max |Y − Y_ref|, mean_abs = mean |Y − Y_ref|,
//   rel = max_abs / max |Y_ref|, tol = ToleranceFor(family, activation mode), time_ms = one
//   Forward after a warm-up call.
//   A layer quantized at load (scheme.online) is measured against the unquantized layer instead:
//   Y_ref = X · Wᵀ + bias with the checkpoint's high-precision W and X itself, so the errors are
//   the quantization's (weights and activations), and there is no tolerance (tol is NaN).
struct LayerRun {
  std::string kernel;  // the kernel Forward used
  int64_t m = 0;
  double max_abs = 0;
  double mean_abs = 0;
  double rel = 0;
  double tol = 0;
  double time_ms = 0;
  std::vector<float> y;  // Y [m, N] of the timed Forward, row-major
  bool quantized_at_load = false;
  // Quantized at load: the weights' max |W' − W| / max |W| (LinearParams::quantization_error;
  // the largest over the layers measured together).
  std::optional<double> weight_error;
  // The reference product is zero everywhere (zero scales, a dead layer): rel is 0/0, and the run
  // fails whatever Y is.
  bool zero_reference = false;
  bool pass() const;  // rel finite and, unless quantized at load, within tol
};
Result<LayerRun> RunSeeded(const LoadedLayer& layer, int64_t m, uint64_t seed);

}  // namespace quantpath
