// Loads one layer the way an engine would (decision → materialize → spec → kernel) and measures
// its Forward against the double-precision reference. The Materialize / LoadLinear /
// DequantizeReference / ToleranceFor calls stay together here so that the spec API can change in
// one place.
//
// Tensor parallelism: a site splits as vLLM's class for it does (ParallelOf); the per-rank leg
// rows of QKV layers come from the planner's RankShapeOf, so the loader and the create_weights
// shape checks agree on every rank's shape.
#include <algorithm>
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
      QuantizeActivationsReference(xd, m, ref.cols, act, ref.input_scale);
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

// How vLLM splits a site across ranks, by its class: RowParallelLinear splits K, the column
// classes (ColumnParallelLinear, MergedColumnParallelLinear, QKVParallelLinear) split each leg's
// rows, and ParallelLMHead (a VocabParallelEmbedding) splits the vocabulary rows like a column
// class. vLLM pads the vocabulary to a multiple of 64 before splitting it; one layer loaded on
// its own is not padded, so a vocabulary the size does not divide is an error here. Replicated
// classes (routers, SGLang's fused ReplicatedLinear) and any other class hold the whole weight.
Parallel ParallelOf(const LayerSite& site) {
  const std::string& cls = site.module_class;
  if (cls.find("RowParallel") != std::string::npos) return Parallel::kRow;
  if (cls.find("ColumnParallel") != std::string::npos ||
      cls.find("QKVParallel") != std::string::npos || site.kind == SiteKind::kLmHead) {
    return Parallel::kColumn;
  }
  return Parallel::kReplicated;
}

// vLLM's QKVParallelLinear divides the heads among the ranks, and with fewer KV heads than ranks
// gives each rank one whole KV head (tp must then be a multiple of the KV heads).
Status CheckQkvHeads(const LayerSite& site, int64_t tp,
                     const std::optional<AttentionHeads>& heads) {
  if (!heads || tp == 1 || site.module_class.find("QKV") == std::string::npos) return {};
  if (heads->heads % tp != 0) {
    return InvalidInput(
        fmt::format("{}: {} attention heads are not divisible by tensor-parallel size {}",
                    site.path, heads->heads, tp));
  }
  if (heads->kv_heads >= tp ? heads->kv_heads % tp != 0 : tp % heads->kv_heads != 0) {
    return InvalidInput(fmt::format(
        "{}: {} KV heads are neither divisible by tensor-parallel size {} nor a divisor of it",
        site.path, heads->kv_heads, tp));
  }
  return {};
}

// The allocation request of `site` on rank `rank` of `tp`.
Result<AllocationRequest> RankRequest(const Model& model, const LayerSite& site, int64_t tp,
                                      int rank, const std::optional<AttentionHeads>& heads) {
  AllocationRequest request = RequestForSite(site, model.sites.torch_dtype, model.device);
  request.tp_size = static_cast<int>(tp);
  request.tp_rank = rank;
  request.parallel = ParallelOf(site);
  if (request.parallel != Parallel::kColumn || tp == 1) return request;
  const std::string& cls = site.module_class;
  if (site.legs.empty() &&
      (cls.find("QKV") != std::string::npos || cls.find("Merged") != std::string::npos)) {
    // The checkpoint stores the projections as one tensor; vLLM cuts it into its projections
    // before splitting each, which needs their widths.
    return Unsupported(fmt::format(
        "{}: {} stores its projections as one tensor; splitting it across tensor-parallel ranks "
        "is not implemented",
        site.path, cls));
  }
  QP_RETURN_IF_ERROR(CheckQkvHeads(site, tp, heads));
  const std::optional<RankShape> shape = RankShapeOf(site, tp, heads);
  if (shape && shape->partitions.size() == site.legs.size() && !site.legs.empty()) {
    request.rank_leg_rows = shape->partitions;
  }
  return request;
}

// The tensor-parallel sizes up to kMaxListedTp at which `spec` can hold the site.
constexpr int64_t kMaxListedTp = 64;
std::string LegalTpSizes(const WeightSpec& spec, const Model& model, const LayerSite& site,
                         const std::optional<AttentionHeads>& heads) {
  std::vector<std::string> legal;
  for (int64_t tp = 1; tp <= kMaxListedTp; ++tp) {
    Result<AllocationRequest> request = RankRequest(model, site, tp, 0, heads);
    if (request.ok() && spec.StorageBytes(*request).ok()) legal.push_back(std::to_string(tp));
  }
  return Join(legal, ", ");
}

}  // namespace

Result<LoadedLayer> LoadLayer(const Model& model, std::string_view path, int tp_rank) {
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
  const int64_t tp = model.launch.tp_size;
  if (tp_rank < 0 || tp_rank >= tp) {
    return InvalidInput(fmt::format("{}: rank {} is not one of the {} tensor-parallel ranks",
                                    site.path, tp_rank, tp));
  }
  const std::optional<AttentionHeads> heads = ReadAttentionHeads(model.sources);
  Result<AllocationRequest> request = RankRequest(model, site, tp, tp_rank, heads);
  Status fits = request.ok() ? (*spec)->StorageBytes(*request).status() : request.status();
  if (!fits.ok()) {
    const std::string legal = tp == 1 ? "" : LegalTpSizes(**spec, model, site, heads);
    if (legal.empty()) return fits;  // not a matter of the split
    return Status(fits.code(), fmt::format("{}; legal --tp: {}", fits.message(), legal));
  }
  QP_ASSIGN_OR_RETURN(RankSlice slice, RankSliceOf(*request));
  QP_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::Open(model.dir));
  QP_ASSIGN_OR_RETURN(std::shared_ptr<Dispatcher> dispatcher, Dispatcher::Default());
  std::vector<std::string> prefixes = LegPrefixes(site);
  QP_ASSIGN_OR_RETURN(Linear linear, LoadLinear(std::move(*spec), *request, checkpoint, prefixes,
                                                std::move(dispatcher)));
  return LoadedLayer{
      std::move(resolved), std::move(decision),   std::move(scheme),   key,
      activation,          std::move(checkpoint), std::move(prefixes), std::move(slice),
      std::move(linear)};
}

Result<ReferenceLayer> LoadReference(const LoadedLayer& layer) {
  const LayerSite& site = *layer.resolved.site;
  QP_ASSIGN_OR_RETURN(ReferenceLayer whole,
                      DequantizeReference(layer.checkpoint, layer.scheme, site.path,
                                          layer.leg_prefixes, site.bias));
  if (layer.linear.params().request.tp_size == 1) return whole;
  return SliceReference(whole, layer.slice);
}

std::vector<uint16_t> SeededInput(const LoadedLayer& layer, int64_t m, uint64_t seed) {
  const int64_t full_k = layer.linear.params().request.shape[1];
  const std::vector<uint16_t> whole = RandomInput(seed, m * full_k);
  const int64_t k = layer.slice.cols;
  if (k == full_k) return whole;
  std::vector<uint16_t> x(static_cast<size_t>(m * k));
  for (int64_t i = 0; i < m; ++i) {
    std::copy_n(whole.begin() + i * full_k + layer.slice.first_col, k, x.begin() + i * k);
  }
  return x;
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
  const std::vector<uint16_t> x = SeededInput(layer, m, seed);
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
