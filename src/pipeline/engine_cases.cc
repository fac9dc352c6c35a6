// Runs recorded engine cases through the importers and the planner: each case's config becomes
// the file the engine would have read (where its format's importer places it), each layer a site,
// and each decision is kept in the case's order (the report prints them).
#include <algorithm>

#include "fmt/format.h"
#include "quantpath/pipeline.h"
#include "src/pipeline/engine_kernel.h"

namespace quantpath {
namespace {

Result<std::string> RequiredString(const Json& object, std::string_view key,
                                   std::string_view file) {
  QP_ASSIGN_OR_RETURN(std::optional<std::string> v, OptionalString(object, key, file));
  if (!v) return InvalidInput(fmt::format("{}: missing \"{}\"", Where(file, object), key));
  return *v;
}

// The model folder the engine saw: the case's config in the file its format's importer reads it
// from (PlaceDescription; `extra_inputs.config_source` overrides), with the model's
// packed_modules_mapping merged as that importer says the engine saw it, the model fields the case
// sets in config.json, plus any further files the case lists. A format no importer names is
// config.json's quantization_config.
Result<ConfigSources> SourcesForCase(const Json& c, const Json& config, const std::string& format,
                                     const Dialect& dialect, std::string_view file) {
  const Json* extra = c.FindNonNull("extra_inputs");
  std::optional<std::string> config_source;
  if (extra != nullptr) {
    QP_ASSIGN_OR_RETURN(config_source, OptionalString(*extra, "config_source", file));
  }
  const Importer* importer = FindImporter(format);
  const DescriptionPlacement placement =
      importer != nullptr ? importer->PlaceDescription(config, dialect) : DescriptionPlacement{};
  const std::string& placed = config_source.value_or(placement.file);
  std::vector<std::pair<std::string, Json>> roots;
  Json llama = Json::Object({{"architectures", Json::Array({Json::String("LlamaForCausalLM")})}});
  if (placed != "config.json") {
    roots.emplace_back("config.json", llama);
    roots.emplace_back(placed, config);
  } else {
    Json root = llama;
    root.mutable_members().emplace_back("quantization_config", config);
    roots.emplace_back("config.json", std::move(root));
  }
  const Json* packed = c.FindNonNull("packed_modules_mapping");
  Json& described = roots.back().second;
  Json* object = described.Find("quantization_config") != nullptr
                     ? &described.mutable_members().back().second
                     : &described;
  auto& members = object->mutable_members();
  auto own = std::find_if(members.begin(), members.end(),
                          [](const auto& m) { return m.first == "packed_modules_mapping"; });
  switch (placement.packed_mapping) {
    case DescriptionPlacement::PackedMapping::kNone:
      break;
    case DescriptionPlacement::PackedMapping::kAddIfAbsent:
      // The recorded cases assume the model's mapping was present (tests/data/oracle/README.md).
      if (packed != nullptr && own == members.end()) {
        members.emplace_back("packed_modules_mapping", *packed);
      }
      break;
    case DescriptionPlacement::PackedMapping::kReplace: {
      Json mapping = packed != nullptr ? *packed : Json::Object();
      if (own != members.end()) {
        own->second = std::move(mapping);
      } else {
        members.emplace_back("packed_modules_mapping", std::move(mapping));
      }
      break;
    }
  }
  // Model fields a config reads beside its description (DeepSeek-V4's expert_dtype).
  if (const Json* fields = extra ? extra->FindNonNull("config_json") : nullptr) {
    if (!fields->is_object()) {
      return InvalidInput(
          fmt::format("{}: expected an object of config.json fields", Where(file, *fields)));
    }
    auto& model = roots.front().second.mutable_members();
    for (const auto& [key, value] : fields->members()) {
      auto it =
          std::find_if(model.begin(), model.end(), [&](const auto& m) { return m.first == key; });
      if (it != model.end()) {
        it->second = value;
      } else {
        model.emplace_back(key, value);
      }
    }
  }
  if (const Json* files = extra ? extra->FindNonNull("files") : nullptr) {
    if (!files->is_object()) {
      return InvalidInput(fmt::format("{}: expected an object of files", Where(file, *files)));
    }
    for (const auto& [name, content] : files->members()) {
      if (name == "config.json") {
        roots.front().second = content;
      } else {
        roots.emplace_back(name, content);
      }
    }
  }
  std::vector<SourceFile> sources;
  for (auto& [name, root] : roots) {
    // Re-parse so that every value carries its pointer inside the file the engine would read.
    QP_ASSIGN_OR_RETURN(Json parsed, ParseJson(ToJson(root), name));
    sources.push_back({name, {}, std::move(parsed)});
  }
  return ConfigSources::FromMemory(std::move(sources));
}

// The dialect a case was recorded from: `engine` names it ("vllm@helpers", "sglang@0.5.23"); a
// bare engine name takes the release its engine_commit names ("vllm 0.34.0 (…)"), and nullopt
// where quantpath reproduces no such release.
std::optional<Dialect> DialectForCase(const std::string& engine, const std::string& commit) {
  std::optional<Dialect> named = ParseDialect(engine);
  if (!named || !named->is_release() || engine.find('@') != std::string::npos) return named;
  const std::vector<std::string> words = Split(commit, ' ');
  if (words.size() < 2 || words[0] != engine) return std::nullopt;
  return ReleaseDialect(named->engine, words[1]);
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

// A recorded layer: the site, the attention heads a QKV layer was built with, and the output
// partitions of a merged layer (its `legs`) when the packed mapping does not name as many legs
// (Qwen3.5's in_proj_qkvz: four partitions, two checkpoint legs; SGLang's GLM-4.5 has no mapping).
struct CaseLayer {
  LayerSite site;
  std::optional<AttentionHeads> heads;
  std::vector<int64_t> partitions;
};

// An optional list of positive integers (a layer's `shape`, `legs`, `heads`) of `count` entries
// (any number when 0).
Result<std::optional<std::vector<int64_t>>> OptionalSizes(const Json& layer, std::string_view key,
                                                          size_t count, std::string_view where) {
  const Json* v = layer.FindNonNull(key);
  if (v == nullptr) return std::optional<std::vector<int64_t>>();
  if (!v->is_array() || v->items().empty() || (count != 0 && v->items().size() != count)) {
    return InvalidInput(fmt::format("{}: \"{}\" must be a list of {} positive integers", where, key,
                                    count != 0 ? std::to_string(count) : "one or more"));
  }
  std::vector<int64_t> sizes;
  for (const Json& item : v->items()) {
    if (!item.is_int() || item.int_value() <= 0) {
      return InvalidInput(
          fmt::format("{}: \"{}\" holds {}, not a positive integer", where, key, ToJson(item)));
    }
    sizes.push_back(item.int_value());
  }
  return std::optional<std::vector<int64_t>>(std::move(sizes));
}

// The logical shape a recording gives a layer (`shape`, `legs`, `heads`, `experts`;
// tests/data/oracle/README.md). Legs' rows go onto the legs the packed mapping names, in order.
Status ReadLayerShape(const Json& layer, std::string_view where, CaseLayer* out) {
  LayerSite& site = out->site;
  QP_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> shape,
                      OptionalSizes(layer, "shape", 2, where));
  QP_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> legs,
                      OptionalSizes(layer, "legs", 0, where));
  QP_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> heads,
                      OptionalSizes(layer, "heads", 2, where));
  if ((legs || heads) && !shape) {
    return InvalidInput(fmt::format("{}: \"legs\" and \"heads\" need a \"shape\"", where));
  }
  if (shape) site.shape = std::array<int64_t, 2>{(*shape)[0], (*shape)[1]};
  if (legs) {
    int64_t rows = 0;
    for (int64_t leg : *legs) rows += leg;
    if (rows != (*shape)[0]) {
      return InvalidInput(
          fmt::format("{}: legs sum to {} rows, the shape has {}", where, rows, (*shape)[0]));
    }
    // The engine checks one output partition per leg; the mapping's legs carry their rows when
    // they line up with them, and the checks run on the partitions otherwise.
    if (site.kind != SiteKind::kMoe && site.legs.size() == legs->size()) {
      for (size_t i = 0; i < legs->size(); ++i) site.legs[i].rows = (*legs)[i];
    } else {
      out->partitions = *std::move(legs);
    }
  }
  if (heads) out->heads = AttentionHeads{(*heads)[0], (*heads)[1]};
  if (const Json* experts = layer.FindNonNull("experts")) {
    if (!experts->is_int() || experts->int_value() <= 0 || site.kind != SiteKind::kMoe) {
      return InvalidInput(
          fmt::format("{}: \"experts\" must be a positive integer on an moe layer", where));
    }
    site.experts = experts->int_value();
  }
  return Status();
}

Result<CaseLayer> ReadLayer(const Json& layer, const PackedModulesMapping& mapping,
                            std::string_view file, std::string_view case_id) {
  CaseLayer out;
  LayerSite& site = out.site;
  QP_ASSIGN_OR_RETURN(site.path, RequiredString(layer, "prefix", file));
  QP_ASSIGN_OR_RETURN(std::string kind, RequiredString(layer, "kind", file));
  std::optional<SiteKind> parsed = ParseSiteKind(kind);
  if (!parsed) {
    return InvalidInput(fmt::format("{}: unknown layer kind \"{}\"", Where(file, layer), kind));
  }
  site.kind = *parsed;
  QP_ASSIGN_OR_RETURN(std::optional<std::string> cls, OptionalString(layer, "module_class", file));
  site.module_class = cls.value_or("");
  site.tp_style = TpStyleOf(site.module_class);
  if (site.kind == SiteKind::kMoe) {
    // Engines look experts up by their checkpoint projections (expert_params_mapping), expert 0
    // standing for all.
    site.experts = 1;
    for (const char* leg : {"gate_proj", "up_proj", "down_proj"}) site.legs.push_back({leg, 0});
  }
  if (site.kind == SiteKind::kLinear || site.kind == SiteKind::kLmHead) {
    std::string_view last = LastSegment(site.path);
    for (const auto& [fused, legs] : mapping) {
      if (fused != last) continue;
      for (const std::string& leg : legs) site.legs.push_back({leg, 0});
    }
  }
  const std::string where =
      fmt::format("{} (case {}, layer \"{}\")", Where(file, layer), case_id, site.path);
  QP_RETURN_IF_ERROR(ReadLayerShape(layer, where, &out));
  return out;
}

Result<CaseResult> MatchCase(const Json& c, std::string_view file,
                             const std::optional<Dialect>& engine) {
  CaseResult result;
  QP_ASSIGN_OR_RETURN(result.id, RequiredString(c, "id", file));
  QP_ASSIGN_OR_RETURN(std::string engine_name, RequiredString(c, "engine", file));
  QP_ASSIGN_OR_RETURN(std::string format, RequiredString(c, "format", file));
  QP_ASSIGN_OR_RETURN(std::optional<std::string> commit, OptionalString(c, "engine_commit", file));
  std::optional<Dialect> dialect =
      engine ? engine : DialectForCase(engine_name, commit.value_or(""));
  if (!dialect) {
    return InvalidInput(fmt::format(
        "{}: unknown engine \"{}\" (engine_commit \"{}\"): expected a dialect name, or an engine "
        "whose engine_commit names a release quantpath reproduces",
        Where(file, c), engine_name, commit.value_or("")));
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
  std::vector<CaseLayer> sites;
  for (const Json& layer : layers->items()) {
    QP_ASSIGN_OR_RETURN(CaseLayer site, ReadLayer(layer, mapping, file, result.id));
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

  QP_ASSIGN_OR_RETURN(ConfigSources sources, SourcesForCase(c, *config, format, *dialect, file));
  // The engine was told a method only when the user gave --quantization; otherwise it detected
  // the description from the files, and so does quantpath (the case's `format` only says which
  // family the case belongs to).
  std::optional<std::string> forced;
  // The model class whose HF→engine name mapper the engine applied to the config.
  std::optional<std::string> model_class;
  if (const Json* extra = c.FindNonNull("extra_inputs")) {
    QP_ASSIGN_OR_RETURN(std::optional<std::string> user,
                        OptionalString(*extra, "user_quantization", file));
    if (user) forced = user;
    QP_ASSIGN_OR_RETURN(model_class, OptionalString(*extra, "model_class", file));
    // How the engine was started: --dtype ("auto" or a torch dtype name) and the tensor-parallel
    // size its layers were created at.
    QP_ASSIGN_OR_RETURN(std::optional<std::string> dtype, OptionalString(*extra, "dtype", file));
    // The platform the engine ran on (oracle_platforms.py); absent is cuda.
    QP_ASSIGN_OR_RETURN(std::optional<std::string> platform,
                        OptionalString(*extra, "platform", file));
    int64_t tp_size = 1;
    if (const Json* tp = extra->FindNonNull("tp_size")) {
      if (!tp->is_int()) {
        return InvalidInput(fmt::format("{}: tp_size must be an integer, found {}",
                                        Where(file, *tp), tp->TypeName()));
      }
      tp_size = tp->int_value();
    }
    Result<Launch> launch =
        ParseLaunch(dtype.value_or("auto"), tp_size, false, platform.value_or("cuda"));
    if (!launch.ok()) return launch.status().WithContext(Where(file, *extra));
    sources.set_launch(*launch);
    if (extra->FindNonNull("checkpoint_quantized_params") != nullptr) {
      QP_ASSIGN_OR_RETURN(std::vector<std::string> names,
                          OptionalStringList(*extra, "checkpoint_quantized_params", file));
      sources.set_checkpoint_quantized_params(std::move(names));
    }
  }
  // The engine applied the mapper of the class it built: the case's model class, else the
  // architecture its config.json names (the Llama stand-in has none), as `plan` does.
  Result<QuantPlan> plan = ImportForEngine(sources, *dialect, forced, model_class);
  // The case's config.json is a stand-in without head counts: a QKV layer's come with it.
  const std::optional<AttentionHeads> config_heads = ReadAttentionHeads(sources);
  if (!plan.ok()) {
    // The engine raised while reading the config: every layer reports that error.
    for (const CaseLayer& layer : sites) {
      result.decisions.push_back(
          {layer.site.path, "error", "from_config " + plan.status().message()});
    }
    return result;
  }
  std::vector<LayerSite> plain_sites;
  plain_sites.reserve(sites.size());
  for (const CaseLayer& layer : sites) plain_sites.push_back(layer.site);
  Result<std::vector<Decision>> decided = DecidePlanSites(*plan, plain_sites);
  if (!decided.ok()) return decided.status().WithContext(Where(file, c));
  std::vector<Decision>& decisions = *decided;
  for (size_t i = 0; i < sites.size(); ++i) {
    const auto& [site, heads, partitions] = sites[i];
    Decision& d = decisions[i];
    const int64_t tp_size = sources.launch().tp_size;
    if (partitions.empty()) {
      ApplyShapeChecks(*plan, site, tp_size, heads ? heads : config_heads, &d);
    } else {
      LayerSite split = site;
      split.legs.clear();
      for (int64_t rows : partitions) split.legs.push_back({"", rows});
      ApplyShapeChecks(*plan, split, tp_size, heads ? heads : config_heads, &d);
    }
    ApplyEngineKernel(*plan, sources.launch().platform, site, &d);
    result.decisions.push_back({site.path, std::string(DecisionKindName(d.kind)), d.detail});
  }
  return result;
}

}  // namespace

Result<std::vector<CaseResult>> MatchCases(const Json& cases, std::string_view file,
                                           const std::optional<Dialect>& engine) {
  if (!cases.is_array()) {
    return InvalidInput(
        fmt::format("{}: expected a JSON list of cases, found {}", file, cases.TypeName()));
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
