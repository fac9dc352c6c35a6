// vpdpbusd with its accumulator in place, for the AVX-512 VNNI kernels on integer codes.
//
// Included only by *_avx512vnni.cc files, which are all compiled with the same flags.
#pragma once

#include "src/base/avx512_intrinsics.h"

namespace quantpath::avx512vnni {

// acc += Σ of 4 products of unsigned w and signed x bytes per lane: GCC 12 moved each accumulator
// through another register around _mm512_dpbusd_epi32 (24 moves per 24 products).
inline __m512i DotBytes(__m512i acc, __m512i w, __m512i x) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(w), "v"(x));
  return acc;
}

}  // namespace quantpath::avx512vnni
