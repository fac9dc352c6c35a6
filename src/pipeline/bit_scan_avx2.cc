// BitScan's pass over whole rows with 32-byte vectors: per 32 bytes two unsigned maxima (of the
// bits without the sign, and of the bits) and an OR under the magnitude mask, in one pass.
#include <immintrin.h>

#include <algorithm>

#include "src/pipeline/bit_scan.h"

namespace quantpath::pipeline_internal {
namespace {

template <typename U>
__m256i Broadcast(uint32_t value) {
  if constexpr (sizeof(U) == 1) return _mm256_set1_epi8(static_cast<char>(value));
  if constexpr (sizeof(U) == 2) return _mm256_set1_epi16(static_cast<short>(value));
  if constexpr (sizeof(U) == 4) return _mm256_set1_epi32(static_cast<int>(value));
}

template <typename U>
__m256i MaxUnsigned(__m256i a, __m256i b) {
  if constexpr (sizeof(U) == 1) return _mm256_max_epu8(a, b);
  if constexpr (sizeof(U) == 2) return _mm256_max_epu16(a, b);
  if constexpr (sizeof(U) == 4) return _mm256_max_epu32(a, b);
}

template <typename U>
U LargestLane(__m256i v) {
  alignas(32) U lanes[32 / sizeof(U)];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  return *std::max_element(std::begin(lanes), std::end(lanes));
}

template <typename U>
RowsFound ScanRows(const std::byte* data, int64_t rows, int64_t row_bytes, const FloatBits& bits,
                   uint8_t* nonzero) {
  const __m256i unsigned_bits = Broadcast<U>(~bits.sign);
  const __m256i magnitude = Broadcast<U>(bits.magnitude);
  // E8M0 has no zero: every value counts as nonzero.
  const uint8_t always = bits.magnitude == 0 && bits.sign == 0 ? 1 : 0;
  __m256i max_unsigned = _mm256_setzero_si256(), max_bits = _mm256_setzero_si256();
  for (int64_t r = 0; r < rows; ++r) {
    const std::byte* row = data + r * row_bytes;
    // The row's own accumulators: GCC keeps these in registers, the function's in memory.
    __m256i row_unsigned = _mm256_setzero_si256(), row_bits = _mm256_setzero_si256();
    __m256i any = _mm256_setzero_si256();
    for (int64_t at = 0; at < row_bytes; at += 32) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + at));
      row_unsigned = MaxUnsigned<U>(row_unsigned, _mm256_and_si256(v, unsigned_bits));
      row_bits = MaxUnsigned<U>(row_bits, v);
      any = _mm256_or_si256(any, _mm256_and_si256(v, magnitude));
    }
    max_unsigned = MaxUnsigned<U>(max_unsigned, row_unsigned);
    max_bits = MaxUnsigned<U>(max_bits, row_bits);
    nonzero[r] |= static_cast<uint8_t>(always | (_mm256_testz_si256(any, any) == 0));
  }
  // Sign-magnitude: a value is negative and nonzero iff its bits exceed the sign bit's, and NaN
  // or infinite iff its bits without the sign reach `special`.
  RowsFound found;
  found.special = bits.special != 0 && LargestLane<U>(max_unsigned) >= bits.special;
  found.negative = bits.sign != 0 && LargestLane<U>(max_bits) > bits.sign;
  return found;
}

}  // namespace

RowsFound ScanRowsAvx2(const std::byte* data, int64_t rows, int64_t row_bytes,
                       const FloatBits& bits, uint8_t* nonzero) {
  switch (bits.width) {
    case 1:
      return ScanRows<uint8_t>(data, rows, row_bytes, bits, nonzero);
    case 2:
      return ScanRows<uint16_t>(data, rows, row_bytes, bits, nonzero);
    default:
      return ScanRows<uint32_t>(data, rows, row_bytes, bits, nonzero);
  }
}

}  // namespace quantpath::pipeline_internal
