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

// How vLLM splits a site across ranks, by its class's TpStyle: RowParallelLinear splits K, the
// column classes (ColumnParallelLinear, MergedColumnParallelLinear, QKVParallelLinear) split each
// leg's rows, and the LM head, whatever its class (vLLM's ParallelLMHead, a
// VocabParallelEmbedding, places no linear split), splits the vocabulary rows like a column
// class. vLLM pads the vocabulary to a multiple of 64 before splitting it; one layer loaded on its
// own is not padded, so a vocabulary the size does not divide is an error here. Replicated
// classes (routers, SGLang's fused ReplicatedLinear) and any other class hold the whole weight.
Parallel ParallelOf(const LayerSite& site) {
  const std::optional<Parallel> parallel = site.tp_style.parallel;
  if (parallel == Parallel::kRow) return Parallel::kRow;
  if (parallel == Parallel::kColumn || site.kind == SiteKind::kLmHead) return Parallel::kColumn;
  return Parallel::kReplicated;
}

// vLLM's QKVParallelLinear divides the heads among the ranks, and with fewer KV heads than ranks
// gives each rank one whole KV head (tp must then be a multiple of the KV heads).
Status CheckQkvHeads(const LayerSite& site, int64_t tp,
                     const std::optional<AttentionHeads>& heads) {
  if (!heads || tp == 1 || !site.tp_style.qkv) return {};
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
  if (site.legs.empty() && site.tp_style.merged) {
    // The checkpoint stores the projections as one tensor; vLLM cuts it into its projections
    // before splitting each, which needs their widths.
    return Unsupported(fmt::format(
        "{}: {} stores its projections as one tensor; splitting it across tensor-parallel ranks "
        "is not implemented",
        site.path, site.module_class));
  }
  QP_RETURN_IF_ERROR(CheckQkvHeads(site, tp, heads));
  const std::optional<RankShape> shape = RankShapeOf(site, tp, heads);
  if (shape && shape->partitions.size() == site.legs.size() && !site.legs.empty()) {
    request.rank_leg_rows = shape->partitions;
  }
  return request;
}

}  // namespace

namespace pipeline_internal {

std::string ShapeText(std::span<const int64_t> shape) {
  std::string text;
  for (int64_t d : shape) text += (text.empty() ? "" : ", ") + std::to_string(d);
  return "[" + text + "]";
}

Status LayerFits(const Model& model, const LayerSite& site, const WeightSpec& spec, int64_t tp) {
  QP_ASSIGN_OR_RETURN(AllocationRequest request,
                      RankRequest(model, site, tp, 0, ReadAttentionHeads(model.sources)));
  return spec.StorageBytes(request).status();
}

}  // namespace pipeline_internal

Result<LoadedLayer> LoadLayer(const Model& model, std::string_view path, int tp_rank) {
  QP_ASSIGN_OR_RETURN(ResolvedSite resolved, ResolveLayer(model.sites, path));
  QP_ASSIGN_OR_RETURN(LayerDecision layer, DecideOneSite(model, *resolved.site));
  QP_ASSIGN_OR_RETURN(LoadedLayer loaded, LoadLayer(model, layer, tp_rank));
  loaded.resolved = std::move(resolved);
  return loaded;
}

Result<LoadedLayer> LoadLayer(const Model& model, const LayerDecision& layer, int tp_rank) {
  const LayerSite& site = *layer.site;
  if (!HasForward(site.kind)) {
    return InvalidInput(
        fmt::format("{} is a site of kind {}; only linear, lm_head and router layers "
                    "are loaded one at a time{}",
                    site.path, SiteKindName(site.kind),
                    site.kind == SiteKind::kMoe ? " (its experts load with LoadExperts)" : ""));
  }
  const Decision& decision = layer.decision;
  if (decision.kind == DecisionKind::kError) {
    return InvalidInput(fmt::format("{}: decided error: {}", site.path, decision.detail));
  }
  if (layer.weight_spec == nullptr) return layer.materialized.WithContext(site.path);
  const WeightSpec& spec = *layer.weight_spec;
  const int64_t tp = model.launch.tp_size;
  if (tp_rank < 0 || tp_rank >= tp) {
    return InvalidInput(fmt::format("{}: rank {} is not one of the {} tensor-parallel ranks",
                                    site.path, tp_rank, tp));
  }
  const std::optional<AttentionHeads> heads = ReadAttentionHeads(model.sources);
  Result<AllocationRequest> request = RankRequest(model, site, tp, tp_rank, heads);
  Status fits = request.ok() ? spec.StorageBytes(*request).status() : request.status();
  if (!fits.ok()) {
    const std::string legal = tp == 1 ? "" : pipeline_internal::LegalTpSizes([&](int64_t size) {
      Result<AllocationRequest> r = RankRequest(model, site, size, 0, heads);
      return r.ok() && spec.StorageBytes(*r).ok();
    });
    if (legal.empty()) return fits;  // not a matter of the split
    return Status(fits.code(), fmt::format("{}; legal --tp: {}", fits.message(), legal));
  }
  QP_ASSIGN_OR_RETURN(RankSlice slice, RankSliceOf(*request));
  QP_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::Open(model.dir));
  QP_ASSIGN_OR_RETURN(std::shared_ptr<Dispatcher> dispatcher, Dispatcher::Default());
  std::vector<std::string> prefixes = LegPrefixes(site);
  QP_ASSIGN_OR_RETURN(Linear linear, LoadLinear(layer.weight_spec, *request, checkpoint, prefixes,
                                                std::move(dispatcher)));
  return LoadedLayer{ResolvedSite{&site, ""},
                     decision,
                     decision.scheme.value_or(QuantScheme{}),
                     spec.key(),
                     spec.activation(),
                     std::move(checkpoint),
                     std::move(prefixes),
                     std::move(slice),
                     std::move(linear)};
}

Result<ReferenceLayer> LoadReference(const LoadedLayer& layer) {
  const LayerSite& site = *layer.resolved.site;
  QP_ASSIGN_OR_RETURN(ReferenceLayer whole,
                      DequantizeReference(layer.checkpoint, layer.scheme, site.path,
                                          layer.leg_prefixes, site.bias));
  const AllocationRequest& request = layer.linear.params().request;
  if (request.tp_size == 1) return whole;
  return RankReference(whole, layer.slice, request, layer.scheme.weight.load, layer.activation);
}

std::vector<uint16_t> SeededInput(const LoadedLayer& layer, int64_t m, uint64_t seed) {
  const int64_t full_k = layer.linear.params().request.shape[1];
  const std::vector<uint16_t> whole = pipeline_internal::RandomInput(seed, m * full_k);
  const int64_t k = layer.slice.cols;
  if (k == full_k) return whole;
  std::vector<uint16_t> x(static_cast<size_t>(m * k));
  for (int64_t i = 0; i < m; ++i) {
    std::copy_n(whole.begin() + i * full_k + layer.slice.first_col, k, x.begin() + i * k);
  }
  return x;
}

bool LayerRun::pass() const {
  return !zero_reference && std::isfinite(rel) && (quantized_at_load || rel <= tol);
}

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
  QP_ASSIGN_OR_RETURN(const std::vector<double> xd, pipeline_internal::InputToDouble(x, path));
  std::vector<float> widened;
  ConstMatrix xm = x;
  if (x.dtype == QDType::kFP16) {
    widened.assign(xd.begin(), xd.end());
    xm = ConstMatrix{QDType::kFP32, widened.data(), m, k};
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
  const pipeline_internal::Measure measure =
      pipeline_internal::MeasureFor(layer.scheme, layer.key, layer.activation);
  pipeline_internal::ErrorStats stats;
  stats.Add(run.y, n, ref, measure.reference_act, xd, m);
  stats.Fill(&run);
  measure.Apply(linear.params(), &run);
  return run;
}

Result<LayerRun> RunSeeded(const LoadedLayer& layer, int64_t m, uint64_t seed) {
  if (m < 1 || m > 65536) {
    return InvalidInput(fmt::format("m = {}: expected 1 to 65536 rows", m));
  }
  const std::vector<uint16_t> x = SeededInput(layer, m, seed);
  return RunOnInput(layer, ConstMatrix{QDType::kBF16, x.data(), m, layer.linear.in_features()});
}

}  // namespace quantpath
