// Quantizing high-precision weights at load: the quantizer rows (one file per target family under
// src/specs/online/, each registered from its own file) and what they share.
//
// Goals: a quantizer reads nothing itself; it gets a layer's legs whole, in fp32 (the checkpoint's
// bf16 / fp16 / fp32 values, exact), and writes them as the family's own checkpoints store them,
// in one source layout its spec already loads. So every rank quantizes the whole layer and keeps
// its slice, and slicing, validation and after-loading conversion stay the family loader's.
// Non-goals: reading checkpoints, tensor-parallel slices, kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/checkpoint.h"
#include "quantpath/numeric.h"
#include "quantpath/specs.h"

namespace quantpath::specs_internal {

// A layer's high-precision weights, every leg whole.
struct DenseLayer {
  std::string_view layer;             // for messages
  std::vector<std::string> prefixes;  // the legs' module prefixes
  std::vector<ParamTensor> legs;      // fp32 [rows of the leg, cols], in leg order
  int64_t cols = 0;
  QDType params_dtype = QDType::kBF16;  // the checkpoint's dtype (16-bit scales are stored in it)
  float AbsMax() const;                 // the largest |w| of every leg
};

// The largest |W' − W| and |W| a quantizer met, W' the value its codes and scales stand for.
struct QuantizationError {
  double max_abs = 0;
  double max_weight = 0;
  void Add(double weight, double dequantized) {
    max_abs = std::max(max_abs, std::abs(dequantized - weight));
    max_weight = std::max(max_weight, std::abs(weight));
  }
  void Merge(const QuantizationError& other) {
    max_abs = std::max(max_abs, other.max_abs);
    max_weight = std::max(max_weight, other.max_weight);
  }
  double rel() const { return max_weight > 0 ? max_abs / max_weight : max_abs; }
};

// body(i, &error) for every i in [0, n), split over the OpenMP threads (a leg's rows, or blocks
// of rows, are quantized independently), each thread's error merged into `error`.
template <typename Body>
void ForEachRowInParallel(int64_t n, QuantizationError* error, Body body) {
#pragma omp parallel
  {
    QuantizationError local;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) body(i, &local);
#pragma omp critical(quantpath_quantization_error)
    error->Merge(local);
  }
}

// What a quantizer writes: the tensors of its source layout under every leg's prefix.
struct QuantizedLayer {
  std::vector<Checkpoint::OwnedTensor> tensors;
  QuantizationError error;
};

struct OnlineQuantizer {
  SpecFamily family;
  SourceLayout layout;  // what `quantize` writes; the family's spec loads it
  // Whether this quantizer writes `key` for kernels with `act` (a family may have several keys).
  bool (*accepts)(const SpecKey& key, const ActivationQuant& act);
  Result<QuantizedLayer> (*quantize)(const SpecKey& key, const DenseLayer& layer);
  // The tensors `quantize` writes for one leg of rows × cols under `prefix`, in its order, without
  // computing them (`quantize` the command lays out its shards before any layer is quantized).
  std::vector<TensorHeader> (*headers)(const SpecKey& key, const std::string& prefix, int64_t rows,
                                       int64_t cols, QDType params_dtype);
};

// Registers a quantizer, and the `--online` targets it serves, from its own file.
struct OnlineQuantizerRegistrar {
  OnlineQuantizerRegistrar(const OnlineQuantizer& quantizer, std::vector<OnlineTarget> targets);
};
// The quantizer that writes `key` for `act`, or nullptr.
const OnlineQuantizer* FindOnlineQuantizer(const SpecKey& key, const ActivationQuant& act);
// The spec of `key` behind `quantizer`: its family's spec for the quantizer's layout, which Load
// feeds with the layer quantized from `facts`' dense weights.
Result<std::unique_ptr<WeightSpec>> MakeOnlineSpec(const OnlineQuantizer& quantizer,
                                                   const SpecKey& key, const ActivationQuant& act,
                                                   const LoadFacts& facts);

// A target scheme: the weight `weight` (source layout kDense) with `input` activations, online.
QuantScheme OnlineScheme(TensorQuant weight, std::optional<TensorQuant> input);
// The target of `scheme`, served; or known and refused, `why` saying why.
OnlineTarget Served(QuantScheme scheme);
OnlineTarget Refused(QuantScheme scheme, std::string_view why);

// A tensor of `values` (their bytes, little-endian) named `<prefix><suffix>`.
template <typename T>
Checkpoint::OwnedTensor OwnedTensorOf(const std::string& prefix, std::string_view suffix,
                                      StDtype dtype, std::vector<int64_t> shape,
                                      std::span<const T> values) {
  Checkpoint::OwnedTensor t{prefix + std::string(suffix), dtype, std::move(shape), {}};
  t.bytes.resize(values.size_bytes());
  std::memcpy(t.bytes.data(), values.data(), values.size_bytes());
  return t;
}

// The 16-bit dtype integer scales are kept in: the checkpoint's fp16, else bf16 (the integer
// families store 16-bit scales, compressed-tensors the model's dtype).
QDType IntScaleDtype(QDType params_dtype);
inline StDtype StDtypeOf16(QDType dtype) {
  return dtype == QDType::kFP16 ? StDtype::kF16 : StDtype::kBF16;
}
// `x` rounded to the 16-bit `dtype`, and its bits: torch's arithmetic in bf16 / fp16 on a CPU,
// which computes each operation in fp32 and rounds the result.
uint16_t Bits16(float x, QDType dtype);
float Round16(float x, QDType dtype);
// torch.finfo(dtype).eps: the scale compressed-tensors gives a group whose scale is zero.
inline float Eps16(QDType dtype) { return dtype == QDType::kFP16 ? 0x1p-10f : 0x1p-7f; }

// One leg in compressed-tensors' pack-quantized layout: `packed` (rows of `words` little-endian
// int32 words), `weight_shape` [rows, cols] and the 16-bit `scales` [rows, scale_cols] of
// `scale_dtype`, appended to `out` in that order.
void AddCtPackedLeg(const std::string& prefix, int64_t rows, int64_t cols, int64_t words,
                    std::span<const uint8_t> packed, QDType scale_dtype, int64_t scale_cols,
                    std::span<const uint16_t> scales, QuantizedLayer* out);

// The largest |w| of `count` values from `w`, `stride` apart.
float AbsMax(const float* w, int64_t count, int64_t stride = 1);

// The tensors WriteE2M1Leg writes for one leg.
std::vector<TensorHeader> E2M1LegHeaders(const std::string& prefix, int64_t rows, int64_t cols,
                                         int64_t group, StDtype scale_dtype);

// One leg in E2M1 codes with an 8-bit scale per `group` columns of each row (NVFP4, MXFP4):
// `scale_of(amax)` is a block's stored scale byte and `step_of(byte)` what a code of 1 stands for,
// each weight e2m1(w / step). Written as `<prefix>.weight_packed` U8 [rows, ceil(cols / 2)], two
// codes per byte with the even element in the low nibble, and `<prefix>.weight_scale`
// [rows, ceil(cols / group)] of `scale_dtype`.
template <typename ScaleOf, typename StepOf>
void WriteE2M1Leg(const ParamTensor& leg, const std::string& prefix, int64_t group,
                  StDtype scale_dtype, ScaleOf scale_of, StepOf step_of, QuantizedLayer* out) {
  const int64_t rows = leg.rows();
  const int64_t cols = leg.cols();
  const int64_t row_bytes = (cols + 1) / 2;
  const int64_t blocks = (cols + group - 1) / group;
  std::vector<uint8_t> codes(static_cast<size_t>(rows * row_bytes), 0);
  std::vector<uint8_t> scales(static_cast<size_t>(rows * blocks));
  ForEachRowInParallel(rows, &out->error, [&](int64_t r, QuantizationError* error) {
    const float* w = leg.data<float>() + r * cols;
    uint8_t* packed = codes.data() + r * row_bytes;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t c0 = b * group;
      const int64_t n = std::min(group, cols - c0);
      const uint8_t scale = scale_of(AbsMax(w + c0, n));
      scales[r * blocks + b] = scale;
      const float step = step_of(scale);
      for (int64_t c = c0; c < c0 + n; ++c) {
        const uint8_t q = FloatToE2M1(w[c] / step);
        packed[c / 2] |= static_cast<uint8_t>(c % 2 != 0 ? q << 4 : q);
        error->Add(w[c], static_cast<double>(E2M1ToFloat(q)) * step);
      }
    }
  });
  out->tensors.push_back(
      OwnedTensorOf<uint8_t>(prefix, ".weight_packed", StDtype::kU8, {rows, row_bytes}, codes));
  out->tensors.push_back(
      OwnedTensorOf<uint8_t>(prefix, ".weight_scale", scale_dtype, {rows, blocks}, scales));
}

}  // namespace quantpath::specs_internal
