// quantpath moe: the experts of one MoE layer, as Linears, run on routed tokens.
//
// Goals: MoeForward, the grouped forward of the engines' fused MoE: the tokens sorted by expert (a
// stable counting sort), each expert that has tokens gathering their rows and running one Forward
// per projection on that block (so that several tokens of one expert reach the GEMM kernels, not
// one GEMV each), then act(gate, up) in bf16, then down, its rows scattered back scaled by the
// routing weights and summed in fp32 in ascending expert order: the same routing gives the same
// bits at every thread count. Threads are the kernels' own OpenMP loops (across N at decode, over
// X tiles and W blocks at prefill) on the team MoeOptions::threads names. MoeReference: the fp64
// oracle, token by token and expert by expert, from the dequantized weights.
// Non-goals: routing itself (the router and its top-k are the caller's), expert parallelism,
// loading experts (the pipeline's LoadExperts).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/kernels.h"
#include "quantpath/linear.h"
#include "quantpath/models.h"
#include "quantpath/specs.h"

namespace quantpath {

// One expert's projections. w13 is gate and up, either one Linear of [2I, H] (gate rows, then up
// rows, as the engines fuse them) or two of [I, H] (gate, then up, as LoadedExpert holds them):
// their outputs side by side are [gate | up]. w2 is down, [H, I].
struct MoeExpert {
  std::vector<const Linear*> w13;
  const Linear* w2 = nullptr;
};

// The experts of one layer, every one of the same shape, and how gate and up combine
// (LayerSite::expert_activation).
struct MoeLayer {
  std::string name;  // the layer, in every error ("model.layers.3.mlp.experts")
  std::vector<MoeExpert> experts;
  ExpertActivation activation;
};

// The router's choice for each token, row-major: ids [tokens, top_k] (each in [0, experts), the
// ids of one token distinct, as a top-k is) and weights [tokens, top_k] (finite; applied as given,
// so a renormalized top-k is the caller's).
struct MoeRouting {
  int64_t tokens = 0;
  int64_t top_k = 0;
  std::span<const int32_t> ids;
  std::span<const float> weights;
};

// A routing with its own storage.
struct RoutingTable {
  int64_t tokens = 0;
  int64_t top_k = 0;
  std::vector<int32_t> ids;
  std::vector<float> weights;
  MoeRouting View() const { return {tokens, top_k, ids, weights}; }
};

// A seeded routing (the benchmark's, `run`-style measurements'): each token's top_k experts drawn
// uniformly without replacement from [0, experts) by mt19937_64(seed), its weights uniform draws
// normalized to sum to 1 (a renormalized top-k). Requires 1 <= top_k <= experts.
RoutingTable SeededRouting(uint64_t seed, int64_t tokens, int64_t top_k, int64_t experts);

struct MoeOptions {
  int threads = 0;  // OpenMP threads for the call; 0: OpenMP's default team (DefaultThreads)
};

// What one call did.
struct MoeCall {
  int64_t active_experts = 0;  // experts with at least one token
  // The active experts' parameters (LinearParams::WeightBytes of w13 and w2): what the call read.
  int64_t weight_bytes = 0;
  std::vector<const LinearKernel*> kernels;  // those the Forward calls used, once each, in order
};

// Y [tokens, H] = Σ_j weights[t, j] · down(act(gate(x_t), up(x_t))) of expert ids[t, j], for X
// [tokens, H] in fp32 or bf16 (the experts' kernels read it as it is) into Y in fp32 or bf16.
// h = act(gate, up) reaches down in bf16 (ExpertActivation::ApplyBf16), as the engines pass it.
// Errors, each naming the layer: no experts, experts of other shapes (naming the expert and the
// projection), a routing of another size, an id out of range or twice for one token, a weight
// that is not finite (naming the token and the slot), X or Y of another shape or dtype, a thread
// count below 0, and experts whose activations are quantized dynamically per tensor (their scale
// would depend on which tokens share an expert).
Result<MoeCall> MoeForward(const MoeLayer& layer, const MoeRouting& routing, const ConstMatrix& x,
                           const MutableMatrix& y, const MoeOptions& options = {});

// One expert dequantized (DequantizeReference, DequantizeExpertReference): w13 [2I, H], gate rows
// then up rows (two legs stacked), and w2 [H, I].
struct MoeExpertReference {
  ReferenceLayer w13;
  ReferenceLayer w2;
};

// MoeForward's oracle, in double, Y [tokens, H], for X [tokens, H]: for each token t and slot j,
// with e = ids[t, j],
//   [g | u] = ReferenceForward(e.w13, act, x_t)   (x_t as the kernels read it, `act` the spec's)
//   h_i     = bf16(activation(g_i, u_i))          (ExpertActivation::ApplyBf16)
//   Y[t]   += weights[t, j] · ReferenceForward(e.w2, act, h)
// Errors: as MoeForward's, naming `layer`.
Result<std::vector<double>> MoeReference(std::span<const MoeExpertReference> experts,
                                         const ExpertActivation& activation,
                                         const ActivationQuant& act, const MoeRouting& routing,
                                         std::span<const double> x, std::string_view layer);

// rel = max |Y − Y_ref| / max |Y_ref| MoeForward may reach against MoeReference: the family's
// (ToleranceFor, which covers each of the two products, quantized activations included) plus one
// bf16 step, 2^-8: where gate or up lies within the kernel's error of a bf16 rounding boundary,
// the forward's h and the reference's round to neighbouring values.
double MoeTolerance(const SpecKey& key, ActMode mode);

}  // namespace quantpath
