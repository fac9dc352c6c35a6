// 4-bit integer weights (int_family.h) in the rows-in-lanes prepack (nibble_lanes_avx512vnni.h),
// for the AVX-512 kernels on them: the prepack of a layer, and its scales widened to fp32.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

#include <cstdint>
#include <memory>

#include "quantpath/kernels.h"
#include "src/kernels/cpu/int_codes.h"
#include "src/kernels/cpu/nibble_lanes_avx512vnni.h"

namespace quantpath::avx512vnni {

template <bool kZero>
LanePack PackInt4Lanes(const LinearParams& params) {
  const auto w = cpu::IntCodes<CpuLevel::kAvx512Vnni, 4, kZero>::Of(params);
  const NibbleSource source{
      w.codes, w.row_bytes, w.scales, w.scale_stride, w.scale_dtype == QDType::kFP32 ? 4 : 2,
      w.group};
  return PackNibbleLanes<kZero>(source, params.rows, params.cols,
                                [&](int64_t row, int64_t g) { return w.Zero(row, g); });
}

// The prepack of `params` (with zero points or without), kept with them for `kernel`.
inline const LanePack& PackedInt4Lanes(const LinearKernel* kernel, const LinearParams& params) {
  return params.packs.Get<LanePack>(kernel, [&] {
    return std::make_unique<LanePack>(params.tensor(Slot::kWeightZero).empty()
                                          ? PackInt4Lanes<false>(params)
                                          : PackInt4Lanes<true>(params));
  });
}

// 16 rows' scales stored at `at` as `dtype` (fp16, bf16 or fp32), widened to fp32.
inline __m512 WidenScales(const std::byte* at, QDType dtype) {
  if (dtype == QDType::kFP32) return _mm512_loadu_ps(at);
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
  if (dtype == QDType::kFP16) return _mm512_cvtph_ps(bits);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

}  // namespace quantpath::avx512vnni
