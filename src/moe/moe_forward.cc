// MoeForward (moe.h): tokens sorted by expert, one Forward per projection for each expert's block
// of rows, the outputs scattered back with their routing weights.
//
// Per expert e with tokens (ascending e, skipping experts without any):
//   X_e   [rows, H]   its tokens' rows of X, in X's dtype (gathered in token order)
//   GU_e  [rows, 2I]  w13 Forward(s), fp32: [gate | up]
//   H_e   [rows, I]   bf16(act(gate, up))
//   O_e   [rows, H]   w2 Forward, fp32
//   Y[t] += weight(t, e) · O_e[row of t], in fp32
// The loops between the Forward calls are OpenMP loops over rows or elements (an expert's rows are
// distinct tokens, so no two write one row of Y); Y's sums run in the fixed order of the experts.
#include <algorithm>
#include <cstring>
#include <vector>

#include "fmt/format.h"
#include "quantpath/moe.h"
#include "quantpath/numeric.h"
#include "quantpath/threads.h"
#include "src/moe/moe_checks.h"

namespace quantpath {
namespace {

// The routing's slots (t · top_k + j) grouped by expert, each expert's in token order: expert e's
// are order[start[e], start[e + 1]).
struct SlotsByExpert {
  std::vector<int64_t> start;
  std::vector<int64_t> order;
  int64_t Rows(size_t e) const { return start[e + 1] - start[e]; }
};

// A stable counting sort of the slots by expert id.
SlotsByExpert SortByExpert(const MoeRouting& routing, int64_t experts) {
  SlotsByExpert sorted;
  sorted.start.assign(static_cast<size_t>(experts + 1), 0);
  for (const int32_t id : routing.ids) ++sorted.start[static_cast<size_t>(id) + 1];
  for (int64_t e = 0; e < experts; ++e) sorted.start[e + 1] += sorted.start[e];
  std::vector<int64_t> next(sorted.start.begin(), sorted.start.end() - 1);
  sorted.order.resize(routing.ids.size());
  for (size_t slot = 0; slot < routing.ids.size(); ++slot) {
    sorted.order[static_cast<size_t>(next[routing.ids[slot]]++)] = static_cast<int64_t>(slot);
  }
  return sorted;
}

Result<moe_internal::MoeDims> CheckLayer(const MoeLayer& layer) {
  std::vector<moe_internal::ExpertShape> shapes;
  for (size_t e = 0; e < layer.experts.size(); ++e) {
    const MoeExpert& expert = layer.experts[e];
    moe_internal::ExpertShape shape;
    for (const Linear* linear : expert.w13) {
      if (linear == nullptr) {
        return InvalidInput(
            fmt::format("{}, expert {}: a w13 projection is missing", layer.name, e));
      }
      shape.w13.push_back({linear->out_features(), linear->in_features()});
      QP_RETURN_IF_ERROR(moe_internal::CheckActivation(linear->spec().activation(), layer.name));
    }
    if (expert.w2 == nullptr) {
      return InvalidInput(fmt::format("{}, expert {}: w2 (down) is missing", layer.name, e));
    }
    shape.w2 = {expert.w2->out_features(), expert.w2->in_features()};
    QP_RETURN_IF_ERROR(moe_internal::CheckActivation(expert.w2->spec().activation(), layer.name));
    shapes.push_back(std::move(shape));
  }
  return moe_internal::CheckExperts(shapes, layer.name);
}

bool IsActivationDtype(QDType dtype) { return dtype == QDType::kFP32 || dtype == QDType::kBF16; }

Status CheckMatrix(std::string_view what, QDType dtype, const void* data, int64_t rows,
                   int64_t cols, int64_t tokens, int64_t hidden, std::string_view layer) {
  if (!IsActivationDtype(dtype) || rows != tokens || cols != hidden ||
      (data == nullptr && tokens > 0)) {
    return InvalidInput(fmt::format("{}: {} is {} [{}, {}]: expected fp32 or bf16 [{}, {}]", layer,
                                    what, QDTypeName(dtype), rows, cols, tokens, hidden));
  }
  return Status();
}

// Forward of `linear`, its kernel noted in `call`.
Status NotedForward(const Linear& linear, const ConstMatrix& x, const MutableMatrix& y,
                    MoeCall* call) {
  QP_ASSIGN_OR_RETURN(const LinearKernel* kernel, linear.KernelFor(x.rows, x.dtype, y.dtype));
  if (std::find(call->kernels.begin(), call->kernels.end(), kernel) == call->kernels.end()) {
    call->kernels.push_back(kernel);
  }
  return linear.Forward(x, y);
}

// The buffers of one expert's block, kept across experts.
struct Block {
  std::vector<std::byte> x;
  std::vector<float> gate_up;
  std::vector<float> leg;
  std::vector<uint16_t> h;
  std::vector<float> out;
};

// Runs expert `expert` on the slots order[first, first + rows) and adds its outputs into acc.
Status RunExpert(const MoeLayer& layer, const MoeExpert& expert, const MoeRouting& routing,
                 const ConstMatrix& x, std::span<const int64_t> slots,
                 const moe_internal::MoeDims& dims, Block* block, float* acc, MoeCall* call) {
  const int64_t rows = static_cast<int64_t>(slots.size());
  const int64_t hidden = dims.hidden, inter = dims.intermediate;
  const size_t row_bytes = static_cast<size_t>(hidden) * (x.dtype == QDType::kBF16 ? 2 : 4);
  block->x.resize(static_cast<size_t>(rows) * row_bytes);
  const auto* x_bytes = static_cast<const std::byte*>(x.data);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t token = slots[r] / routing.top_k;
    std::memcpy(block->x.data() + r * row_bytes, x_bytes + token * row_bytes, row_bytes);
  }
  const ConstMatrix xe{x.dtype, block->x.data(), rows, hidden};

  // [gate | up]: one fused w13 writes it directly; gate and up apart are placed side by side.
  block->gate_up.resize(static_cast<size_t>(rows * 2 * inter));
  if (expert.w13.size() == 1) {
    QP_RETURN_IF_ERROR(NotedForward(*expert.w13.front(), xe,
                                    {QDType::kFP32, block->gate_up.data(), rows, 2 * inter}, call));
  } else {
    block->leg.resize(static_cast<size_t>(rows * inter));
    for (size_t p = 0; p < expert.w13.size(); ++p) {
      QP_RETURN_IF_ERROR(
          NotedForward(*expert.w13[p], xe, {QDType::kFP32, block->leg.data(), rows, inter}, call));
      for (int64_t r = 0; r < rows; ++r) {
        std::copy_n(block->leg.data() + r * inter, inter,
                    block->gate_up.data() + r * 2 * inter + static_cast<int64_t>(p) * inter);
      }
    }
  }

  block->h.resize(static_cast<size_t>(rows * inter));
  const ExpertActivation& act = layer.activation;
  const float* gate_up = block->gate_up.data();
  uint16_t* h = block->h.data();
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
  for (int64_t i = 0; i < rows * inter; ++i) {
    const float* row = gate_up + i / inter * 2 * inter;
    h[i] = act.ApplyBf16(row[i % inter], row[inter + i % inter]);
  }

  block->out.resize(static_cast<size_t>(rows * hidden));
  QP_RETURN_IF_ERROR(NotedForward(*expert.w2, {QDType::kBF16, h, rows, inter},
                                  {QDType::kFP32, block->out.data(), rows, hidden}, call));
  const float* out = block->out.data();
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t token = slots[r] / routing.top_k;
    const float weight = routing.weights[slots[r]];
    float* y = acc + token * hidden;
    for (int64_t c = 0; c < hidden; ++c) y[c] += weight * out[r * hidden + c];
  }
  call->active_experts += 1;
  for (const Linear* linear : expert.w13) call->weight_bytes += linear->params().WeightBytes();
  call->weight_bytes += expert.w2->params().WeightBytes();
  return Status();
}

}  // namespace

Result<MoeCall> MoeForward(const MoeLayer& layer, const MoeRouting& routing, const ConstMatrix& x,
                           const MutableMatrix& y, const MoeOptions& options) {
  QP_ASSIGN_OR_RETURN(const moe_internal::MoeDims dims, CheckLayer(layer));
  const int64_t experts = static_cast<int64_t>(layer.experts.size());
  QP_RETURN_IF_ERROR(moe_internal::CheckRouting(routing, experts, layer.name));
  QP_RETURN_IF_ERROR(
      CheckMatrix("X", x.dtype, x.data, x.rows, x.cols, routing.tokens, dims.hidden, layer.name));
  QP_RETURN_IF_ERROR(
      CheckMatrix("Y", y.dtype, y.data, y.rows, y.cols, routing.tokens, dims.hidden, layer.name));
  if (options.threads < 0) {
    return InvalidInput(
        fmt::format("{}: {} threads: expected at least 1, or 0 for OpenMP's default", layer.name,
                    options.threads));
  }
  const ThreadCount team(options.threads);
  const SlotsByExpert sorted = SortByExpert(routing, experts);
  const size_t outputs = static_cast<size_t>(routing.tokens * dims.hidden);
  // fp32 Y is its own accumulator; bf16 Y is rounded once, from the fp32 sums.
  std::vector<float> sums(y.dtype == QDType::kFP32 ? 0 : outputs);
  float* acc = y.dtype == QDType::kFP32 ? static_cast<float*>(y.data) : sums.data();
  std::fill_n(acc, outputs, 0.0f);
  MoeCall call;
  Block block;
  for (size_t e = 0; e < layer.experts.size(); ++e) {
    if (sorted.Rows(e) == 0) continue;
    const std::span<const int64_t> slots(sorted.order.data() + sorted.start[e],
                                         static_cast<size_t>(sorted.Rows(e)));
    QP_RETURN_IF_ERROR(
        RunExpert(layer, layer.experts[e], routing, x, slots, dims, &block, acc, &call)
            .WithContext(fmt::format("{}, expert {}", layer.name, e)));
  }
  if (y.dtype == QDType::kBF16) {
    FloatsToBf16(sums.data(), static_cast<int64_t>(outputs), static_cast<uint16_t*>(y.data));
  }
  return call;
}

}  // namespace quantpath
