// Loads one layer the way an engine would (decision → materialize → spec → kernel) and measures
// its Forward against the double-precision reference. The Materialize / LoadLinear /
// DequantizeReference / ToleranceFor calls stay together here so that the spec API can change in
// one place.
#include <chrono>
#include <cmath>

#include "fmt/format.h"
#include "quantpath/materialize.h"
#include "quantpath/numeric.h"
#include "quantpath/pipeline.h"
#include "src/pipeline/run_compare.h"

namespace quantpath {
namespace {

bool HasForward(SiteKind kind) {
  return kind == SiteKind::kLinear || kind == SiteKind::kLmHead || kind == SiteKind::kRouter;
}

}  // namespace

Result<LoadedLayer> LoadLayer(const Model& model, std::string_view path) {
  QP_ASSIGN_OR_RETURN(ResolvedSite resolved, ResolveLayer(model.sites, path));
  const LayerSite& site = *resolved.site;
  if (!HasForward(site.kind)) {
    return InvalidInput(
        fmt::format("{} is a {} site; only linear, lm_head and router layers "
                    "are loaded one at a time{}",
                    site.path, SiteKindName(site.kind),
                    site.kind == SiteKind::kMoe ? " (its experts load with LoadExperts)" : ""));
  }
  Decision decision = DecideSite(model.plan, site, false);
  if (decision.kind == DecisionKind::kError) {
    return InvalidInput(fmt::format("{}: decided error: {}", site.path, decision.detail));
  }
  QuantScheme scheme = decision.scheme.value_or(QuantScheme{});
  Result<std::unique_ptr<WeightSpec>> spec = Materialize(scheme, model.device);
  if (!spec.ok()) return spec.status().WithContext(site.path);
  const ActivationQuant activation = (*spec)->activation();
  const SpecKey key = (*spec)->key();
  QP_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::Open(model.dir));
  QP_ASSIGN_OR_RETURN(std::shared_ptr<Dispatcher> dispatcher, Dispatcher::Default());
  std::vector<std::string> prefixes = LegPrefixes(site);
  QP_ASSIGN_OR_RETURN(
      Linear linear,
      LoadLinear(std::move(*spec), RequestForSite(site, model.sites.torch_dtype, model.device),
                 checkpoint, prefixes, std::move(dispatcher)));
  return LoadedLayer{std::move(resolved),   std::move(decision), std::move(scheme), key, activation,
                     std::move(checkpoint), std::move(prefixes), std::move(linear)};
}

Result<ReferenceLayer> LoadReference(const LoadedLayer& layer) {
  const LayerSite& site = *layer.resolved.site;
  return DequantizeReference(layer.checkpoint, layer.scheme, site.path, layer.leg_prefixes,
                             site.bias);
}

bool LayerRun::pass() const { return std::isfinite(rel) && rel <= tol; }

Result<LayerRun> RunOnInput(const LoadedLayer& layer, const ConstMatrix& x) {
  const Linear& linear = layer.linear;
  const int64_t m = x.rows;
  const int64_t k = linear.in_features();
  const int64_t n = linear.out_features();
  const std::string& path = layer.resolved.site->path;
  if (m < 1 || m > 65536 || x.cols != k) {
    return InvalidInput(fmt::format("{}: input of {} x {}: expected [M, {}] with 1 <= M <= 65536",
                                    path, m, x.cols, k));
  }
  // X in double for the reference, and the matrix the kernel reads (fp16 widened to fp32).
  std::vector<double> xd(static_cast<size_t>(m * k));
  std::vector<float> widened;
  ConstMatrix xm = x;
  const auto* bits = static_cast<const uint16_t*>(x.data);
  switch (x.dtype) {
    case QDType::kBF16:
      for (size_t i = 0; i < xd.size(); ++i) xd[i] = Bf16ToFloat(bits[i]);
      break;
    case QDType::kFP16:
      widened.resize(xd.size());
      for (size_t i = 0; i < xd.size(); ++i) xd[i] = widened[i] = Fp16ToFloat(bits[i]);
      xm = ConstMatrix{QDType::kFP32, widened.data(), m, k};
      break;
    case QDType::kFP32:
      for (size_t i = 0; i < xd.size(); ++i) xd[i] = static_cast<const float*>(x.data)[i];
      break;
    default:
      return InvalidInput(fmt::format("{}: input dtype {}: expected bf16, fp16 or fp32", path,
                                      QDTypeName(x.dtype)));
  }
  QP_ASSIGN_OR_RETURN(const LinearKernel* kernel, linear.KernelFor(m, xm.dtype, QDType::kFP32));
  LayerRun run;
  run.y.resize(static_cast<size_t>(m * n));
  const MutableMatrix ym{QDType::kFP32, run.y.data(), m, n};
  QP_RETURN_IF_ERROR(linear.Forward(xm, ym));  // warm-up
  const auto start = std::chrono::steady_clock::now();
  QP_RETURN_IF_ERROR(linear.Forward(xm, ym));
  run.time_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  run.kernel = std::string(kernel->name());
  run.m = m;
  QP_ASSIGN_OR_RETURN(ReferenceLayer ref, LoadReference(layer));
  pipeline_internal::ErrorStats stats;
  stats.Add(run.y, n, ref, layer.activation, xd, m);
  run.max_abs = stats.max_abs;
  run.mean_abs = stats.mean_abs();
  run.rel = stats.rel();
  run.tol = ToleranceFor(layer.key, layer.activation.mode);
  return run;
}

Result<LayerRun> RunSeeded(const LoadedLayer& layer, int64_t m, uint64_t seed) {
  if (m < 1 || m > 65536) {
    return InvalidInput(fmt::format("m = {}: expected 1 to 65536 rows", m));
  }
  const std::vector<uint16_t> x = pipeline_internal::RandomInput(seed, m * layer.linear.in_features());
  return RunOnInput(layer, ConstMatrix{QDType::kBF16, x.data(), m, layer.linear.in_features()});
}

}  // namespace quantpath
