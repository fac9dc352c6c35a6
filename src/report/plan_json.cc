// DESIGN.md's `plan --json` object. Field order is part of the contract.
#include "quantpath/report.h"

namespace quantpath {
namespace {

Json OptionalInt(const std::optional<int64_t>& v) { return v ? Json::Int(*v) : Json::Null(); }

Json TensorToJson(const TensorQuant& t) {
  Json block = Json::Null();
  if (t.block_shape) {
    block = Json::Array({Json::Int((*t.block_shape)[0]), Json::Int((*t.block_shape)[1])});
  }
  Json dynamic = t.dynamic == Dynamic::kLocal ? Json::String("local")
                                              : Json::Bool(t.dynamic == Dynamic::kDynamic);
  return Json::Object({{"dtype", Json::String(std::string(QDTypeName(t.dtype)))},
                       {"granularity", Json::String(std::string(GranularityName(t.granularity)))},
                       {"group_size", OptionalInt(t.group_size)},
                       {"block_shape", std::move(block)},
                       {"symmetric", Json::Bool(t.symmetric)},
                       {"dynamic", std::move(dynamic)}});
}

Json ShapeToJson(const std::optional<std::array<int64_t, 2>>& shape) {
  if (!shape) return Json::Null();
  return Json::Array({Json::Int((*shape)[0]), Json::Int((*shape)[1])});
}

Json LayerToJson(const PlannedLayer& layer) {
  const LayerSite& site = *layer.site;
  const Decision& d = layer.decision;
  std::vector<Json::Member> m;
  m.emplace_back("path", Json::String(site.path));
  m.emplace_back("kind", Json::String(std::string(SiteKindName(site.kind))));
  m.emplace_back("shape", ShapeToJson(site.shape));
  if (!site.legs.empty()) {
    std::vector<Json> legs;
    for (const Leg& leg : site.legs) legs.push_back(Json::String(leg.name));
    m.emplace_back("legs", Json::Array(std::move(legs)));
  }
  if (site.kind == SiteKind::kMoe) m.emplace_back("experts", Json::Int(site.experts));
  m.emplace_back("decision", Json::String(std::string(DecisionKindName(d.kind))));
  m.emplace_back("scheme", d.scheme ? SchemeToJson(*d.scheme) : Json::Null());
  m.emplace_back("spec_id", layer.spec_id ? Json::String(*layer.spec_id) : Json::Null());
  if (!layer.spec_note.empty()) m.emplace_back("spec_note", Json::String(layer.spec_note));
  m.emplace_back("params", Json::Int(site.params));
  m.emplace_back("bytes", layer.bytes ? Json::Int(*layer.bytes) : Json::Null());
  m.emplace_back("rule", Json::String(d.rule));
  if (d.kind == DecisionKind::kError) m.emplace_back("error", Json::String(d.detail));
  return Json::Object(std::move(m));
}

}  // namespace

Json SchemeToJson(const QuantScheme& scheme) {
  return Json::Object({{"name", Json::String(scheme.CanonicalName())},
                       {"weight", TensorToJson(scheme.weight)},
                       {"input", scheme.input ? TensorToJson(*scheme.input) : Json::Null()}});
}

Json PlanToJson(const ModelPlan& plan) {
  std::vector<Json> sources;
  for (const Provenance& p : plan.plan.sources) sources.push_back(Json::String(p.ToString()));
  std::vector<Json> layers;
  int64_t quantized = 0, unquantized = 0, params = 0, bytes = 0;
  for (const PlannedLayer& layer : plan.layers) {
    layers.push_back(LayerToJson(layer));
    quantized += layer.decision.kind == DecisionKind::kQuantized;
    unquantized += layer.decision.kind == DecisionKind::kUnquantized;
    params += layer.site->params;
    bytes += layer.bytes.value_or(0);
  }
  const int64_t other_bytes = plan.sites.other_params * (Info(plan.sites.torch_dtype).bits / 8);
  std::vector<Json> notes;
  for (const std::string& n : plan.plan.notes) notes.push_back(Json::String(n));
  for (const std::string& n : plan.sites.warnings) notes.push_back(Json::String(n));
  return Json::Object({
      {"model", Json::String(plan.model)},
      {"architecture", Json::String(plan.sites.architecture)},
      {"engine", Json::String(std::string(plan.plan.dialect.name))},
      {"quant_method", Json::String(plan.plan.quant_method)},
      {"quant_sources", Json::Array(std::move(sources))},
      {"device", Json::String(plan.device)},
      {"layers", Json::Array(std::move(layers))},
      {"summary", Json::Object({{"layers", Json::Int(static_cast<int64_t>(plan.layers.size()))},
                                {"quantized", Json::Int(quantized)},
                                {"unquantized", Json::Int(unquantized)},
                                {"errors", Json::Int(plan.Errors())},
                                {"params", Json::Int(params)},
                                {"other_params", Json::Int(plan.sites.other_params)},
                                {"bytes", Json::Int(bytes + other_bytes)}})},
      {"notes", Json::Array(std::move(notes))},
  });
}

}  // namespace quantpath
