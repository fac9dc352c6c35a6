// quantpath pipeline: Loading a whole model, site by site (`quantpath load`).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "quantpath/pipeline/decide.h"

namespace quantpath {

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

}  // namespace quantpath
