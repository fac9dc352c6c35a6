// libFuzzer target: a safetensors file holding one small MX layer `m` (the compressed-tensors
// mxfp4 weight_packed, or an mxfp8 / ModelSlim weight, with weight_scale) → for each MX family and
// source layout, weight-only and with MX activations: allocate (N from `m.weight_scale`, K from
// it × 32), load, convert, one Forward on a fixed input, and the fp64 reference. Or gpt-oss's
// stacked experts `m_blocks` / `m_scales` / `m_bias` ([E, R, K/32, 16], [E, R, K/32], [E, R]) →
// every expert's gate-like (rows 0::2), up-like (1::2) and whole projections, at tp 1 and as
// rank 1 of 2 in whole 32-blocks, column and row split, each loaded, run once and dequantized by
// the stacked reference. Nothing may crash; errors are fine.
// seeds: tests/fuzz/seeds/mxfp_loader/*
#include <cstddef>
#include <cstdint>
#include <utility>

#include "tests/fuzz/loader_fuzz.h"

namespace {

using namespace quantpath;

TensorQuant Mx(QDType dtype, Dynamic dynamic) {
  TensorQuant t;
  t.dtype = dtype;
  t.granularity = Granularity::kGroup;
  t.group_size = 32;
  t.dynamic = dynamic;
  t.micro_scaled = true;
  return t;
}

void Run(const Checkpoint& checkpoint, QDType weight, SourceLayout layout, QDType input, int64_t n,
         int64_t k) {
  QuantScheme scheme;
  scheme.weight = Mx(weight, Dynamic::kStatic);
  scheme.weight.load.layout = layout;
  ActivationQuant act;
  if (input != QDType::kBF16) {
    scheme.input = Mx(input, Dynamic::kDynamic);
    act.mode = ActMode::kDynamicGroup;
    act.dtype = input;
    act.group_size = 32;
  }
  SpecKey key{SpecFamily(weight == QDType::kMXFP4 ? "mxfp4_block" : "mxfp8_block")};
  key.group = 32;
  fuzz::RunLayer(checkpoint, scheme, key, act, n, k);
}

// Projections of gpt-oss's stacked experts: N = R / row_step rows of each expert, K from the
// scales' last dimension.
void RunStacked(const Checkpoint& checkpoint) {
  if (!checkpoint.Has("m_scales")) return;
  Result<TensorView> scales = checkpoint.Get("m_scales");
  if (!scales.ok() || scales->info->shape.size() != 3) return;
  const int64_t experts = scales->info->shape[0];
  const int64_t rows = scales->info->shape[1];
  const int64_t k = scales->info->shape[2] * 32;
  if (experts < 1 || experts > 4 || !fuzz::SmallShape(rows, k)) return;
  QuantScheme scheme;
  scheme.weight = Mx(QDType::kMXFP4, Dynamic::kStatic);
  scheme.weight.load.layout = SourceLayout::kGptOssMxfp4;
  SpecKey key{SpecFamily("mxfp4_block")};
  key.group = 32;
  Result<std::shared_ptr<Dispatcher>> dispatcher = Dispatcher::Default();
  if (!dispatcher.ok()) return;
  for (int64_t e = 0; e < experts; ++e) {
    for (const auto& [step, first] : {std::pair{2, 0}, std::pair{2, 1}, std::pair{1, 0}}) {
      for (const auto& [parallel, tp] :
           {std::pair{Parallel::kReplicated, 1}, std::pair{Parallel::kColumn, 2},
            std::pair{Parallel::kRow, 2}}) {
        Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(key, {}, scheme.weight.load);
        if (!spec.ok()) return;
        AllocationRequest request;
        request.layer = "m";
        request.shape = {rows / step, k};
        request.bias = checkpoint.Has("m_bias");
        request.stacked = StackedExpert{experts, e, step, first};
        request.parallel = parallel;
        request.tp_size = tp;
        request.tp_rank = tp - 1;
        request.split_block = 32;
        Result<Linear> linear =
            LoadLinear(std::move(*spec), request, checkpoint, {"m"}, *dispatcher);
        (void)DequantizeReference(checkpoint, scheme, "m", {"m"}, request.bias, request.stacked);
        if (linear.ok()) (void)linear->Forward(fuzz::FixedInput(2, linear->in_features()), 2);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<Checkpoint> checkpoint = fuzz::OpenInput("mxfp", data, size);
  if (!checkpoint.ok()) return 0;
  RunStacked(*checkpoint);
  const auto scales = fuzz::MatrixShape(*checkpoint, "m.weight_scale");
  if (!scales) return 0;
  const int64_t n = (*scales)[0];
  const int64_t k = (*scales)[1] * 32;
  if (!fuzz::SmallShape(n, k)) return 0;
  for (QDType input : {QDType::kBF16, QDType::kMXFP4, QDType::kMXFP8}) {
    Run(*checkpoint, QDType::kMXFP4, SourceLayout::kCtMxfp4PackQuantized, input, n, k);
    Run(*checkpoint, QDType::kMXFP4, SourceLayout::kModelSlim, input, n, k);
    Run(*checkpoint, QDType::kMXFP8, SourceLayout::kCtFloatQuantized, input, n, k);
    Run(*checkpoint, QDType::kMXFP8, SourceLayout::kModelSlim, input, n, k);
  }
  return 0;
}
