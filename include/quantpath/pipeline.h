// quantpath pipeline: the one way from a model folder to decisions and loaded layers.
//
// Goals: OpenModel (sources → importer with the dialect's HF→engine name mapper → sites),
// DecideAll (a decision per site, with its physical spec, stored bytes and whether this build has
// a kernel for it), DecideLayer (one layer as a user names it, with its trace), LoadLayer
// (materialize → load → Linear), LoadExperts (the same for every expert of an MoE layer) and the
// double-precision reference they are measured against. Every
// command, the Python module and embedders go through it, so they cannot disagree.
// Non-goals: formatting output (reports), argument parsing (the CLI).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
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
#include "quantpath/moe.h"
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
  // Options for importers beyond the files, by name (--modelslim-packing new), passed to the
  // importer that declares them (FormatOption, importers.h) without being read here.
  FormatOptions format_options;
  // --online: every linear layer and MoE expert of a high-precision checkpoint quantized at load
  // to this scheme (OnlinePlan, importers.h).
  std::optional<QuantScheme> online;
  // --int8-activations (the native engine on the CPU only): every int4 weight-only scheme with
  // channel scales or groups of a power-of-two multiple of 64 and no act-order, and every NVFP4
  // and MXFP4 weight-only scheme, takes
  // int8 activations, quantized per token at run time (dynamic, symmetric), and runs on integer
  // dot products: how vLLM's CPU backend runs AWQ and GPTQ (IPEX, lowp_mode INT8), and llama.cpp
  // its 4-bit types. It trades the exact W4A16 product for about twice the decode speed on AVX2;
  // other int4 layers stay weight-only.
  bool int8_activations = false;

  // An importer's option (FormatOptionsDeclared(): "modelslim-packing" = "old" | "new"), or
  // nothing for an empty value. An unknown option or value is an error naming the option and what
  // it accepts.
  Status SetFormatOption(std::string_view name, std::string_view value);
  // --online: a target's name (OnlineTargets(), specs.h), or "" for none. The target must have a
  // spec on `device` that quantizes at load; errors name the scheme and the device.
  Status SetOnline(std::string_view name);

  // From the command line's spellings: an engine name (DialectNames()), a format name or "" for
  // detection, a device name (ParseDevice), and --dtype, --tp and --speculative (ParseLaunch).
  // Errors name the option and list what is accepted.
  static Result<OpenOptions> Parse(std::string_view engine, std::string_view quantization,
                                   std::string_view device, std::string_view dtype = "auto",
                                   int64_t tp_size = 1, bool speculative = false);
};

// A model folder as one dialect reads it.
struct Model {
  std::string dir;  // the folder read: ResolveModelDir (sources.h) of the name given
  ConfigSources sources;
  QuantPlan plan;  // with the dialect's HF→engine name mapper applied to the config's lists
  ModelSites sites;
  DeviceCaps device;
  Launch launch;
};

// Resolves `dir` (a folder, a Hugging Face cache folder or a repo id in the local cache:
// ResolveModelDir), reads its config files, imports the plan and builds the sites. Errors name the
// file, the pointer and the field.
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
  // The spec materialized for the decision on the device, shared by every site of the same scheme
  // (LoadLayer and LoadExperts load into it); null for attention sites and where
  // `materialized` says why not.
  std::shared_ptr<const WeightSpec> weight_spec;
  Status materialized;
};

// The planner's decisions for `sites`, in order, without traces, with every regex match of the
// plan under one step budget (InputLimits::regex_plan_steps). A regex limit, per match or per
// plan, is the result (kLimit naming the rule's file and key, the pattern and the layer), never a
// layer's decision: it says the config cannot be decided at all.
Result<std::vector<Decision>> DecidePlanSites(const QuantPlan& plan,
                                              const std::vector<LayerSite>& sites);
// Every site of `model`, in site order, decided as DecidePlanSites does, with the shape checks of
// the launch's --tp and the site's spec, one materialization per scheme.
Result<std::vector<LayerDecision>> DecideAll(const Model& model);
// One site as DecideAll decides it, under its own regex budget; with the planner's trace when
// `trace`.
Result<LayerDecision> DecideOneSite(const Model& model, const LayerSite& site, bool trace = false);
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
  bool pass() const;  // rel finite and, unless quantized at load, within tol
};
Result<LayerRun> RunSeeded(const LoadedLayer& layer, int64_t m, uint64_t seed);

// ---------------------------------------------------------------------------------------------
// Loading and measuring the experts of one MoE layer

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

// ---------------------------------------------------------------------------------------------
// Loading a whole model (`quantpath load`)

// What became of one site.
struct SiteLoad {
  const LayerSite* site = nullptr;  // into Model::sites
  bool loaded = false;              // through LoadLayer (or held as stored, for an embedding)
  std::string spec_id;              // the spec it was loaded into; empty when not loaded
  std::string note;                 // why it was not loaded ("attention: …"); empty when loaded
  int64_t bytes_read = 0;           // the checkpoint tensors it consumed
  int64_t bytes_held = 0;           // what it holds once loaded (LinearParams::WeightBytes)
  int64_t tensors = 0;              // how many checkpoint tensors it consumed
  // Quantized at load: the weights' max |W' − W| / max |W| (LinearParams::quantization_error,
  // the largest over an moe site's projections); nullopt otherwise.
  std::optional<double> quantization_error;
};

struct LoadProgress {
  size_t done = 0;  // sites finished, this one included
  size_t total = 0;
  const SiteLoad* last = nullptr;  // the site just finished
  int64_t bytes_read = 0;          // so far
};
using LoadProgressFn = std::function<void(const LoadProgress&)>;

struct LoadModelOptions {
  int64_t tp_rank = 0;      // this rank of Model::launch.tp_size
  LoadProgressFn progress;  // called after every site, in site order; may be empty
};

struct ModelLoad {
  std::vector<SiteLoad> sites;  // one per Model::sites entry, in order
  // Loaded sites per SiteKind (indexed by the enum's value).
  std::array<int64_t, 6> loaded_per_kind{};
  int64_t layers_loaded = 0;
  int64_t not_loaded = 0;
  int64_t quantized_at_load = 0;  // sites whose weights were quantized at load
  // Checkpoint tensors that are no site's: ModelSites::other_tensors (norms, …) and the weights of
  // its unlisted_modules.
  int64_t other_tensors = 0;
  int64_t other_bytes = 0;  // their bytes as stored (read; held at the model's dtype)
  // Tensors the engine skips when loading, accepted without being read: rotary inv_freq tables,
  // the MTP layers it does not build (ModelSites::skipped_modules).
  int64_t skipped_tensors = 0;
  int64_t tensors = 0;     // every checkpoint tensor (all consumed or skipped, or LoadModel fails)
  int64_t bytes_read = 0;  // sites' and other tensors' bytes
  int64_t bytes_held = 0;
  // Largest bytes_held of one site: with layers dropped after loading, what the layers add to
  // the peak.
  int64_t largest_layer_bytes = 0;
  double seconds = 0;
  // User + system CPU time of the process while loading: on a busy machine, what the load cost
  // apart from waiting for a core.
  double cpu_seconds = 0;
  double gb_per_s = 0;         // bytes_read / seconds / 1e9
  int64_t peak_rss_bytes = 0;  // getrusage ru_maxrss of the process, at the end
};

// Loads every site of `model`, one at a time, through LoadLayer (decision → materialize → spec →
// load → process; LoadExperts for an moe site), and drops each layer once measured, so the layers
// add at most the largest one to the peak. An embedding is a plain tensor: its weight is read
// (copied) and held at the model's dtype, as are the non-layer tensors. Sites that hold no
// checkpoint weights of their own (attention, a head tied to the embedding) are reported as not
// loaded, with why. Every checkpoint tensor must be consumed: by a layer (the tensors of its source
// layout, SourceTensors, under each leg prefix, and its `.bias`; an optional one only when the
// layer holds its slot, GPTQ's g_idx always), by an embedding, as one of the architecture's
// tensors of no site (ModelSites::other_tensors, each required with its shape: else an error
// naming it, its file and both shapes), as the weight or bias of an unlisted module, or skipped
// as the engine skips it (`….rotary_emb.inv_freq`, ModelSites::skipped_modules); any other tensor
// is an error naming it and its file.
// Errors name the layer, and the tensor and file where one is at fault: a layer LoadLayer cannot
// load, a decision of error, a missing tensor, a shape that differs.
// At model.launch.tp_size > 1, rank options.tp_rank holds its shard: every layer as LoadLayer and
// LoadExperts split it, the embedding's rows [r·V/tp, (r+1)·V/tp) (VocabParallelEmbedding without
// vLLM's padding of V to a multiple of 64: a V that tp does not divide is an error naming the
// layer and the legal sizes), routers and norms whole; bytes_held is this rank's, bytes_read the
// whole tensors it consumed.
Result<ModelLoad> LoadModel(const Model& model, const LoadModelOptions& options = {});

// ---------------------------------------------------------------------------------------------
// Checking a checkpoint against its config (`quantpath check`): headers and index only, never
// tensor data.

enum class FindingKind : uint8_t {
  kCheckpoint,         // a problem of the files themselves (Finding::checkpoint says which)
  kDecidedError,       // the engine would refuse the layer's quantization (legs that disagree, …)
  kNoSpec,             // the layer's scheme has no physical spec (spec_note says why)
  kMissingTensor,      // a tensor the layer's source layout needs is not in the checkpoint
  kShape,              // a tensor whose shape is not the one its layer or parameter reads
  kDtype,              // a quantized layer's tensor in a dtype its source layout never stores
  kStoredQuantized,    // the config leaves the layer unquantized; the checkpoint quantizes it
  kStoredUnquantized,  // the config quantizes the layer; the checkpoint stores it unquantized
  kUnconsumed,         // no layer and no non-layer parameter of the architecture reads it
  kSkipped,            // warning: a tensor the engine skips when it loads (rotary inv_freq, …)
  kTensorParallel,     // at the launch's --tp, a layer whose rank shapes break its layout
};
std::string_view FindingKindName(FindingKind kind);  // "missing-tensor", …

struct Finding {
  FindingKind kind = FindingKind::kCheckpoint;
  std::optional<CheckpointProblemKind> checkpoint;  // kCheckpoint only
  bool error = true;                                // false: a warning
  std::string file;                                 // the shard, index or folder concerned
  std::string tensor;                               // empty when the finding is a file's or layer's
  std::string layer;                                // the site's path; empty when none
  std::string expected;
  std::string found;
  std::string message;  // names the file, the tensor and the layer
  // "missing-tensor", or the checkpoint problem's kind ("not-in-index", …).
  std::string_view KindName() const;
};

struct CheckReport {
  std::vector<Finding> findings;  // checkpoint problems first, then per site, then left over
  int64_t errors = 0;
  int64_t warnings = 0;
  int64_t tensors = 0;  // in the checkpoint
  // What the folder did not let `check` see: shards known from the index only (their tensors'
  // dtypes and shapes are not checked).
  std::vector<std::string> not_checked;
  // Why the layers were not checked at all, when the files are too broken to plan from (the
  // checkpoint problems above say how); empty when they were.
  std::string layers_not_checked;
  // The tensor-parallel sizes up to 16 at which every layer splits as the engine splits it (whole
  // groups, blocks, packed bytes and experts' blocks per rank, heads and KV heads as
  // QKVParallelLinear divides them, the vocabulary).
  std::vector<int64_t> loadable_tp;
};

// Audits the folder's files (AuditCheckpoint), then holds every tensor of its headers against the
// sites as `options`' dialect decides them: each site's tensors by its source layout
// (SourceTensors) under each leg's and expert's prefix, its bias, whether it is stored quantized
// as decided, and what no site consumes; and at the launch's --tp every layer's split. A folder
// without weights is kNotFound; one whose config cannot be planned is that error, unless the
// files' own problems explain it (then the report has them and `layers_not_checked`).
Result<CheckReport> CheckFolder(const std::string& dir, const OpenOptions& options);

// ---------------------------------------------------------------------------------------------
// Engines side by side (the `diff` command).

// Sites are aligned across dialects by LayerSite::CheckpointKey (checkpoint names, since dialects
// name fused MLA projections, attention modules and routers differently). Only differences in
// what is stored or computed count: the weight / activation scheme, quantized versus not, error
// versus not. The rest (a site one dialect names differently or lacks, an engine attaching a
// KV-cache method without a KV scheme, other error texts) becomes a note. JSON in
// docs/json/diff.md.

struct DiffOptions {
  // Native first (the reference), then the engines to compare with it.
  std::vector<Dialect> dialects;
  std::optional<std::string> quantization;  // --quantization
  Launch launch;                            // --tp, --dtype, --speculative
};
// Every dialect: native, vllm, sglang, vllm@0.33, sglang@0.5.23.
std::vector<Dialect> DefaultDiffDialects();
// `--engines vllm,sglang@0.5.23`: native is put first whether named or not. An unknown or repeated
// name is an error naming it.
Result<std::vector<Dialect>> ParseDiffEngines(std::string_view list);

// One dialect's side of an aligned site.
struct DialectDecision {
  std::vector<std::string> paths;    // its execution names for the key (SGLang's MLA: two)
  std::optional<Decision> decision;  // of paths[0], with its trace; null without a site or plan
  bool differs = false;              // stores or computes something other than the reference
  // Quantized only in name: an engine attached a KV-cache method to attention without a KV-cache
  // scheme, which stores and computes what an unquantized attention layer does.
  bool kv_method_only = false;
};

struct LayerDiff {
  std::string key;  // LayerSite::CheckpointKey()
  SiteKind kind = SiteKind::kLinear;
  size_t reference = 0;                   // the first dialect with a decision (native if any)
  std::vector<DialectDecision> dialects;  // per ModelDiff::dialects
};

// What differs between dialects without changing what is stored or computed, grouped per dialect
// and kind, with the first example.
struct DiffNote {
  std::string dialect;
  std::string kind;  // "naming", "missing", "kv_method", "error_text"
  int64_t count = 0;
  std::string text;
};

struct EngineSummary {
  std::string dialect;
  std::string line;  // "loads", "errors at <layer>: <message>", "loads with N layers …"
  bool loads = true;
  std::string config_error;       // why the quantization config did not import; "" when it did
  std::string first_error_layer;  // the first site decided error (its execution name)
  std::string first_error;
  // Sites by stored outcome (an attention layer with a KV-cache method but no scheme counts as
  // unquantized).
  int64_t quantized = 0;
  int64_t unquantized = 0;
  int64_t errors = 0;
  int64_t unquantized_meant = 0;  // unquantized here, quantized by native
};

struct ModelDiff {
  std::string model;  // the folder as given
  std::string architecture;
  std::vector<std::string> dialects;
  std::vector<LayerDiff> layers;  // real differences only
  std::vector<DiffNote> notes;
  std::vector<EngineSummary> summaries;

  // layers.size(), plus one when the quantization config imports under some dialects only.
  int64_t Differences() const;
};

// Plans `dir` with every dialect of `options`. An unreadable folder, or a quantization config no
// dialect can import, is an error.
Result<ModelDiff> DiffDialects(const std::string& dir, const DiffOptions& options);

// ---------------------------------------------------------------------------------------------
// Engine decision cases (the `match` command; schema in tests/data/oracle/README.md): each case's
// config in the file its format's importer reads, its layers as sites, decided as the case's
// engine release decides them.

struct CaseDecision {
  std::string prefix;
  std::string decision;  // "quantized" | "unquantized" | "error"
  std::string detail;
};

struct CaseResult {
  std::string id;
  std::vector<CaseDecision> decisions;  // same order and number as the case's layers
  std::vector<CaseDecision> expected;   // as recorded (may be empty)
};

// Decides every layer of every case in `cases` (a JSON list, read from `file`). `engine`
// overrides each case's engine. Malformed cases are an error naming the file and pointer.
Result<std::vector<CaseResult>> MatchCases(const Json& cases, std::string_view file,
                                           const std::optional<Dialect>& engine);

}  // namespace quantpath
