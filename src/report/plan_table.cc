// The human-readable plan: one row per site, then a summary.
#include "fmt/format.h"
#include "quantpath/report.h"
#include "src/report/json_fields.h"

namespace quantpath {
namespace {

std::string ShapeText(const LayerSite& site) {
  if (!site.shape) return "-";
  std::string s = fmt::format("{}x{}", (*site.shape)[0], (*site.shape)[1]);
  if (site.kind == SiteKind::kMoe) s = fmt::format("{}x{}", site.experts, s);  // E x N x K
  return s;
}

// An engine path may be empty (the engine passed no prefix): shown as "".
std::string PathText(const std::string& path) { return path.empty() ? "\"\"" : path; }

std::string HumanCount(double v) {
  const char* units[] = {"", "K", "M", "B", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f}", v) : fmt::format("{:.2f}{}", v, units[u]);
}

}  // namespace

std::string HumanBytes(double v) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.2f} {}", v, units[u]);
}

std::string SchemeText(const LayerDecision& l) {
  if (l.kv) return "kv " + KvCacheText(*l.kv);
  return l.decision.scheme ? l.decision.scheme->CanonicalName() : "-";
}

std::string KvCacheText(const KvCache& kv) {
  std::string text(QDTypeName(kv.dtype));
  if (!kv.scheme) text += " (auto)";
  if (kv.engine_method) text += ", " + kv.engine_method_name;
  return text;
}

std::string PlanToTable(const Model& model, const std::vector<LayerDecision>& layers) {
  size_t path_width = 4;
  size_t checkpoint_width = 15;
  for (const LayerDecision& l : layers) {
    path_width = std::max(path_width, PathText(l.site->path).size());
    checkpoint_width = std::max(checkpoint_width, l.site->checkpoint_path.size());
  }
  std::string out =
      fmt::format("model {}  architecture {}  quant_method {}  engine {}  device {}\n", model.dir,
                  model.sites.architecture, model.plan.quant_method, model.plan.dialect.name,
                  model.device.name);
  for (const Provenance& p : model.plan.sources) out += fmt::format("source {}\n", p.ToString());
  out += fmt::format("{:<{}}  {:<{}}  {:<9}  {:<14}  {:<11}  {:<28}  {:<18}  {:>12}\n", "path",
                     path_width, "checkpoint_path", checkpoint_width, "kind", "shape", "decision",
                     "scheme", "spec_id", "bytes");
  for (const LayerDecision& l : layers) {
    const Decision& d = l.decision;
    std::string spec = l.spec ? l.spec->ToId() : "-";
    if (l.kernel_available == false) spec += " (no kernel)";
    out +=
        fmt::format("{:<{}}  {:<{}}  {:<9}  {:<14}  {:<11}  {:<28}  {:<18}  {:>12}\n",
                    PathText(l.site->path), path_width, l.site->checkpoint_path, checkpoint_width,
                    SiteKindName(l.site->kind), ShapeText(*l.site), DecisionKindName(d.kind),
                    SchemeText(l), spec, l.bytes ? std::to_string(*l.bytes) : "-");
    if (d.kind == DecisionKind::kError) out += fmt::format("    error: {}\n", d.detail);
  }
  const PlanTotals t = SumLayers(model, layers);
  out += fmt::format(
      "summary: {} layers, {} quantized, {} unquantized, {} errors; params {} in layers + {} "
      "other = {}; bytes {} in layers + {} other = {}\n",
      layers.size(), t.quantized, t.unquantized, t.errors, HumanCount(double(t.params)),
      HumanCount(double(t.other_params)), HumanCount(double(t.params + t.other_params)),
      HumanBytes(double(t.bytes)), HumanBytes(double(t.other_bytes)),
      HumanBytes(double(t.bytes + t.other_bytes)));
  for (const ModelFinding& f : model.plan.errors) out += "error: " + f.message + "\n";
  for (const std::string& n : model.plan.notes) out += "note: " + n + "\n";
  for (const std::string& n : model.sites.warnings) out += "warning: " + n + "\n";
  return out;
}

}  // namespace quantpath
