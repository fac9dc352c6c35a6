#include "src/pipeline/bit_scan.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "quantpath/cpu_features.h"

namespace quantpath::pipeline_internal {

bool BitScanHasAvx2() {
  static const bool has = [] {
    const Result<CpuFeatures> allowed = ResolveCpuFeatures();
    return allowed.ok() && allowed->Has(CpuFeature::kAvx2);
  }();
  return has;
}

BitScan::BitScan(const FloatBits& bits, int64_t rows, int64_t cols, bool by_column, bool avx2)
    : bits_(bits), rows_(rows), cols_(cols), by_column_(by_column), avx2_(avx2) {
  nonzero.assign(static_cast<size_t>(by_column ? cols : rows), 0);
}

uint64_t BitScan::PieceBytes(uint64_t target) const {
  const uint64_t unit = static_cast<uint64_t>(bits_.width) * (rows_ > 1 ? cols_ : 1);
  return std::max<uint64_t>(unit, target / std::max<uint64_t>(unit, 1) * unit);
}

void BitScan::Add(std::span<const std::byte> piece) {
  const bool special = bits_.special != 0;
  switch (bits_.width) {
    case 1:
      return special ? Scan<uint8_t, true>(piece) : Scan<uint8_t, false>(piece);
    case 2:
      return special ? Scan<uint16_t, true>(piece) : Scan<uint16_t, false>(piece);
    default:
      return special ? Scan<uint32_t, true>(piece) : Scan<uint32_t, false>(piece);
  }
}

template <typename U, bool kSpecial>
void BitScan::Scan(std::span<const std::byte> piece) {
  const auto special = static_cast<U>(bits_.special);
  const auto sign = static_cast<U>(bits_.sign);
  const auto magnitude = static_cast<U>(bits_.magnitude);
  // E8M0 has no zero: every value counts as nonzero.
  const U always = bits_.magnitude == 0 && bits_.sign == 0 ? U{1} : U{0};
  const int64_t count = static_cast<int64_t>(piece.size() / sizeof(U));
  const int64_t rows = rows_ > 1 ? count / cols_ : 1;
  const int64_t cols = rows_ > 1 ? cols_ : count;
  const int64_t first_row = rows_ > 1 ? done_ / cols_ : 0;
  bool special_any = false, negative_any = false;
  const int64_t row_bytes = cols * static_cast<int64_t>(sizeof(U));
  if (avx2_ && !by_column_ && row_bytes % 32 == 0) {
    const RowsFound found =
        ScanRowsAvx2(piece.data(), rows, row_bytes, bits_, nonzero.data() + first_row);
    special_any = found.special;
    negative_any = found.negative;
  } else if (!by_column_ && row_bytes % 8 == 0) {
    // Long rows of whole words: one flat pass of two maxima (sign-magnitude: a value is
    // negative and nonzero iff its bits exceed the sign bit's, and NaN or infinite iff its
    // bits without the sign reach `special`), then each row's words ORed under the magnitude
    // mask (both loops vectorize whatever the row length).
    const U unsigned_bits = static_cast<U>(~sign);
    if constexpr (sizeof(U) == 2) {
      // 16-bit lanes have a signed maximum only (SSE2): the magnitude is a non-negative int16,
      // and v > sign iff v ^ sign is a positive one.
      int16_t max_magnitude = 0, max_flipped = INT16_MIN;
      for (int64_t i = 0; i < count; ++i) {
        U v;
        std::memcpy(&v, piece.data() + 2 * i, 2);
        max_magnitude = std::max(max_magnitude, static_cast<int16_t>(v & unsigned_bits));
        max_flipped = std::max(max_flipped, static_cast<int16_t>(v ^ sign));
      }
      if constexpr (kSpecial) special_any = max_magnitude >= static_cast<int16_t>(special);
      negative_any = sign != 0 && max_flipped > 0;
    } else {
      U max_bits = 0, max_unsigned = 0;
      for (int64_t i = 0; i < count; ++i) {
        U v;
        std::memcpy(&v, piece.data() + i * static_cast<int64_t>(sizeof(U)), sizeof(U));
        max_bits = std::max(max_bits, v);
        max_unsigned = std::max(max_unsigned, static_cast<U>(v & unsigned_bits));
      }
      if constexpr (kSpecial) special_any = max_unsigned >= special;
      negative_any = sign != 0 && max_bits > sign;
    }
    uint64_t mask = 0;
    for (size_t lane = 0; lane < 8 / sizeof(U); ++lane) {
      mask |= static_cast<uint64_t>(magnitude) << (8 * sizeof(U) * lane);
    }
    for (int64_t r = 0; r < rows; ++r) {
      uint64_t bits = always;
      for (int64_t w = 0; w < row_bytes / 8; ++w) {
        uint64_t word;
        std::memcpy(&word, piece.data() + r * row_bytes + 8 * w, 8);
        bits |= word & mask;
      }
      nonzero[first_row + r] |= static_cast<uint8_t>(bits != 0);
    }
  } else {
    // Branch-free, per-row accumulators: the loops vectorize.
    for (int64_t r = 0; r < rows; ++r) {
      const std::byte* row = piece.data() + r * row_bytes;
      U row_bits = always, special_bits = 0, negative_bits = 0;
      for (int64_t c = 0; c < cols; ++c) {
        U v;
        std::memcpy(&v, row + c * static_cast<int64_t>(sizeof(U)), sizeof(U));
        if constexpr (kSpecial) special_bits |= static_cast<U>((v & special) == special);
        negative_bits |=
            static_cast<U>(static_cast<U>((v & sign) != 0) & static_cast<U>((v & magnitude) != 0));
        row_bits |= v & magnitude;
        if (by_column_) nonzero[c] |= static_cast<uint8_t>(((v & magnitude) | always) != 0);
      }
      special_any = special_any || special_bits != 0;
      negative_any = negative_any || negative_bits != 0;
      if (!by_column_) nonzero[first_row + r] |= static_cast<uint8_t>(row_bits != 0);
    }
  }
  // The first of each, where this piece has one and no earlier piece had.
  const bool want_special = special_any && first_special < 0;
  const bool want_negative = negative_any && first_negative < 0;
  for (int64_t i = 0; (want_special || want_negative) && i < count; ++i) {
    U v;
    std::memcpy(&v, piece.data() + i * static_cast<int64_t>(sizeof(U)), sizeof(U));
    if (want_special && first_special < 0 && (v & special) == special) {
      first_special = done_ + i;
      special_code = v;
    }
    if (want_negative && first_negative < 0 && (v & sign) != 0 && (v & magnitude) != 0) {
      first_negative = done_ + i;
      negative_code = v;
    }
    if ((!want_special || first_special >= 0) && (!want_negative || first_negative >= 0)) break;
  }
  done_ += count;
}

}  // namespace quantpath::pipeline_internal
