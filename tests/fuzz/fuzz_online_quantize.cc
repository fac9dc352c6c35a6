// libFuzzer target: a safetensors file holding one high-precision weight `m.weight` (BF16, F16 or
// F32) → quantized at load into every `--online` target that is not refused (fp8 per tensor, per
// channel and 128×128 block, int8 per channel, NVFP4, MXFP4), whole and as rank 1 of a column
// and a row split of 2: allocate, quantize and load, convert, one Forward on a fixed input, and
// the fp64 reference. The weight's values (NaN, infinities, zeros, huge and tiny magnitudes) and
// the header are what the mutations reach. Nothing may crash; errors are fine.
// seeds: tests/fuzz/seeds/online_quantize/*
#include <cstddef>
#include <cstdint>

#include "quantpath/materialize.h"
#include "tests/fuzz/loader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace quantpath;
  Result<Checkpoint> checkpoint = fuzz::OpenInput("online", data, size);
  if (!checkpoint.ok()) return 0;
  const auto shape = fuzz::MatrixShape(*checkpoint, "m.weight");
  if (!shape || !fuzz::SmallShape((*shape)[0], (*shape)[1])) return 0;
  for (const OnlineTarget& target : OnlineTargets()) {
    if (!target.refusal.empty()) continue;
    Result<SpecKey> key = KeyFor(target.scheme, DeviceCaps{});
    Result<ActivationQuant> act = ActivationQuantFor(target.scheme);
    if (!key.ok() || !act.ok()) continue;
    const auto run = [&](Parallel parallel, int tp_size, int tp_rank) {
      fuzz::RunSpec(*checkpoint, target.scheme,
                    MakeSpecQuantizingAtLoad(*key, *act, target.scheme.weight.load), (*shape)[0],
                    (*shape)[1], parallel, tp_size, tp_rank);
    };
    run(Parallel::kReplicated, 1, 0);
    run(Parallel::kColumn, 2, 1);
    run(Parallel::kRow, 2, 1);
  }
  return 0;
}
