// <immintrin.h> for the AVX-512 translation units. GCC 12's AVX-512 intrinsics start from
// _mm512_undefined_*() and warn that it is uninitialized where they are inlined (GCC PR 105593,
// fixed in 13); the warnings sit in GCC's header, so the header is read without them. Include this
// before anything else that includes <immintrin.h>.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
