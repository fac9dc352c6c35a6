// The shared part of the one-Source kernels (one_source_kernel.h).
#include "src/kernels/cpu/one_source_kernel.h"

namespace quantpath::cpu {

OneSourceKernel::OneSourceKernel(const Traits& traits, ServesFn serves, TakesFn takes)
    : traits_(traits), serves_(serves), takes_(takes) {}

std::string_view OneSourceKernel::name() const { return traits_.name; }
CpuFeatures OneSourceKernel::features() const { return CpuLevelRequires(traits_.level); }
int OneSourceKernel::priority() const { return traits_.priority; }
DotUnit OneSourceKernel::unit() const { return traits_.unit; }
bool OneSourceKernel::Serves(const SpecKey& key, const DeviceCaps& device) const {
  return serves_(key, device);
}
bool OneSourceKernel::CanHandle(const KernelProbe& probe) const {
  return serves_(probe.spec, probe.device) && takes_(probe);
}

}  // namespace quantpath::cpu
