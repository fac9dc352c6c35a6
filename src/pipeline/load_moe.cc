// Loads the experts of one MoE layer and measures them against the double-precision reference,
// as load_layer.cc does for a dense layer: decision → materialize → per expert a w13 (gate and up
// fused) and a w2 (down) Linear, each loaded through the spec from the expert's own checkpoint
// prefixes. The Materialize / LoadLinear / DequantizeReference / ToleranceFor calls for experts
// stay together here.
#include <chrono>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/materialize.h"
#include "quantpath/pipeline.h"
#include "src/pipeline/run_compare.h"

namespace quantpath {
namespace {

// "model.layers.0.mlp.experts, expert 3 (w13)": the layer name of one expert's projection in
// every message the spec and the checkpoint give.
std::string ExpertLayer(const LayerSite& site, int64_t expert, std::string_view projection) {
  return fmt::format("{}, expert {} ({})", site.path, expert, projection);
}

Result<Linear> LoadProjection(const Model& model, const QuantScheme& scheme,
                              AllocationRequest request, const Checkpoint& checkpoint,
                              const std::vector<std::string>& prefixes,
                              std::shared_ptr<Dispatcher> dispatcher) {
  Result<std::unique_ptr<WeightSpec>> spec = Materialize(scheme, model.device);
  if (!spec.ok()) return spec.status().WithContext(request.layer);
  return LoadLinear(std::move(*spec), request, checkpoint, prefixes, std::move(dispatcher));
}

enum class Projection { kW13, kW2 };

const Linear& LinearOf(const LoadedExpert& expert, Projection p) {
  return p == Projection::kW13 ? expert.w13 : expert.w2;
}
const std::vector<std::string>& PrefixesOf(const LoadedExpert& expert, Projection p) {
  return p == Projection::kW13 ? expert.w13_prefixes : expert.w2_prefixes;
}

// Runs projection `p` of experts [first, last) on one seeded X [m, K] and measures them together.
Result<LayerRun> RunProjection(const LoadedExperts& layer, int64_t first, int64_t last, int64_t m,
                               uint64_t seed, Projection p) {
  const LayerSite& site = *layer.resolved.site;
  const Linear& front = LinearOf(layer.experts[static_cast<size_t>(first)], p);
  const int64_t k = front.in_features();
  const int64_t n = front.out_features();
  QP_ASSIGN_OR_RETURN(const LinearKernel* kernel, front.KernelFor(m, QDType::kBF16, QDType::kFP32));
  const std::vector<uint16_t> x = pipeline_internal::RandomInput(seed, m * k);
  const ConstMatrix xm{QDType::kBF16, x.data(), m, k};
  std::vector<float> y(static_cast<size_t>(m * n));
  const MutableMatrix ym{QDType::kFP32, y.data(), m, n};
  pipeline_internal::ErrorStats stats;
  LayerRun run;
  run.kernel = std::string(kernel->name());
  run.m = m;
  for (int64_t e = first; e < last; ++e) {
    const LoadedExpert& expert = layer.experts[static_cast<size_t>(e)];
    const Linear& linear = LinearOf(expert, p);
    QP_RETURN_IF_ERROR(linear.Forward(xm, ym));  // warm-up
    const auto start = std::chrono::steady_clock::now();
    QP_RETURN_IF_ERROR(linear.Forward(xm, ym));
    run.time_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    QP_ASSIGN_OR_RETURN(ReferenceLayer ref, DequantizeReference(layer.checkpoint, layer.scheme,
                                                                ExpertLayer(site, e, "reference"),
                                                                PrefixesOf(expert, p), site.bias));
    stats.Add(y, n, ref, layer.activation, x, m);
  }
  run.max_abs = stats.max_abs;
  run.mean_abs = stats.mean_abs();
  run.rel = stats.rel();
  run.tol = ToleranceFor(layer.key, layer.activation.mode);
  return run;
}

}  // namespace

Result<LoadedExperts> LoadExperts(const Model& model, std::string_view path) {
  QP_ASSIGN_OR_RETURN(ResolvedSite resolved, ResolveLayer(model.sites, path));
  const LayerSite& site = *resolved.site;
  if (site.kind != SiteKind::kMoe) {
    return InvalidInput(fmt::format("{} is a {} site, not the experts of an MoE layer", site.path,
                                    SiteKindName(site.kind)));
  }
  Decision decision = DecideSite(model.plan, site, false);
  if (decision.kind == DecisionKind::kError) {
    return InvalidInput(fmt::format("{}: decided error: {}", site.path, decision.detail));
  }
  QuantScheme scheme = decision.scheme.value_or(QuantScheme{});
  const AllocationRequest request = RequestForSite(site, model.sites.torch_dtype, model.device);
  QP_ASSIGN_OR_RETURN(const ExpertRequests split, SplitExpertRequest(request));
  Result<std::unique_ptr<WeightSpec>> probe = Materialize(scheme, model.device);
  if (!probe.ok()) return probe.status().WithContext(site.path);
  QP_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::Open(model.dir));
  QP_ASSIGN_OR_RETURN(std::shared_ptr<Dispatcher> dispatcher, Dispatcher::Default());
  std::vector<LoadedExpert> experts;
  experts.reserve(static_cast<size_t>(site.experts));
  for (int64_t e = 0; e < site.experts; ++e) {
    std::vector<std::string> w13_prefixes = {site.ExpertLegPath(e, 0), site.ExpertLegPath(e, 1)};
    std::vector<std::string> w2_prefixes = {site.ExpertLegPath(e, 2)};
    AllocationRequest w13_request = split.w13;
    w13_request.layer = ExpertLayer(site, e, "w13");
    AllocationRequest w2_request = split.w2;
    w2_request.layer = ExpertLayer(site, e, "w2");
    QP_ASSIGN_OR_RETURN(Linear w13, LoadProjection(model, scheme, std::move(w13_request),
                                                   checkpoint, w13_prefixes, dispatcher));
    QP_ASSIGN_OR_RETURN(Linear w2, LoadProjection(model, scheme, std::move(w2_request), checkpoint,
                                                  w2_prefixes, dispatcher));
    experts.push_back(LoadedExpert{std::move(w13), std::move(w2), std::move(w13_prefixes),
                                   std::move(w2_prefixes)});
  }
  return LoadedExperts{std::move(resolved), std::move(decision),    std::move(scheme),
                       (*probe)->key(),     (*probe)->activation(), std::move(checkpoint),
                       std::move(experts)};
}

Result<ExpertsRun> RunExpertsSeeded(const LoadedExperts& layer, int64_t m, uint64_t seed,
                                    std::optional<int64_t> expert) {
  if (m < 1 || m > 65536) {
    return InvalidInput(fmt::format("m = {}: expected 1 to 65536 rows", m));
  }
  const int64_t count = static_cast<int64_t>(layer.experts.size());
  if (count == 0) {
    return InvalidInput(fmt::format("{}: no experts loaded", layer.resolved.site->path));
  }
  if (expert && (*expert < 0 || *expert >= count)) {
    return InvalidInput(fmt::format("{}: expert {} is out of range (the layer has experts 0 to {})",
                                    layer.resolved.site->path, *expert, count - 1));
  }
  const int64_t first = expert.value_or(0);
  const int64_t last = expert ? *expert + 1 : count;
  ExpertsRun run;
  run.expert = expert;
  run.experts = last - first;
  QP_ASSIGN_OR_RETURN(run.w13, RunProjection(layer, first, last, m, seed, Projection::kW13));
  QP_ASSIGN_OR_RETURN(run.w2, RunProjection(layer, first, last, m, seed, Projection::kW2));
  return run;
}

}  // namespace quantpath
