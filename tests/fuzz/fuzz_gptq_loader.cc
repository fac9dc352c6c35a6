// libFuzzer target: a safetensors file holding one GPTQ int4 layer `m` (qweight [K/8, N],
// qzeros, scales, g_idx) → the GPTQ v1 and v2 loaders, symmetric and asymmetric, group 64 with
// and without act-order and per channel: allocate (shape from the `m.qweight` header), load,
// convert, one Forward, the fp64 reference. Nothing may crash; errors are fine.
// seeds: tests/fuzz/seeds/gptq_loader/*
#include "tests/fuzz/loader_fuzz.h"

using namespace quantpath;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<Checkpoint> checkpoint = fuzz::OpenInput("gptq", data, size);
  if (!checkpoint.ok()) return 0;
  const std::optional<std::array<int64_t, 2>> shape = fuzz::MatrixShape(*checkpoint, "m.qweight");
  if (!shape) return 0;
  const int64_t n = (*shape)[1];
  const int64_t k = (*shape)[0] * 8;
  if (!fuzz::SmallShape(n, k)) return 0;
  using Z = ZeroPointConvention;
  for (const fuzz::IntMode& mode : {
           fuzz::IntMode{SourceLayout::kGptqV1, Z::kStoredMinusOne, 64, true, true},
           fuzz::IntMode{SourceLayout::kGptqV1, Z::kStoredMinusOne, 64, false, false},
           fuzz::IntMode{SourceLayout::kGptqV1, Z::kStoredMinusOne, 0, true, false},
           fuzz::IntMode{SourceLayout::kGptqV2, Z::kStored, 64, false, true},
       }) {
    fuzz::RunIntLayer(*checkpoint, mode, n, k);
  }
  return 0;
}
