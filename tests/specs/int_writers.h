// Writers of the integer source layouts for tests, transcribed from the producers' own packing
// loops (AutoGPTQ's QuantLinear.pack, AutoAWQ's WQLinear_GEMM.from_linear, compressed-tensors'
// pack_to_int32) rather than from quantpath's decoders, and the expected weights in double.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quantpath/numeric.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath::testing {

// An integer leg as a producer holds it before packing: codes [N, K] and zeros [N, G] unsigned,
// fp16 scales [N, G], and the group of each input column.
struct IntLeg {
  int bits = 4;
  int64_t n = 0;
  int64_t k = 0;
  int64_t group = 0;
  std::vector<uint32_t> codes;
  std::vector<uint32_t> zeros;
  std::vector<float> scales;  // fp16-representable
  std::vector<int32_t> g_idx;
  int64_t groups() const { return (k + group - 1) / group; }
  // W[n][k] = (q − z) · s of the column's group, in double.
  std::vector<double> Dequantized() const {
    std::vector<double> w(static_cast<size_t>(n * k));
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < k; ++c) {
        const int64_t g = g_idx[c];
        w[r * k + c] = (static_cast<double>(codes[r * k + c]) - zeros[r * groups() + g]) *
                       scales[r * groups() + g];
      }
    }
    return w;
  }
};

// Random codes, zeros (the symmetric offset when `symmetric`) and fp16 scales; act-order groups
// from a random permutation of the columns when `act_order` (GPTQ's g_idx[perm[i]] = i / g).
inline IntLeg RandomIntLeg(std::mt19937* rng, int bits, int64_t n, int64_t k, int64_t group,
                           bool symmetric, bool act_order = false) {
  IntLeg leg{bits, n, k, group, {}, {}, {}, {}};
  std::uniform_int_distribution<uint32_t> code(0, (1u << bits) - 1);
  for (int64_t i = 0; i < n * k; ++i) leg.codes.push_back(code(*rng));
  for (int64_t i = 0; i < n * leg.groups(); ++i) {
    leg.zeros.push_back(symmetric ? 1u << (bits - 1) : code(*rng));
    leg.scales.push_back(
        Fp16ToFloat(FloatToFp16(std::uniform_real_distribution<float>(1e-3f, 4e-2f)(*rng))));
  }
  std::vector<int32_t> perm(static_cast<size_t>(k));
  for (int64_t c = 0; c < k; ++c) perm[c] = static_cast<int32_t>(c);
  if (act_order) std::shuffle(perm.begin(), perm.end(), *rng);
  leg.g_idx.resize(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) leg.g_idx[perm[i]] = static_cast<int32_t>(i / group);
  return leg;
}

// The scheme of integer weights of `bits` in groups of `group` columns (0: per channel), read
// from `layout`.
inline QuantScheme IntScheme(int bits, int64_t group, bool symmetric, SourceLayout layout,
                             ZeroPointConvention zeros, bool act_order = false) {
  QuantScheme s;
  s.weight.dtype = static_cast<QDType>(static_cast<int>(QDType::kINT8) + 8 - bits);
  s.weight.granularity = group > 0 ? Granularity::kGroup : Granularity::kPerChannel;
  if (group > 0) s.weight.group_size = group;
  s.weight.symmetric = symmetric;
  s.weight.load.layout = layout;
  s.weight.load.zero_point = zeros;
  s.weight.load.act_order = act_order;
  return s;
}

inline TestTensor I32Tensor(std::string name, std::vector<int64_t> shape,
                            const std::vector<uint32_t>& words) {
  TestTensor t{std::move(name), "I32", std::move(shape), std::vector<uint8_t>(words.size() * 4)};
  std::memcpy(t.bytes.data(), words.data(), t.bytes.size());
  return t;
}

// AutoGPTQ's pack loop over `count` values along one axis: `value(i)` gives value i; 2-, 4- and
// 8-bit values fill 32 / b per word, 3-bit values go 32 to three words (10, 1 + 10 + 1, 10).
template <typename Value>
std::vector<uint32_t> GptqPackAxis(int bits, int64_t count, Value value) {
  std::vector<uint32_t> words;
  int64_t i = 0;
  while (i < count) {
    if (bits == 3) {
      uint32_t w0 = 0, w1 = 0, w2 = 0;
      for (int j = 0; j < 10; ++j) w0 |= value(i + j) << (3 * j);
      i += 10;
      w0 |= value(i) << 30;
      w1 |= (value(i) >> 2) & 1;
      i += 1;
      for (int j = 0; j < 10; ++j) w1 |= value(i + j) << (3 * j + 1);
      i += 10;
      w1 |= value(i) << 31;
      w2 |= (value(i) >> 1) & 0x3;
      i += 1;
      for (int j = 0; j < 10; ++j) w2 |= value(i + j) << (3 * j + 2);
      i += 10;
      words.insert(words.end(), {w0, w1, w2});
    } else {
      uint32_t w = 0;
      for (int j = 0; j < 32 / bits; ++j) w |= value(i + j) << (bits * j);
      i += 32 / bits;
      words.push_back(w);
    }
  }
  return words;
}

// GPTQ tensors of `leg` under `prefix`: qweight [K·b/32, N], qzeros [G, N·b/32] (v1: z − 1),
// scales [G, N] fp16, g_idx [K].
inline std::vector<TestTensor> GptqTensors(const IntLeg& leg, const std::string& prefix, bool v1) {
  const int64_t g = leg.groups();
  const uint32_t mask = (1u << leg.bits) - 1;
  std::vector<uint32_t> qweight;
  std::vector<std::vector<uint32_t>> columns;
  for (int64_t col = 0; col < leg.n; ++col) {
    columns.push_back(
        GptqPackAxis(leg.bits, leg.k, [&](int64_t i) { return leg.codes[col * leg.k + i]; }));
  }
  const int64_t rows = static_cast<int64_t>(columns[0].size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t col = 0; col < leg.n; ++col) qweight.push_back(columns[col][r]);
  }
  std::vector<uint32_t> qzeros;
  int64_t zero_cols = 0;
  for (int64_t gi = 0; gi < g; ++gi) {
    std::vector<uint32_t> row = GptqPackAxis(leg.bits, leg.n, [&](int64_t col) {
      return (leg.zeros[col * g + gi] - (v1 ? 1 : 0)) & mask;
    });
    zero_cols = static_cast<int64_t>(row.size());
    qzeros.insert(qzeros.end(), row.begin(), row.end());
  }
  std::vector<float> scales;
  for (int64_t gi = 0; gi < g; ++gi) {
    for (int64_t col = 0; col < leg.n; ++col) scales.push_back(leg.scales[col * g + gi]);
  }
  std::vector<uint32_t> g_idx(leg.g_idx.begin(), leg.g_idx.end());
  return {I32Tensor(prefix + ".qweight", {rows, leg.n}, qweight),
          I32Tensor(prefix + ".qzeros", {g, zero_cols}, qzeros),
          F16Tensor(prefix + ".scales", {g, leg.n}, scales),
          I32Tensor(prefix + ".g_idx", {leg.k}, g_idx)};
}

// AutoAWQ gemm tensors: word j of a row holds columns 8j + order_map[i] in nibble i.
inline std::vector<TestTensor> AwqTensors(const IntLeg& leg, const std::string& prefix) {
  constexpr int kOrderMap[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  const int64_t g = leg.groups();
  auto pack = [&](int64_t rows, auto value) {
    std::vector<uint32_t> words;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < leg.n / 8; ++j) {
        uint32_t w = 0;
        for (int i = 0; i < 8; ++i) w |= value(r, j * 8 + kOrderMap[i]) << (4 * i);
        words.push_back(w);
      }
    }
    return words;
  };
  std::vector<float> scales;
  for (int64_t gi = 0; gi < g; ++gi) {
    for (int64_t col = 0; col < leg.n; ++col) scales.push_back(leg.scales[col * g + gi]);
  }
  return {
      I32Tensor(prefix + ".qweight", {leg.k, leg.n / 8},
                pack(leg.k, [&](int64_t c, int64_t col) { return leg.codes[col * leg.k + c]; })),
      I32Tensor(prefix + ".qzeros", {g, leg.n / 8},
                pack(g, [&](int64_t gi, int64_t col) { return leg.zeros[col * g + gi]; })),
      F16Tensor(prefix + ".scales", {g, leg.n}, scales)};
}

// compressed-tensors' dense pack_to_int32 of a [rows, cols] matrix of unsigned values along its
// rows: element i of a row at bit i·b of the row's words.
template <typename Value>
std::vector<uint32_t> CtPackRows(int bits, int64_t rows, int64_t cols, Value value) {
  const int64_t words = (cols * bits + 31) / 32;
  std::vector<uint32_t> out(static_cast<size_t>(rows * words), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < cols; ++i) {
      const uint64_t v = value(r, i);
      const int64_t start = i * bits;
      out[r * words + start / 32] |= static_cast<uint32_t>(v << (start % 32));
      if (start % 32 + bits > 32) {
        out[r * words + start / 32 + 1] |= static_cast<uint32_t>(v >> (32 - start % 32));
      }
    }
  }
  return out;
}

// compressed-tensors pack-quantized tensors: weight_packed, weight_shape, weight_scale (as F16:
// the model's dtype), the zero points packed along dim 0 when asymmetric, weight_g_idx with
// act-order.
inline std::vector<TestTensor> CtTensors(const IntLeg& leg, const std::string& prefix,
                                         bool symmetric, bool act_order) {
  const int64_t g = leg.groups();
  std::vector<TestTensor> t = {
      I32Tensor(prefix + ".weight_packed", {leg.n, (leg.k * leg.bits + 31) / 32},
                CtPackRows(leg.bits, leg.n, leg.k,
                           [&](int64_t r, int64_t c) { return leg.codes[r * leg.k + c]; })),
      F16Tensor(prefix + ".weight_scale", {leg.n, g}, leg.scales)};
  TestTensor shape{prefix + ".weight_shape", "I64", {2}, std::vector<uint8_t>(16)};
  const int64_t dims[2] = {leg.n, leg.k};
  std::memcpy(shape.bytes.data(), dims, 16);
  t.push_back(shape);
  if (!symmetric) {
    // Packed along dim 0: pack the transpose [G, N] along its rows, then transpose back.
    const int64_t words = (leg.n * leg.bits + 31) / 32;
    std::vector<uint32_t> packed_t = CtPackRows(
        leg.bits, g, leg.n, [&](int64_t gi, int64_t r) { return leg.zeros[r * g + gi]; });
    std::vector<uint32_t> packed(static_cast<size_t>(words * g));
    for (int64_t gi = 0; gi < g; ++gi) {
      for (int64_t w = 0; w < words; ++w) packed[w * g + gi] = packed_t[gi * words + w];
    }
    t.push_back(I32Tensor(prefix + ".weight_zero_point", {words, g}, packed));
  }
  if (act_order) {
    t.push_back(I32Tensor(prefix + ".weight_g_idx", {leg.k},
                          std::vector<uint32_t>(leg.g_idx.begin(), leg.g_idx.end())));
  }
  return t;
}

}  // namespace quantpath::testing
