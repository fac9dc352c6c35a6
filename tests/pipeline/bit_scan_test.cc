// BitScan's three passes (the portable by-row and flat ones, and AVX2's where the CPU has it) on
// tensors with a NaN code, a negative value and an all-zero row planted, fed in pieces: each
// finds what a value-by-value reading of the bits finds.
#include "src/pipeline/bit_scan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "fmt/format.h"
#include "quantpath/cpu_features.h"

namespace quantpath::pipeline_internal {
namespace {

struct Case {
  const char* name;
  FloatBits bits;
};

// bf16, f16, f32, E4M3FN, E8M0, int8: their NaN (or infinity) code, sign and magnitude bits.
const Case kCases[] = {
    {"bf16", {2, 0x7F80, 0x8000, 0x7FFF}},
    {"f16", {2, 0x7C00, 0x8000, 0x7FFF}},
    {"f32", {4, 0x7F800000, 0x80000000, 0x7FFFFFFF}},
    {"e4m3", {1, 0x7F, 0x80, 0x7F}},
    {"e8m0", {1, 0xFF, 0, 0}},
    {"int8", {1, 0, 0, 0xFF}},
};

struct Expected {
  int64_t first_special = -1, first_negative = -1;
  uint32_t special_code = 0, negative_code = 0;
  std::vector<uint8_t> nonzero;
};

// Value by value.
Expected Read(const std::vector<uint32_t>& values, const FloatBits& bits, int64_t cols) {
  Expected e;
  const int64_t rows = static_cast<int64_t>(values.size()) / cols;
  e.nonzero.assign(static_cast<size_t>(rows), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint32_t v = values[i];
    if (e.first_special < 0 && bits.special != 0 && (v & bits.special) == bits.special) {
      e.first_special = static_cast<int64_t>(i);
      e.special_code = v;
    }
    if (e.first_negative < 0 && (v & bits.sign) != 0 && (v & bits.magnitude) != 0) {
      e.first_negative = static_cast<int64_t>(i);
      e.negative_code = v;
    }
    const bool nonzero = (v & bits.magnitude) != 0 || (bits.magnitude == 0 && bits.sign == 0);
    e.nonzero[i / static_cast<size_t>(cols)] |= static_cast<uint8_t>(nonzero);
  }
  return e;
}

// Random finite positive values with row `zero_row` all zeros, and a NaN code and a negative value
// planted where asked (index -1: none).
std::vector<uint32_t> Values(const FloatBits& bits, int64_t rows, int64_t cols, int64_t zero_row,
                             int64_t nan_at, int64_t negative_at, std::mt19937& rng) {
  std::vector<uint32_t> values(static_cast<size_t>(rows * cols));
  std::uniform_int_distribution<uint32_t> any(1, bits.special != 0 ? bits.special - 1 : 0xFF);
  for (uint32_t& v : values) v = any(rng) & ~bits.sign;
  for (int64_t c = 0; zero_row >= 0 && c < cols; ++c) values[zero_row * cols + c] = 0;
  if (nan_at >= 0 && bits.special != 0) values[nan_at] = bits.special | bits.sign;
  if (negative_at >= 0 && bits.sign != 0) values[negative_at] = bits.sign | 1;
  return values;
}

void Scan(const std::vector<uint32_t>& values, const FloatBits& bits, int64_t rows, int64_t cols,
          bool avx2, const Expected& want, const std::string& what) {
  std::vector<std::byte> bytes(values.size() * static_cast<size_t>(bits.width));
  for (size_t i = 0; i < values.size(); ++i) {
    std::memcpy(bytes.data() + i * bits.width, &values[i], static_cast<size_t>(bits.width));
  }
  BitScan scan(bits, rows, cols, false, avx2);
  // Pieces of a few rows each, the last one short.
  const uint64_t piece = scan.PieceBytes(static_cast<uint64_t>(3 * cols * bits.width));
  for (uint64_t at = 0; at < bytes.size(); at += piece) {
    scan.Add(std::span(bytes).subspan(at, std::min<uint64_t>(piece, bytes.size() - at)));
  }
  EXPECT_EQ(scan.first_special, want.first_special) << what;
  EXPECT_EQ(scan.special_code, want.special_code) << what;
  EXPECT_EQ(scan.first_negative, want.first_negative) << what;
  EXPECT_EQ(scan.negative_code, want.negative_code) << what;
  if (rows > 1) {
    EXPECT_EQ(scan.nonzero, want.nonzero) << what;
  }
}

TEST(BitScanTest, EveryPassFindsWhatAValueByValueReadFinds) {
  const bool avx2 = DetectCpuFeatures().Has(CpuFeature::kAvx2);
  std::mt19937 rng(7);
  for (const Case& c : kCases) {
    // Row lengths in bytes: 64 and 224 (whole vectors), 40 (whole words), 6 (neither).
    for (const int64_t row_bytes : {64, 224, 40, 6}) {
      if (row_bytes % c.bits.width != 0) continue;
      const int64_t cols = row_bytes / c.bits.width, rows = 11;
      for (const auto& [zero_row, nan_at, negative_at] :
           {std::tuple<int64_t, int64_t, int64_t>{-1, -1, -1},
            {4, cols * 7 + 1, cols * 2},
            {0, 3, cols * 9 + cols - 1},
            {rows - 1, cols * rows - 1, 0}}) {
        const std::vector<uint32_t> values =
            Values(c.bits, rows, cols, zero_row, nan_at, negative_at, rng);
        const Expected want = Read(values, c.bits, cols);
        const std::string what = fmt::format(
            "{}, rows of {} bytes, zero row {}, NaN at {}, "
            "negative at {}",
            c.name, row_bytes, zero_row, nan_at, negative_at);
        Scan(values, c.bits, rows, cols, false, want, what + ", portable");
        if (avx2) Scan(values, c.bits, rows, cols, true, want, what + ", avx2");
        // The same values as a tensor of one row.
        const Expected flat = Read(values, c.bits, rows * cols);
        Scan(values, c.bits, 1, rows * cols, false, flat, what + ", one row, portable");
        if (avx2) Scan(values, c.bits, 1, rows * cols, true, flat, what + ", one row, avx2");
      }
    }
  }
}

}  // namespace
}  // namespace quantpath::pipeline_internal
