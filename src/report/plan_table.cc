// The human-readable plan: one row per site, then a summary.
#include "fmt/format.h"
#include "quantpath/report.h"

namespace quantpath {
namespace {

std::string ShapeText(const LayerSite& site) {
  if (!site.shape) return "-";
  std::string s = fmt::format("{}x{}", (*site.shape)[0], (*site.shape)[1]);
  if (site.kind == SiteKind::kMoe) s = fmt::format("{}×{}", site.experts, s);
  return s;
}

std::string HumanCount(double v) {
  const char* units[] = {"", "K", "M", "B", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f}", v) : fmt::format("{:.2f}{}", v, units[u]);
}

std::string HumanBytes(double v) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.2f} {}", v, units[u]);
}

}  // namespace

std::string PlanToTable(const ModelPlan& plan) {
  size_t path_width = 4;
  for (const PlannedLayer& l : plan.layers) path_width = std::max(path_width, l.site->path.size());
  std::string out = fmt::format(
      "model {}  architecture {}  quant_method {}  engine {}  device {}\n", plan.model,
      plan.sites.architecture, plan.plan.quant_method, plan.plan.dialect.name, plan.device);
  for (const Provenance& p : plan.plan.sources) out += fmt::format("source {}\n", p.ToString());
  out += fmt::format("{:<{}}  {:<9}  {:<14}  {:<11}  {:<28}  {:<18}  {:>12}\n", "path", path_width,
                     "kind", "shape", "decision", "scheme", "spec_id", "bytes");
  int64_t quantized = 0, unquantized = 0, params = 0, bytes = 0;
  for (const PlannedLayer& l : plan.layers) {
    const Decision& d = l.decision;
    out += fmt::format("{:<{}}  {:<9}  {:<14}  {:<11}  {:<28}  {:<18}  {:>12}\n", l.site->path,
                       path_width, SiteKindName(l.site->kind), ShapeText(*l.site),
                       DecisionKindName(d.kind), d.scheme ? d.scheme->CanonicalName() : "-",
                       l.spec_id.value_or("-"), l.bytes ? std::to_string(*l.bytes) : "-");
    if (d.kind == DecisionKind::kError) out += fmt::format("    error: {}\n", d.detail);
    quantized += d.kind == DecisionKind::kQuantized;
    unquantized += d.kind == DecisionKind::kUnquantized;
    params += l.site->params;
    bytes += l.bytes.value_or(0);
  }
  const int64_t other_bytes = plan.sites.other_params * (Info(plan.sites.torch_dtype).bits / 8);
  out += fmt::format(
      "summary: {} layers, {} quantized, {} unquantized, {} errors; params {} in layers + {} "
      "other = {}; bytes {}\n",
      plan.layers.size(), quantized, unquantized, plan.Errors(), HumanCount(double(params)),
      HumanCount(double(plan.sites.other_params)),
      HumanCount(double(params + plan.sites.other_params)),
      HumanBytes(double(bytes + other_bytes)));
  for (const std::string& n : plan.plan.notes) out += "note: " + n + "\n";
  for (const std::string& n : plan.sites.warnings) out += "warning: " + n + "\n";
  return out;
}

}  // namespace quantpath
