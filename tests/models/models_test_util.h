// Helpers shared by the models tests: build sites from JSON text or from a copied corpus folder.
#pragma once

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

// |actual / expected - 1| as a fraction.
inline double RelativeError(double actual, double expected) {
  return actual > expected ? actual / expected - 1 : 1 - actual / expected;
}

}  // namespace quantpath::models_test
