// libFuzzer target: a safetensors file holding one small ModelSlim int4 layer `m` (weight I8,
// weight_scale, weight_offset) → for both 4-bit packings and both activation types (int4, int8
// dynamic per token), allocate (shape from the `m.weight` header: [N, K] one code per byte, or
// [N / 2, K] two), load, convert, one Forward on a fixed input, and the fp64 reference. Nothing
// may crash; errors are fine.
// seeds: tests/fuzz/seeds/w4a_loader/*
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
    std::filesystem::path d =
        std::filesystem::temp_directory_path() / ("quantpath_fuzz_w4a_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

void Run(const Checkpoint& checkpoint, bool pairs, QDType activations, int64_t n, int64_t k) {
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
  const int64_t rows = weight->info->shape[0];
  const int64_t k = weight->info->shape[1];
  // Small layers only: the seeds are [8, 16] and [4, 16].
  if (rows <= 0 || k <= 0 || rows > 256 || k > 256) return 0;
  for (bool pairs : {false, true}) {
    for (QDType activations : {QDType::kINT4, QDType::kINT8}) {
      // Each packing reads the shape it expects, and the other one's, which must be refused.
      Run(*checkpoint, pairs, activations, rows, k);
      Run(*checkpoint, pairs, activations, 2 * rows, k);
    }
  }
  return 0;
}
