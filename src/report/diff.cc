// Plans one folder under every dialect and lines the decisions up layer by layer.
#include <map>

#include "fmt/format.h"
#include "quantpath/report.h"

namespace quantpath {
namespace {

// Dialects name some sites differently (DeepSeek's fused MLA projection, SGLang's two attention
// modules); a site's parent path plus its legs, or its parent plus "attention", is the same in all.
std::string AlignmentKey(const LayerSite& site) {
  if (site.kind == SiteKind::kAttention) return std::string(ParentPath(site.path)) + ".<attention>";
  if (site.legs.empty() || site.kind == SiteKind::kMoe) return site.path;
  std::vector<std::string> legs;
  for (const Leg& leg : site.legs) legs.push_back(leg.name);
  return fmt::format("{}.{{{}}}", ParentPath(site.path), Join(legs, "+"));
}

bool SameDecision(const Decision& a, const Decision& b) {
  return a.kind == b.kind && a.scheme == b.scheme;
}

std::string DecisionText(const Decision& d) {
  std::string text(DecisionKindName(d.kind));
  if (d.scheme) text += " " + d.scheme->CanonicalName();
  return text;
}

}  // namespace

Result<ModelDiff> DiffDialects(const std::string& dir,
                               const std::optional<std::string>& quantization) {
  QP_ASSIGN_OR_RETURN(ConfigSources sources, ConfigSources::Load(dir));
  ModelDiff diff;
  struct Planned {
    ModelSites sites;
    Result<QuantPlan> plan = InternalError("not planned");
  };
  std::vector<Planned> planned;
  for (std::string_view name : {"native", "vllm", "sglang"}) {
    Dialect dialect = *ParseDialect(name);
    diff.dialects.emplace_back(name);
    QP_ASSIGN_OR_RETURN(ModelSites sites, BuildModelSites(sources, dialect));
    planned.push_back({std::move(sites), ImportPlan(sources, dialect, quantization,
                                                    FindNameMapper(sources, dialect))});
  }
  // Keys in native construction order, then any the engines add.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const LayerSite*>> by_key;
  for (size_t d = 0; d < planned.size(); ++d) {
    for (const LayerSite& site : planned[d].sites.sites) {
      std::string key = AlignmentKey(site);
      auto [it, inserted] = by_key.try_emplace(key, planned.size(), nullptr);
      if (inserted) order.push_back(key);
      if (it->second[d] == nullptr) it->second[d] = &site;
    }
  }
  std::vector<int> unquantized_meant(planned.size(), 0);
  std::vector<std::string> first_error(planned.size());
  for (size_t d = 0; d < planned.size(); ++d) {
    if (!planned[d].plan.ok()) first_error[d] = "config: " + planned[d].plan.status().message();
  }
  for (const std::string& key : order) {
    LayerDiff layer;
    layer.key = key;
    for (size_t d = 0; d < planned.size(); ++d) {
      const LayerSite* site = by_key[key][d];
      layer.paths.push_back(site ? site->path : "");
      if (site == nullptr || !planned[d].plan.ok()) {
        layer.decisions.emplace_back();
        continue;
      }
      layer.decisions.push_back(DecideSite(*planned[d].plan, *site, true));
    }
    bool differs = false;
    for (size_t d = 1; d < layer.decisions.size(); ++d) {
      const auto& a = layer.decisions[0];
      const auto& b = layer.decisions[d];
      if (a.has_value() != b.has_value() || (a && !SameDecision(*a, *b))) differs = true;
    }
    for (size_t d = 0; d < layer.decisions.size(); ++d) {
      const auto& mine = layer.decisions[d];
      if (!mine) continue;
      if (mine->kind == DecisionKind::kError && first_error[d].empty()) {
        first_error[d] = fmt::format("{}: {}", layer.paths[d], mine->detail);
      }
      const auto& native = layer.decisions[0];
      if (d > 0 && native && native->kind == DecisionKind::kQuantized &&
          mine->kind == DecisionKind::kUnquantized) {
        ++unquantized_meant[d];
      }
    }
    if (differs) diff.layers.push_back(std::move(layer));
  }
  for (size_t d = 0; d < planned.size(); ++d) {
    EngineSummary s{diff.dialects[d], "loads", true};
    if (!first_error[d].empty()) {
      s.line = "errors at " + first_error[d];
      s.loads = false;
    } else if (unquantized_meant[d] > 0) {
      s.line = fmt::format("loads with {} layers unquantized that the file meant to quantize",
                           unquantized_meant[d]);
    }
    diff.summaries.push_back(std::move(s));
  }
  return diff;
}

std::string DiffToText(const ModelDiff& diff) {
  std::string out;
  for (const LayerDiff& layer : diff.layers) {
    out += layer.key + "\n";
    for (size_t d = 0; d < diff.dialects.size(); ++d) {
      const auto& decision = layer.decisions[d];
      if (!decision) {
        out += fmt::format("  {:<7} {}\n", diff.dialects[d],
                           layer.paths[d].empty() ? "(no such layer)" : "(not planned)");
        continue;
      }
      out += fmt::format("  {:<7} {:<40} {}\n", diff.dialects[d], DecisionText(*decision),
                         layer.paths[d]);
      out += fmt::format("          rule: {}\n", decision->rule);
      if (decision->kind == DecisionKind::kError) {
        out += fmt::format("          error: {}\n", decision->detail);
      }
      for (const TraceStep& step : decision->trace) {
        if (!step.hit) continue;  // the rules that decided; `explain` lists every miss
        out += fmt::format("          hit [{}] {} \"{}\" ({}) on {}\n", step.group,
                           MatchKindName(step.kind), step.pattern, step.source.ToString(),
                           step.subject);
      }
    }
  }
  out += fmt::format("{} layers decided differently\n", diff.layers.size());
  for (const EngineSummary& s : diff.summaries) {
    out += fmt::format("{}: {}\n", s.dialect, s.line);
  }
  return out;
}

}  // namespace quantpath
