// libFuzzer target: a safetensors file holding one small MX layer `m` (the compressed-tensors
// mxfp4 weight_packed, or an mxfp8 / ModelSlim weight, with weight_scale) → for each MX family and
// source layout, weight-only and with MX activations: allocate (N from `m.weight_scale`, K from
// it × 32), load, convert, one Forward on a fixed input, and the fp64 reference. Nothing may
// crash; errors are fine.
// seeds: tests/fuzz/seeds/mxfp_loader/*
#include <cstddef>
#include <cstdint>

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<Checkpoint> checkpoint = fuzz::OpenInput("mxfp", data, size);
  if (!checkpoint.ok()) return 0;
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
