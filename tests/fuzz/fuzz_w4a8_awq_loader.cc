// libFuzzer target: a safetensors file holding one small ModelOpt W4A8_AWQ layer `m` (weight,
// weight_scale, weight_scale_2, input_scale and an optional pre_quant_scale) → allocate
// int4_group_128_prescaled (N from `m.weight_scale`, K from `m.weight`), load, convert, one
// Forward on a fixed input with static fp8 activations, and the fp64 reference. Nothing may
// crash; errors are fine.
// seeds: tests/fuzz/seeds/w4a8_awq_loader/*
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/loader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace quantpath;
  Result<Checkpoint> checkpoint = fuzz::OpenInput("w4a8_awq", data, size);
  if (!checkpoint.ok()) return 0;
  const auto scales = fuzz::MatrixShape(*checkpoint, "m.weight_scale");
  const auto weight = fuzz::MatrixShape(*checkpoint, "m.weight");
  if (!scales || !weight) return 0;
  const int64_t n = (*scales)[0];
  const int64_t k = (*weight)[1];
  if (!fuzz::SmallShape(n, k)) return 0;
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kINT4;
  scheme.weight.granularity = Granularity::kGroup;
  scheme.weight.group_size = 128;
  scheme.weight.load.layout = SourceLayout::kModelOptW4A8Awq;
  TensorQuant in;
  in.dtype = QDType::kFP8E4M3;
  in.granularity = Granularity::kPerTensor;
  scheme.input = in;
  ActivationQuant act;
  act.mode = ActMode::kStaticPerTensor;
  act.dtype = QDType::kFP8E4M3;
  SpecKey key{SpecFamily("int_group_prescaled")};
  key.bits = 4;
  key.group = 128;
  fuzz::RunLayer(*checkpoint, scheme, key, act, n, k);
  return 0;
}
