// Helpers shared by the importer tests:
// sources from JSON text or a copied corpus folder, plans, and hand-built layer sites decided by
// the planner.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/importers.h"
#include "quantpath/planner.h"

namespace quantpath::family_test {

inline Dialect D(std::string_view name) { return *ParseDialect(name); }

inline bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// In-memory files, name → JSON text.
inline ConfigSources Files(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<SourceFile> parsed;
  for (const auto& [name, text] : files) {
    Result<Json> root = ParseJson(text, name);
    EXPECT_TRUE(root.ok()) << root.status().message();
    parsed.push_back({name, {}, root.ok() ? *root : Json::Object()});
  }
  return ConfigSources::FromMemory(std::move(parsed));
}

// A config.json holding only `quantization_config`.
inline ConfigSources Embedded(std::string_view quantization_config) {
  return Files(
      {{"config.json", "{\"quantization_config\": " + std::string(quantization_config) + "}"}});
}

// A folder copied from the shared corpus into tests/data/corpus (see SOURCES.md there).
inline ConfigSources Corpus(std::string_view folder) {
  Result<ConfigSources> sources =
      ConfigSources::Load(std::string(QUANTPATH_TEST_DATA) + "/corpus/" + std::string(folder));
  EXPECT_TRUE(sources.ok()) << sources.status().message();
  return sources.ok() ? *sources : ConfigSources::FromMemory({});
}

inline Result<QuantPlan> Import(const ConfigSources& sources, std::string_view dialect) {
  return ImportPlan(sources, D(dialect));
}

// The plan, failing the test when there is none.
inline QuantPlan MustImport(const ConfigSources& sources, std::string_view dialect) {
  Result<QuantPlan> plan = Import(sources, dialect);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : QuantPlan{};
}

inline LayerSite Site(std::string path, SiteKind kind = SiteKind::kLinear,
                      std::vector<std::string> legs = {}) {
  LayerSite site;
  site.path = std::move(path);
  site.kind = kind;
  for (std::string& leg : legs) site.legs.push_back({std::move(leg), 128});
  return site;
}

inline LayerSite Qkv(std::string_view layer_prefix) {
  return Site(std::string(layer_prefix) + ".self_attn.qkv_proj", SiteKind::kLinear,
              {"q_proj", "k_proj", "v_proj"});
}

inline LayerSite GateUp(std::string_view layer_prefix) {
  return Site(std::string(layer_prefix) + ".mlp.gate_up_proj", SiteKind::kLinear,
              {"gate_proj", "up_proj"});
}

inline LayerSite Experts(std::string path) {
  LayerSite site = Site(std::move(path), SiteKind::kMoe);
  site.experts = 8;
  site.legs = {{"gate_proj", 64}, {"up_proj", 64}, {"down_proj", 256}};
  return site;
}

// "quantized", "unquantized" or "error".
inline std::string Kind(const QuantPlan& plan, const LayerSite& site) {
  return std::string(DecisionKindName(DecideSite(plan, site).kind));
}

// The canonical scheme name of a quantized decision, else the decision kind.
inline std::string Scheme(const QuantPlan& plan, const LayerSite& site) {
  Decision d = DecideSite(plan, site);
  if (d.kind != DecisionKind::kQuantized || !d.scheme) return Kind(plan, site);
  return d.scheme->CanonicalName();
}

inline bool HasNote(const QuantPlan& plan, std::string_view text) {
  for (const std::string& note : plan.notes) {
    if (Contains(note, text)) return true;
  }
  return false;
}

}  // namespace quantpath::family_test
