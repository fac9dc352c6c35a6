// Loads a whole model site by site through LoadLayer, accounting for every checkpoint tensor: a
// tensor no layer consumed that is none of the architecture's tensors outside its sites
// (ModelSites::other_tensors, each required with its shape) is an error, never a silent pass.
// Layers are dropped once measured (load-and-drop): the figures say what loading costs and that
// every layer loads, without holding the model; the peak is the largest layer plus what the
// memory-mapped files keep resident.
//
// At --tp N, rank R holds its shard of every site as LoadLayer and LoadExperts split it, its rows
// of the embedding, and the norms whole; every rank reads and accounts for every tensor it
// consumes (bytes_read counts whole tensors).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "fmt/format.h"
#include "quantpath/materialize.h"
#include "quantpath/pipeline.h"
#include "src/pipeline/kv_scales.h"
#include "src/pipeline/run_compare.h"

namespace quantpath {
namespace {

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// A tensor the engines skip when loading, so that it is accepted and not read: the rotary tables
// older checkpoints save (vLLM's load_weights skips `rotary_emb.inv_freq`), and the tensors of an
// MTP layer the engine does not build (ModelSites::skipped_modules).
bool EngineSkips(std::string_view name, const std::vector<std::string>& skipped_modules) {
  if (name.ends_with(".rotary_emb.inv_freq")) return true;
  return std::any_of(skipped_modules.begin(), skipped_modules.end(), [&](const std::string& m) {
    return name.size() > m.size() && name.starts_with(m) && name[m.size()] == '.';
  });
}

class Loader {
 public:
  Loader(const Model& model, Checkpoint checkpoint, int tp_rank)
      : model_(model),
        checkpoint_(std::move(checkpoint)),
        tp_rank_(tp_rank),
        unlisted_(model.sites.unlisted_modules.begin(), model.sites.unlisted_modules.end()),
        names_(checkpoint_.TensorNames()) {
    std::sort(names_.begin(), names_.end());
  }

  Result<ModelLoad> Run(const LoadModelOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = CpuSeconds();
    QP_ASSIGN_OR_RETURN(std::vector<LayerDecision> decisions, DecideAll(model_));
    ModelLoad out;
    out.sites.reserve(model_.sites.sites.size());
    for (size_t i = 0; i < model_.sites.sites.size(); ++i) {
      const LayerSite& site = model_.sites.sites[i];
      SiteLoad load;
      load.site = &site;
      QP_RETURN_IF_ERROR(LoadSite(site, decisions[i], &load));
      out.bytes_read += load.bytes_read;
      out.bytes_held += load.bytes_held;
      if (load.quantization_error) ++out.quantized_at_load;
      if (load.loaded) {
        ++out.layers_loaded;
        ++out.loaded_per_kind[static_cast<size_t>(site.kind)];
        out.largest_layer_bytes = std::max(out.largest_layer_bytes, load.bytes_held);
      } else {
        ++out.not_loaded;
      }
      out.sites.push_back(std::move(load));
      if (options.progress) {
        options.progress(
            LoadProgress{i + 1, model_.sites.sites.size(), &out.sites.back(), out.bytes_read});
      }
    }
    QP_RETURN_IF_ERROR(ConsumeOthers(&out));
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out.gb_per_s = out.seconds > 0 ? static_cast<double>(out.bytes_read) / out.seconds / 1e9 : 0;
    out.cpu_seconds = CpuSeconds() - cpu_start;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    out.peak_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;  // kilobytes on Linux
    return out;
  }

 private:
  Status LoadSite(const LayerSite& site, const LayerDecision& decision, SiteLoad* load) {
    if (site.kind == SiteKind::kAttention) {
      load->note = fmt::format("attention: {}", decision.spec_note);
      if (decision.decision.kind != DecisionKind::kQuantized) return Status();
      // Its KV-cache method reads the KV-cache scales stored under its module.
      const std::string prefix = pipeline_internal::KvScaleModule(site) + ".";
      for (auto it = std::lower_bound(names_.begin(), names_.end(), prefix);
           it != names_.end() && it->starts_with(prefix); ++it) {
        if (pipeline_internal::IsKvScaleName(std::string_view(*it).substr(prefix.size()))) {
          QP_RETURN_IF_ERROR(Consume(*it, load));
        }
      }
      if (load->tensors > 0) {
        load->note = fmt::format(
            "attention: its KV-cache method reads {} scale tensor{} (the KV "
            "cache is allocated at run time)",
            load->tensors, load->tensors == 1 ? "" : "s");
      }
      return Status();
    }
    if (site.kind == SiteKind::kLmHead && site.params == 0) {
      // A copy some checkpoints still store is skipped by the engines: read, not held.
      load->note = "tied to the embedding: the head uses its weight";
      const std::string& prefix = site.checkpoint_path.empty() ? site.path : site.checkpoint_path;
      return Consume(prefix + ".weight", load);
    }
    if (site.kind == SiteKind::kEmbedding) return LoadEmbedding(site, decision, load);
    if (site.kind == SiteKind::kMoe) return LoadMoe(site, decision, load);
    Result<LoadedLayer> loaded = LoadLayer(model_, decision, tp_rank_);
    if (!loaded.ok()) return WithFiles(loaded.status(), LegPrefixes(site));
    const LoadedLayer& layer = *loaded;
    QP_RETURN_IF_ERROR(ConsumeLayer(layer.linear.params(), layer.scheme.weight.load.layout,
                                    layer.leg_prefixes, load));
    load->loaded = true;
    load->spec_id = layer.key.ToId();
    load->bytes_held = layer.linear.params().WeightBytes();  // the bias slot included
    load->quantization_error = layer.linear.params().quantization_error;
    return Status();
  }

  // Every expert of an moe site, one Linear per projection (LoadExperts).
  Status LoadMoe(const LayerSite& site, const LayerDecision& decision, SiteLoad* load) {
    Result<LoadedExperts> loaded = LoadExperts(model_, decision, tp_rank_);
    if (!loaded.ok()) {
      std::vector<std::string> prefixes;
      for (int64_t e = 0; e < site.experts; ++e) {
        for (size_t leg = 0; leg < site.legs.size(); ++leg) {
          prefixes.push_back(site.ExpertLegPath(e, leg));
        }
      }
      return WithFiles(loaded.status(), prefixes);
    }
    const SourceLayout layout = loaded->scheme.weight.load.layout;
    for (const LoadedExpert& expert : loaded->experts) {
      for (size_t p = 0; p < expert.projections.size(); ++p) {
        const LinearParams& params = expert.projections[p].params();
        QP_RETURN_IF_ERROR(ConsumeLayer(params, layout, {expert.prefixes[p]}, load));
        load->bytes_held += params.WeightBytes();
        if (params.quantization_error) {
          load->quantization_error =
              std::max(load->quantization_error.value_or(0.0), *params.quantization_error);
        }
      }
    }
    load->loaded = true;
    load->spec_id = loaded->key.ToId();
    return Status();
  }

  // The tensors of a loaded layer's source layout under each of its prefixes (SourceTensors is
  // the one table loaders and `check` share), and its bias. An optional tensor counts only when
  // the loaded layer holds its slot (the bias: when the layer has one, whichever rank adds it):
  // one the spec had no use for (a zero point on a symmetric layer, an input scale on a dynamic
  // one, a bias the site does not have) stays unconsumed and is named at the end, as the engines'
  // weight loaders reject it.
  Status ConsumeLayer(const LinearParams& params, SourceLayout layout,
                      const std::vector<std::string>& prefixes, SiteLoad* load) {
    const auto consumes = [&](const SourceTensor& tensor) {
      // Required tensors are read by every loader of the layout (validated where not kept, as
      // symmetric GPTQ's qzeros), always-read ones whenever present (GPTQ's g_idx, ModelSlim's
      // weight_offset), slotless ones only to validate or decode others.
      if (tensor.required || tensor.always_read || !tensor.slot) return true;
      return !params.tensor(*tensor.slot).empty();
    };
    for (const std::string& prefix : prefixes) {
      for (const SourceTensor& tensor : SourceTensors(layout)) {
        if (consumes(tensor)) {
          QP_RETURN_IF_ERROR(Consume(prefix + std::string(tensor.suffix), load));
        }
      }
      // The layer's bias, on every rank: a row-parallel rank other than 0 reads no bias (rank 0
      // adds it), yet the tensor is the layer's.
      if (params.request.bias) {
        QP_RETURN_IF_ERROR(Consume(prefix + std::string(*SourceSuffix(layout, Slot::kBias)), load));
      }
    }
    return Status();
  }

  // An embedding is a plain tensor: read (copied, as an engine copies it into its own buffer)
  // and held as stored.
  Status LoadEmbedding(const LayerSite& site, const LayerDecision& decision, SiteLoad* load) {
    const std::string prefix = site.checkpoint_path.empty() ? site.path : site.checkpoint_path;
    const std::string name = prefix + ".weight";
    if (decision.decision.kind == DecisionKind::kQuantized) {
      return Unsupported(fmt::format("{}: a quantized embedding cannot be loaded yet", site.path));
    }
    if (!checkpoint_.Has(name)) {
      return InvalidInput(
          fmt::format("{}: tensor {} is missing from the checkpoint", site.path, name));
    }
    // Read through a checkpoint of its own, dropped with the copy, so that the pages it maps
    // leave the resident set too, as LoadLayer's do.
    QP_ASSIGN_OR_RETURN(Checkpoint own, Checkpoint::Open(model_.dir));
    QP_ASSIGN_OR_RETURN(TensorView view, own.Get(name));
    const TensorInfo& info = *view.info;
    if (site.shape && info.shape != std::vector<int64_t>(site.shape->begin(), site.shape->end())) {
      return InvalidInput(fmt::format("{}: tensor {} of layer {}: shape {}, expected {}", view.file,
                                      name, site.path, pipeline_internal::ShapeText(info.shape),
                                      pipeline_internal::ShapeText(*site.shape)));
    }
    if (!IsUnquantized(info.dtype)) {
      return InvalidInput(
          fmt::format("{}: tensor {} of layer {}: dtype {}, expected BF16, F16 "
                      "or F32",
                      view.file, name, site.path, StDtypeName(info.dtype)));
    }
    // VocabParallelEmbedding's rows of this rank, unpadded (docs/json/load.md, "Tensor
    // parallelism").
    const int64_t tp = model_.launch.tp_size;
    const int64_t vocab = info.shape.empty() ? 0 : info.shape[0];
    if (vocab % tp != 0) {
      const std::string legal =
          pipeline_internal::LegalTpSizes([&](int64_t size) { return vocab % size == 0; });
      return InvalidInput(fmt::format(
          "{}: the vocabulary of {} rows (tensor {}) is not divisible by tensor-parallel size {} "
          "(the vocabulary is split unpadded); legal --tp: {}",
          site.path, vocab, name, tp, legal));
    }
    const size_t rank_bytes = view.bytes.size() / static_cast<size_t>(tp);
    std::vector<std::byte> copy(rank_bytes);
    std::memcpy(copy.data(), view.bytes.data() + rank_bytes * static_cast<size_t>(tp_rank_),
                rank_bytes);
    QP_RETURN_IF_ERROR(Consume(name, load));
    load->loaded = true;
    load->spec_id = decision.spec ? decision.spec->ToId() : "";
    load->bytes_held = HeldBytes(info) / tp;
    return Status();
  }

  // `status` (a layer's loader error, which names the tensor and the layer) with the files that
  // hold the layer's tensors, so that the message names the file too.
  Status WithFiles(const Status& status, const std::vector<std::string>& prefixes) const {
    std::vector<std::string> files;
    for (const std::string& name : checkpoint_.TensorNames()) {
      // gpt-oss's stacked expert tensors follow their prefix with "_" (`gate_up_proj_blocks`).
      const bool of_layer = std::any_of(prefixes.begin(), prefixes.end(), [&](const auto& p) {
        return name.starts_with(p + ".") || name.starts_with(p + "_");
      });
      if (!of_layer) continue;
      Result<TensorView> view = checkpoint_.Get(name);
      if (!view.ok()) continue;
      if (std::find(files.begin(), files.end(), view->file) == files.end()) {
        files.emplace_back(view->file);
      }
    }
    if (files.empty()) return status;
    std::string list;
    for (const std::string& file : files) list += (list.empty() ? "" : ", ") + file;
    return Status(status.code(),
                  fmt::format("{} (the layer's tensors are in {})", status.message(), list));
  }

  // A plain tensor as the engines hold it: converted to the model's dtype (torch_dtype), as the
  // layers' unquantized parameters are.
  int64_t HeldBytes(const TensorInfo& info) const {
    return info.Elements() * (Info(model_.sites.torch_dtype).bits / 8);
  }

  // Marks `name` consumed by `load` when the checkpoint has it (absent optional tensors are the
  // spec's business: LoadLayer has already failed on a missing required one).
  Status Consume(const std::string& name, SiteLoad* load) {
    if (!checkpoint_.Has(name) || !consumed_.insert(name).second) return Status();
    QP_ASSIGN_OR_RETURN(TensorView view, checkpoint_.Get(name));
    load->bytes_read += static_cast<int64_t>(view.bytes.size());
    ++load->tensors;
    return Status();
  }

  // The module of `name` (its `.weight` or `.bias`) when the engine builds that module without a
  // quantization config and so lists no site for it (ModelSites::unlisted_modules).
  std::optional<std::string_view> UnlistedModuleOf(std::string_view name) const {
    for (std::string_view suffix : {".weight", ".bias"}) {
      if (!name.ends_with(suffix)) continue;
      auto it = unlisted_.find(std::string(name.substr(0, name.size() - suffix.size())));
      if (it != unlisted_.end()) return *it;
    }
    return std::nullopt;
  }

  // Reads the tensors of no site: the architecture's other tensors, each of which must be there
  // with its shape, and the weights of the modules the engine lists no site for. Accepts, without
  // reading, the tensors the engine skips; fails on any tensor left over.
  Status ConsumeOthers(ModelLoad* out) {
    std::vector<std::byte> buffer;
    const auto read = [&](const TensorView& view) {
      buffer.resize(view.bytes.size());
      std::memcpy(buffer.data(), view.bytes.data(), buffer.size());
      ++out->other_tensors;
      out->other_bytes += static_cast<int64_t>(buffer.size());
      out->bytes_held += HeldBytes(*view.info);
    };
    for (const OtherTensor& other : model_.sites.other_tensors) {
      if (!checkpoint_.Has(other.name)) {
        return InvalidInput(fmt::format(
            "{}: tensor {} is not in the checkpoint ({}'s config.json gives it shape {}; a tensor "
            "of no layer site)",
            model_.dir, other.name, model_.sites.architecture,
            pipeline_internal::ShapeText(other.shape)));
      }
      QP_ASSIGN_OR_RETURN(TensorView view, checkpoint_.Get(other.name));
      if (view.info->shape != other.shape) {
        return InvalidInput(fmt::format(
            "{}: tensor {}: shape {}, expected {} ({}'s config.json; a tensor of no layer site)",
            view.file, other.name, pipeline_internal::ShapeText(view.info->shape),
            pipeline_internal::ShapeText(other.shape), model_.sites.architecture));
      }
      if (!consumed_.insert(other.name).second) {
        return InternalError(
            fmt::format("tensor {} is both a layer site's and one of the {} tensors of no site",
                        other.name, model_.sites.architecture));
      }
      read(view);
    }
    std::vector<std::string> extra;
    const std::vector<std::string> names = checkpoint_.TensorNames();
    out->tensors = static_cast<int64_t>(names.size());
    for (const std::string& name : names) {
      if (consumed_.contains(name)) continue;
      const std::optional<std::string_view> unlisted = UnlistedModuleOf(name);
      if (!unlisted) {
        if (EngineSkips(name, model_.sites.skipped_modules)) {
          ++out->skipped_tensors;
        } else {
          extra.push_back(name);
        }
        continue;
      }
      QP_ASSIGN_OR_RETURN(TensorView view, checkpoint_.Get(name));
      if (!IsUnquantized(view.info->dtype)) {
        return InvalidInput(fmt::format(
            "{}: tensor {} is {}, but the engine builds {} without a quantization config "
            "(expected BF16, F16 or F32)",
            view.file, name, StDtypeName(view.info->dtype), *unlisted));
      }
      read(view);
    }
    out->bytes_read += out->other_bytes;
    if (extra.empty()) return Status();
    std::string list;
    for (size_t i = 0; i < extra.size() && i < 5; ++i) {
      QP_ASSIGN_OR_RETURN(TensorView view, checkpoint_.Get(extra[i]));
      list += fmt::format("{}{} ({})", i ? ", " : "", extra[i], view.file);
    }
    if (extra.size() > 5) list += fmt::format(" and {} more", extra.size() - 5);
    return InvalidInput(fmt::format(
        "{} checkpoint tensor{} consumed by no layer and not one of {}'s tensors outside its "
        "layer sites (norms, …): {}",
        extra.size(), extra.size() == 1 ? "" : "s", model_.sites.architecture, list));
  }

  const Model& model_;
  Checkpoint checkpoint_;
  const int tp_rank_;
  std::unordered_set<std::string> consumed_;
  // Looked up once per checkpoint tensor (ModelSites::unlisted_modules).
  const std::unordered_set<std::string> unlisted_;
  std::vector<std::string> names_;  // the checkpoint's tensors, sorted
};

}  // namespace

Result<ModelLoad> LoadModel(const Model& model, const LoadModelOptions& options) {
  const int64_t tp = model.launch.tp_size;
  if (options.tp_rank < 0 || options.tp_rank >= tp) {
    return InvalidInput(
        fmt::format("--rank {}: expected 0 to {} for --tp {}", options.tp_rank, tp - 1, tp));
  }
  QP_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::Open(model.dir));
  QP_RETURN_IF_ERROR(checkpoint.Validate());
  return Loader(model, std::move(checkpoint), static_cast<int>(options.tp_rank)).Run(options);
}

}  // namespace quantpath
