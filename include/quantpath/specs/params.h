// quantpath specs: parameters.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/device.h"
#include "quantpath/ir.h"
#include "quantpath/specs/spec_key.h"

namespace quantpath {

// The named tensors a linear layer may hold. Families declare which slots they use; the source
// layout table (below) names the checkpoint tensor behind each.
enum class Slot : uint8_t {
  kWeight,             // W, in the family's element dtype (possibly packed sub-byte)
  kWeightScale,        // per tensor / row / group / block scales
  kWeightZero,         // zero points (asymmetric integer families)
  kGIdx,               // act-order group index per input column
  kWeightGlobalScale,  // the second-level scale of two-level formats (NVFP4)
  kInputScale,         // static activation scale
  kInputOffset,        // static activation zero point
  kQuantBias,          // int32 bias folded into integer products (ModelSlim W8A8)
  kBias,               // the layer's own bias, in the params dtype
  kPreQuantScale,      // per-input-column multiplier of X before it is quantized (AWQ)
};
inline constexpr size_t kSlotCount = 10;
std::string_view SlotName(Slot slot);  // "weight", "weight_scale", …

// A row-major [rows, cols] parameter in a zero-filled, 64-byte aligned buffer. Sub-byte element
// dtypes (int4, int3, int2, e2m1 formats) are packed along each row, low bits first, and each row
// starts on a byte: row_bytes() = ceil(cols · bits / 8).
class ParamTensor {
 public:
  ParamTensor() = default;
  ParamTensor(QDType dtype, int64_t rows, int64_t cols);

  QDType dtype() const { return dtype_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t elements() const { return rows_ * cols_; }
  int64_t row_bytes() const;
  int64_t bytes() const { return rows_ * row_bytes(); }
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

// One expert's projection inside checkpoint tensors that hold every expert of a layer, the
// experts along the first dimension (gpt-oss: `<experts>.gate_up_proj_blocks` [E, 2I, H/32, 16],
// `_scales` [E, 2I, H/32], `_bias` [E, 2I]; StacksExperts): expert `expert` of `experts`, and of
// that expert's rows the projection's rows first_row, first_row + row_step, … (gate_up_proj
// interleaves gate and up: gate rows 0::2, up rows 1::2; down_proj is all of its rows).
struct StackedExpert {
  int64_t experts = 0;
  int64_t expert = 0;
  int64_t row_step = 1;
  int64_t first_row = 0;
  bool operator==(const StackedExpert&) const = default;
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
  // Column splits: this rank's rows of each leg, where the layer's class does not cut every leg
  // into tp_size equal slices: vLLM's QKVParallelLinear with fewer KV heads than ranks gives each
  // rank one whole KV head, held by tp_size / kv_heads consecutive ranks. A leg of R rows with r
  // rows per rank has R / r distinct slices, slice i held by ranks [i·t, (i+1)·t), t = tp_size /
  // (R / r). Empty: leg_rows / tp_size.
  std::vector<int64_t> rank_leg_rows;
  // > 0: the split dimension (N of a column split, K of a row split) is cut into whole blocks of
  // this many rows or columns, ⌈blocks / tp_size⌉ per rank and the last ranks holding what remains
  // (vLLM's gpt-oss loader cuts the MXFP4 experts' intermediate size in 32-blocks this way); the
  // size must still divide it, as vLLM asserts, and a rank left without a block is an error.
  // 0: tp_size equal slices.
  int64_t split_block = 0;
  // Where the projection lies in tensors that hold every expert of its layer; nullopt: the
  // checkpoint tensors under its prefix are its own.
  std::optional<StackedExpert> stacked;
};

// Where one rank's slice lies in the whole layer: the whole layer's row of each of the rank's
// rows (legs in order, each leg's slice), its columns, and whether it adds the bias (every rank
// of a column or replicated layer, rank 0 of a row-parallel one).
struct RankSlice {
  std::vector<int64_t> rows;  // [this rank's N]
  int64_t first_col = 0;
  int64_t cols = 0;
  bool bias = false;
};
// The slice of `request`'s rank, with the checks every spec makes (legs that add up, sizes that
// divide); errors name the layer and the dimension.
Result<RankSlice> RankSliceOf(const AllocationRequest& request);

// An MoE request (experts > 0, shape = one expert's [I, H]) as each expert's projections are
// loaded: gate and up [I, H] (column-parallel) and down [H, I] (row-parallel), each a plain
// request of its own, in that order. Every expert holds its own parameters per projection, in the
// family's canonical layout, as a dense layer of that shape would: act-order checkpoints give each
// expert its own g_idx, which one GEMM over stacked experts could not share, and block-fp8 experts
// whose I is not a multiple of the block keep one scale grid per projection as stored.
// StorageBytes counts `experts` such triples. `request.leg_names` names the three legs when given
// (gpt-oss's two, gate_up_proj and down_proj, name the gate and up halves alike). With
// `request.stacked`, each projection's copy says which rows are its own: gate_up_proj's gate rows
// 0::2 and up rows 1::2, all of down_proj's (the expert index stays the caller's). Errors name the
// layer.
Result<std::vector<AllocationRequest>> ExpertProjectionRequests(const AllocationRequest& request);

// A layer's parameters in the layout of `key`, for this rank.
// Layouts of a layer's parameters that its kernels derive once and keep beside them (a kernel's
// prepack: rows interleaved, codes reordered), one per owner (the kernel), made on first use under
// a lock; moved with the parameters. The parameters must not change once a kernel has packed them.
class ParamPacks {
 public:
  ParamPacks() = default;
  ParamPacks(ParamPacks&& other) noexcept { packs_ = other.Take(); }
  ParamPacks& operator=(ParamPacks&& other) noexcept {
    if (this != &other) {
      auto packs = other.Take();
      std::lock_guard<std::mutex> lock(mu_);
      packs_ = std::move(packs);
    }
    return *this;
  }

  // `owner`'s pack of type T, made by `make()` (a std::unique_ptr<T>) the first time.
  template <typename T, typename Make>
  const T& Get(const void* owner, Make make) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, pack] : packs_) {
      if (key == owner) return *static_cast<const T*>(pack.get());
    }
    std::shared_ptr<const T> made = make();
    const T& result = *made;
    packs_.emplace_back(owner, std::move(made));
    return result;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return packs_.size();
  }

 private:
  using Packs = std::vector<std::pair<const void*, std::shared_ptr<const void>>>;
  Packs Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(packs_, {});
  }

  mutable std::mutex mu_;
  mutable Packs packs_;
};

struct LinearParams {
  AllocationRequest request;
  SpecKey key;
  int64_t rows = 0;                           // this rank's N
  int64_t cols = 0;                           // this rank's K
  std::vector<int64_t> leg_rows;              // this rank's rows per leg (one entry when not fused)
  std::array<ParamTensor, kSlotCount> slots;  // empty where the family has no such tensor
  // Per-leg checkpoint scalars kept between Load and ProcessAfterLoading (per-tensor weight
  // scales, static input scales); empty afterwards.
  std::vector<float> leg_weight_scales;
  std::vector<float> leg_input_scales;
  bool loaded = false;
  bool processed = false;
  // A layer quantized at load (scheme.online): max |W' − W| / max |W| over the whole layer, W the
  // checkpoint's high-precision weights and W' the quantized ones dequantized; nullopt otherwise.
  std::optional<double> quantization_error;
  ParamPacks packs;  // what kernels derived from the tensors above (kernels.h)

  ParamTensor& tensor(Slot slot) { return slots[static_cast<size_t>(slot)]; }
  const ParamTensor& tensor(Slot slot) const { return slots[static_cast<size_t>(slot)]; }
  // Bytes the weight storage takes: every slot but the static activation's (input scale and
  // offset). Equals StorageBytes(key, request) in materialize.h.
  int64_t WeightBytes() const;
};

}  // namespace quantpath
