// Loads the experts of one MoE layer and measures them against the double-precision reference,
// as load_layer.cc does for a dense layer: decision → materialize → per expert one Linear per
// projection (gate, up, down), each loaded through the spec from the expert's own checkpoint
// prefix. The Materialize / LoadLinear / DequantizeReference / ToleranceFor calls for experts stay
// together here.
#include <chrono>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/materialize.h"
#include "quantpath/pipeline.h"
#include "src/pipeline/run_compare.h"

namespace quantpath {
namespace {

// "model.layers.0.mlp.experts, expert 3 (up_proj)": the layer name of one expert's projection in
// every message the spec and the checkpoint give.
std::string ExpertLayer(const LayerSite& site, int64_t expert, std::string_view projection) {
  return fmt::format("{}, expert {} ({})", site.path, expert, projection);
}

// Runs projections [first_leg, last_leg) of experts [first, last) on one seeded X [m, K] (the
// projections share their input) and measures them together: their outputs side by side are the
// product the engines' fused kernel computes (gate and up: w13).
Result<LayerRun> RunProjections(const LoadedExperts& layer, int64_t first, int64_t last,
                                size_t first_leg, size_t last_leg, int64_t m, uint64_t seed) {
  const LayerSite& site = *layer.resolved.site;
  const Linear& front = layer.experts[static_cast<size_t>(first)].projections[first_leg];
  const int64_t k = front.in_features();
  QP_ASSIGN_OR_RETURN(const LinearKernel* kernel, front.KernelFor(m, QDType::kBF16, QDType::kFP32));
  const std::vector<uint16_t> x = pipeline_internal::RandomInput(seed, m * k);
  const ConstMatrix xm{QDType::kBF16, x.data(), m, k};
  const std::vector<double> xd = pipeline_internal::Bf16ToDouble(x);
  pipeline_internal::ErrorStats stats;
  LayerRun run;
  run.kernel = std::string(kernel->name());
  run.m = m;
  for (int64_t e = first; e < last; ++e) {
    const LoadedExpert& expert = layer.experts[static_cast<size_t>(e)];
    for (size_t leg = first_leg; leg < last_leg; ++leg) {
      const Linear& linear = expert.projections[leg];
      const int64_t n = linear.out_features();
      std::vector<float> y(static_cast<size_t>(m * n));
      const MutableMatrix ym{QDType::kFP32, y.data(), m, n};
      QP_RETURN_IF_ERROR(linear.Forward(xm, ym));  // warm-up
      const auto start = std::chrono::steady_clock::now();
      QP_RETURN_IF_ERROR(linear.Forward(xm, ym));
      run.time_ms +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      QP_ASSIGN_OR_RETURN(ReferenceLayer ref,
                          DequantizeReference(layer.checkpoint, layer.scheme,
                                              ExpertLayer(site, e, site.legs[leg].name),
                                              {expert.prefixes[leg]}, site.bias));
      stats.Add(y, n, ref, layer.activation, xd, m);
    }
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
  // ExpertProjectionRequests' order: gate_proj, up_proj, down_proj, one checkpoint prefix each.
  if (site.legs.size() != 3) {
    return Unsupported(
        fmt::format("{}: experts stored with gate and up fused ({}) are not loaded yet", site.path,
                    site.legs.empty() ? std::string("no legs") : site.legs.front().name));
  }
  QuantScheme scheme = decision.scheme.value_or(QuantScheme{});
  QP_ASSIGN_OR_RETURN(
      const std::vector<AllocationRequest> requests,
      ExpertProjectionRequests(RequestForSite(site, model.sites.torch_dtype, model.device)));
  Result<std::unique_ptr<WeightSpec>> probe = Materialize(scheme, model.device);
  if (!probe.ok()) return probe.status().WithContext(site.path);
  QP_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::Open(model.dir));
  QP_ASSIGN_OR_RETURN(std::shared_ptr<Dispatcher> dispatcher, Dispatcher::Default());
  std::vector<LoadedExpert> experts(static_cast<size_t>(site.experts));
  for (int64_t e = 0; e < site.experts; ++e) {
    LoadedExpert& expert = experts[static_cast<size_t>(e)];
    for (size_t leg = 0; leg < requests.size(); ++leg) {
      AllocationRequest request = requests[leg];
      request.layer = ExpertLayer(site, e, site.legs[leg].name);
      Result<std::unique_ptr<WeightSpec>> spec = Materialize(scheme, model.device);
      if (!spec.ok()) return spec.status().WithContext(request.layer);
      expert.prefixes.push_back(site.ExpertLegPath(e, leg));
      QP_ASSIGN_OR_RETURN(Linear linear, LoadLinear(std::move(*spec), request, checkpoint,
                                                    {expert.prefixes.back()}, dispatcher));
      expert.projections.push_back(std::move(linear));
    }
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
  const std::string& path = layer.resolved.site->path;
  const int64_t count = static_cast<int64_t>(layer.experts.size());
  if (count == 0) return InvalidInput(fmt::format("{}: no experts loaded", path));
  if (expert && (*expert < 0 || *expert >= count)) {
    return InvalidInput(fmt::format("{}: expert {} is out of range (the layer has experts 0 to {})",
                                    path, *expert, count - 1));
  }
  const int64_t first = expert.value_or(0);
  const int64_t last = expert ? *expert + 1 : count;
  // ExpertProjectionRequests' order: gate and up read the hidden state, down the product.
  const size_t down = layer.experts.front().projections.size() - 1;
  ExpertsRun run;
  run.expert = expert;
  run.experts = last - first;
  QP_ASSIGN_OR_RETURN(run.w13, RunProjections(layer, first, last, 0, down, m, seed));
  QP_ASSIGN_OR_RETURN(run.w2, RunProjections(layer, first, last, down, down + 1, m, seed));
  return run;
}

}  // namespace quantpath
