// libFuzzer target: a safetensors file holding one small NVFP4 layer `m` (the ModelOpt tensors
// weight / weight_scale / weight_scale_2 / input_scale and the compressed-tensors weight_packed /
// weight_global_scale / input_global_scale beside them) → for each NVFP4 source layout, W4A16
// and W4A4: allocate (N from `m.weight_scale`, K from it × 16), load, convert, one Forward on a
// fixed input, and the fp64 reference. Nothing may crash; errors are fine.
// seeds: tests/fuzz/seeds/nvfp4_loader/*
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
                              ("quantpath_fuzz_nvfp4_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

void Run(const Checkpoint& checkpoint, SourceLayout layout, bool w4a4, int64_t n, int64_t k) {
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kNVFP4;
  scheme.weight.granularity = Granularity::kTensorGroup;
  scheme.weight.group_size = 16;
  scheme.weight.load.layout = layout;
  ActivationQuant act;
  if (w4a4) {
    TensorQuant in;
    in.dtype = QDType::kNVFP4;
    in.granularity = Granularity::kTensorGroup;
    in.group_size = 16;
    in.dynamic = Dynamic::kLocal;
    scheme.input = in;
    act.mode = ActMode::kDynamicGroup;
    act.dtype = QDType::kNVFP4;
    act.group_size = 16;
  }
  SpecKey key{SpecFamily("nvfp4_block")};
  key.group = 16;
  key.scales = ScaleVariant::kLinear;
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
  if (!checkpoint.ok() || !checkpoint->Has("m.weight_scale")) return 0;
  Result<TensorView> scale = checkpoint->Get("m.weight_scale");
  if (!scale.ok() || scale->info->shape.size() != 2) return 0;
  const int64_t n = scale->info->shape[0];
  const int64_t k = scale->info->shape[1] * 16;
  // Small layers only: the seed is [8, 32], and larger shapes only slow the search down.
  if (n <= 0 || k <= 0 || n > 256 || k > 256) return 0;
  for (SourceLayout layout : {SourceLayout::kModelOptNvfp4, SourceLayout::kCtNvfp4PackQuantized}) {
    for (bool w4a4 : {false, true}) Run(*checkpoint, layout, w4a4, n, k);
  }
  return 0;
}
