// Loads one layer the way an engine would (decision → materialize → spec → kernel) and measures
// its Forward against the double-precision reference. The Materialize / LoadLinear /
// DequantizeReference / ToleranceFor calls stay together here so that the spec API can change in
// one place.
#include <chrono>
#include <cmath>
#include <random>

#include "fmt/format.h"
#include "quantpath/materialize.h"
#include "quantpath/numeric.h"
#include "quantpath/pipeline.h"

namespace quantpath {
namespace {

bool HasForward(SiteKind kind) {
  return kind == SiteKind::kLinear || kind == SiteKind::kLmHead || kind == SiteKind::kRouter;
}

// Seeded input values, bf16-representable, in [-1, 1).
std::vector<uint16_t> RandomInput(uint64_t seed, int64_t count) {
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> x(static_cast<size_t>(count));
  for (uint16_t& v : x) {
    const double u = static_cast<double>(rng() >> 11) * 0x1p-53;
    v = FloatToBf16(static_cast<float>(2.0 * u - 1.0));
  }
  return x;
}

// Fills the error fields of `run` from Y and the reference product of X.
void Compare(const std::vector<float>& y, const ReferenceLayer& ref, const ActivationQuant& act,
             const std::vector<uint16_t>& x, int64_t m, LayerRun* run) {
  std::vector<double> xd(x.size());
  for (size_t i = 0; i < x.size(); ++i) xd[i] = Bf16ToFloat(x[i]);
  const std::vector<double> xq =
      QuantizeActivationsReference(xd, m, ref.cols, act, ref.input_scale, ref.input_zero_point);
  double max_ref = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ref.rows; ++j) {
      double acc = ref.bias.empty() ? 0.0 : ref.bias[j];
      for (int64_t c = 0; c < ref.cols; ++c) {
        acc += xq[i * ref.cols + c] * ref.weight[j * ref.cols + c];
      }
      const double diff = std::fabs(y[i * ref.rows + j] - acc);
      run->max_abs = std::isnan(diff) ? diff : std::max(run->max_abs, diff);
      run->mean_abs += diff;
      max_ref = std::max(max_ref, std::fabs(acc));
    }
  }
  run->mean_abs /= static_cast<double>(m * ref.rows);
  run->rel = max_ref > 0 ? run->max_abs / max_ref : run->max_abs;
}

}  // namespace

Result<LoadedLayer> LoadLayer(const Model& model, std::string_view path) {
  QP_ASSIGN_OR_RETURN(ResolvedSite resolved, ResolveLayer(model.sites, path));
  const LayerSite& site = *resolved.site;
  if (!HasForward(site.kind)) {
    return InvalidInput(
        fmt::format("{} is a {} site; only linear, lm_head and router layers "
                    "are loaded one at a time",
                    site.path, SiteKindName(site.kind)));
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
  return LoadedLayer{
      std::move(resolved), std::move(decision),   std::move(scheme),   key,
      activation,          std::move(checkpoint), std::move(prefixes), std::move(linear)};
}

Result<ReferenceLayer> LoadReference(const LoadedLayer& layer) {
  const LayerSite& site = *layer.resolved.site;
  return DequantizeReference(layer.checkpoint, layer.scheme, site.path, layer.leg_prefixes,
                             site.bias);
}

bool LayerRun::pass() const { return std::isfinite(rel) && rel <= tol; }

Result<LayerRun> RunSeeded(const LoadedLayer& layer, int64_t m, uint64_t seed) {
  if (m < 1 || m > 65536) {
    return InvalidInput(fmt::format("m = {}: expected 1 to 65536 rows", m));
  }
  const Linear& linear = layer.linear;
  QP_ASSIGN_OR_RETURN(const LinearKernel* kernel,
                      linear.KernelFor(m, QDType::kBF16, QDType::kFP32));
  const int64_t k = linear.in_features();
  const int64_t n = linear.out_features();
  const std::vector<uint16_t> x = RandomInput(seed, m * k);
  std::vector<float> y(static_cast<size_t>(m * n));
  const ConstMatrix xm{QDType::kBF16, x.data(), m, k};
  const MutableMatrix ym{QDType::kFP32, y.data(), m, n};
  QP_RETURN_IF_ERROR(linear.Forward(xm, ym));  // warm-up
  const auto start = std::chrono::steady_clock::now();
  QP_RETURN_IF_ERROR(linear.Forward(xm, ym));
  LayerRun run;
  run.time_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  run.kernel = std::string(kernel->name());
  run.m = m;
  QP_ASSIGN_OR_RETURN(ReferenceLayer ref, LoadReference(layer));
  Compare(y, ref, layer.activation, x, m, &run);
  run.tol = ToleranceFor(layer.key, layer.activation.mode);
  return run;
}

}  // namespace quantpath
