// Helpers shared by the models tests: build sites from JSON text or from a copied corpus folder,
// read a copied checkpoint index, and resolve module and tensor names to sites.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/models.h"
#include "quantpath/sources.h"

namespace quantpath::models_test {

inline Result<ModelSites> SitesFromText(std::string_view config_text,
                                        std::string_view dialect = "native") {
  QP_ASSIGN_OR_RETURN(Json config, ParseJson(config_text, "config.json"));
  std::optional<Dialect> d = ParseDialect(dialect);
  if (!d) return InvalidInput(std::string("unknown dialect ") + std::string(dialect));
  return BuildModelSites(config, *d);
}

// A folder copied from the shared corpus into tests/data/corpus (see SOURCES.md there).
inline Result<ModelSites> SitesFromCorpus(std::string_view folder,
                                          std::string_view dialect = "native") {
  QP_ASSIGN_OR_RETURN(ConfigSources sources, ConfigSources::Load(std::string(QUANTPATH_TEST_DATA) +
                                                                 "/corpus/" + std::string(folder)));
  std::optional<Dialect> d = ParseDialect(dialect);
  if (!d) return InvalidInput(std::string("unknown dialect ") + std::string(dialect));
  return BuildModelSites(sources, *d);
}

inline std::vector<std::string> Paths(const ModelSites& m) {
  std::vector<std::string> paths;
  for (const LayerSite& s : m.sites) paths.push_back(s.path);
  return paths;
}

// The tensor names of a copied corpus folder's model.safetensors.index.json, in document order.
inline Result<std::vector<std::string>> IndexTensorNames(std::string_view folder) {
  QP_ASSIGN_OR_RETURN(
      Json index, ReadJsonFile(std::string(QUANTPATH_TEST_DATA) + "/corpus/" + std::string(folder) +
                               "/model.safetensors.index.json"));
  const Json* map = index.Find("weight_map");
  if (map == nullptr || !map->is_object()) return InvalidInput("index without a weight_map");
  std::vector<std::string> names;
  for (const auto& member : map->members()) names.push_back(member.first);
  return names;
}

// The site whose path is `module`, or that has a leg whose path is `module`; nullptr when none.
// (An moe site's legs are per expert and are not module paths of their own.)
inline const LayerSite* SiteOrLegOf(const ModelSites& m, std::string_view module) {
  for (const LayerSite& s : m.sites) {
    if (s.path == module) return &s;
    if (s.kind == SiteKind::kMoe) continue;
    for (size_t i = 0; i < s.legs.size(); ++i) {
      if (s.LegPath(i) == module) return &s;
    }
  }
  return nullptr;
}

// The module paths that hold a linear layer's weight: each leg of a fused site, else the site.
inline std::vector<std::string> LinearModulePaths(const ModelSites& m) {
  std::vector<std::string> paths;
  for (const LayerSite& s : m.sites) {
    if (s.kind != SiteKind::kLinear) continue;
    if (s.legs.empty()) paths.push_back(s.path);
    for (size_t i = 0; i < s.legs.size(); ++i) paths.push_back(s.LegPath(i));
  }
  return paths;
}

// The checkpoint modules whose tensors a site stands for: each leg's module of a fused site, the
// experts module of an moe site (`<experts>.<e>.<leg>.…`, gpt-oss's `<experts>.<leg>_blocks`),
// else the site's own module.
inline std::vector<std::string> SiteModules(const LayerSite& s) {
  if (s.kind == SiteKind::kMoe || s.legs.empty()) return {s.checkpoint_path};
  std::vector<std::string> modules;
  const std::string_view parent = ParentPath(s.checkpoint_path);
  for (const Leg& leg : s.legs) {
    modules.push_back(parent.empty() ? leg.name : std::string(parent) + "." + leg.name);
  }
  return modules;
}

// Whether tensor `name` lies under a module in `modules` (`<module>.…`).
inline bool UnderModule(const std::set<std::string, std::less<>>& modules, std::string_view name) {
  for (size_t dot = name.find('.'); dot != std::string_view::npos; dot = name.find('.', dot + 1)) {
    if (modules.contains(name.substr(0, dot))) return true;
  }
  return false;
}

// Sum of the params of the sites for which `keep` holds.
template <typename Pred>
int64_t SiteParamsWhere(const ModelSites& m, Pred keep) {
  int64_t total = 0;
  for (const LayerSite& s : m.sites) total += keep(s) ? s.params : 0;
  return total;
}

// |actual / expected - 1| as a fraction.
inline double RelativeError(double actual, double expected) {
  return actual > expected ? actual / expected - 1 : 1 - actual / expected;
}

}  // namespace quantpath::models_test
