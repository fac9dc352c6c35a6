// Plans a whole model folder: sources → importer → sites → decisions → specs and bytes.
#include "fmt/format.h"
#include "quantpath/report.h"
#include "src/report/spec_bytes.h"

namespace quantpath {

int ModelPlan::Errors() const {
  int errors = 0;
  for (const PlannedLayer& layer : layers) errors += layer.decision.kind == DecisionKind::kError;
  return errors;
}

Result<ModelPlan> PlanModel(const std::string& dir, const PlanOptions& options) {
  QP_ASSIGN_OR_RETURN(ConfigSources sources, ConfigSources::Load(dir));
  ModelPlan out;
  out.model = dir;
  out.device = options.device;
  QP_ASSIGN_OR_RETURN(out.plan, ImportPlan(sources, options.dialect, options.quantization,
                                           FindNameMapper(sources, options.dialect)));
  QP_ASSIGN_OR_RETURN(out.sites, BuildModelSites(sources, options.dialect));
  std::vector<Decision> decisions = DecideSites(out.plan, out.sites.sites);
  for (size_t i = 0; i < decisions.size(); ++i) {
    PlannedLayer layer;
    layer.site = &out.sites.sites[i];
    layer.decision = std::move(decisions[i]);
    QP_RETURN_IF_ERROR(AssignSpec(*layer.site, out.sites.torch_dtype, options.device, &layer));
    out.layers.push_back(std::move(layer));
  }
  return out;
}

}  // namespace quantpath
