// quantpath explain MODEL_DIR LAYER_PATH [--engine E] [--quantization NAME] [--json]
#include <iostream>

#include "fmt/format.h"
#include "quantpath/report.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct ExplainArgs {
  std::string dir;
  std::string layer;
  std::string engine = "native";
  std::string quantization;
  bool json = false;
};

int RunExplain(const ExplainArgs& args) {
  Result<PlanOptions> options = MakePlanOptions(args.engine, args.quantization, "cpu");
  if (!options.ok()) return ReportBadInput(options.status().message());
  Result<ConfigSources> sources = ConfigSources::Load(args.dir);
  if (!sources.ok()) return ReportBadInput(sources.status().message());
  Result<QuantPlan> plan = ImportPlan(*sources, options->dialect, options->quantization,
                                      FindNameMapper(*sources, options->dialect));
  if (!plan.ok()) return ReportBadInput(plan.status().message());
  Result<ModelSites> sites = BuildModelSites(*sources, options->dialect);
  if (!sites.ok()) return ReportBadInput(sites.status().message());
  Result<ResolvedSite> resolved = ResolveLayer(*sites, args.layer);
  if (!resolved.ok()) return ReportBadInput(resolved.status().message());
  const LayerSite& site = *resolved->site;
  Decision d = DecideSite(*plan, site, true);
  if (args.json) {
    std::cout << ToJson(TraceToJson(d.trace), 1) << "\n";
  } else {
    if (!resolved->note.empty()) std::cout << "note: " << resolved->note << "\n";
    std::cout << fmt::format("{} ({}{})\n", site.path, SiteKindName(site.kind),
                             site.legs.empty() ? "" : ", fused");
    for (const TraceStep& step : d.trace) {
      std::cout << fmt::format("  [{}] {:<5} {:<22} {:<40} {}\n      {}\n", step.group,
                               step.hit ? "hit" : "miss", MatchKindName(step.kind),
                               step.pattern, step.source.ToString(), step.reason);
    }
    std::cout << fmt::format("decision: {}{}\nrule: {}\n", DecisionKindName(d.kind),
                             d.scheme ? " " + d.scheme->CanonicalName() : "", d.rule);
    if (!d.detail.empty()) std::cout << "detail: " << d.detail << "\n";
  }
  return d.kind == DecisionKind::kError ? kExitFindings : kExitOk;
}

}  // namespace

void AddExplainCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ExplainArgs>();
  CLI::App* cmd = app.add_subcommand("explain", "Show every rule tried for one layer, and why");
  cmd->add_option("model_dir", args->dir, "Model folder")->required();
  cmd->add_option("layer_path", args->layer, "Layer (execution name, leg or HF name)")->required();
  cmd->add_option("--engine", args->engine, "native|vllm|sglang");
  cmd->add_option("--quantization", args->quantization, "Force the format");
  cmd->add_flag("--json", args->json, "Print the trace as JSON objects");
  cmd->callback([args, exit_code] { *exit_code = RunExplain(*args); });
}

}  // namespace quantpath::cli
