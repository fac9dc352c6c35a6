// CPU instruction-set levels: detection, names, and the QUANTPATH_CPU_ISA override.
#include <cstdlib>

#include "fmt/format.h"
#include "quantpath/kernels.h"

namespace quantpath {
namespace {

constexpr std::string_view kIsaNames[] = {"reference", "avx2", "avx512", "avx512vnni"};

}  // namespace

std::string_view IsaName(Isa isa) { return kIsaNames[static_cast<size_t>(isa)]; }

std::optional<Isa> ParseIsa(std::string_view name) {
  for (size_t i = 0; i < std::size(kIsaNames); ++i) {
    if (kIsaNames[i] == name) return static_cast<Isa>(i);
  }
  return std::nullopt;
}

Isa DetectCpuIsa() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq");
  const bool vnni =
      avx512 && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16");
  if (vnni) return Isa::kAvx512Vnni;
  if (avx512) return Isa::kAvx512;
  if (avx2) return Isa::kAvx2;
#endif
  return Isa::kReference;
}

Result<Isa> ResolveIsa(std::optional<std::string_view> forced) {
  const Isa detected = DetectCpuIsa();
  std::string source = "the forced ISA";
  if (!forced) {
    const char* env = std::getenv(kCpuIsaEnv);
    if (env == nullptr || *env == '\0') return detected;
    forced = env;
    source = kCpuIsaEnv;
  }
  std::optional<Isa> isa = ParseIsa(*forced);
  if (!isa) {
    return InvalidInput(
        fmt::format("{} = '{}' is not an ISA (expected reference, avx2, avx512 "
                    "or avx512vnni)",
                    source, *forced));
  }
  if (*isa > detected) {
    return InvalidInput(fmt::format("{} = '{}', but this CPU supports at most {}", source, *forced,
                                    IsaName(detected)));
  }
  return *isa;
}

}  // namespace quantpath
