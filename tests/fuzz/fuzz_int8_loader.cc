// libFuzzer target: a safetensors file holding one small W8A8 int8 layer `m` (weight I8 [N, K]
// and the compressed-tensors and ModelSlim tensors beside it) → for each int8 source layout and
// activation mode, allocate (shape from the `m.weight` header), load, convert, one Forward on a
// fixed input, and the fp64 reference. Nothing may crash; errors are fine.
// seeds: tests/fuzz/seeds/int8_loader/*
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/linear.h"
#include "quantpath/specs.h"

namespace {

using namespace quantpath;

std::filesystem::path Folder() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() /
                              ("quantpath_fuzz_int8_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

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
  Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(key, act, scheme.weight.load);
  if (!spec.ok()) return;
  AllocationRequest request;
  request.layer = "m";
  request.shape = {n, k};
  Result<std::shared_ptr<Dispatcher>> dispatcher = Dispatcher::Default();
  if (!dispatcher.ok()) return;
  Result<Linear> linear = LoadLinear(std::move(*spec), request, checkpoint, {"m"}, *dispatcher);
  (void)DequantizeReference(checkpoint, scheme, "m", {"m"}, false);
  if (!linear.ok()) return;
  std::vector<float> x(static_cast<size_t>(2 * k));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  (void)linear->Forward(x, 2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path dir = Folder();
  {
    std::ofstream out(dir / "model.safetensors", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  Result<Checkpoint> checkpoint = Checkpoint::Open(dir);
  if (!checkpoint.ok() || !checkpoint->Has("m.weight")) return 0;
  Result<TensorView> weight = checkpoint->Get("m.weight");
  if (!weight.ok() || weight->info->shape.size() != 2) return 0;
  const int64_t n = weight->info->shape[0];
  const int64_t k = weight->info->shape[1];
  // Small layers only: the seed is [8, 16], and larger shapes only slow the search down.
  if (n <= 0 || k <= 0 || n > 256 || k > 256) return 0;
  for (const Mode& mode : {Mode{SourceLayout::kCtNaiveQuantized, ActMode::kDynamicPerToken, true},
                           Mode{SourceLayout::kCtNaiveQuantized, ActMode::kStaticPerTensor, true},
                           Mode{SourceLayout::kCtNaiveQuantized, ActMode::kStaticPerTensor, false},
                           Mode{SourceLayout::kModelSlim, ActMode::kDynamicPerToken, true},
                           Mode{SourceLayout::kModelSlim, ActMode::kStaticPerTensor, false}}) {
    Run(*checkpoint, mode, n, k);
  }
  return 0;
}
