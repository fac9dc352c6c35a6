// libFuzzer target: a safetensors file holding one small W8A8 int8 layer `m` (weight I8 [N, K]
// and the compressed-tensors and ModelSlim tensors beside it) → for each int8 source layout and
// activation mode, allocate (shape from the `m.weight` header), load, convert, one Forward on a
// fixed input, and the fp64 reference. Nothing may crash; errors are fine.
// seeds: tests/fuzz/seeds/int8_loader/*
#include "tests/fuzz/loader_fuzz.h"

namespace {

using namespace quantpath;

struct Mode {
  SourceLayout layout;
  ActMode act;
  bool symmetric;
};

void Run(const Checkpoint& checkpoint, const Mode& mode, int64_t n, int64_t k) {
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kINT8;
  scheme.weight.granularity = Granularity::kPerChannel;
  scheme.weight.load.layout = mode.layout;
  TensorQuant in;
  in.dtype = QDType::kINT8;
  in.granularity =
      mode.act == ActMode::kStaticPerTensor ? Granularity::kPerTensor : Granularity::kPerToken;
  in.dynamic = mode.act == ActMode::kStaticPerTensor ? Dynamic::kStatic : Dynamic::kDynamic;
  in.symmetric = mode.symmetric;
  scheme.input = in;
  ActivationQuant act;
  act.mode = mode.act;
  act.dtype = QDType::kINT8;
  act.symmetric = mode.symmetric;
  SpecKey key{SpecFamily("int_channel")};
  key.bits = 8;
  fuzz::RunLayer(checkpoint, scheme, key, act, n, k);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<Checkpoint> checkpoint = fuzz::OpenInput("int8", data, size);
  if (!checkpoint.ok()) return 0;
  const std::optional<std::array<int64_t, 2>> shape = fuzz::MatrixShape(*checkpoint, "m.weight");
  if (!shape) return 0;
  const auto [n, k] = *shape;
  // Small layers only: the seed is [8, 16], and larger shapes only slow the search down.
  if (n <= 0 || k <= 0 || n > 256 || k > 256) return 0;
  for (const Mode& mode : {Mode{SourceLayout::kCtNaiveQuantized, ActMode::kDynamicPerToken, true},
                           Mode{SourceLayout::kCtNaiveQuantized, ActMode::kDynamicPerToken, false},
                           Mode{SourceLayout::kCtNaiveQuantized, ActMode::kStaticPerTensor, true},
                           Mode{SourceLayout::kCtNaiveQuantized, ActMode::kStaticPerTensor, false},
                           Mode{SourceLayout::kModelSlim, ActMode::kDynamicPerToken, true},
                           Mode{SourceLayout::kModelSlim, ActMode::kStaticPerTensor, false}}) {
    Run(*checkpoint, mode, n, k);
  }
  return 0;
}
