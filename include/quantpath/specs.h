// quantpath specs: physical weight layouts, one self-registering row per spec family, and how each
// loads from a checkpoint.
//
// Goals: a spec's identity is the value SpecKey (family + parameters); its spec_id string exists
// only at the edges (plan JSON, CLI, messages), written and read by the family's own row. A family
// row says everything the rest of the library needs about a layout — its id grammar, the tensor
// slots it stores, its bytes, its factory, its tolerance against the fp64 reference, and which
// schemes on which devices it stores (materialize's candidates) — so adding a family is one file.
// A WeightSpec allocates a layer's parameters in one canonical layout from an AllocationRequest,
// loads them from the checkpoint source layout its LoadFacts name, and converts after loading so
// that kernels see one layout per SpecKey. A double-precision dequantization, keyed by source
// layout and written apart from the specs, is the oracle of `run` and of the kernel tests.
// Non-goals: config files and dialects (importers), choosing among candidates (materialize),
// matrix products (kernels).
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

namespace quantpath {

// ---------------------------------------------------------------------------------------------
// Names as values

// A registered row named by its name's 64-bit FNV-1a hash: a value that any file can spell
// (`constexpr SpecFamily kFp8Block{"fp8_block"}`) without a central enum. Each registry maps it to
// its row and rejects two names with one hash; `Tag` keeps one registry's ids from another's.
template <typename Tag>
class NameHash {
 public:
  constexpr NameHash() = default;
  explicit constexpr NameHash(std::string_view name) : id_(Fnv1a(name)) {}
  constexpr uint64_t id() const { return id_; }
  constexpr bool valid() const { return id_ != 0; }
  constexpr bool operator==(const NameHash&) const = default;

 private:
  static constexpr uint64_t Fnv1a(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
    return h;
  }
  uint64_t id_ = 0;
};

// A spec family (its row: SpecFamilyRow, below).
using SpecFamily = NameHash<struct SpecFamilyTag>;
// An activation kind (its row: ActivationKindRow, activation_kinds.h).
using ActivationKind = NameHash<struct ActivationKindTag>;

// ---------------------------------------------------------------------------------------------
// Activation quantization: how a spec's kernels quantize X before the product. It is part of the
// dispatcher key because a kernel either fuses it or not. Each way of quantizing X is a
// registered activation kind (activation_kinds.h), which makes the ActivationQuant of the scheme
// inputs it claims and rounds X for the reference kernels and the fp64 reference.

enum class ActMode : uint8_t {
  kNone,              // X stays in high precision (weight-only quantization, bf16 layers)
  kDynamicPerToken,   // one scale per row of X, computed at run time
  kDynamicPerTensor,  // one scale for all of X, computed at run time
  kDynamicGroup,      // one scale per row and per group_size columns of X (DeepSeek 1×128)
  kStaticPerTensor,   // the checkpoint's input_scale (the max over fused legs)
};

struct ActivationQuant {
  ActMode mode = ActMode::kNone;
  int64_t group_size = 0;           // kDynamicGroup only
  QDType dtype = QDType::kFP8E4M3;  // what X is rounded to (fp8, int8, nvfp4, mxfp8); unused
                                    // for kNone
  bool symmetric = true;            // false: a zero point / input offset as well
  // The kind, where the fields above do not name it: NVFP4 activations whose rows are each
  // divided by their own global (nvfp4_family.h) are `nvfp4_per_token_global`, those against the
  // checkpoint's input global have no id. Empty for every kind those fields name.
  ActivationKind kind{};
  bool operator==(const ActivationQuant&) const = default;
  // Whether X is rounded to `to` at run time, one scale per row of X and no zero point.
  bool SymmetricPerToken(QDType to) const {
    return mode == ActMode::kDynamicPerToken && dtype == to && symmetric;
  }
  // Its kind's name for it: "none", "fp8 dynamic per-token", "int8 static per-tensor asym",
  // "fp8 dynamic group 128", …
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
// Spec identity

// Where a family's scales sit when it has layout variants (NVFP4 on the CPU vs Blackwell).
enum class ScaleVariant : uint8_t {
  kNone,
  kLinear,      // scales [N, K / group], row-major
  kTiled128x4,  // scales padded to [ceil(N, 128), ceil(K / group, 4)] and swizzled
};

// The physical identity of a weight layout: the family and its parameters, as a hashable value.
// Fields a family does not use stay zero / false. The expert count and the activation mode are
// not part of it (the request and the dispatcher key carry those).
struct SpecKey {
  SpecFamily family;
  int bits = 0;                    // element bits, for families with several (int2 … int8)
  int64_t group = 0;               // elements per scale along K (groups, micro-blocks)
  std::array<int64_t, 2> block{};  // 2-D scale blocks [rows, cols] (fp8 block)
  bool zero_point = false;         // asymmetric: stored zero points
  ScaleVariant scales = ScaleVariant::kNone;
  bool act_order = false;  // kernels permute X by g_idx at run time
  bool operator==(const SpecKey&) const = default;
  // The spec_id, written by the family's row ("fp8_block_128_128"); "?" for an unregistered family.
  std::string ToId() const;
};
struct SpecKeyHash {
  size_t operator()(const SpecKey& key) const;
};

// Parses a spec_id with every registered family's grammar. An unknown family or malformed
// parameters are an error listing the registered grammars.
Result<SpecKey> ParseSpecId(std::string_view spec_id);

// ---------------------------------------------------------------------------------------------
// Parameters

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

// ---------------------------------------------------------------------------------------------
// WeightSpec

class WeightSpec {
 public:
  virtual ~WeightSpec() = default;
  virtual const SpecKey& key() const = 0;
  // How this spec's kernels quantize activations.
  virtual const ActivationQuant& activation() const = 0;
  // The checkpoint source layout this spec loads from (materialize hands over the scheme's).
  virtual const LoadFacts& facts() const = 0;

  // Allocates zeroed parameters for `request`. Errors name the layer: shapes that do not add up,
  // tensor-parallel sizes that do not divide, fused legs the layout cannot hold.
  virtual Result<LinearParams> Allocate(const AllocationRequest& request) const = 0;
  // Bytes the parameters of `request` hold once processed (LinearParams::WeightBytes()), with
  // Allocate's checks, without allocating.
  virtual Result<int64_t> StorageBytes(const AllocationRequest& request) const = 0;
  // Loads the layer from `checkpoint` in the source layout of facts(): `leg_prefixes` holds one
  // module prefix per fused leg, in leg order ("model.layers.0.self_attn.q_proj", …), or one
  // prefix when not fused. A source layout the family does not read is an error naming it. Errors
  // name the tensor and the layer.
  virtual Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
                      LinearParams* params) const = 0;
  // Converts loaded parameters into the canonical layout kernels read.
  virtual Status ProcessAfterLoading(LinearParams* params) const = 0;
  // The experts of one MoE layer, loaded and not yet processed: experts[e] holds expert e's
  // projections in ExpertProjectionRequests' order (gate, up, down). A family whose engines share
  // a per-layer scalar across experts, or across an expert's gate and up, sets it here in the
  // kept leg scalars, before ProcessAfterLoading reads them; by default nothing is shared.
  virtual Status ShareAcrossExperts(std::span<std::vector<LinearParams>> experts) const {
    (void)experts;
    return {};
  }
};

// ---------------------------------------------------------------------------------------------
// Spec family rows

// One materialize candidate: a family stores the schemes `scheme` accepts on the devices `device`
// accepts, as the key `key` builds (an error for schemes the family cannot hold consistently).
// Candidates are tried by descending priority, then family name.
struct SpecCandidate {
  std::string_view accepts;  // the schemes, in words ("fp8 e4m3 weights with 2-D block scales")
  std::string_view devices;  // the devices, in words ("any", "sm100 and newer")
  bool (*scheme)(const QuantScheme& scheme);
  bool (*device)(const DeviceCaps& device);
  Result<SpecKey> (*key)(const QuantScheme& scheme);
  int priority = 0;
};

class SpecFamilyRow {
 public:
  virtual ~SpecFamilyRow() = default;
  virtual SpecFamily family() const = 0;
  // The family's name, which starts each of its spec_ids ("fp8_block").
  virtual std::string_view name() const = 0;
  // The spec_id grammar in words, for messages and docs ("fp8_block_<bn>_<bk>").
  virtual std::string_view grammar() const = 0;
  // The key `spec_id` names, or nullopt when it is not one of this family's ids.
  virtual std::optional<SpecKey> Parse(std::string_view spec_id) const = 0;
  virtual std::string Format(const SpecKey& key) const = 0;
  // The slots the family stores for `key`, with the static activation's slots when `act` is static.
  virtual std::vector<Slot> Slots(const SpecKey& key, const ActivationQuant& act) const = 0;
  // Bytes of one [rows, cols] weight of `key`, scales included; `dense_bits` is the element width
  // of families whose dtype comes from the request's params dtype.
  virtual int64_t BytesFor(const SpecKey& key, int64_t rows, int64_t cols,
                           int dense_bits) const = 0;
  // The spec of `key`; kUnsupported when this build cannot load the family yet.
  virtual Result<std::unique_ptr<WeightSpec>> Make(const SpecKey& key, const ActivationQuant& act,
                                                   const LoadFacts& facts) const = 0;
  // rel = max |y − y_ref| / max |y_ref| a kernel of this family may reach against the fp64
  // reference, with X in high precision (kNone) or quantized (any other mode).
  virtual double Tolerance(const SpecKey& key, ActMode mode) const = 0;
  virtual std::vector<SpecCandidate> Candidates() const = 0;
};

// Registers a family row from its own file, before main():
//   const SpecFamilyRegistrar kRegister(std::make_unique<Fp8BlockFamily>());
// A second row with the same name or hash is kept out and reported by RegisteredFamilies().
struct SpecFamilyRegistrar {
  explicit SpecFamilyRegistrar(std::unique_ptr<SpecFamilyRow> row);
};
// The registered rows, by name; an error when two rows collided at registration.
Result<std::vector<const SpecFamilyRow*>> RegisteredFamilies();
// Every registered candidate with its row, by descending priority (rows by name within one
// priority): materialize's search order. Built once and kept until the next registration, so a
// registration after main() (a plugin) must not race a search.
struct RegisteredCandidate {
  const SpecFamilyRow* row;
  SpecCandidate candidate;
};
Result<std::span<const RegisteredCandidate>> RegisteredCandidates();
// The row of `family`, or nullptr.
const SpecFamilyRow* FindFamily(SpecFamily family);
// The row of `key`'s family; an unregistered family is an error naming it.
Result<const SpecFamilyRow*> FamilyRowFor(const SpecKey& key);

// The spec of `key` through its family's row. An unregistered family is an error, never a
// fallback to another family.
Result<std::unique_ptr<WeightSpec>> MakeSpec(const SpecKey& key, const ActivationQuant& act = {},
                                             const LoadFacts& facts = {});
// Bytes of one [rows, cols] weight of `key` (its row's BytesFor); an unregistered family is an
// error.
Result<int64_t> LayoutBytes(const SpecKey& key, int64_t rows, int64_t cols, int dense_bits);
// Bytes `request` takes in the layout of `key` on this rank (its row's BytesFor over the rank's
// slice, plus the bias), with the request checks every spec makes but without a spec: families
// whose loader is not in this build still have sizes. Spec-specific checks (fp8 block alignment)
// are the spec's StorageBytes.
Result<int64_t> LayoutStorageBytes(const SpecKey& key, const AllocationRequest& request);
// The tolerance of kernels of `key` against the fp64 reference (its row's Tolerance); 0 for an
// unregistered family.
double ToleranceFor(const SpecKey& key, ActMode mode);

// ---------------------------------------------------------------------------------------------
// Quantizing at load (scheme.online): a bf16 / fp16 / fp32 checkpoint whose plan asks for a
// quantized scheme. Such a scheme's weight source layout is kDense, and materialize makes its spec
// with MakeSpecQuantizingAtLoad: the family's spec behind the quantizer registered for its key
// (src/specs/online/), whose Load reads every
// leg whole, quantizes it as the family's own checkpoints store it (round to nearest even, the
// format's scale rule) and hands those tensors to the family's loader, so a tensor-parallel rank
// holds its slice of the whole layer's codes and scales.

// A scheme `--online` names.
struct OnlineTarget {
  QuantScheme scheme;        // online, weight source layout kDense
  std::string_view refusal;  // non-empty: known and refused, and why
  std::string name;  // the scheme's CanonicalName() without "-online" (filled when registered)
};
// The registered targets, by name.
std::vector<OnlineTarget> OnlineTargets();
// The scheme of the target `name`. An unknown name is an error naming it and listing the targets; a
// refused target's error says why.
Result<QuantScheme> OnlineTargetNamed(std::string_view name);
// Whether a quantizer writes `key`'s layout at load for kernels that quantize X as `act` says.
bool QuantizesAtLoad(const SpecKey& key, const ActivationQuant& act);
// The spec of `key` that quantizes the checkpoint's high-precision weights at load (`facts`'
// layout kDense): the family's spec behind the quantizer registered for (key, act). kUnsupported
// naming the spec when no quantizer is registered.
Result<std::unique_ptr<WeightSpec>> MakeSpecQuantizingAtLoad(const SpecKey& key,
                                                             const ActivationQuant& act,
                                                             const LoadFacts& facts);

// A layer quantized as quantizing at load does, for writing it out (`quantize`): the tensors of
// the quantizer's source layout `layout`, leg by leg in QuantizedLayerHeaders' order, and the
// weights' max |W' − W| / max |W|.
struct QuantizedTensors {
  SourceLayout layout = SourceLayout::kDense;
  std::vector<Checkpoint::OwnedTensor> tensors;
  double error = 0;
};
// The layer of `request` (unsplit) whose legs' high-precision `.weight`s are in `checkpoint`
// under `leg_prefixes`, quantized by the quantizer of (key, act). Errors as
// MakeSpecQuantizingAtLoad's Load: no quantizer, a weight missing, misshapen, not BF16 / F16 /
// F32, or not finite (naming the tensor and the layer).
Result<QuantizedTensors> QuantizeLayerTensors(const SpecKey& key, const ActivationQuant& act,
                                              const Checkpoint& checkpoint,
                                              const AllocationRequest& request,
                                              const std::vector<std::string>& leg_prefixes);
// The tensors QuantizeLayerTensors writes, described without reading or computing them.
struct QuantizedHeaders {
  SourceLayout layout = SourceLayout::kDense;
  std::vector<TensorHeader> tensors;
};
Result<QuantizedHeaders> QuantizedLayerHeaders(const SpecKey& key, const ActivationQuant& act,
                                               const AllocationRequest& request,
                                               const std::vector<std::string>& leg_prefixes);

// ---------------------------------------------------------------------------------------------
// Checkpoint source layouts: the tensor names of every layout, in one table (loaders and `check`
// read it; nothing guesses a layout from which names happen to exist).

// One leg (or one expert projection) of a layer as its source layout stores it, whole (every
// rank's rows and columns): what the layout's rules derive each tensor's dtype and shape from.
struct SourceLeg {
  int64_t rows = 0;     // N
  int64_t cols = 0;     // K
  int64_t experts = 0;  // layouts that stack every expert in one tensor (StacksExperts): E
  TensorQuant weight;   // the scheme's weight quantization: dtype, scale granularity, load facts
};

// What one source tensor of a leg must be: one of `dtypes` (any when empty), and one of `shapes`,
// or, with `any_shape`, any shape holding as many elements as shapes[0] (producers write scalars
// as [] or [1] and per-row vectors as [N] or [N, 1]).
struct SourceTensorRule {
  std::vector<StDtype> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  bool any_shape = false;
  bool AcceptsDtype(StDtype dtype) const;
  bool AcceptsShape(const std::vector<int64_t>& shape) const;
  std::string DtypesText() const;  // "F16, BF16 or F32"
  std::string ShapesText() const;  // "[2, 128]", "[128, 1] or [128]", "128 elements"
};

struct SourceTensor {
  // The parameter slot the tensor loads into; nullopt for tensors read only to validate or
  // decode others (compressed-tensors `weight_shape`, bitsandbytes `quant_map`).
  std::optional<Slot> slot;
  // What follows the module prefix, separator included: ".weight_scale_inv", ".qweight",
  // ".weight.absmax", "_blocks" (gpt-oss experts).
  std::string_view suffix;
  bool required;  // false: present only in some checkpoints of the layout, or only for some schemes
  // Optional, yet read by the engines whenever present, even where the canonical layout keeps no
  // slot for it (GPTQ's g_idx without act-order, ModelSlim's weight_offset): such a tensor is
  // consumed by every loaded layer of the layout, never an unconsumed extra.
  bool always_read = false;
  // The tensor's dtype and shape for a leg, as its producers write it and the loaders read it;
  // null, or nullopt for a leg, where the layout does not fix them.
  std::optional<SourceTensorRule> (*rule)(const SourceLeg& leg) = nullptr;
};
// The tensors of `layout` per module (leg) prefix. Static activation tensors are listed with
// required = false: whether a layer needs them depends on its scheme. Every layout also has the
// optional ".bias" of the layer itself.
std::span<const SourceTensor> SourceTensors(SourceLayout layout);
// The checkpoint suffix of `slot` in `layout`, or nullopt when the layout has no such tensor
// (the bias is ".bias" unless the layout names another).
std::optional<std::string_view> SourceSuffix(SourceLayout layout, Slot slot);
// The rule of `layout`'s tensor of `slot` for `leg`; nullopt where the layout has no such tensor
// or does not fix it.
std::optional<SourceTensorRule> SourceRule(SourceLayout layout, Slot slot, const SourceLeg& leg);
// Whether `layout` holds every expert of a layer in one tensor per projection (gpt-oss's
// `_blocks` / `_scales`), so that its loaders read a projection through StackedExpert.
bool StacksExperts(SourceLayout layout);

// ---------------------------------------------------------------------------------------------
// Double-precision reference: reads a layer's checkpoint tensors directly, without a spec, and
// dequantizes them to double. `run` and the kernel tests compare kernels against it.

struct ReferenceLayer {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> weight;         // [rows, cols], dequantized
  std::vector<double> bias;           // [rows], or empty
  std::optional<double> input_scale;  // static activation scale: the max over the legs (NVFP4
                                      // activations: the layer's input divisor)
  // Static int8 activations: the zero point (asymmetric), with input_scale the one grid of all
  // the legs (w8a8_family.h's CombineStaticInputs; ModelSlim's legs share theirs).
  std::optional<double> input_zero_point;
  // [cols] multipliers of X before it is quantized (ModelOpt W4A8_AWQ `pre_quant_scale`), or
  // empty; the legs of a fused layer share theirs.
  std::vector<double> input_prescale;
};

// One leg's weight, dequantized: what a reference entry returns.
struct ReferenceLeg {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> weight;  // [rows, cols]
};

// A reference dequantizer for one checkpoint source layout, registered from its own file:
//   const ReferenceRegistrar kRegister(SourceLayout::kFp8ScaleInv, &DequantizeFp8Leg);
using ReferenceLegFn = Result<ReferenceLeg> (*)(const Checkpoint& checkpoint,
                                                const QuantScheme& scheme, std::string_view layer,
                                                const std::string& prefix);
// The same for a layout that stacks every expert of a layer (StacksExperts): `expert` says which
// expert and which of its rows are the projection's.
using StackedReferenceLegFn = Result<ReferenceLeg> (*)(const Checkpoint& checkpoint,
                                                       const QuantScheme& scheme,
                                                       std::string_view layer,
                                                       const std::string& prefix,
                                                       const StackedExpert& expert);
struct ReferenceRegistrar {
  ReferenceRegistrar(SourceLayout layout, ReferenceLegFn dequantize);
  ReferenceRegistrar(SourceLayout layout, StackedReferenceLegFn dequantize);
};

// Dequantizes the legs of one layer with the entry of the scheme's source layout
// (scheme.weight.load.layout), stacking legs in order, and reads the static inputs of the
// activation kind that claims scheme.input (ActivationKindRow::ReadReferenceInputs), the input
// prescale (which the legs must share) and biases. A layout without an entry is an error
// naming it. `layer` names the layer in errors. `stacked`: one expert's projection of a layout
// that stacks experts (its one prefix names the stacked tensors), read through the layout's
// stacked entry, its bias rows too; a stacked layout without it, or a plain one with it, is an
// error naming the layout.
Result<ReferenceLayer> DequantizeReference(
    const Checkpoint& checkpoint, const QuantScheme& scheme, std::string_view layer,
    const std::vector<std::string>& leg_prefixes, bool bias,
    const std::optional<StackedExpert>& stacked = std::nullopt);

// DequantizeReference of one expert projection (`prefix`, `stacked` as for DequantizeReference)
// of an MoE layer. The engines quantize
// the input of every expert's gate and up, and of every expert's down, against one NVFP4 global
// (nvfp4_family.h, Nvfp4SharedExpertInput), so NVFP4 activations take their divisor from
// `input_peers`, that projection's prefixes in every expert; other activations keep the
// projection's own scales, as their specs load them (ActivationKindRow::ShareExpertInputs).
Result<ReferenceLayer> DequantizeExpertReference(const Checkpoint& checkpoint,
                                                 const QuantScheme& scheme, std::string_view layer,
                                                 const std::string& prefix,
                                                 const std::vector<std::string>& input_peers,
                                                 bool bias,
                                                 const std::optional<StackedExpert>& stacked = {});

// The rank's slice of a whole layer's reference (`whole` from DequantizeReference, `slice` from
// RankSliceOf): its rows and columns of the weight, the bias where the rank adds it, its columns
// of the input prescale, the same input scale and zero point.
ReferenceLayer SliceReference(const ReferenceLayer& whole, const RankSlice& slice);
// The rank's slice of `whole` (its `request`, of a scheme of `facts` and `act`) as the engines
// compute on that rank: SliceReference, and for a ModelSlim static layer's row-parallel rank its
// quant_bias share (−offset · Σ_k q over all of K is added by rank 0 only, and no rank subtracts
// the offset's share of its own columns, w8a8_spec.cc), so that rank r's product is its columns'
// plus offset · s_x · (Σ_{its columns} W − [r = 0] · Σ_k W) per row, which the ranks' sum cancels.
ReferenceLayer RankReference(const ReferenceLayer& whole, const RankSlice& slice,
                             const AllocationRequest& request, const LoadFacts& facts,
                             const ActivationQuant& act);

// Quantizes X [m, k] as the kind of `act` rounds it for the fp64 reference
// (ActivationKindRow::RoundReference, activation_kinds.h) and returns the dequantized values (X
// itself for kNone), in double: fp8 e4m3 with the conventions above, int8 and int4 as their
// kernels do it, their fp32 operations reproduced exactly (a double product or quotient of two
// floats rounds to the fp32 result; src/specs/activations/), NVFP4 and MX by their families'
// rules. `static_scale` and `static_zero_point` are the layer's static inputs (ReferenceLayer's
// input_scale and input_zero_point: NVFP4's input divisor) where the kind reads them.
std::vector<double> QuantizeActivationsReference(
    std::span<const double> x, int64_t m, int64_t k, const ActivationQuant& act,
    std::optional<double> static_scale, std::optional<double> static_zero_point = std::nullopt);

// Y [m, ref.rows] = X' · W_refᵀ + bias in double, X' = X [m, ref.cols] as the layer's kernels
// read it: multiplied by the input prescale where the layer has one (one fp32 product per element,
// as the kernels take it, so that both round the same values), then quantized as `act` says with
// the layer's static scale and zero point (QuantizeActivationsReference).
std::vector<double> ReferenceForward(const ReferenceLayer& ref, const ActivationQuant& act,
                                     std::span<const double> x, int64_t m);

// Rounds to the nearest e4m3fn value (ties to even), saturating at ±448, in double.
double RoundToE4M3(double value);

}  // namespace quantpath
