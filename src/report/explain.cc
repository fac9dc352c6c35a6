// One layer explained (docs/json/explain.md): its decision, what decided it and every rule tried.
#include "fmt/format.h"
#include "quantpath/report.h"
#include "src/report/json_fields.h"

namespace quantpath {
namespace {

// Which name the deciding rule matched: the site itself, one of its legs, or an expert's leg.
Json DecidedByToJson(const LayerSite& site, const Decision& d) {
  if (!d.rule_hit) return Json::Null();
  Json leg = Json::Null();
  if (d.leg && *d.leg < site.legs.size()) leg = Json::String(site.legs[*d.leg].name);
  return Json::Object({{"matched", Json::String(MatchedName(d, site))},
                       {"leg", std::move(leg)},
                       {"expert", d.expert ? Json::Int(*d.expert) : Json::Null()}});
}

}  // namespace

Json TraceToJson(const std::vector<TraceStep>& trace) {
  std::vector<Json> steps;
  for (const TraceStep& s : trace) {
    steps.push_back(Json::Object({{"matcher", Json::String(std::string(MatchKindName(s.kind)))},
                                  {"pattern", Json::String(s.pattern)},
                                  {"file", Json::String(s.source.file)},
                                  {"pointer", Json::String(s.source.pointer)},
                                  {"result", Json::String(s.hit ? "hit" : "miss")},
                                  {"reason", Json::String(s.reason)}}));
  }
  return Json::Array(std::move(steps));
}

Json ExplainToJson(const Model& model, std::string_view requested, const ExplainedLayer& layer) {
  const LayerSite& site = *layer.resolved.site;
  const LayerDecision& l = layer.layer;
  const Decision& d = l.decision;
  Json decision = Json::Object({{"kind", Json::String(std::string(DecisionKindName(d.kind)))},
                                {"scheme", d.scheme ? SchemeToJson(*d.scheme) : Json::Null()},
                                {"rule", Json::String(d.rule)},
                                {"detail", NonEmptyOrNull(d.detail)}});
  return Json::Object(
      {{"model", Json::String(model.dir)},
       {"engine", Json::String(std::string(model.plan.dialect.name))},
       {"layer", Json::String(std::string(requested))},
       {"path", Json::String(site.path)},
       {"checkpoint_path", Json::String(site.checkpoint_path)},
       {"kind", Json::String(std::string(SiteKindName(site.kind)))},
       {"resolved", NonEmptyOrNull(layer.resolved.note)},
       {"decision", std::move(decision)},
       {"decided_by", DecidedByToJson(site, d)},
       {"kv_cache", l.kv ? KvCacheToJson(*l.kv) : Json::Null()},
       {"spec_id", SpecIdOrNull(l.spec)},
       {"kernel_available", l.kernel_available ? Json::Bool(*l.kernel_available) : Json::Null()},
       {"trace", TraceToJson(d.trace)}});
}

std::string ExplainToText(const ExplainedLayer& layer) {
  const LayerSite& site = *layer.resolved.site;
  const Decision& d = layer.layer.decision;
  std::string out;
  if (!layer.resolved.note.empty()) out += "note: " + layer.resolved.note + "\n";
  // The engine's prefix, and the checkpoint's name where they differ (an empty prefix included).
  out += site.path == site.checkpoint_path
             ? site.path
             : fmt::format("{} (checkpoint {})", JsonQuote(site.path), site.checkpoint_path);
  out += fmt::format(" ({}{})\n", SiteKindName(site.kind), site.legs.empty() ? "" : ", fused");
  for (const TraceStep& step : d.trace) {
    out += fmt::format("  [{}] {:<5} {:<22} {:<40} {}\n      {}\n", step.group,
                       step.hit ? "hit" : "miss", MatchKindName(step.kind), step.pattern,
                       step.source.ToString(), step.reason);
  }
  out += fmt::format("decision: {}{}\nrule: {}\n", DecisionKindName(d.kind),
                     d.scheme ? " " + d.scheme->CanonicalName() : "", d.rule);
  if (const std::optional<KvCache>& kv = layer.layer.kv)
    out += "kv cache: " + KvCacheText(*kv) + "\n";
  if (const std::string matched = MatchedName(d, site); !matched.empty() && matched != site.path) {
    out += "decided by: " + matched + "\n";
  }
  if (!d.detail.empty()) out += "detail: " + d.detail.str() + "\n";
  return out;
}

}  // namespace quantpath
