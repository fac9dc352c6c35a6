// libFuzzer target: a safetensors file holding one small NVFP4 layer `m` (the ModelOpt tensors
// weight / weight_scale / weight_scale_2 / input_scale and the compressed-tensors weight_packed /
// weight_global_scale / input_global_scale beside them) → for each NVFP4 source layout, W4A16
// and W4A4: allocate (N from `m.weight_scale`, K from it × 16), load, convert, one Forward on a
// fixed input, and the fp64 reference. The input's size picks the scale layout (linear or 128x4)
// and the split (whole, or rank 1 of a column or a row split in two), so each input costs what it
// did with one layout and every combination is reached. Nothing may crash; errors are fine.
// seeds: tests/fuzz/seeds/nvfp4_loader/*
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/loader_fuzz.h"

namespace {

using namespace quantpath;

void Run(const Checkpoint& checkpoint, SourceLayout layout, bool w4a4, ScaleVariant scales,
         Parallel parallel, int64_t n, int64_t k) {
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kNVFP4;
  scheme.weight.granularity = Granularity::kTensorGroup;
  scheme.weight.group_size = 16;
  scheme.weight.load.layout = layout;
  ActivationQuant act;
  if (w4a4) {
    TensorQuant in;
    in.dtype = QDType::kNVFP4;
    in.granularity = Granularity::kTensorGroup;
    in.group_size = 16;
    in.dynamic = Dynamic::kLocal;
    scheme.input = in;
    act.mode = ActMode::kDynamicGroup;
    act.dtype = QDType::kNVFP4;
    act.group_size = 16;
  }
  SpecKey key{SpecFamily("nvfp4_block")};
  key.group = 16;
  key.scales = scales;
  const bool split = parallel != Parallel::kReplicated;
  fuzz::RunLayer(checkpoint, scheme, key, act, n, k, parallel, split ? 2 : 1, split ? 1 : 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<Checkpoint> checkpoint = fuzz::OpenInput("nvfp4", data, size);
  if (!checkpoint.ok()) return 0;
  const auto shape = fuzz::MatrixShape(*checkpoint, "m.weight_scale");
  if (!shape) return 0;
  const int64_t n = (*shape)[0];
  const int64_t k = (*shape)[1] * 16;
  if (!fuzz::SmallShape(n, k)) return 0;
  const ScaleVariant scales = size % 2 == 0 ? ScaleVariant::kLinear : ScaleVariant::kTiled128x4;
  constexpr Parallel kSplits[] = {Parallel::kReplicated, Parallel::kColumn, Parallel::kRow};
  const Parallel parallel = kSplits[size / 2 % 3];
  for (SourceLayout layout : {SourceLayout::kModelOptNvfp4, SourceLayout::kCtNvfp4PackQuantized}) {
    for (bool w4a4 : {false, true}) Run(*checkpoint, layout, w4a4, scales, parallel, n, k);
  }
  return 0;
}
