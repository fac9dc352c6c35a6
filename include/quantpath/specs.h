// quantpath specs: physical weight layouts, one per spec family, and how each loads from a
// checkpoint.
//
// Goals: a WeightSpec allocates a layer's parameters in one canonical layout from an
// AllocationRequest, accepts the checkpoint source layouts of its family (tensor names, scale
// conventions, fused legs, tensor-parallel slices), and converts after loading so that kernels see
// one layout per spec_id. The facts of every family live in one table (kSpecFamilies). A
// double-precision dequantization path, written apart from the specs, is the oracle of `run` and
// of the kernel tests.
// Non-goals: config files and dialects (importers), choosing a spec for a scheme (materialize),
// matrix products (kernels), MoE expert loading (not yet).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/ir.h"

namespace quantpath {

// ---------------------------------------------------------------------------------------------
// Devices

// The device a layer is materialized for. Declared here because allocation requests carry it;
// materialize.h is where schemes meet devices.
struct DeviceCaps {
  std::string name = "cpu";  // "cpu", "sm80", "sm90", "sm100"
  int sm = 0;                // CUDA compute capability × 10 (90 for sm90); 0 for the CPU
  bool is_cpu() const { return sm == 0; }
  bool operator==(const DeviceCaps&) const = default;
};
// Parses "cpu", "sm80", "sm90" or "sm100"; anything else is an error listing those names.
Result<DeviceCaps> ParseDevice(std::string_view name);

// ---------------------------------------------------------------------------------------------
// Activation quantization: how a spec's kernels quantize X before the product. It is part of the
// dispatcher key ("mode") because a kernel either fuses it or not.

enum class ActMode : uint8_t {
  kNone,              // X stays in high precision (weight-only quantization, bf16 layers)
  kDynamicPerToken,   // one scale per row of X, computed at run time
  kDynamicPerTensor,  // one scale for all of X, computed at run time
  kDynamicGroup,      // one scale per row and per group_size columns of X (DeepSeek 1×128)
  kStaticPerTensor,   // the checkpoint's input_scale (the max over fused legs)
};

struct ActivationQuant {
  ActMode mode = ActMode::kNone;
  int64_t group_size = 0;  // kDynamicGroup only
  bool operator==(const ActivationQuant&) const = default;
  // "none", "fp8 dynamic per-token", "fp8 dynamic group 128", "fp8 static per-tensor", …
  std::string ToString() const;
};

// Dynamic fp8 activation scales are fp32 values, max(absmax, kActAbsMaxFloor) / 448 divided in
// fp32, so that an all-zero row or group gets a finite scale (the floor vLLM's per-token-group
// quantizer uses). Values are then X / scale rounded to e4m3 with ties to even, saturating at
// ±448. (The scale must be the fp32 one: with bf16 inputs, X / (absmax / 448) often lands exactly
// on an e4m3 tie, which the last bit of the scale then decides.)
inline constexpr double kActAbsMaxFloor = 1e-10;
inline constexpr double kFp8E4M3Max = 448.0;

// ---------------------------------------------------------------------------------------------
// Spec families: the one table of per-layout facts.

enum class SpecFamily : uint8_t { kBf16, kFp8PerTensor, kFp8PerChannel, kFp8Block };
inline constexpr size_t kSpecFamilyCount = 4;

// Where a family keeps its weight scales.
enum class ScaleLayout : uint8_t {
  kNone,     // no scales
  kPerRow,   // S [N, 1] fp32: one scale per output row
  kBlock2d,  // S [ceil(N / bn), ceil(K / bk)] fp32: one scale per bn × bk block
};

struct SpecFamilyInfo {
  SpecFamily family;
  std::string_view id;  // the spec_id, or its prefix when `parameterized` ("fp8_block")
  bool parameterized;   // spec_id = id + "_<bn>_<bk>"
  QDType weight_dtype;  // element dtype of the stored weight
  // The element dtype is the request's params dtype instead (bf16, fp16 and fp32 checkpoints
  // share the bf16 spec).
  bool weight_dtype_from_request;
  ScaleLayout scales;
  int scale_bits;  // bits per stored scale (0 without scales)
};

inline constexpr SpecFamilyInfo kSpecFamilies[] = {
    {SpecFamily::kBf16, "bf16", false, QDType::kBF16, true, ScaleLayout::kNone, 0},
    {SpecFamily::kFp8PerTensor, "fp8_per_tensor", false, QDType::kFP8E4M3, false,
     ScaleLayout::kPerRow, 32},
    {SpecFamily::kFp8PerChannel, "fp8_per_channel", false, QDType::kFP8E4M3, false,
     ScaleLayout::kPerRow, 32},
    {SpecFamily::kFp8Block, "fp8_block", true, QDType::kFP8E4M3, false, ScaleLayout::kBlock2d, 32},
};
static_assert(std::size(kSpecFamilies) == kSpecFamilyCount,
              "kSpecFamilies must have one row per SpecFamily");
constexpr bool SpecFamiliesInEnumOrder() {
  for (size_t i = 0; i < kSpecFamilyCount; ++i) {
    if (static_cast<size_t>(kSpecFamilies[i].family) != i) return false;
  }
  return true;
}
static_assert(SpecFamiliesInEnumOrder(), "kSpecFamilies must list SpecFamily in enum order");

constexpr const SpecFamilyInfo& FamilyInfo(SpecFamily family) {
  return kSpecFamilies[static_cast<size_t>(family)];
}

// A parsed spec_id.
struct SpecKey {
  SpecFamily family = SpecFamily::kBf16;
  std::array<int64_t, 2> block = {0, 0};  // [bn, bk] for kFp8Block, else zeros
  bool operator==(const SpecKey&) const = default;
  std::string ToId() const;  // "bf16", "fp8_block_128_128", …
};
// Parses a spec_id; an unknown one is an error listing the known families.
Result<SpecKey> ParseSpecId(std::string_view spec_id);

// ---------------------------------------------------------------------------------------------
// Physical layouts. Every layout stores W row-major as [N, K]: element (n, k) of a [rows, cols]
// weight is at index n * cols + k. Scales are fp32, row-major.

// fp8 e4m3fn element (OCP): bit 7 sign, bits 6..3 exponent (bias 7), bits 2..0 mantissa;
// S.0000.MMM are subnormals M × 2^-9; S.1111.111 (0x7F / 0xFF) is NaN; there is no infinity and
// the largest finite value is S.1111.110 = ±448. 8 bits per weight.
struct Fp8E4M3Element {
  uint8_t bits;
};
static_assert(sizeof(Fp8E4M3Element) == 1);

// bf16 spec: W [N, K] in the params dtype (bf16 / fp16 = 16 bits per weight, fp32 = 32), no
// scales.
struct DenseLayout {
  int element_bits = 16;
  constexpr int64_t BytesFor(int64_t rows, int64_t cols) const {
    return rows * cols * element_bits / 8;
  }
};
static_assert(DenseLayout{16}.BytesFor(512, 256) == 262144);  // DESIGN.md's embed_tokens

// fp8_per_tensor / fp8_per_channel: W [N, K] fp8 + S [N, 1] fp32, one scale per output row
// (8 + 32 / K bits per weight). Per-tensor checkpoint scales are broadcast to the rows of their
// leg after loading; the spec_id stays fp8_per_tensor.
struct Fp8RowScaledLayout {
  static constexpr int64_t kScaleBytes = FamilyInfo(SpecFamily::kFp8PerChannel).scale_bits / 8;
  constexpr int64_t ScaleCount(int64_t rows) const { return rows; }
  constexpr int64_t BytesFor(int64_t rows, int64_t cols) const {
    return rows * cols + ScaleCount(rows) * kScaleBytes;
  }
};
static_assert(FamilyInfo(SpecFamily::kFp8PerTensor).scale_bits ==
              FamilyInfo(SpecFamily::kFp8PerChannel).scale_bits);
static_assert(Fp8RowScaledLayout{}.BytesFor(4, 8) == 32 + 16);

// fp8_block_<bn>_<bk>: W [N, K] fp8 + S [ceil(N / bn), ceil(K / bk)] fp32; S[i][j] scales rows
// [i·bn, (i+1)·bn) and columns [j·bk, (j+1)·bk), clipped at the edges (8 + 32 / (bn·bk) bits per
// weight). Fused legs share the grid, so every leg but the last must start on a block row.
struct Fp8BlockLayout {
  static constexpr int64_t kScaleBytes = FamilyInfo(SpecFamily::kFp8Block).scale_bits / 8;
  int64_t block_n = 128;
  int64_t block_k = 128;
  constexpr int64_t ScaleRows(int64_t rows) const { return (rows + block_n - 1) / block_n; }
  constexpr int64_t ScaleCols(int64_t cols) const { return (cols + block_k - 1) / block_k; }
  constexpr int64_t BytesFor(int64_t rows, int64_t cols) const {
    return rows * cols + ScaleRows(rows) * ScaleCols(cols) * kScaleBytes;
  }
};
// DESIGN.md's fused_qkv_a_proj: [168, 256] = 43008 fp8 bytes + 2 × 2 blocks × 4 bytes.
static_assert(Fp8BlockLayout{128, 128}.BytesFor(168, 256) == 43024);

// Bytes of one [rows, cols] weight of `key`, scales included. `dense_bits` is the element width
// of families whose dtype comes from the request.
int64_t LayoutBytes(const SpecKey& key, int64_t rows, int64_t cols, int dense_bits);

// ---------------------------------------------------------------------------------------------
// Parameters

// A row-major [rows, cols] parameter in a zero-filled, 64-byte aligned buffer. Element dtypes are
// the byte-sized ones (bf16, fp16, fp32, fp8).
class ParamTensor {
 public:
  ParamTensor() = default;
  ParamTensor(QDType dtype, int64_t rows, int64_t cols);

  QDType dtype() const { return dtype_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t elements() const { return rows_ * cols_; }
  int64_t bytes() const;
  bool empty() const { return rows_ * cols_ == 0; }

  std::byte* raw() { return buffer_.get(); }
  const std::byte* raw() const { return buffer_.get(); }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(buffer_.get());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(buffer_.get());
  }

 private:
  static constexpr size_t kAlignment = 64;
  struct Free {
    void operator()(std::byte* p) const { ::operator delete (p, std::align_val_t{kAlignment}); }
  };
  QDType dtype_ = QDType::kFP32;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  std::unique_ptr<std::byte[], Free> buffer_;
};

// Reads element i of a bf16 / fp16 / fp32 tensor as float.
float LoadFloat(const ParamTensor& tensor, int64_t i);

// How a layer is split across tensor-parallel ranks.
enum class Parallel : uint8_t {
  kReplicated,  // every rank holds the whole weight
  kColumn,      // output rows split: each fused leg is split into tp_size equal slices
  kRow,         // input columns split into tp_size equal slices; the bias lives on rank 0
};

// What a layer asks a spec to allocate.
struct AllocationRequest {
  std::string layer;                    // the site's execution path, for messages
  std::array<int64_t, 2> shape{};       // logical [N, K] of the whole layer (all ranks)
  std::vector<int64_t> leg_rows;        // output rows of each fused leg (sum N); empty: one leg
  std::vector<std::string> leg_names;   // short leg names for messages ("q_proj"); may be empty
  QDType params_dtype = QDType::kBF16;  // the unquantized dtype (checkpoint torch_dtype)
  DeviceCaps device;
  int64_t experts = 0;  // > 0: an MoE layer; shape is one expert's [inter, hidden]
  bool bias = false;
  int tp_rank = 0;
  int tp_size = 1;
  Parallel parallel = Parallel::kReplicated;
};

// A layer's parameters in the layout of `spec_id`, for this rank.
struct LinearParams {
  AllocationRequest request;
  std::string spec_id;
  int64_t rows = 0;               // this rank's N
  int64_t cols = 0;               // this rank's K
  std::vector<int64_t> leg_rows;  // this rank's rows per leg (one entry when not fused)
  ParamTensor weight;             // [rows, cols] in the family's element dtype
  ParamTensor weight_scale;       // per the family's ScaleLayout; empty without scales
  ParamTensor input_scale;        // [1, 1] fp32 for kStaticPerTensor activations; else empty
  ParamTensor bias;               // [rows, 1] in params dtype; empty without bias
  // Per-leg checkpoint scalars kept between Load and ProcessAfterLoading (per-tensor weight
  // scales, static input scales); empty afterwards.
  std::vector<float> leg_weight_scales;
  std::vector<float> leg_input_scales;
  bool loaded = false;
  bool processed = false;

  // Bytes the weight storage takes: weight, weight scales and bias (the static activation scale
  // is the activation's and not counted). Equals StorageBytes(spec_id, request) in materialize.h.
  int64_t WeightBytes() const;
};

// ---------------------------------------------------------------------------------------------
// WeightSpec

class WeightSpec {
 public:
  virtual ~WeightSpec() = default;
  virtual const std::string& spec_id() const = 0;
  virtual const SpecKey& key() const = 0;
  // How this spec's kernels quantize activations.
  virtual const ActivationQuant& activation() const = 0;

  // Allocates zeroed parameters for `request`. Errors name the layer: shapes that do not add up,
  // tensor-parallel sizes that do not divide, fused legs the layout cannot hold.
  virtual Result<LinearParams> Allocate(const AllocationRequest& request) const = 0;
  // Bytes Allocate(request) would store (LinearParams::WeightBytes()), with the same checks,
  // without allocating.
  virtual Result<int64_t> StorageBytes(const AllocationRequest& request) const = 0;
  // Loads the layer from `checkpoint`: `leg_prefixes` holds one module prefix per fused leg, in
  // leg order ("model.layers.0.self_attn.q_proj", …), or one prefix when not fused. Errors name
  // the tensor and the layer.
  virtual Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
                      LinearParams* params) const = 0;
  // Converts loaded parameters into the canonical layout kernels read.
  virtual Status ProcessAfterLoading(LinearParams* params) const = 0;
};

// The spec of unquantized layers (spec_id "bf16"); the element dtype is the request's params
// dtype, so fp16 and fp32 checkpoints need no other spec.
std::unique_ptr<WeightSpec> MakeBf16Spec();
// fp8 e4m3 weights: `key` is kFp8PerTensor, kFp8PerChannel or kFp8Block (with its block).
// Checkpoint tensors per leg: `weight` (F8_E4M3), `weight_scale` or, for blocks, DeepSeek's
// `weight_scale_inv` (which multiplies despite its name), and `input_scale` for static
// activations.
std::unique_ptr<WeightSpec> MakeFp8Spec(const SpecKey& key, const ActivationQuant& activation);

// ---------------------------------------------------------------------------------------------
// Double-precision reference: reads a layer's checkpoint tensors directly, without a spec, and
// dequantizes them to double. `run` and the kernel tests compare kernels against it.

struct ReferenceLayer {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> weight;         // [rows, cols], dequantized
  std::vector<double> bias;           // [rows], or empty
  std::optional<double> input_scale;  // static activation scale: the max over the legs
};

// Dequantizes the legs of one layer as `scheme` describes them: bf16/fp16/fp32 weights as they
// are; fp8 weights times their per-tensor, per-row or per-block scale (`weight_scale_inv` or
// `weight_scale`, whichever the leg has). `layer` names the layer in errors.
Result<ReferenceLayer> DequantizeReference(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                           std::string_view layer,
                                           const std::vector<std::string>& leg_prefixes, bool bias);

// Quantizes X [m, k] as `act` says and returns the dequantized values (X itself for kNone), with
// the conventions above, in double. `static_scale` is used by kStaticPerTensor.
std::vector<double> QuantizeActivationsReference(std::span<const double> x, int64_t m, int64_t k,
                                                 const ActivationQuant& act,
                                                 std::optional<double> static_scale);

// Rounds to the nearest e4m3fn value (ties to even), saturating at ±448, in double.
double RoundToE4M3(double value);

}  // namespace quantpath
