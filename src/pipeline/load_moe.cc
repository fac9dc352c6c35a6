// Loads the experts of one MoE layer and measures them against the double-precision reference,
// as load_layer.cc does for a dense layer: decision → materialize → per expert one Linear per
// projection (gate, up, down), each loaded through the spec from the expert's own checkpoint
// prefix, then what the engines share across experts (WeightSpec::ShareAcrossExperts), then
// processed. The Materialize / Load / DequantizeExpertReference calls for experts stay together
// here (MeasureFor, run_compare.h, says what they are measured against).
//
// Tensor parallelism as vLLM's FusedMoE shards experts without expert parallelism: every rank
// holds every expert, gate and up split along the intermediate rows (each its own I / tp rows:
// w13's two shards), down along its intermediate columns (a partial sum per rank). The specs'
// column and row geometry does the slicing, so a split that breaks a group, a pack or a block is
// the spec's error, to which the legal sizes are added.
//
// gpt-oss stacks every expert of a layer in one tensor per projection, gate and up rows
// interleaved (LayerSite::stacked_experts): each expert's projection names its rows of them
// (StackedExpert), so gate and up load as two projections (the interleave undone) and the
// architecture's activation (LayerSite::expert_activation) combines them.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/materialize.h"
#include "quantpath/numeric.h"
#include "quantpath/pipeline.h"
#include "src/pipeline/run_compare.h"

namespace quantpath {
namespace {

// "up_proj", or "gate_up_proj[1::2]" for a projection that is every other row of a stacked
// tensor (gpt-oss's up rows).
std::string ProjectionName(const AllocationRequest& request) {
  const std::string& name = request.leg_names.front();
  const std::optional<StackedExpert>& stacked = request.stacked;
  if (!stacked || stacked->row_step == 1) return name;
  return fmt::format("{}[{}::{}]", name, stacked->first_row, stacked->row_step);
}

// "model.layers.0.mlp.experts, expert 3 (up_proj)": the layer name of one expert's projection in
// every message the spec and the checkpoint give.
std::string ExpertLayer(const LayerSite& site, int64_t expert, const AllocationRequest& request) {
  return fmt::format("{}, expert {} ({})", site.path, expert, ProjectionName(request));
}

// The three projection requests of `site` on rank `rank` of `tp` (ExpertProjectionRequests
// marks gate and up column-parallel, down row-parallel), for a scheme in source layout `layout`.
Result<std::vector<AllocationRequest>> RankRequests(const Model& model, const LayerSite& site,
                                                    SourceLayout layout, int64_t tp, int rank) {
  AllocationRequest request = RequestForSite(site, model.sites.torch_dtype, model.device);
  request.tp_size = static_cast<int>(tp);
  request.tp_rank = rank;
  // vLLM's gpt-oss loader gives each rank ⌈(I / 32) / tp⌉ whole 32-blocks of the intermediate
  // size (gate and up rows, down columns), the last rank the rest; its kernels pad the shorter
  // slice.
  if (StacksExperts(layout)) request.split_block = 32;
  QP_ASSIGN_OR_RETURN(std::vector<AllocationRequest> requests, ExpertProjectionRequests(request));
  for (AllocationRequest& projection : requests) {
    projection.layer = fmt::format("{} ({})", site.path, ProjectionName(projection));
  }
  return requests;
}

// The site leg whose checkpoint prefix holds `request`'s projection (gpt-oss's gate and up rows
// are both gate_up_proj's).
size_t SiteLeg(const LayerSite& site, const AllocationRequest& request) {
  for (size_t leg = 0; leg < site.legs.size(); ++leg) {
    if (site.legs[leg].name == request.leg_names.front()) return leg;
  }
  return site.legs.size();  // ExpertLegPath gives "" for it: the spec names the missing tensor
}

// The columns [slice.first_col, + slice.cols) of X [m, full_k].
std::vector<double> ColumnsOf(std::span<const double> x, int64_t m, int64_t full_k,
                              const RankSlice& slice) {
  std::vector<double> out(static_cast<size_t>(m * slice.cols));
  for (int64_t i = 0; i < m; ++i) {
    std::copy_n(x.begin() + i * full_k + slice.first_col, slice.cols, out.begin() + i * slice.cols);
  }
  return out;
}

// The reference of one projection on this rank: its slice of the whole projection's. Its input
// is the one the engines quantize for w13 (gate and up) or w2 (down) of every expert.
Result<ReferenceLayer> ProjectionReference(const LoadedExperts& layer, int64_t e, size_t leg) {
  const LayerSite& site = *layer.resolved.site;
  const LoadedExpert& expert = layer.experts[static_cast<size_t>(e)];
  const AllocationRequest& request = expert.projections[leg].params().request;
  const size_t down = expert.prefixes.size() - 1;
  std::vector<std::string> peers;
  for (const LoadedExpert& other : layer.experts) {
    for (size_t p = 0; p < other.prefixes.size(); ++p) {
      if ((p == down) == (leg == down)) peers.push_back(other.prefixes[p]);
    }
  }
  QP_ASSIGN_OR_RETURN(
      ReferenceLayer whole,
      DequantizeExpertReference(layer.checkpoint, layer.scheme, ExpertLayer(site, e, request),
                                expert.prefixes[leg], peers, site.bias, request.stacked));
  if (request.tp_size == 1) return whole;
  return RankReference(whole, expert.slices[leg], request, layer.scheme.weight.load,
                       layer.activation);
}

// X as the kernels read it: bf16 when every value is one (the seeded input, the bf16 product of
// gate and up), fp32 otherwise.
struct KernelInput {
  QDType dtype = QDType::kBF16;
  std::vector<uint16_t> bf16;
  std::vector<float> fp32;
  ConstMatrix View(int64_t m, int64_t k) const {
    return {dtype, dtype == QDType::kBF16 ? static_cast<const void*>(bf16.data()) : fp32.data(), m,
            k};
  }
};
KernelInput ToKernelInput(std::span<const double> xd) {
  KernelInput x;
  x.fp32.assign(xd.begin(), xd.end());
  x.bf16.resize(xd.size());
  for (size_t i = 0; i < xd.size(); ++i) {
    x.bf16[i] = FloatToBf16(x.fp32[i]);
    if (Bf16ToFloat(x.bf16[i]) != xd[i]) x.dtype = QDType::kFP32;
  }
  if (x.dtype == QDType::kBF16) x.fp32.clear();
  return x;
}

// Forward of `linear` on X ([m, in_features], in double) into y, timed after a warm-up call.
Status TimedForward(const Linear& linear, std::span<const double> xd, int64_t m,
                    std::vector<float>* y, LayerRun* run) {
  const KernelInput x = ToKernelInput(xd);
  const ConstMatrix xm = x.View(m, linear.in_features());
  QP_ASSIGN_OR_RETURN(const LinearKernel* kernel, linear.KernelFor(m, xm.dtype, QDType::kFP32));
  run->kernel = std::string(kernel->name());
  y->assign(static_cast<size_t>(m * linear.out_features()), 0.0f);
  const MutableMatrix ym{QDType::kFP32, y->data(), m, linear.out_features()};
  QP_RETURN_IF_ERROR(linear.Forward(xm, ym));  // warm-up
  const auto start = std::chrono::steady_clock::now();
  QP_RETURN_IF_ERROR(linear.Forward(xm, ym));
  run->time_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return Status();
}

// Runs projections [first_leg, last_leg) of experts [first, last) on X [m, K] (the projections
// share their input; K the whole projection's, of which a row-parallel rank takes its columns)
// and measures them together: their outputs side by side are the product the engines' fused
// kernel computes (gate and up: w13).
Result<LayerRun> RunProjections(const LoadedExperts& layer, int64_t first, int64_t last,
                                size_t first_leg, size_t last_leg, std::span<const double> x,
                                int64_t m) {
  const LoadedExpert& front_expert = layer.experts[static_cast<size_t>(first)];
  const Linear& front = front_expert.projections[first_leg];
  const int64_t full_k = front.params().request.shape[1];
  const std::vector<double> xd = ColumnsOf(x, m, full_k, front_expert.slices[first_leg]);
  const pipeline_internal::Measure measure =
      pipeline_internal::MeasureFor(layer.scheme, layer.key, layer.activation);
  pipeline_internal::ErrorStats stats;
  LayerRun run;
  run.m = m;
  for (int64_t e = first; e < last; ++e) {
    const LoadedExpert& expert = layer.experts[static_cast<size_t>(e)];
    for (size_t leg = first_leg; leg < last_leg; ++leg) {
      const Linear& linear = expert.projections[leg];
      std::vector<float> y;
      QP_RETURN_IF_ERROR(TimedForward(linear, xd, m, &y, &run));
      QP_ASSIGN_OR_RETURN(ReferenceLayer ref, ProjectionReference(layer, e, leg));
      stats.Add(y, linear.out_features(), ref, measure.reference_act, xd, m);
      run.y.insert(run.y.end(), y.begin(), y.end());
      measure.Apply(linear.params(), &run);
    }
  }
  stats.Fill(&run);
  return run;
}

// Experts [first, last) of `layer`, checked against its expert count.
Result<std::pair<int64_t, int64_t>> ExpertRange(const LoadedExperts& layer,
                                                std::optional<int64_t> expert) {
  const std::string& path = layer.resolved.site->path;
  const int64_t count = static_cast<int64_t>(layer.experts.size());
  if (count == 0) return InvalidInput(fmt::format("{}: no experts loaded", path));
  if (expert && (*expert < 0 || *expert >= count)) {
    return InvalidInput(fmt::format("{}: expert {} is out of range (the layer has experts 0 to {})",
                                    path, *expert, count - 1));
  }
  return std::pair<int64_t, int64_t>{expert.value_or(0), expert ? *expert + 1 : count};
}

}  // namespace

namespace pipeline_internal {

Status ExpertsFit(const WeightSpec& spec, const Model& model, const LayerSite& site, int64_t tp) {
  QP_ASSIGN_OR_RETURN(std::vector<AllocationRequest> requests,
                      RankRequests(model, site, spec.facts().layout, tp, 0));
  for (const AllocationRequest& request : requests) {
    QP_RETURN_IF_ERROR(spec.StorageBytes(request).status());
  }
  return Status();
}

}  // namespace pipeline_internal

Result<LoadedExperts> LoadExperts(const Model& model, std::string_view path, int tp_rank) {
  QP_ASSIGN_OR_RETURN(ResolvedSite resolved, ResolveLayer(model.sites, path));
  QP_ASSIGN_OR_RETURN(LayerDecision layer, DecideOneSite(model, *resolved.site));
  QP_ASSIGN_OR_RETURN(LoadedExperts loaded, LoadExperts(model, layer, tp_rank));
  loaded.resolved = std::move(resolved);
  return loaded;
}

Result<LoadedExperts> LoadExperts(const Model& model, const LayerDecision& layer, int tp_rank) {
  const LayerSite& site = *layer.site;
  if (site.kind != SiteKind::kMoe) {
    return InvalidInput(fmt::format("{} is a site of kind {}, not the experts of an MoE layer",
                                    site.path, SiteKindName(site.kind)));
  }
  const Decision& decision = layer.decision;
  if (decision.kind == DecisionKind::kError) {
    return InvalidInput(fmt::format("{}: decided error: {}", site.path, decision.detail));
  }
  // ExpertProjectionRequests' order: gate_proj, up_proj, down_proj, one checkpoint prefix each;
  // gate and up fused in one tensor are read only as the architecture stacks them (gpt-oss).
  if (site.legs.size() != 3 && !site.stacked_experts) {
    return Unsupported(fmt::format(
        "{}: experts stored with gate and up fused ({}) are loaded only where the "
        "architecture says how they are stacked (gpt-oss)",
        site.path, site.legs.empty() ? std::string("no legs") : site.legs.front().name));
  }
  const int64_t tp = model.launch.tp_size;
  if (tp_rank < 0 || tp_rank >= tp) {
    return InvalidInput(fmt::format("{}: rank {} is not one of the {} tensor-parallel ranks",
                                    site.path, tp_rank, tp));
  }
  QuantScheme scheme = decision.scheme.value_or(QuantScheme{});
  const SourceLayout layout = scheme.weight.load.layout;
  if (site.stacked_experts != StacksExperts(layout)) {
    return InvalidInput(fmt::format(
        "{}: {} stores {}, but source layout {} {}", site.path, model.sites.architecture,
        site.stacked_experts ? "every expert of a layer in one tensor per projection"
                             : "each expert's projections under its own prefix",
        SourceLayoutName(layout),
        StacksExperts(layout) ? "stacks them" : "reads a tensor per expert projection"));
  }
  if (layer.weight_spec == nullptr) return layer.materialized.WithContext(site.path);
  const WeightSpec& spec = *layer.weight_spec;
  if (Status fits = pipeline_internal::ExpertsFit(spec, model, site, tp); !fits.ok()) {
    const std::string legal = tp == 1 ? "" : pipeline_internal::LegalTpSizes([&](int64_t size) {
      return pipeline_internal::ExpertsFit(spec, model, site, size).ok();
    });
    if (legal.empty()) return fits;  // not a matter of the split
    return Status(fits.code(), fmt::format("{}; legal --tp: {}", fits.message(), legal));
  }
  QP_ASSIGN_OR_RETURN(const std::vector<AllocationRequest> requests,
                      RankRequests(model, site, layout, tp, tp_rank));
  QP_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::Open(model.dir));
  QP_ASSIGN_OR_RETURN(std::shared_ptr<Dispatcher> dispatcher, Dispatcher::Default());
  // Every projection of every expert is loaded before any is processed, so that the spec can
  // share what the engines share across experts (ShareAcrossExperts).
  std::vector<LoadedExpert> experts(static_cast<size_t>(site.experts));
  std::vector<std::vector<LinearParams>> params(experts.size());
  for (int64_t e = 0; e < site.experts; ++e) {
    LoadedExpert& expert = experts[static_cast<size_t>(e)];
    for (const AllocationRequest& projection : requests) {
      AllocationRequest request = projection;
      request.layer = ExpertLayer(site, e, projection);
      if (request.stacked) request.stacked->expert = e;
      QP_ASSIGN_OR_RETURN(RankSlice slice, RankSliceOf(request));
      expert.slices.push_back(std::move(slice));
      expert.prefixes.push_back(site.ExpertLegPath(e, SiteLeg(site, request)));
      expert.names.push_back(ProjectionName(request));
      QP_ASSIGN_OR_RETURN(LinearParams loaded, spec.Allocate(request));
      QP_RETURN_IF_ERROR(spec.Load(checkpoint, {expert.prefixes.back()}, &loaded));
      params[static_cast<size_t>(e)].push_back(std::move(loaded));
    }
  }
  QP_RETURN_IF_ERROR(spec.ShareAcrossExperts(params));
  for (size_t e = 0; e < experts.size(); ++e) {
    for (size_t leg = 0; leg < requests.size(); ++leg) {
      QP_RETURN_IF_ERROR(spec.ProcessAfterLoading(&params[e][leg]));
      QP_ASSIGN_OR_RETURN(Linear linear,
                          Linear::Create(layer.weight_spec, std::move(params[e][leg]), dispatcher));
      experts[e].projections.push_back(std::move(linear));
    }
  }
  return LoadedExperts{
      ResolvedSite{&site, ""}, decision,          std::move(scheme), spec.key(), spec.activation(),
      std::move(checkpoint),   std::move(experts)};
}

Result<ExpertsRun> RunExpertsSeeded(const LoadedExperts& layer, int64_t m, uint64_t seed,
                                    std::optional<int64_t> expert) {
  if (m < 1 || m > 65536) {
    return InvalidInput(fmt::format("m = {}: expected 1 to 65536 rows", m));
  }
  QP_ASSIGN_OR_RETURN(auto range, ExpertRange(layer, expert));
  const auto [first, last] = range;
  // ExpertProjectionRequests' order: gate and up read the hidden state, down the product.
  const LoadedExpert& front = layer.experts.front();
  const size_t down = front.projections.size() - 1;
  const auto seeded = [&](size_t leg) {
    const int64_t k = front.projections[leg].params().request.shape[1];
    return pipeline_internal::Bf16ToDouble(pipeline_internal::RandomInput(seed, m * k));
  };
  ExpertsRun run;
  run.expert = expert;
  run.experts = last - first;
  QP_ASSIGN_OR_RETURN(run.w13, RunProjections(layer, first, last, 0, down, seeded(0), m));
  QP_ASSIGN_OR_RETURN(run.w2, RunProjections(layer, first, last, down, down + 1, seeded(down), m));
  return run;
}

Result<ExpertsRun> RunExpertsOnInput(const LoadedExperts& layer, const ConstMatrix& x,
                                     std::optional<int64_t> expert) {
  QP_ASSIGN_OR_RETURN(auto range, ExpertRange(layer, expert));
  const auto [first, last] = range;
  const std::string& path = layer.resolved.site->path;
  const int64_t m = x.rows;
  const int64_t hidden = layer.experts.front().projections.front().params().request.shape[1];
  if (m < 1 || m > 65536 || x.cols != hidden) {
    return InvalidInput(fmt::format("{}: input of {} x {}: expected [M, {}] with 1 <= M <= 65536",
                                    path, m, x.cols, hidden));
  }
  QP_ASSIGN_OR_RETURN(const std::vector<double> xd, pipeline_internal::InputToDouble(x, path));
  ExpertsRun run;
  run.expert = expert;
  run.experts = last - first;
  // w13 on X; then per expert h = bf16(act(gate, up)) on this rank's intermediate rows, act the
  // architecture's (LayerSite::expert_activation), and down on h: each product is measured on
  // the input its kernel read.
  const ExpertActivation& act = layer.resolved.site->expert_activation;
  QP_ASSIGN_OR_RETURN(run.w13, RunProjections(layer, first, last, 0, 2, xd, m));
  const pipeline_internal::Measure measure =
      pipeline_internal::MeasureFor(layer.scheme, layer.key, layer.activation);
  pipeline_internal::ErrorStats w2;
  run.w2.m = m;
  for (int64_t e = first; e < last; ++e) {
    const Linear& down = layer.experts[static_cast<size_t>(e)].projections[2];
    const int64_t inter = down.in_features();
    const float* gate = run.w13.y.data() + (e - first) * 2 * m * inter;
    const float* up = gate + m * inter;
    std::vector<double> h(static_cast<size_t>(m * inter));
    for (size_t i = 0; i < h.size(); ++i) {
      h[i] = Bf16ToFloat(act.ApplyBf16(gate[i], up[i]));
    }
    std::vector<float> y;
    QP_RETURN_IF_ERROR(TimedForward(down, h, m, &y, &run.w2));
    QP_ASSIGN_OR_RETURN(ReferenceLayer ref, ProjectionReference(layer, e, 2));
    w2.Add(y, down.out_features(), ref, measure.reference_act, h, m);
    run.w2.y.insert(run.w2.y.end(), y.begin(), y.end());
    measure.Apply(down.params(), &run.w2);
  }
  w2.Fill(&run.w2);
  return run;
}

MoeLayer MoeLayerOf(const LoadedExperts& layer) {
  MoeLayer moe{layer.resolved.site->path, {}, layer.resolved.site->expert_activation};
  for (const LoadedExpert& expert : layer.experts) {
    // ExpertProjectionRequests' order: gate, up, down.
    moe.experts.push_back(
        {{&expert.projections[0], &expert.projections[1]}, &expert.projections[2]});
  }
  return moe;
}

}  // namespace quantpath
