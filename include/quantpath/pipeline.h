// quantpath pipeline: the one way from a model folder to decisions and loaded layers.
//
// Goals: OpenModel (sources → importer with the dialect's HF→engine name mapper → sites),
// DecideAll (a decision per site, with its physical spec, stored bytes and whether this build has
// a kernel for it), DecideLayer (one layer as a user names it, with its trace), LoadLayer
// (materialize → load → Linear) and the double-precision reference it is measured against. Every
// command, the Python module and embedders go through it, so they cannot disagree.
// Non-goals: formatting output (reports), argument parsing (the CLI).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/importers.h"
#include "quantpath/ir.h"
#include "quantpath/kernels.h"
#include "quantpath/linear.h"
#include "quantpath/models.h"
#include "quantpath/planner.h"
#include "quantpath/sources.h"
#include "quantpath/specs.h"

namespace quantpath {

// ---------------------------------------------------------------------------------------------
// Opening a model

struct OpenOptions {
  Dialect dialect;
  std::optional<std::string> quantization;  // force the importer (--quantization)
  DeviceCaps device;                        // default: cpu
  Launch launch;                            // --tp, --dtype, --speculative

  // From the command line's spellings: an engine name (DialectNames()), a format name or "" for
  // detection, a device name (ParseDevice), and --dtype, --tp and --speculative (ParseLaunch).
  // Errors name the option and list what is accepted.
  static Result<OpenOptions> Parse(std::string_view engine, std::string_view quantization,
                                   std::string_view device, std::string_view dtype = "auto",
                                   int64_t tp_size = 1, bool speculative = false);
};

// A model folder as one dialect reads it.
struct Model {
  std::string dir;  // as given
  ConfigSources sources;
  QuantPlan plan;  // with the dialect's HF→engine name mapper applied to the config's lists
  ModelSites sites;
  DeviceCaps device;
  Launch launch;
};

// Reads the folder's config files, imports the plan and builds the sites. Errors name the file,
// the pointer and the field.
Result<Model> OpenModel(const std::string& dir, const OpenOptions& options);

// The plan `dialect`'s engine builds from `sources`, its HF→engine name mapper applied: the
// mapper of `model_class` (an architecture or the engine's "module.Class") when given, else that
// of the architecture config.json names. OpenModel and the recorded engine cases share it.
Result<QuantPlan> ImportForEngine(const ConfigSources& sources, const Dialect& dialect,
                                  const std::optional<std::string>& quantization,
                                  const std::optional<std::string>& model_class = std::nullopt);

// ---------------------------------------------------------------------------------------------
// Decisions

// What an attention site's KV cache stores.
struct KvCache {
  // What the cache stores: the KV scheme's dtype, or without one the model's torch_dtype (the
  // engines' `--kv-cache-dtype auto`).
  QDType dtype = QDType::kBF16;
  std::optional<QuantScheme> scheme;  // the KV-cache scheme, when the config names one
  // The engine attaches its KV-cache method (e.g. vLLM's Fp8KVCacheMethod) to the layer; without
  // a scheme the cache still stores the model's dtype (`--kv-cache-dtype auto`).
  bool engine_method = false;
  std::string engine_method_name;  // the method's class, when attached
};

// One site decided, with what it stores.
struct LayerDecision {
  const LayerSite* site = nullptr;  // into Model::sites; valid while the Model lives
  // The planner's decision, except that an attention site is quantized only when its KV cache is
  // (an engine attaching its KV-cache method without a KV scheme keeps a bf16/auto cache; `kv`
  // says so).
  Decision decision;
  std::optional<KvCache> kv;  // attention sites only
  // The physical spec; null when no spec exists on the device (spec_note says why) and for
  // attention sites.
  std::optional<SpecKey> spec;
  // Whether this build has a kernel for the spec on the device (a registry query, never a reason
  // to pick another spec); null without a spec.
  std::optional<bool> kernel_available;
  std::string spec_note;         // why spec is null, or what this build cannot do with the spec
  std::optional<int64_t> bytes;  // what the spec stores, scales and bias included; null without a
                                 // spec
};

// The planner's decisions for `sites`, in order, without traces, with every regex match of the
// plan under one step budget (InputLimits::regex_plan_steps). A regex limit, per match or per
// plan, is the result (kLimit naming the rule's file and key, the pattern and the layer), never a
// layer's decision: it says the config cannot be decided at all.
Result<std::vector<Decision>> DecidePlanSites(const QuantPlan& plan,
                                              const std::vector<LayerSite>& sites);
// Every site of `model`, in site order, decided as DecidePlanSites does.
Result<std::vector<LayerDecision>> DecideAll(const Model& model);
// Bytes of the parameters that are not sites (norms, other tensors), in the checkpoint dtype,
// through the unquantized family's row.
int64_t OtherBytes(const Model& model);
// How many of `layers` decided error.
int CountErrors(const std::vector<LayerDecision>& layers);

// A layer path as the user wrote it, resolved to its site: an execution name, a leg of a fused
// site ("…q_proj" → "…qkv_proj"), an expert's HF name, or a name ending in ".weight".
struct ResolvedSite {
  const LayerSite* site = nullptr;
  std::string note;  // how the name was resolved, when it was not the execution name
};
Result<ResolvedSite> ResolveLayer(const ModelSites& sites, std::string_view path);

// One layer decided with its full trace (explain).
struct ExplainedLayer {
  ResolvedSite resolved;
  LayerDecision layer;  // layer.decision.trace holds every rule tried
};
// Its regex limits are DecideAll's (one budget for the layer's whole trace).
Result<ExplainedLayer> DecideLayer(const Model& model, std::string_view path);

// ---------------------------------------------------------------------------------------------
// Loading and measuring one layer

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
// How sites split (docs/architecture.md, "Tensor parallelism"): by module class as vLLM does —
// RowParallelLinear along K (the bias on rank 0), the column classes along each fused leg's rows
// (QKVParallelLinear with fewer KV heads than ranks: one whole KV head per rank, as
// RankShapeOf says), ParallelLMHead along the vocabulary rows (unpadded), anything else
// replicated.
Result<LoadedLayer> LoadLayer(const Model& model, std::string_view path, int tp_rank = 0);

// The layer's weights dequantized to double straight from the checkpoint tensors, without the
// spec (the oracle LoadLayer's Linear is compared with): this rank's slice of the whole layer's.
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
struct LayerRun {
  std::string kernel;  // the kernel Forward used
  int64_t m = 0;
  double max_abs = 0;
  double mean_abs = 0;
  double rel = 0;
  double tol = 0;
  double time_ms = 0;
  bool pass() const;  // rel finite and within tol
};
Result<LayerRun> RunSeeded(const LoadedLayer& layer, int64_t m, uint64_t seed);

}  // namespace quantpath
