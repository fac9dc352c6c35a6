// The linear kernel vLLM 0.34 picks on a CPU (model_executor/kernels/linear/__init__.py, the
// platform's kernel lists in order, each kernel's is_supported and can_implement), as recorded
// with bfloat16 layers of 4096 × 4096 (tests/data/oracle/releases/vllm-0.34.0/platforms/): the
// kernels' checks on the output dtype and on N are not modelled. The CPU
// is an x86 build's: the oneDNN and fp8 ops present, AMX tiles with `cpu-amx`, never AMX-FP8.
#include <optional>
#include <string>

#include "fmt/format.h"
#include "quantpath/importers.h"

namespace quantpath {
namespace {

constexpr std::string_view kNoKernel =
    "ValueError: Failed to find a kernel that can implement the {} linear layer. Reasons: \n";
constexpr std::string_view kNoAmx = "requires AMX tile support (Sapphire Rapids or newer).";

EngineKernel Kernel(std::string_view name) { return {std::string(name), ""}; }
EngineKernel NoKernel(std::string_view layer, std::string_view reasons = "") {
  return {"", fmt::format(fmt::runtime(kNoKernel), layer) + std::string(reasons)};
}

bool IsFp8(const TensorQuant& t) { return t.dtype == QDType::kFP8E4M3; }

// Block-scaled fp8 (CPUFp8W8A8BlockScaledMMKernel, then CPUFp8BlockScaledMMKernel: W8A16 on AMX).
EngineKernel Fp8Block(const TensorQuant& w, bool amx) {
  if (!amx) {
    return NoKernel("ScaledMM", fmt::format("CPUFp8W8A8BlockScaledMMKernel {0}.\nCPUFp8BlockScaled"
                                            "MMKernel {0}.",
                                            kNoAmx));
  }
  const std::string w8a8 =
      "CPUFp8W8A8BlockScaledMMKernel requires native AMX-FP8 hardware; falls back to "
      "CPUFp8BlockScaledMMKernel (W8A16) otherwise..\nCPUFp8BlockScaledMMKernel ";
  const int64_t block_n = (*w.block_shape)[0], block_k = (*w.block_shape)[1];
  if (block_k != 128) {
    return NoKernel("ScaledMM", fmt::format("{}CPU FP8 kernel requires K-dimension block size of "
                                            "128, got {}..",
                                            w8a8, block_k));
  }
  if (block_n <= 0 || block_n % 32 != 0) {
    return NoKernel("ScaledMM", fmt::format("{}CPU FP8 kernel requires N-dimension block size to "
                                            "be a positive multiple of 32, got {}..",
                                            w8a8, block_n));
  }
  return Kernel("CPUFp8BlockScaledMMKernel");
}

std::optional<EngineKernel> VllmCpuKernel(const QuantPlan& plan, bool amx, const QuantScheme& s) {
  const TensorQuant& w = s.weight;
  const std::optional<TensorQuant>& x = s.input;
  const bool int_weight = !Info(w.dtype).is_float && w.dtype != QDType::kNF4;
  if (int_weight && !x) return Kernel("CPUWNA16LinearKernel");
  if (w.dtype == QDType::kINT8 && x && x->dtype == QDType::kINT8) {
    return Kernel("CPUInt8ScaledMMLinearKernel");
  }
  if (IsFp8(w) && !x) return NoKernel("ScaledMM");  // no fp8 weight-only kernel on a CPU
  if (IsFp8(w) && x && IsFp8(*x)) {
    switch (w.granularity) {
      case Granularity::kBlock:
        return Fp8Block(w, amx);
      case Granularity::kPerChannel:
        return Kernel("ChannelWiseTorchFP8ScaledMMLinearKernel");
      case Granularity::kPerTensor:
        return Kernel(amx ? "CPUFp8PerTensorScaledMMLinearKernel"
                          : "PerTensorTorchFP8ScaledMMLinearKernel");
      default:
        return std::nullopt;
    }
  }
  if (w.dtype == QDType::kNVFP4) {
    // ModelOpt's W4A16 method forces the Marlin kernel, which a CPU lacks.
    if (!x && plan.importer == "modelopt") {
      return EngineKernel{"",
                          "ValueError: Forced NVFP4 kernel MarlinNvFp4LinearKernel is not "
                          "supported: Marlin FP4 not available"};
    }
    if (x) return NoKernel("NVFP4");
  }
  if (w.dtype == QDType::kMXFP8) return NoKernel("MXFP8");
  if (w.dtype == QDType::kMXFP4) return NoKernel("MXFP4");  // W4A16 and W4A4 alike
  return std::nullopt;
}

}  // namespace

std::optional<EngineKernel> LinearKernelFor(const QuantPlan& plan, Platform platform,
                                            const QuantScheme& scheme) {
  const bool cpu = platform == Platform::kCpu || platform == Platform::kCpuAmx;
  if (!cpu || !Since(plan.dialect, DialectId::kVllm034)) return std::nullopt;
  return VllmCpuKernel(plan, platform == Platform::kCpuAmx, scheme);
}

}  // namespace quantpath
