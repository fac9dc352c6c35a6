// The `plan --json` object (docs/json/plan.md). Field order is part of the contract, and every
// field of a row is always present (null where it does not apply).
#include "quantpath/report.h"
#include "src/report/json_fields.h"

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

// [N, K], or [E, N, K] for an MoE site (E experts of one expert's [N, K]); null for attention.
Json ShapeToJson(const LayerSite& site) {
  if (!site.shape) return Json::Null();
  std::vector<Json> dims;
  if (site.kind == SiteKind::kMoe) dims.push_back(Json::Int(site.experts));
  dims.push_back(Json::Int((*site.shape)[0]));
  dims.push_back(Json::Int((*site.shape)[1]));
  return Json::Array(std::move(dims));
}

Json LayerToJson(const LayerDecision& layer) {
  const LayerSite& site = *layer.site;
  const Decision& d = layer.decision;
  Json legs = Json::Null();
  if (!site.legs.empty()) {
    legs = Json::Array();
    for (const Leg& leg : site.legs) legs.mutable_items().push_back(Json::String(leg.name));
  }
  std::vector<Json::Member> m;
  m.emplace_back("path", Json::String(site.path));
  m.emplace_back("checkpoint_path", Json::String(site.checkpoint_path));
  m.emplace_back("kind", Json::String(std::string(SiteKindName(site.kind))));
  m.emplace_back("shape", ShapeToJson(site));
  m.emplace_back("legs", std::move(legs));
  m.emplace_back("experts", site.kind == SiteKind::kMoe ? Json::Int(site.experts) : Json::Null());
  m.emplace_back("decision", Json::String(std::string(DecisionKindName(d.kind))));
  m.emplace_back("scheme", d.scheme ? SchemeToJson(*d.scheme) : Json::Null());
  m.emplace_back("kv_cache", layer.kv ? KvCacheToJson(*layer.kv) : Json::Null());
  m.emplace_back("spec_id", SpecIdOrNull(layer.spec));
  m.emplace_back("dtype",
                 layer.dtype ? Json::String(std::string(QDTypeName(*layer.dtype))) : Json::Null());
  m.emplace_back("kernel_available",
                 layer.kernel_available ? Json::Bool(*layer.kernel_available) : Json::Null());
  m.emplace_back("spec_note", NonEmptyOrNull(layer.spec_note));
  m.emplace_back("params", Json::Int(site.params));
  m.emplace_back("bytes", layer.bytes ? Json::Int(*layer.bytes) : Json::Null());
  m.emplace_back("rule", Json::String(d.rule));
  m.emplace_back("error", d.kind == DecisionKind::kError ? Json::String(d.detail) : Json::Null());
  return Json::Object(std::move(m));
}

Json Strings(const std::vector<std::string>& values) {
  std::vector<Json> items;
  for (const std::string& v : values) items.push_back(Json::String(v));
  return Json::Array(std::move(items));
}

}  // namespace

Json SpecIdOrNull(const std::optional<SpecKey>& spec) {
  return spec ? Json::String(spec->ToId()) : Json::Null();
}

Json NonEmptyOrNull(const std::string& v) { return v.empty() ? Json::Null() : Json::String(v); }

Json KvCacheToJson(const KvCache& kv) {
  return Json::Object(
      {{"dtype", Json::String(std::string(QDTypeName(kv.dtype)))},
       {"scheme", kv.scheme ? TensorToJson(kv.scheme->weight) : Json::Null()},
       {"engine_method", kv.engine_method ? Json::String(kv.engine_method_name) : Json::Null()}});
}

Json SchemeToJson(const QuantScheme& scheme) {
  return Json::Object(
      {{"name", Json::String(scheme.CanonicalName())},
       {"weight", TensorToJson(scheme.weight)},
       {"input", scheme.input ? TensorToJson(*scheme.input) : Json::Null()},
       {"input_hadamard",
        scheme.input_hadamard != 0 ? Json::Int(scheme.input_hadamard) : Json::Null()}});
}

Json PlanToJson(const Model& model, const std::vector<LayerDecision>& layers) {
  std::vector<Json> sources;
  for (const Provenance& p : model.plan.sources) sources.push_back(Json::String(p.ToString()));
  std::vector<Json> rows;
  const PlanTotals totals = SumLayers(model, layers);
  for (const LayerDecision& layer : layers) {
    rows.push_back(LayerToJson(layer));
  }
  std::vector<Json> model_errors;
  for (const ModelFinding& f : model.plan.errors) {
    model_errors.push_back(Json::Object({{"tensor", Json::String(f.tensor)},
                                         {"tensor_listed", Json::Bool(f.tensor_listed)},
                                         {"message", Json::String(f.message)}}));
  }
  return Json::Object({
      {"model", Json::String(model.dir)},
      {"architecture", Json::String(model.sites.architecture)},
      {"engine", Json::String(std::string(model.plan.dialect.name))},
      {"platform", model.plan.dialect.engine == Engine::kNative
                       ? Json::Null()
                       : Json::String(std::string(PlatformName(model.launch.platform)))},
      {"quant_method", Json::String(model.plan.quant_method)},
      {"quant_sources", Json::Array(std::move(sources))},
      {"device", Json::String(model.device.name)},
      {"layers", Json::Array(std::move(rows))},
      {"summary", Json::Object({{"layers", Json::Int(static_cast<int64_t>(layers.size()))},
                                {"quantized", Json::Int(totals.quantized)},
                                {"unquantized", Json::Int(totals.unquantized)},
                                {"errors", Json::Int(totals.errors)},
                                {"params", Json::Int(totals.params)},
                                {"bytes", Json::Int(totals.bytes)},
                                {"other_params", Json::Int(totals.other_params)},
                                {"other_bytes", Json::Int(totals.other_bytes)},
                                {"index_total_size",
                                 OptionalInt(model.sources.checkpoint().index_total_size)}})},
      {"model_errors", Json::Array(std::move(model_errors))},
      {"notes", Strings(model.plan.notes)},
      {"warnings", Strings(model.sites.warnings)},
  });
}

PlanTotals SumLayers(const Model& model, const std::vector<LayerDecision>& layers) {
  PlanTotals t;
  for (const LayerDecision& layer : layers) {
    t.quantized += layer.decision.kind == DecisionKind::kQuantized;
    t.unquantized += layer.decision.kind == DecisionKind::kUnquantized;
    t.errors += layer.decision.kind == DecisionKind::kError;
    t.params += layer.site->params;
    // An error row is no layer the engine builds: its bf16 placeholder would inflate the total.
    if (layer.decision.kind != DecisionKind::kError) t.bytes += layer.bytes.value_or(0);
  }
  t.other_params = model.sites.other_params;
  t.other_bytes = OtherBytes(model);
  return t;
}

}  // namespace quantpath
