// libFuzzer target: a safetensors file holding one small ModelSlim int4 layer `m` (weight I8,
// weight_scale, weight_offset) → for both 4-bit packings and both activation types (int4, int8
// dynamic per token), allocate (shape from the `m.weight` header: [N, K] one code per byte, or
// [N / 2, K] two), load, convert, one Forward on a fixed input, and the fp64 reference; then the
// last rank of a column and of a row split at tensor-parallel size 2. Nothing may crash; errors
// are fine.
// seeds: tests/fuzz/seeds/w4a_loader/*
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/loader_fuzz.h"

namespace {

using namespace quantpath;

void Run(const Checkpoint& checkpoint, bool pairs, QDType activations, int64_t n, int64_t k,
         Parallel parallel = Parallel::kReplicated, int tp = 1) {
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kINT4;
  scheme.weight.granularity = Granularity::kPerChannel;
  scheme.weight.load.layout = SourceLayout::kModelSlim;
  scheme.weight.load.int4_pairs = pairs;
  TensorQuant in;
  in.dtype = activations;
  in.granularity = Granularity::kPerToken;
  in.dynamic = Dynamic::kDynamic;
  scheme.input = in;
  ActivationQuant act;
  act.mode = ActMode::kDynamicPerToken;
  act.dtype = activations;
  SpecKey key{SpecFamily("int_channel")};
  key.bits = 4;
  fuzz::RunLayer(checkpoint, scheme, key, act, n, k, parallel, tp, tp - 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<Checkpoint> checkpoint = fuzz::OpenInput("w4a", data, size);
  if (!checkpoint.ok()) return 0;
  const auto shape = fuzz::MatrixShape(*checkpoint, "m.weight");
  if (!shape || !fuzz::SmallShape((*shape)[0], (*shape)[1])) return 0;
  const auto [rows, k] = *shape;
  for (bool pairs : {false, true}) {
    for (QDType activations : {QDType::kINT4, QDType::kINT8}) {
      // Each packing reads the shape it expects, and the other one's, which must be refused.
      Run(*checkpoint, pairs, activations, rows, k);
      Run(*checkpoint, pairs, activations, 2 * rows, k);
      Run(*checkpoint, pairs, activations, pairs ? 2 * rows : rows, k, Parallel::kColumn, 2);
      Run(*checkpoint, pairs, activations, pairs ? 2 * rows : rows, k, Parallel::kRow, 2);
    }
  }
  return 0;
}
