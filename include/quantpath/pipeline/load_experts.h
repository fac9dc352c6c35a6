// quantpath pipeline: Loading every expert of an MoE layer, and measuring them against the double-
// precision reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/moe.h"
#include "quantpath/pipeline/load_layer.h"

namespace quantpath {

// One expert, loaded as ExpertProjectionRequests (specs.h) splits it: one Linear per projection,
// in the site's leg order (gate_proj [I, H], up_proj [I, H], down_proj [H, I]).
struct LoadedExpert {
  std::vector<Linear> projections;
  // Each projection's name: its leg's ("gate_proj"), with its rows where it is every other row
  // of a stacked tensor ("gate_up_proj[0::2]": gpt-oss's gate).
  std::vector<std::string> names;
  std::vector<std::string> prefixes;  // the checkpoint prefix of each projection
  std::vector<RankSlice> slices;      // where this rank's rows and columns lie in each projection
};

// Every expert of an moe site, in expert order, each through its own spec (of one SpecKey).
struct LoadedExperts {
  ResolvedSite resolved;
  Decision decision;
  QuantScheme scheme;
  SpecKey key;
  ActivationQuant activation;
  Checkpoint checkpoint;
  std::vector<LoadedExpert> experts;
};

// Resolves `path` to an moe site, decides it, and loads every expert from the checkpoint
// prefixes the site names (LayerSite::ExpertLegPath: `…mlp.experts.N.gate_proj` in Qwen3-MoE,
// DeepSeek-V3/R1, Kimi-K2 and GLM-4.5; gpt-oss's `…mlp.experts.gate_up_proj` stacks every expert,
// gate and up rows interleaved, so each expert's gate (rows 0::2) and up (rows 1::2) load as two
// projections, StackedExpert). Errors: not an moe site, a decision of error, no spec, a source
// layout that stacks experts on a site that does not (or the reverse), a missing or misshapen
// expert tensor (naming the tensor, the expert and the layer).
//
// Rank `tp_rank` of model.launch.tp_size holds its shard of every expert, as vLLM's FusedMoE
// with tensor (not expert) parallelism: gate and up their rows [r·I/tp, (r+1)·I/tp) each
// (column-parallel), down its columns of the same range (row-parallel: a partial sum); gpt-oss's
// stacked MXFP4 experts as vLLM's gpt-oss loader cuts them, ⌈(I / 32) / tp⌉ whole 32-blocks per
// rank and the rest on the last (AllocationRequest::split_block). A split that breaks a group,
// pack or block is an error naming the projection and the dimension, ending "; legal --tp: …"
// (up to 64).
Result<LoadedExperts> LoadExperts(const Model& model, std::string_view path, int tp_rank = 0);
// The same for an moe site already decided.
Result<LoadedExperts> LoadExperts(const Model& model, const LayerDecision& layer, int tp_rank = 0);

// RunSeeded for experts: `expert` runs that one expert, nullopt runs every expert on the same
// input (y [E, m, N]). Two products are measured, as the engines' fused MoE computes them: w13,
// gate and up on X [m, H] (RandomInput of `seed`; N = 2I, the two projections' outputs side by
// side), and w2, down on its own X [m, I] of the same seed (measured on its own input, not on the
// w13 output, since each is a kernel of its own). The reference is DequantizeReference over the
// expert's own prefixes; max_abs, mean_abs and rel are taken over every expert that ran (rel
// divides by the largest |Y_ref| among them) and time_ms sums their Forward calls. A row-parallel
// rank (down at --tp > 1) reads its columns of the whole projection's X. LayerRun::y holds every
// output, expert by expert and projection by projection ([E, legs, m, N]).
struct ExpertsRun {
  std::optional<int64_t> expert;  // the expert that ran; nullopt: every expert
  int64_t experts = 0;            // how many ran
  LayerRun w13;
  LayerRun w2;
  bool pass() const { return w13.pass() && w2.pass(); }
};
Result<ExpertsRun> RunExpertsSeeded(const LoadedExperts& layer, int64_t m, uint64_t seed,
                                    std::optional<int64_t> expert);

// The experts on given activations (`run --input`), X [m, H] in bf16, fp16 or fp32: w13 (gate and
// up, their biases added) on X, then h = bf16(act(gate, up)) on this rank's intermediate rows, act
// the architecture's (LayerSite::expert_activation: SiLU(gate) ⊙ up, gpt-oss's clamped SwiGLU),
// then down on h, so
// w2.y is each expert's output ([E, m, H] for every expert, [m, H] for one; at --tp > 1 this
// rank's partial sum, the ranks' sum being the whole expert's). Each product is measured against
// the reference on the input its kernel read (w2 on h). The kernels read bf16 where every value
// is one, fp32 otherwise.
Result<ExpertsRun> RunExpertsOnInput(const LoadedExperts& layer, const ConstMatrix& x,
                                     std::optional<int64_t> expert);

// The grouped forward's view of `layer` (MoeForward, moe.h): each expert's gate and up as its
// w13, down as its w2, the site's activation (LayerSite::expert_activation), named by the site's
// path; valid while `layer` lives. At --tp > 1 its output is this rank's partial sum.
MoeLayer MoeLayerOf(const LoadedExperts& layer);

// The same on given activations (`run --input`): X [m, K] in bf16, fp16 or fp32, row-major. bf16
// and fp32 reach the kernel as they are; fp16 is widened to fp32 first (exactly), as no kernel
// reads fp16. The reference uses the same values in double. Errors: a shape that is not
// [m, in_features] or another dtype, naming the layer.
Result<LayerRun> RunOnInput(const LoadedLayer& layer, const ConstMatrix& x);

}  // namespace quantpath
