// Resolves the layer names users type to the dialect's sites.
#include "fmt/format.h"
#include "quantpath/pipeline.h"
#include "src/base/nearest_names.h"

namespace quantpath {

Result<ResolvedSite> ResolveLayer(const ModelSites& sites, std::string_view path) {
  std::string_view name = path;
  for (std::string_view suffix : {".weight", ".weight_scale_inv", ".weight_scale", ".qweight"}) {
    if (name.ends_with(suffix)) name.remove_suffix(suffix.size());
  }
  if (const LayerSite* site = sites.Find(name)) {
    return ResolvedSite{site, name == path ? "" : fmt::format("{} is a tensor of {}", path, name)};
  }
  // The checkpoint's name of a site the engine builds under another prefix (or none).
  if (const LayerSite* site = sites.FindCheckpoint(name)) {
    return ResolvedSite{site, fmt::format("{} is built as {}", name, JsonQuote(site->path))};
  }
  for (const LayerSite& site : sites.sites) {
    for (size_t i = 0; i < site.legs.size(); ++i) {
      if (site.kind != SiteKind::kMoe && site.LegPath(i) == name) {
        return ResolvedSite{&site, fmt::format("{} is leg {} of fused layer {}", name,
                                               site.legs[i].name, site.path)};
      }
    }
    // Checkpoint names of one expert ("…mlp.experts.7.gate_proj") belong to the MoE site.
    if (site.kind == SiteKind::kMoe && name.starts_with(site.path + ".")) {
      return ResolvedSite{&site, fmt::format("{} is an expert weight of {}", name, site.path)};
    }
  }
  std::vector<std::string> names;
  for (const LayerSite& site : sites.sites) names.push_back(site.path);
  const std::vector<std::string> near = NearestNames(name, names);
  return NotFound(fmt::format(
      "no layer \"{}\" in this {} model (layers are named as `quantpath "
      "plan` lists them){}",
      path, sites.architecture, near.empty() ? std::string() : "; nearest: " + Join(near, ", ")));
}

}  // namespace quantpath
