// bitsandbytes' 4-bit maps (bnb_family.h: kNf4Map, kFp4Map) as the AVX-512 kernels look codes up
// in them: bf16 bits (rounded to nearest even) for vpermw, which reads 5 index bits (so the 16
// values twice), and the fp32 values for vpermps.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "src/specs/bnb_family.h"

namespace quantpath::avx512vnni {

// A 4-bit map as the Loads read it: bf16 bits (rounded to nearest even) at index i < 32 for code
// i & 15, and fp32 values at index i < 16.
struct Bnb4Tables {
  alignas(64) uint16_t bf16[32] = {};
  alignas(64) float fp32[16] = {};
  constexpr explicit Bnb4Tables(const std::array<uint32_t, 16>& map) {
    for (int i = 0; i < 32; ++i) {
      const uint32_t bits = map[i & 15];
      bf16[i] = static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
    }
    for (int i = 0; i < 16; ++i) fp32[i] = std::bit_cast<float>(map[i]);
  }
};
inline constexpr Bnb4Tables kNf4Tables(kNf4Map);
inline constexpr Bnb4Tables kFp4Tables(kFp4Map);

}  // namespace quantpath::avx512vnni
