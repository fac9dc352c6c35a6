// Internal to src/pipeline: `check`'s scan of a float (or int8) tensor's bits, piece by piece as
// it is read, without decoding a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace quantpath::pipeline_internal {

// A float dtype as bits: NaN or infinity where (v & special) == special (E4M3FN's only NaN is
// S.1111.111; E8M0's 0xFF), the sign bit, and the magnitude bits (all zero: the value is zero;
// E8M0 has no zero, integer codes no NaN).
struct FloatBits {
  int width = 0;  // bytes
  uint32_t special = 0;
  uint32_t sign = 0;
  uint32_t magnitude = 0;
};

// What one pass over whole rows found: any NaN or infinity, any negative nonzero value.
struct RowsFound {
  bool special = false;
  bool negative = false;
};

// That pass with 32-byte vectors (bit_scan_avx2.cc): `rows` rows of `row_bytes`, a multiple of
// 32; nonzero[r] |= whether row r holds a nonzero value. Only where the CPU has AVX2.
RowsFound ScanRowsAvx2(const std::byte* data, int64_t rows, int64_t row_bytes,
                       const FloatBits& bits, uint8_t* nonzero);

// Whether dispatch may use AVX2 here (ResolveCpuFeatures: QUANTPATH_CPU_ISA=reference keeps the
// portable pass). Cached.
bool BitScanHasAvx2();

// One pass over a float (or int8) tensor stored as [rows, cols], fed piece by piece as it is read
// so that each piece is scanned while it is in cache: the first NaN or infinity and the first
// negative value with their codes, and which rows (or, `by_column`, which columns) hold a
// nonzero value. Pieces are whole rows, or whole values of a tensor of one row.
class BitScan {
 public:
  BitScan(const FloatBits& bits, int64_t rows, int64_t cols, bool by_column,
          bool avx2 = BitScanHasAvx2());
  const FloatBits& bits() const { return bits_; }
  bool by_column() const { return by_column_; }
  // The piece nearest `target` bytes.
  uint64_t PieceBytes(uint64_t target) const;
  void Add(std::span<const std::byte> piece);

  int64_t first_special = -1;
  int64_t first_negative = -1;
  uint32_t special_code = 0;
  uint32_t negative_code = 0;
  std::vector<uint8_t> nonzero;  // per row, or per column

 private:
  template <typename U, bool kSpecial>
  void Scan(std::span<const std::byte> piece);

  FloatBits bits_;
  int64_t rows_;
  int64_t cols_;
  bool by_column_;
  bool avx2_;
  int64_t done_ = 0;  // values scanned
};

}  // namespace quantpath::pipeline_internal
