// The fallback for architectures no builder knows: layer sites inferred from the checkpoint's
// tensors (ConfigSources::checkpoint(): the safetensors headers, or the index's names alone).
//
// Goals: let `plan` say something useful about a model whose architecture is not in the registry.
// Every module that holds a weight becomes a site named as the checkpoint names it: quantized
// weights (GPTQ/AWQ `qweight`, compressed-tensors `weight_packed`, MLX `scales`, bitsandbytes
// `weight.absmax` …) and plain ones alike; embeddings, the LM head and routers are recognised by
// name, experts (numbered, or stored fused as gpt-oss does) become one moe site per layer, and
// norms, convolutions and loose parameters are other tensors. With the headers, a site's logical
// [N, K] comes from the stored layout where that is unambiguous (LogicalShape); a site whose
// weight is packed another way, and every site of an index without its shards, has shape null and
// params 0. A warning says the sites were inferred and which shapes are unknown.
// Non-goals: fused sites (no packed-module mapping is known), module construction order (sites
// are listed in the natural order of their names, numbers compared as numbers).
#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath::models {
namespace {

// A module as the checkpoint shows it: its parameters, each with the tensor that stores it when
// the name is exactly `<module>.<param>` (bitsandbytes' `weight.absmax` state is not the weight).
struct ModuleTensors {
  std::map<std::string, const CheckpointTensor*, std::less<>> params;

  // The tensor of `param` when the headers gave its shape, else nullptr.
  const CheckpointTensor* Stored(std::string_view param) const {
    auto it = params.find(param);
    return it == params.end() || it->second == nullptr || !it->second->shape ? nullptr : it->second;
  }
};

// Splits a tensor name into (module, parameter). bitsandbytes stores a quantized weight's state
// under the weight's own name (`X.weight.absmax`, `X.weight.quant_state.bitsandbytes__nf4`): all of
// those are parameter "weight" of module X.
std::pair<std::string_view, std::string_view> SplitTensorName(std::string_view name) {
  if (size_t at = name.find(".weight."); at != std::string_view::npos) {
    return {name.substr(0, at), "weight"};
  }
  return {ParentPath(name), LastSegment(name)};
}

// Dtypes in which a weight is stored one value per element, so that its shape is the logical
// [N, K]: floats (fp8 included) and int8. Wider integers and bytes are how formats pack sub-byte
// values (MLX U32, bitsandbytes and ModelOpt NVFP4 U8), which the shape alone does not undo.
bool StoresOneValuePerElement(const std::string& dtype) {
  static constexpr std::string_view kDtypes[] = {
      "F16", "BF16", "F32", "F64", "F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I8"};
  return std::find(std::begin(kDtypes), std::end(kDtypes), dtype) != std::end(kDtypes);
}

bool Is2d(const CheckpointTensor* t) { return t != nullptr && t->shape->size() == 2; }

// The logical [N (out), K (in)] of a module's weight where its stored layout states it:
//   a plain `weight` (or Molmo's `embedding`) [N, K];
//   GPTQ: `qweight` [K·bits/32, N] with `scales` [groups, N] and `g_idx` [K];
//   AWQ: `qweight` [K, N·bits/32] with `scales` [groups, N] (the packed axis is N, so the column
//   counts differ).
// nullopt otherwise (GPTQ without g_idx, where bits would be needed; compressed-tensors, whose
// shape is tensor data; MLX and other packed bytes).
std::optional<std::array<int64_t, 2>> LogicalShape(const ModuleTensors& m) {
  for (std::string_view param : {"weight", "embedding"}) {
    const CheckpointTensor* w = m.Stored(param);
    if (Is2d(w) && StoresOneValuePerElement(*w->dtype)) return {{(*w->shape)[0], (*w->shape)[1]}};
  }
  const CheckpointTensor* qweight = m.Stored("qweight");
  const CheckpointTensor* scales = m.Stored("scales");
  if (!Is2d(qweight) || !Is2d(scales)) return std::nullopt;
  const int64_t n = (*scales->shape)[1];
  if ((*qweight->shape)[1] != n) return {{n, (*qweight->shape)[0]}};
  const CheckpointTensor* g_idx = m.Stored("g_idx");
  if (g_idx != nullptr && g_idx->shape->size() == 1) return {{n, (*g_idx->shape)[0]}};
  return std::nullopt;
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated headers: the product fits (it is a byte length)
  return n;
}

// Weights and bias of a site with a known shape, as the checkpoint stores them (logical counts).
int64_t SiteParams(const ModuleTensors& m, const std::array<int64_t, 2>& shape) {
  const CheckpointTensor* bias = m.Stored("bias");
  return shape[0] * shape[1] + (bias != nullptr ? Elements(*bias->shape) : 0);
}

bool IsNumber(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The parameter names under which a module stores its (possibly quantized) weight. A module with
// none of them (e.g. one holding only `sinks` or `A_log`) is not a site.
bool IsWeightParam(std::string_view param) {
  static constexpr std::string_view kWeights[] = {
      "weight",         // plain, fp8, MLX (with `scales`/`biases`), bitsandbytes
      "qweight",        // GPTQ, AWQ
      "weight_packed",  // compressed-tensors pack-quantized, NVFP4
      "embedding",      // Molmo's `wte.embedding`
  };
  return std::find(std::begin(kWeights), std::end(kWeights), param) != std::end(kWeights);
}

// Kinds recognised from the module's own name (its last segment).
bool IsNorm(std::string_view last) {
  return last.find("norm") != std::string_view::npos || last.starts_with("ln");
}
bool IsEmbedding(std::string_view last) {
  static constexpr std::string_view kNames[] = {"embed_tokens", "wte", "wpe", "word_embeddings",
                                                "tok_embeddings"};
  return std::find(std::begin(kNames), std::end(kNames), last) != std::end(kNames);
}

// "model.layers.10.mlp" after "model.layers.9.mlp": runs of digits compare as numbers.
bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = a[i] >= '0' && a[i] <= '9';
    const bool db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      size_t ei = i;
      size_t ej = j;
      while (ei < a.size() && a[ei] >= '0' && a[ei] <= '9') ++ei;
      while (ej < b.size() && b[ej] >= '0' && b[ej] <= '9') ++ej;
      // Without leading zeros, the longer run is the larger number.
      std::string_view na = a.substr(i, ei - i);
      std::string_view nb = b.substr(j, ej - j);
      while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

// Numbered experts (`<layer>.experts.<n>.<leg>`) grouped per layer.
struct ExpertGroup {
  std::set<std::string, std::less<>> indices;
  std::vector<std::string> legs;  // first-seen order
};

// `model.layers.3.mlp.experts.7.gate_proj` → ("model.layers.3.mlp.experts", "7", "gate_proj").
bool SplitExpertPath(std::string_view module, std::string_view* experts, std::string_view* index,
                     std::string_view* leg) {
  *leg = LastSegment(module);
  std::string_view rest = ParentPath(module);
  *index = LastSegment(rest);
  *experts = ParentPath(rest);
  return !leg->empty() && IsNumber(*index) && LastSegment(*experts) == "experts";
}

// gpt-oss stores all experts of a layer in fused tensors of the `experts` module itself
// (`gate_up_proj_blocks`, `gate_up_proj_scales`, `gate_up_proj_bias`, …): their stems are the legs.
std::vector<std::string> FusedExpertLegs(const ModuleTensors& tensors) {
  std::vector<std::string> legs;
  for (const auto& [name, tensor] : tensors.params) {
    std::string_view param = name;
    for (std::string_view suffix : {"_blocks", "_scales", "_bias"}) {
      if (param.ends_with(suffix)) param.remove_suffix(suffix.size());
    }
    if (std::find(legs.begin(), legs.end(), param) == legs.end()) legs.emplace_back(param);
  }
  return legs;
}

LayerSite MakeSite(std::string path, SiteKind kind, std::string_view module_class, bool bias) {
  LayerSite site;
  site.path = std::move(path);
  site.checkpoint_path = site.path;  // inferred sites are named as the checkpoint names them
  site.kind = kind;
  site.module_class = std::string(module_class);
  site.tp_style = TpStyleOf(module_class);
  site.bias = bias;
  return site;
}

// Shapes and parameter counts from the headers. An moe site's shape is one expert's
// [intermediate, hidden]: the shape of a leg that reads the embedding's width (a gate or up
// projection) when the embedding's shape is known, else of its first leg; its params count every
// expert's legs. A site whose weight (or any expert leg) has no LogicalShape keeps shape null and
// params 0.
void ShapeSites(const std::map<std::string, ModuleTensors, std::less<>>& modules,
                const std::map<std::string, ExpertGroup, std::less<>>& expert_groups,
                std::vector<LayerSite>* sites) {
  const auto module = [&](std::string_view path) -> const ModuleTensors* {
    auto it = modules.find(path);
    return it == modules.end() ? nullptr : &it->second;
  };
  std::optional<int64_t> hidden;
  for (LayerSite& site : *sites) {
    const ModuleTensors* m = site.kind == SiteKind::kMoe ? nullptr : module(site.path);
    if (m == nullptr) continue;
    site.shape = LogicalShape(*m);
    if (!site.shape) continue;
    site.params = SiteParams(*m, *site.shape);
    if (site.kind == SiteKind::kEmbedding) hidden = (*site.shape)[1];
  }
  for (LayerSite& site : *sites) {
    auto group = expert_groups.find(site.path);
    if (site.kind != SiteKind::kMoe || group == expert_groups.end()) continue;
    const std::string& first = *group->second.indices.begin();
    std::optional<std::array<int64_t, 2>> shape;
    int64_t per_expert = 0;
    std::vector<int64_t> rows;
    for (const Leg& leg : site.legs) {
      const ModuleTensors* m = module(fmt::format("{}.{}.{}", site.path, first, leg.name));
      const std::optional<std::array<int64_t, 2>> leg_shape =
          m == nullptr ? std::nullopt : LogicalShape(*m);
      if (!leg_shape) break;
      rows.push_back((*leg_shape)[0]);
      per_expert += SiteParams(*m, *leg_shape);
      const bool reads_hidden = hidden && (*leg_shape)[1] == *hidden;
      if (!shape || (reads_hidden && (*shape)[1] != *hidden)) shape = leg_shape;
    }
    if (rows.size() != site.legs.size()) continue;
    for (size_t i = 0; i < rows.size(); ++i) site.legs[i].rows = rows[i];
    site.shape = shape;
    site.params = per_expert * site.experts;
  }
}

}  // namespace

Status InferSitesFromCheckpoint(const CheckpointListing& checkpoint, ModelSites* out) {
  if (checkpoint.origin != CheckpointOrigin::kIndex &&
      checkpoint.origin != CheckpointOrigin::kHeaders) {
    return NotFound(
        "no model.safetensors.index.json or safetensors file in the model folder to infer layer "
        "sites from");
  }
  const bool headers = checkpoint.origin == CheckpointOrigin::kHeaders;

  std::map<std::string, ModuleTensors, std::less<>> modules;
  std::map<std::string, ExpertGroup, std::less<>> expert_groups;
  for (const CheckpointTensor& tensor : checkpoint.tensors) {
    const auto [module, param] = SplitTensorName(tensor.name);
    if (module.empty()) continue;  // a top-level parameter belongs to no module
    const bool exact = LastSegment(tensor.name) == param && ParentPath(tensor.name) == module;
    auto [it, added] = modules[std::string(module)].params.try_emplace(std::string(param), nullptr);
    if (exact) it->second = &tensor;
    std::string_view experts;
    std::string_view expert_index;
    std::string_view leg;
    if (SplitExpertPath(module, &experts, &expert_index, &leg)) {
      ExpertGroup& group = expert_groups[std::string(experts)];
      group.indices.emplace(expert_index);
      if (std::find(group.legs.begin(), group.legs.end(), leg) == group.legs.end()) {
        group.legs.emplace_back(leg);
      }
    }
  }

  std::vector<LayerSite> sites;
  std::set<std::string, std::less<>> moe_paths;
  std::set<std::string, std::less<>> site_modules;  // modules whose tensors a site stands for
  for (const auto& [experts, group] : expert_groups) {
    LayerSite site = MakeSite(experts, SiteKind::kMoe, "FusedMoE", false);
    site.experts = static_cast<int64_t>(group.indices.size());
    for (const std::string& leg : group.legs) site.legs.push_back({leg, 0});
    moe_paths.insert(experts);
    for (const std::string& index : group.indices) {
      for (const std::string& leg : group.legs) {
        site_modules.insert(fmt::format("{}.{}.{}", experts, index, leg));
      }
    }
    sites.push_back(std::move(site));
  }
  for (const auto& [path, tensors] : modules) {
    if (LastSegment(path) != "experts" || moe_paths.contains(path)) continue;
    // The expert count is in the tensors' shapes, whose packing differs per format.
    LayerSite site = MakeSite(path, SiteKind::kMoe, "FusedMoE", false);
    for (const std::string& leg : FusedExpertLegs(tensors)) site.legs.push_back({leg, 0});
    moe_paths.insert(path);
    site_modules.insert(path);
    sites.push_back(std::move(site));
  }
  for (const auto& [path, tensors] : modules) {
    const std::string_view last = LastSegment(path);
    const bool has_weight = std::any_of(tensors.params.begin(), tensors.params.end(),
                                        [](const auto& p) { return IsWeightParam(p.first); });
    // Norms, convolutions and modules holding only loose parameters (attention sinks, SSM
    // constants, positional tables) are not sites.
    if (moe_paths.contains(path) || site_modules.contains(path) || !has_weight || IsNorm(last) ||
        last.find("conv") != std::string_view::npos) {
      continue;
    }
    const bool bias = tensors.params.contains("bias");
    site_modules.insert(path);
    if (IsEmbedding(last)) {
      sites.push_back(MakeSite(path, SiteKind::kEmbedding, "Embedding", false));
    } else if (last == "lm_head") {
      sites.push_back(MakeSite(path, SiteKind::kLmHead, "Linear", bias));
    } else if ((last == "gate" || last == "router") &&
               moe_paths.contains(fmt::format("{}.experts", ParentPath(path)))) {
      sites.push_back(MakeSite(path, SiteKind::kRouter, "Linear", bias));
    } else {
      sites.push_back(MakeSite(path, SiteKind::kLinear, "Linear", bias));
    }
  }
  if (headers) ShapeSites(modules, expert_groups, &sites);
  // Every tensor no site stands for (a top-level parameter, any tensor of a module that is no
  // site's) is an other tensor. An index without its shards names it only: its shape stays empty
  // and it adds nothing to other_params.
  for (const CheckpointTensor& tensor : checkpoint.tensors) {
    const std::string_view module = SplitTensorName(tensor.name).first;
    if (site_modules.contains(module)) continue;
    out->other_tensors.push_back({tensor.name, tensor.shape.value_or(std::vector<int64_t>())});
    if (tensor.shape) out->other_params += Elements(*tensor.shape);
  }
  const auto natural = [](const auto& a, const auto& b) { return NaturalLess(a.name, b.name); };
  std::stable_sort(out->other_tensors.begin(), out->other_tensors.end(), natural);
  std::stable_sort(sites.begin(), sites.end(), [](const LayerSite& a, const LayerSite& b) {
    return NaturalLess(a.path, b.path);
  });
  out->sites = std::move(sites);
  const std::string inferred = fmt::format(
      "{}#/architectures/0: architecture {} is not supported; its {} layer sites were inferred "
      "from the tensor names in {}",
      kConfigFile, JsonQuote(out->architecture), out->sites.size(), checkpoint.source);
  if (!headers) {
    out->warnings.push_back(fmt::format(
        "{} (without safetensors headers their shapes are unknown: shape null and params 0 for "
        "every site, and no fused sites)",
        inferred));
    return Status();
  }
  std::vector<std::string> unknown;
  for (const LayerSite& site : out->sites) {
    if (!site.shape) unknown.push_back(site.path);
  }
  out->warnings.push_back(
      unknown.empty()
          ? fmt::format("{}, with their shapes (no fused sites)", inferred)
          : fmt::format("{}, with their shapes where the stored layout states them (no fused "
                        "sites); the logical shape of {} is unknown (its weight is packed in a "
                        "layout the header does not undo): shape null and params 0",
                        inferred, Join(unknown, ", ")));
  return Status();
}

}  // namespace quantpath::models
