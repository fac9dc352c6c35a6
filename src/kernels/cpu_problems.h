// The problems each spec's CPU kernels take, shared by its reference kernel and its fast ones, so
// that a fast kernel never serves what its oracle does not. Defined out of line (cpu_problems.cc):
// the per-level translation units include this, and an inline copy compiled for AVX2 could stand in
// for the portable one.
#pragma once

#include "quantpath/kernels.h"

namespace quantpath::cpu_problems {

bool ServesBf16(const SpecKey& key, const DeviceCaps& device);
// bf16 weights of the params dtype, X in high precision, fp32 / bf16 in and out.
bool TakesBf16(const KernelProbe& probe);

bool ServesFp8Row(const SpecKey& key, const DeviceCaps& device);  // per tensor and per channel
// Fp8KernelTakes' activation modes, fp32 / bf16 in and out.
bool TakesFp8Row(const KernelProbe& probe);

bool ServesFp8Block(const SpecKey& key, const DeviceCaps& device);
// As TakesFp8Row, with a block of positive sides.
bool TakesFp8Block(const KernelProbe& probe);

// W8A8 int8: int8_channel / int8_tensor without a weight zero point.
bool ServesW8a8Int8(const SpecKey& key, const DeviceCaps& device);
// int8 activations, dynamic per token or static per tensor, fp32 / bf16 in and out.
bool TakesW8a8Int8(const KernelProbe& probe);

// The mixed int4 specs (w4a_family.h): int4_channel[_zp] and int4_group_<g>[_zp] without
// act-order.
bool ServesW4a(const SpecKey& key, const DeviceCaps& device);
// int4 or int8 activations, dynamic per token and symmetric, a positive group, fp32 / bf16 in and
// out.
bool TakesW4a(const KernelProbe& probe);

// NVFP4 (either scale layout): blocks of a positive size, weight-only or W4A4 (NVFP4 activations
// per group), fp32 / bf16 in and out as the host takes them.
bool TakesNvfp4(const KernelProbe& probe);

// MXFP4 / MXFP8: blocks of a positive size, weight-only or MX activations per group, fp32 / bf16
// in and out.
bool TakesMx(const KernelProbe& probe);

// The 4-bit float specs with int8 activations, dynamic per token and symmetric
// (--int8-activations): NVFP4 linear and MXFP4 blocks of a positive size, fp32 / bf16 in and out.
bool TakesNvfp4Int8(const KernelProbe& probe);
bool TakesMxInt8(const KernelProbe& probe);

}  // namespace quantpath::cpu_problems
