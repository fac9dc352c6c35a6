// The problems each spec's CPU kernels take (cpu_problems.h).
#include "src/kernels/cpu_problems.h"

#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/bf16_family.h"
#include "src/specs/fp8_family.h"
#include "src/specs/int_family.h"
#include "src/specs/mx_family.h"
#include "src/specs/nvfp4_family.h"

namespace quantpath::cpu_problems {

bool ServesBf16(const SpecKey& key, const DeviceCaps& device) {
  return key.family == kBf16Family && device.is_cpu();
}

bool TakesBf16(const KernelProbe& probe) {
  return ServesBf16(probe.spec, probe.device) && probe.act.mode == ActMode::kNone &&
         reference::CanHandleIo(probe);
}

bool ServesFp8Row(const SpecKey& key, const DeviceCaps& device) {
  return (key.family == kFp8PerTensorFamily || key.family == kFp8PerChannelFamily) &&
         device.is_cpu();
}

bool TakesFp8Row(const KernelProbe& probe) {
  return ServesFp8Row(probe.spec, probe.device) && Fp8KernelTakes(probe.act) &&
         reference::CanHandleIo(probe);
}

bool ServesFp8Block(const SpecKey& key, const DeviceCaps& device) {
  return key.family == kFp8BlockFamily && device.is_cpu();
}

bool TakesFp8Block(const KernelProbe& probe) {
  return ServesFp8Block(probe.spec, probe.device) && probe.spec.block[0] > 0 &&
         probe.spec.block[1] > 0 && Fp8KernelTakes(probe.act) && reference::CanHandleIo(probe);
}

bool ServesW8a8Int8(const SpecKey& key, const DeviceCaps& device) {
  return (key.family == kIntChannelFamily || key.family == kIntTensorFamily) && key.bits == 8 &&
         !key.zero_point && device.is_cpu();
}

bool TakesW8a8Int8(const KernelProbe& probe) {
  const ActivationQuant& act = probe.act;
  const bool mode = act.mode == ActMode::kDynamicPerToken || act.mode == ActMode::kStaticPerTensor;
  return ServesW8a8Int8(probe.spec, probe.device) && act.dtype == QDType::kINT8 && mode &&
         reference::CanHandleIo(probe);
}

bool ServesW4a(const SpecKey& key, const DeviceCaps& device) {
  return (key.family == kIntChannelFamily || key.family == kIntGroupFamily) && key.bits == 4 &&
         !key.act_order && device.is_cpu();
}

bool TakesW4a(const KernelProbe& probe) {
  const ActivationQuant& act = probe.act;
  return ServesW4a(probe.spec, probe.device) &&
         (probe.spec.family != kIntGroupFamily || probe.spec.group > 0) &&
         (act.SymmetricPerToken(QDType::kINT4) || act.SymmetricPerToken(QDType::kINT8)) &&
         reference::CanHandleIo(probe);
}

bool TakesNvfp4(const KernelProbe& probe) {
  const ActivationQuant& act = probe.act;
  const bool act_ok =
      act.mode == ActMode::kNone ||
      (act.mode == ActMode::kDynamicGroup && act.dtype == QDType::kNVFP4 && act.group_size > 0);
  // The dtypes and shape as the host, which runs the reference for either device, checks them.
  KernelProbe host = probe;
  host.device = DeviceCaps{};
  return probe.spec.family == kNvfp4Family && probe.spec.group > 0 && act_ok &&
         reference::CanHandleIo(host);
}

bool TakesMx(const KernelProbe& probe) {
  const ActivationQuant& act = probe.act;
  const bool act_ok =
      act.mode == ActMode::kNone || (act.mode == ActMode::kDynamicGroup && act.group_size > 0 &&
                                     (act.dtype == QDType::kMXFP4 || act.dtype == QDType::kMXFP8));
  return IsMxFamily(probe.spec.family) && probe.spec.group > 0 && act_ok &&
         reference::CanHandleIo(probe);
}

bool TakesNvfp4Int8(const KernelProbe& probe) {
  return probe.spec.family == kNvfp4Family && probe.spec.scales == ScaleVariant::kLinear &&
         probe.spec.group > 0 && probe.act.SymmetricPerToken(QDType::kINT8) &&
         reference::CanHandleIo(probe);
}

bool TakesMxInt8(const KernelProbe& probe) {
  return probe.spec.family == kMxfp4Family && probe.spec.group > 0 &&
         probe.act.SymmetricPerToken(QDType::kINT8) && reference::CanHandleIo(probe);
}

}  // namespace quantpath::cpu_problems
