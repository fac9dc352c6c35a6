// The fallback for architectures no builder knows: layer sites inferred from the tensor names of
// the checkpoint index (`model.safetensors.index.json`).
//
// Goals: let `plan` say something useful about a model whose architecture is not in the registry.
// Every module that holds a weight becomes a site named as the checkpoint names it: quantized
// weights (GPTQ/AWQ `qweight`, compressed-tensors `weight_packed`, MLX `scales`, bitsandbytes
// `weight.absmax` …) and plain ones alike; embeddings, the LM head and routers are recognised by
// name, experts (numbered, or stored fused as gpt-oss does) become one moe site per layer, and
// norms, convolutions and loose parameters are left out. A warning says the sites were inferred.
// Non-goals: shapes and parameter counts (an index holds names only, so every inferred site has
// shape null and params 0), fused sites (no packed-module mapping is known), module construction
// order (sites are listed in the natural order of their names, numbers compared as numbers).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath::models {
namespace {

constexpr std::string_view kIndexFile = "model.safetensors.index.json";

// A module as the index shows it: the names of its parameters.
struct ModuleTensors {
  std::set<std::string, std::less<>> params;
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
  for (std::string_view param : tensors.params) {
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
  site.kind = kind;
  site.module_class = std::string(module_class);
  site.bias = bias;
  return site;
}

}  // namespace

Status InferSitesFromCheckpoint(const std::filesystem::path& dir, ModelSites* out) {
  const std::filesystem::path index_path = dir / kIndexFile;
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_regular_file(index_path, ec)) {
    return NotFound(fmt::format("no {} in the model folder to infer layer sites from", kIndexFile));
  }
  QP_ASSIGN_OR_RETURN(Json index, ReadJsonFile(index_path));
  const Json* weight_map = index.Find("weight_map");
  if (weight_map == nullptr || !weight_map->is_object()) {
    return InvalidInput(fmt::format("{}#/weight_map: expected an object of tensor names, found {}",
                                    kIndexFile,
                                    weight_map == nullptr ? "nothing" : weight_map->TypeName()));
  }

  std::map<std::string, ModuleTensors, std::less<>> modules;
  std::map<std::string, ExpertGroup, std::less<>> expert_groups;
  for (const auto& [name, shard] : weight_map->members()) {
    const auto [module, param] = SplitTensorName(name);
    if (module.empty()) continue;  // a top-level parameter belongs to no module
    std::string_view experts;
    std::string_view expert_index;
    std::string_view leg;
    if (SplitExpertPath(module, &experts, &expert_index, &leg)) {
      ExpertGroup& group = expert_groups[std::string(experts)];
      group.indices.emplace(expert_index);
      if (std::find(group.legs.begin(), group.legs.end(), leg) == group.legs.end()) {
        group.legs.emplace_back(leg);
      }
      continue;
    }
    modules[std::string(module)].params.emplace(param);
  }

  std::vector<LayerSite> sites;
  std::set<std::string, std::less<>> moe_paths;
  for (const auto& [experts, group] : expert_groups) {
    LayerSite site = MakeSite(experts, SiteKind::kMoe, "FusedMoE", false);
    site.experts = static_cast<int64_t>(group.indices.size());
    for (const std::string& leg : group.legs) site.legs.push_back({leg, 0});
    moe_paths.insert(experts);
    sites.push_back(std::move(site));
  }
  for (const auto& [path, tensors] : modules) {
    if (LastSegment(path) != "experts" || moe_paths.contains(path)) continue;
    // The expert count is in the tensors' shapes, which an index does not hold.
    LayerSite site = MakeSite(path, SiteKind::kMoe, "FusedMoE", false);
    for (const std::string& leg : FusedExpertLegs(tensors)) site.legs.push_back({leg, 0});
    moe_paths.insert(path);
    sites.push_back(std::move(site));
  }
  for (const auto& [path, tensors] : modules) {
    const std::string_view last = LastSegment(path);
    const bool has_weight = std::any_of(tensors.params.begin(), tensors.params.end(),
                                        [](std::string_view p) { return IsWeightParam(p); });
    // Norms, convolutions and modules holding only loose parameters (attention sinks, SSM
    // constants, positional tables) are not sites.
    if (moe_paths.contains(path) || !has_weight || IsNorm(last) ||
        last.find("conv") != std::string_view::npos) {
      continue;
    }
    const bool bias = tensors.params.contains("bias");
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
  std::stable_sort(sites.begin(), sites.end(), [](const LayerSite& a, const LayerSite& b) {
    return NaturalLess(a.path, b.path);
  });
  out->sites = std::move(sites);
  out->warnings.push_back(fmt::format(
      "{}#/architectures/0: architecture {} is not supported; its {} layer sites were inferred "
      "from the tensor names in {} (without safetensors headers their shapes are unknown: shape "
      "null and params 0 for every site, and no fused sites)",
      kConfigFile, JsonQuote(out->architecture), out->sites.size(), kIndexFile));
  return Status();
}

}  // namespace quantpath::models
