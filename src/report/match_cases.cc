// Runs recorded engine cases through the importers and the planner: each case's config becomes
// the file the engine would have read, each layer a site, and each decision is reported in the
// case's order.
#include "fmt/format.h"
#include "quantpath/report.h"

namespace quantpath {
namespace {

Result<std::string> RequiredString(const Json& object, std::string_view key, std::string_view file) {
  QP_ASSIGN_OR_RETURN(std::optional<std::string> v, OptionalString(object, key, file));
  if (!v) return InvalidInput(fmt::format("{}: missing \"{}\"", Where(file, object), key));
  return *v;
}

// The file the engine reads the case's config from: ModelSlim's description file, a ModelOpt
// shell file, or config.json's quantization_config.
Result<ConfigSources> SourcesForCase(const Json& config, const std::string& format,
                                    const Json* packed_modules_mapping) {
  std::string name = "config.json";
  Json root;
  if (format == "modelslim") {
    name = "quant_model_description.json";
    root = config;
  } else if (format.starts_with("modelopt") && config.Find("quantization") != nullptr) {
    name = "hf_quant_config.json";
    root = config;
  } else {
    root = Json::Object({{"quantization_config", config}});
  }
  // SGLang's ModelOpt config reads packed_modules_mapping from the config object; the recorded
  // cases assume the model's mapping was present there (tests/data/oracle/README.md).
  Json* object = root.Find("quantization_config") ? &root.mutable_members()[0].second : &root;
  if (format.starts_with("modelopt") && packed_modules_mapping != nullptr &&
      object->Find("packed_modules_mapping") == nullptr) {
    object->mutable_members().emplace_back("packed_modules_mapping", *packed_modules_mapping);
  }
  // Re-parse so that every value carries its pointer inside the file the engine would read.
  QP_ASSIGN_OR_RETURN(Json parsed, ParseJson(ToJson(root), name));
  std::vector<SourceFile> files;
  files.push_back({name, {}, std::move(parsed)});
  return ConfigSources::FromMemory(std::move(files));
}

Result<PackedModulesMapping> ReadPackedMapping(const Json& c, std::string_view file) {
  PackedModulesMapping mapping;
  const Json* m = c.FindNonNull("packed_modules_mapping");
  if (m == nullptr) return mapping;
  if (!m->is_object()) return InvalidInput(fmt::format("{}: expected an object", Where(file, *m)));
  for (const auto& [fused, legs] : m->members()) {
    QP_ASSIGN_OR_RETURN(std::vector<std::string> names, OptionalStringList(*m, fused, file));
    mapping.emplace_back(fused, std::move(names));
  }
  return mapping;
}

Result<LayerSite> ReadLayer(const Json& layer, const PackedModulesMapping& mapping,
                            std::string_view file) {
  LayerSite site;
  QP_ASSIGN_OR_RETURN(site.path, RequiredString(layer, "prefix", file));
  QP_ASSIGN_OR_RETURN(std::string kind, RequiredString(layer, "kind", file));
  std::optional<SiteKind> parsed = ParseSiteKind(kind);
  if (!parsed) {
    return InvalidInput(fmt::format("{}: unknown layer kind \"{}\"", Where(file, layer), kind));
  }
  site.kind = *parsed;
  QP_ASSIGN_OR_RETURN(std::optional<std::string> cls, OptionalString(layer, "module_class", file));
  site.module_class = cls.value_or("");
  if (site.kind == SiteKind::kLinear || site.kind == SiteKind::kLmHead) {
    std::string_view last = LastSegment(site.path);
    for (const auto& [fused, legs] : mapping) {
      if (fused != last) continue;
      for (const std::string& leg : legs) site.legs.push_back({leg, 0});
    }
  }
  return site;
}

Result<CaseResult> MatchCase(const Json& c, std::string_view file,
                             const std::optional<Dialect>& engine) {
  CaseResult result;
  QP_ASSIGN_OR_RETURN(result.id, RequiredString(c, "id", file));
  QP_ASSIGN_OR_RETURN(std::string engine_name, RequiredString(c, "engine", file));
  QP_ASSIGN_OR_RETURN(std::string format, RequiredString(c, "format", file));
  std::optional<Dialect> dialect = engine ? engine : ParseDialect(engine_name);
  if (!dialect) {
    return InvalidInput(fmt::format("{}: unknown engine \"{}\"", Where(file, c), engine_name));
  }
  const Json* config = c.Find("config");
  if (config == nullptr || !config->is_object()) {
    return InvalidInput(fmt::format("{}: missing \"config\" object", Where(file, c)));
  }
  QP_ASSIGN_OR_RETURN(PackedModulesMapping mapping, ReadPackedMapping(c, file));
  const Json* layers = c.Find("layers");
  if (layers == nullptr || !layers->is_array()) {
    return InvalidInput(fmt::format("{}: missing \"layers\" list", Where(file, c)));
  }
  std::vector<LayerSite> sites;
  for (const Json& layer : layers->items()) {
    QP_ASSIGN_OR_RETURN(LayerSite site, ReadLayer(layer, mapping, file));
    sites.push_back(std::move(site));
  }
  if (const Json* expected = c.FindNonNull("expected"); expected && expected->is_array()) {
    for (const Json& e : expected->items()) {
      CaseDecision d;
      QP_ASSIGN_OR_RETURN(d.prefix, RequiredString(e, "prefix", file));
      QP_ASSIGN_OR_RETURN(d.decision, RequiredString(e, "decision", file));
      QP_ASSIGN_OR_RETURN(std::optional<std::string> detail, OptionalString(e, "detail", file));
      d.detail = detail.value_or("");
      result.expected.push_back(std::move(d));
    }
  }

  QP_ASSIGN_OR_RETURN(ConfigSources sources,
                      SourcesForCase(*config, format, c.FindNonNull("packed_modules_mapping")));
  if (const Json* extra = c.FindNonNull("extra_inputs")) {
    if (extra->FindNonNull("checkpoint_quantized_params") != nullptr) {
      QP_ASSIGN_OR_RETURN(std::vector<std::string> names,
                          OptionalStringList(*extra, "checkpoint_quantized_params", file));
      sources.set_checkpoint_quantized_params(std::move(names));
    }
  }
  Result<QuantPlan> plan = ImportPlan(sources, *dialect, format);
  for (const LayerSite& site : sites) {
    if (!plan.ok()) {
      // The engine raised while reading the config: every layer reports that error.
      result.decisions.push_back({site.path, "error", "from_config " + plan.status().message()});
      continue;
    }
    Decision d = DecideSite(*plan, site, false);
    result.decisions.push_back({site.path, std::string(DecisionKindName(d.kind)), d.detail});
  }
  return result;
}

}  // namespace

Result<std::vector<CaseResult>> MatchCases(const Json& cases, std::string_view file,
                                           const std::optional<Dialect>& engine) {
  if (!cases.is_array()) {
    return InvalidInput(fmt::format("{}: expected a JSON list of cases, found {}", file,
                                    cases.TypeName()));
  }
  std::vector<CaseResult> results;
  for (const Json& c : cases.items()) {
    if (!c.is_object()) {
      return InvalidInput(fmt::format("{}: expected a case object", Where(file, c)));
    }
    QP_ASSIGN_OR_RETURN(CaseResult r, MatchCase(c, file, engine));
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace quantpath
