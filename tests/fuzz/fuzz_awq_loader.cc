// libFuzzer target: a safetensors file holding one AWQ gemm int4 layer `m` (qweight [K, N/8] in
// nibble order 0,2,4,6,1,3,5,7, qzeros, scales) → the AWQ loader with zero points, group 64 and
// per channel, and without them: allocate (shape from the `m.qweight` header), load, convert,
// one Forward, the fp64 reference. Nothing may crash; errors are fine.
// seeds: tests/fuzz/seeds/awq_loader/*
#include "tests/fuzz/loader_fuzz.h"

using namespace quantpath;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<Checkpoint> checkpoint = fuzz::OpenInput("awq", data, size);
  if (!checkpoint.ok()) return 0;
  const std::optional<std::array<int64_t, 2>> shape = fuzz::MatrixShape(*checkpoint, "m.qweight");
  if (!shape) return 0;
  const int64_t n = (*shape)[1] * 8;
  const int64_t k = (*shape)[0];
  if (!fuzz::SmallShape(n, k)) return 0;
  using Z = ZeroPointConvention;
  for (const fuzz::IntMode& mode : {
           fuzz::IntMode{SourceLayout::kAwqGemm, Z::kStored, 64, false, false},
           fuzz::IntMode{SourceLayout::kAwqGemm, Z::kStored, 0, false, false},
           fuzz::IntMode{SourceLayout::kAwqGemm, Z::kNone, 64, true, false},
       }) {
    fuzz::RunIntLayer(*checkpoint, mode, n, k);
  }
  return 0;
}
