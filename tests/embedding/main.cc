// embed MODEL_DIR [LAYER]: plans the folder, materializes one layer's spec, loads it and runs one
// Forward through the process's default dispatcher. Prints the spec and kernel; exits 1 when any
// step fails or an output is not finite. LAYER defaults to model.layers.0.self_attn.qkv_proj.
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "quantpath/importers.h"
#include "quantpath/linear.h"
#include "quantpath/materialize.h"
#include "quantpath/models.h"
#include "quantpath/planner.h"
#include "quantpath/sources.h"

namespace {

int Fail(const std::string& what, const quantpath::Status& status) {
  std::cerr << "embed: " << what << ": " << status.message() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace quantpath;
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: embed MODEL_DIR [LAYER]\n";
    return 2;
  }
  const std::string dir = argv[1];
  const std::string layer = argc == 3 ? argv[2] : "model.layers.0.self_attn.qkv_proj";
  const Dialect dialect;
  Result<ConfigSources> sources = ConfigSources::Load(dir);
  if (!sources.ok()) return Fail(dir, sources.status());
  Result<QuantPlan> plan = ImportPlan(*sources, dialect);
  if (!plan.ok()) return Fail(dir, plan.status());
  Result<ModelSites> sites = BuildModelSites(*sources, dialect);
  if (!sites.ok()) return Fail(dir, sites.status());
  const std::vector<Decision> decisions = DecideSites(*plan, sites->sites);
  const LayerSite* site = sites->Find(layer);
  if (site == nullptr) return Fail(layer, NotFound("no such layer site"));
  const Decision& decision = decisions[static_cast<size_t>(site - sites->sites.data())];
  if (decision.kind == DecisionKind::kError) return Fail(layer, InvalidInput(decision.detail));

  const DeviceCaps device;
  Result<std::unique_ptr<WeightSpec>> spec =
      Materialize(decision.scheme.value_or(QuantScheme{}), device);
  if (!spec.ok()) return Fail(layer, spec.status());
  const std::string spec_id = (*spec)->key().ToId();
  Result<Checkpoint> checkpoint = Checkpoint::Open(dir);
  if (!checkpoint.ok()) return Fail(dir, checkpoint.status());
  Result<std::shared_ptr<Dispatcher>> dispatcher = Dispatcher::Default();
  if (!dispatcher.ok()) return Fail("dispatcher", dispatcher.status());
  Result<Linear> linear =
      LoadLinear(std::move(*spec), RequestForSite(*site, sites->torch_dtype, device), *checkpoint,
                 LegPrefixes(*site), *dispatcher);
  if (!linear.ok()) return Fail(layer, linear.status());

  const int64_t m = 2;
  std::vector<float> x(static_cast<size_t>(m * linear->in_features()));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) / 7.0f - 0.5f;
  Result<std::vector<float>> y = linear->Forward(x, m);
  if (!y.ok()) return Fail(layer, y.status());
  Result<const LinearKernel*> kernel = linear->KernelFor(m, QDType::kFP32, QDType::kFP32);
  if (!kernel.ok()) return Fail(layer, kernel.status());
  bool any_nonzero = false;
  for (float v : *y) {
    if (!std::isfinite(v)) return Fail(layer, InternalError("Forward produced a non-finite value"));
    any_nonzero = any_nonzero || v != 0.0f;
  }
  if (!any_nonzero) return Fail(layer, InternalError("Forward produced only zeros"));
  if ((*kernel)->name().empty()) return Fail(layer, InternalError("the kernel has no name"));
  if (y->size() != static_cast<size_t>(m * linear->out_features())) {
    return Fail(layer, InternalError("Forward produced the wrong number of values"));
  }
  std::cout << layer << " " << spec_id << " " << (*kernel)->name() << " [" << m << ", "
            << linear->out_features() << "]\n";
  return 0;
}
