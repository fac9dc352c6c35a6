// libFuzzer target: a safetensors file holding one compressed-tensors pack-quantized int4 layer
// `m` (weight_packed [N, K/8], weight_scale, weight_zero_point, weight_g_idx, weight_shape) → the
// pack-quantized loader for group 64 (sym, asym, act-order) and channel strategies: allocate
// (shape from the `m.weight_packed` header), load, convert, one Forward, the fp64 reference.
// Nothing may crash; errors are fine.
// seeds: tests/fuzz/seeds/ct_pack_loader/*
#include "tests/fuzz/loader_fuzz.h"

using namespace quantpath;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<Checkpoint> checkpoint = fuzz::OpenInput("ct_pack", data, size);
  if (!checkpoint.ok()) return 0;
  const std::optional<std::array<int64_t, 2>> shape =
      fuzz::MatrixShape(*checkpoint, "m.weight_packed");
  if (!shape) return 0;
  const int64_t n = (*shape)[0];
  const int64_t k = (*shape)[1] * 8;
  if (!fuzz::SmallShape(n, k)) return 0;
  using Z = ZeroPointConvention;
  for (const fuzz::IntMode& mode : {
           fuzz::IntMode{SourceLayout::kCtPackQuantized, Z::kStored, 64, true, false},
           fuzz::IntMode{SourceLayout::kCtPackQuantized, Z::kStored, 64, false, false},
           fuzz::IntMode{SourceLayout::kCtPackQuantized, Z::kStored, 64, true, true},
           fuzz::IntMode{SourceLayout::kCtPackQuantized, Z::kStored, 0, true, false},
           fuzz::IntMode{SourceLayout::kCtPackQuantized, Z::kStored, 0, false, false},
       }) {
    fuzz::RunIntLayer(*checkpoint, mode, n, k);
  }
  return 0;
}
