// The kernel registry: kernel files register themselves before main() (KernelRegistrar), and
// support queries read it.
#include "quantpath/kernels.h"

namespace quantpath {

KernelRegistry& KernelRegistry::Global() {
  static KernelRegistry* registry = new KernelRegistry();  // never destroyed: used at exit
  return *registry;
}

void KernelRegistry::Register(std::unique_ptr<LinearKernel> kernel) {
  std::lock_guard<std::mutex> lock(mu_);
  kernels_.push_back(std::move(kernel));
}

std::vector<const LinearKernel*> KernelRegistry::kernels() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const LinearKernel*> out;
  for (const auto& kernel : kernels_) out.push_back(kernel.get());
  return out;
}

std::vector<std::string> KernelRegistry::KernelsFor(const SpecKey& key,
                                                    const DeviceCaps& device) const {
  std::vector<std::string> names;
  for (const LinearKernel* kernel : kernels()) {
    if (kernel->Serves(key, device)) names.emplace_back(kernel->name());
  }
  return names;
}

bool KernelRegistry::Supports(const SpecKey& key, const DeviceCaps& device) const {
  return !KernelsFor(key, device).empty();
}

bool KernelRegistry::HasFastKernel(const SpecKey& key, const ActivationQuant& act,
                                   const DeviceCaps& device) const {
  constexpr int64_t kDim = 4096;
  const KernelProbe probe{key, 1, kDim, kDim, QDType::kBF16, QDType::kBF16, device, act};
  for (const LinearKernel* kernel : kernels()) {
    if (kernel->priority() > kReferencePriority && kernel->Serves(key, device) &&
        kernel->CanHandle(probe)) {
      return true;
    }
  }
  return false;
}

KernelRegistrar::KernelRegistrar(std::unique_ptr<LinearKernel> kernel) {
  KernelRegistry::Global().Register(std::move(kernel));
}

}  // namespace quantpath
