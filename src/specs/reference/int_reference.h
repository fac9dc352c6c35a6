// Reads shared by the integer reference entries (int_gptq_reference.cc, int_awq_reference.cc,
// int_ct_reference.cc): raw int32 tensors, bits of packed words, and the group of each column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/specs.h"

namespace quantpath::reference {

struct Int32Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<int32_t> values;
};

// Reads `name` as I32 values with `rank` dimensions. Errors name the tensor and the layer.
Result<Int32Tensor> ReadInt32(const Checkpoint& checkpoint, std::string_view layer,
                              const std::string& name, size_t rank);

// The value of `bits` bits of a little-endian sequence of 32-bit words, starting at bit `first`
// (bit i lives in words[i / 32] at position i % 32), words `stride` entries apart; bit by bit,
// so that it shares nothing with the loaders' word arithmetic.
int64_t BitField(const std::vector<int32_t>& words, int64_t offset, int64_t stride, int64_t first,
                 int bits);

// The tensors of a GPTQ or AWQ layer under `prefix`: `qweight` and `qzeros` as int32 matrices,
// `scales` as doubles with its header entry. Errors name the tensor and the layer.
struct PackedIntTensors {
  Int32Tensor qweight;
  Int32Tensor qzeros;
  std::vector<double> scales;
  TensorInfo scales_info;
};
Result<PackedIntTensors> ReadPackedIntTensors(const Checkpoint& checkpoint, std::string_view layer,
                                              const std::string& prefix);

// The integer bits of `scheme` (2 … 8), or an error naming the layer.
Result<int> IntBits(const QuantScheme& scheme, std::string_view layer);

// Elements per scale along K for a scheme: group_size for group scales, K otherwise.
int64_t GroupSize(const QuantScheme& scheme, int64_t k);

// The group of each of the k input columns: c / g, or with act-order the checkpoint's `g_idx_name`
// ([k] int32, each entry below `groups`). Errors name the tensor and the layer.
Result<std::vector<int32_t>> GroupOfColumns(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                            std::string_view layer, const std::string& g_idx_name,
                                            int64_t k, int64_t g, int64_t groups);

}  // namespace quantpath::reference
