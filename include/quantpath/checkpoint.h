// quantpath checkpoint: safetensors files and sharded folders, memory-mapped and validated.
//
// Goals: zero-copy access to tensors of untrusted files after strict validation (header length,
// JSON, dtype × shape = byte length, offsets inside the file, contiguous and non-overlapping, no
// duplicate names, index ↔ shard agreement); every failure names the file and the tensor.
// Non-goals: kernels, quantization formats, writing checkpoints (see tools for writers).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "quantpath/base.h"

namespace quantpath {

// safetensors dtypes, sized in bits (F4 and F6 are sub-byte). The FNUZ fp8 variants are those of
// safetensors 0.8.
// clang-format off
enum class StDtype : uint8_t {
  kBool, kU8, kI8, kF8E5M2, kF8E4M3, kF8E8M0, kI16, kU16, kF16, kBF16,
  kI32, kU32, kF32, kF64, kI64, kU64, kF4, kF6E2M3, kF6E3M2, kC64,
  kF8E4M3Fnuz, kF8E5M2Fnuz,
};
// clang-format on
std::string_view StDtypeName(StDtype dtype);  // "F8_E4M3", "BF16", …
std::optional<StDtype> ParseStDtype(std::string_view name);
int StDtypeBits(StDtype dtype);
// Whether `dtype` is BF16, F16 or F32: the dtypes of a tensor that is not quantized.
constexpr bool IsUnquantized(StDtype dtype) {
  return dtype == StDtype::kBF16 || dtype == StDtype::kF16 || dtype == StDtype::kF32;
}
// Bytes taken by `elements` values of `dtype`; nullopt when `elements` is negative, the size
// overflows, or the bits do not end on a byte boundary (an odd number of F4 values: the reference
// implementation rejects those too, as "MisalignedSlice").
std::optional<uint64_t> StDtypeByteLength(StDtype dtype, int64_t elements);

// A tensor's dimensions, as a vector of int64_t: up to kInline of them held in place (a model's
// tensors have at most five), more on the heap, so that reading the headers of a checkpoint of
// 150k tensors allocates no shape.
class TensorShape {
 public:
  static constexpr size_t kInline = 6;
  using value_type = int64_t;
  using size_type = size_t;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;
  using reference = int64_t&;
  using const_reference = const int64_t&;

  TensorShape() = default;
  TensorShape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  TensorShape(const std::vector<int64_t>& dims) {  // NOLINT: a vector is a shape
    assign(dims.data(), dims.data() + dims.size());
  }
  operator std::vector<int64_t>() const { return {begin(), end()}; }  // NOLINT

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return size_ <= kInline ? dims_.data() : heap_.data(); }
  const int64_t* data() const { return size_ <= kInline ? dims_.data() : heap_.data(); }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t front() const { return data()[0]; }
  int64_t back() const { return data()[size_ - 1]; }
  void reserve(size_t n) {
    if (n > kInline) heap_.reserve(n);
  }
  void push_back(int64_t dim) {
    if (size_ < kInline) {
      dims_[size_++] = dim;
      return;
    }
    if (size_ == kInline) heap_.assign(dims_.begin(), dims_.end());
    heap_.push_back(dim);
    ++size_;
  }
  void clear() {
    size_ = 0;
    heap_.clear();
  }
  void assign(const int64_t* first, const int64_t* last) {
    clear();
    reserve(static_cast<size_t>(last - first));
    for (; first != last; ++first) push_back(*first);
  }
  friend bool operator==(const TensorShape& a, const TensorShape& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::array<int64_t, kInline> dims_{};
  std::vector<int64_t> heap_;  // every dimension, once there are more than kInline
  size_t size_ = 0;
};

struct TensorInfo {
  std::string name;
  StDtype dtype = StDtype::kU8;
  TensorShape shape;
  uint64_t begin = 0;  // byte offsets relative to the start of the data section
  uint64_t end = 0;
  // The product of the shape; -1 when it is negative or overflows (never for a parsed tensor).
  int64_t Elements() const;
};

// A tensor's entry in a header: its name, dtype and shape.
struct TensorHeader {
  std::string name;
  StDtype dtype = StDtype::kF32;
  std::vector<int64_t> shape;
  friend bool operator==(const TensorHeader&, const TensorHeader&) = default;
};
// The bytes dtype × shape takes, or nullopt when the shape is negative, overflows or ends inside
// a byte (an odd number of F4 values).
std::optional<uint64_t> TensorByteLength(const TensorHeader& tensor);

// A validated tensor: its description and its bytes (which may be unaligned; read through
// CopyTensor, never by casting the pointer).
struct TensorView {
  const TensorInfo* info = nullptr;
  std::string_view file;
  std::span<const std::byte> bytes;
};

// The header's `__metadata__` (string → string), in document order.
using SafetensorsMetadata = std::vector<std::pair<std::string, std::string>>;

// Parses and validates a safetensors header against a file of `file_size` bytes. `bytes` is the
// whole file or at least its first 8 + header_length bytes. Used by SafetensorsFile and by tests.
// Returns the tensors in file order (by offset); sets `*data_start` to the offset of the data
// section and, when `metadata` is given, fills it. Errors name `file` and the tensor.
// Stricter than the reference implementation in two ways, both from DESIGN.md: the header must
// begin with '{' (no leading whitespace) and duplicate names are rejected (serde keeps the last).
Result<std::vector<TensorInfo>> ParseSafetensorsHeader(std::span<const std::byte> bytes,
                                                       uint64_t file_size, std::string_view file,
                                                       uint64_t* data_start,
                                                       SafetensorsMetadata* metadata = nullptr);

// A safetensors file's header alone, read (never mapped) and validated as ParseSafetensorsHeader
// does; errors name the file.
struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // in file order
  SafetensorsMetadata metadata;
  uint64_t data_start = 0;
};
Result<SafetensorsHeader> ReadSafetensorsHeader(const std::filesystem::path& path);

class NameIds;

class SafetensorsFile {
 public:
  static Result<std::shared_ptr<const SafetensorsFile>> Open(const std::filesystem::path& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in file order
  const SafetensorsMetadata& metadata() const { return metadata_; }
  // The tensor named `name`, or nullptr.
  const TensorInfo* Find(std::string_view name) const;
  // `info` must be one of tensors(). The view lives as long as this file.
  TensorView View(const TensorInfo& info) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  std::vector<TensorInfo> tensors_;
  SafetensorsMetadata metadata_;
  std::unique_ptr<const NameIds> by_name_;  // each name's index in tensors_
  const std::byte* map_ = nullptr;
  size_t map_size_ = 0;
  uint64_t data_start_ = 0;
};

// A model folder's weights: `model.safetensors.index.json` with its shards, or else
// `model.safetensors`, or else the folder's *.safetensors files. With an index (which wins, as in
// vLLM), Open validates the index and that every shard exists, and each shard's header is read and
// checked against the index on first access (Get) or by Validate; otherwise every file is opened
// by Open. Copies share the opened files; views stay valid while any copy lives. The const
// methods are thread-safe.
class Checkpoint {
 public:
  // Errors name the folder, the index, the shard and the tensor. A folder without weights is
  // kNotFound.
  static Result<Checkpoint> Open(const std::filesystem::path& dir);

  // A tensor held in memory: little-endian values, exactly dtype × shape bytes.
  struct OwnedTensor {
    std::string name;
    StDtype dtype = StDtype::kU8;
    std::vector<int64_t> shape;
    std::vector<std::byte> bytes;
  };
  // A checkpoint of tensors computed rather than read (a layer quantized at load hands its codes
  // and scales to its family's loader this way); `label` stands for the folder in messages and
  // views. Errors: a repeated or empty name, bytes that are not dtype × shape.
  static Result<Checkpoint> FromTensors(std::string label, std::vector<OwnedTensor> tensors);

  std::vector<std::string> TensorNames() const;  // sorted
  bool Has(std::string_view name) const;
  Result<TensorView> Get(std::string_view name) const;
  // Opens every shard and checks it against the index (each listed tensor is in its shard, each
  // tensor of a shard is listed for it); adds a warning when the index's metadata.total_size
  // differs from the tensors' bytes. The first error found, in shard order.
  Status Validate();
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The index's metadata.total_size (what the publisher says the tensors take), when the folder
  // has an index that gives a usable one.
  std::optional<uint64_t> IndexTotalSize() const;

 private:
  Checkpoint() = default;  // only Open makes one, so impl_ is never null
  struct Impl;
  std::shared_ptr<Impl> impl_;
  std::vector<std::string> warnings_;
};

// ---------------------------------------------------------------------------------------------
// Auditing a folder's weights (`quantpath check`): every problem at once, from the index and the
// headers alone, where Checkpoint stops at the first.

enum class CheckpointProblemKind : uint8_t {
  kUnreadableShard,   // a structural error of one file: header, offsets, dtype × shape
  kMissingShard,      // the index places tensors in a shard that is not a file
  kNotInIndex,        // a tensor in a shard that the index does not list
  kIndexedElsewhere,  // a tensor in a shard that the index places in another shard
  kNotInShard,        // the index places a tensor in a shard that does not hold it
  kInTwoFiles,        // without an index: one name in two files
  kTotalSize,         // warning: the index's metadata.total_size is not the tensors' bytes
  kIgnoredFile,       // warning: a .safetensors file that is not part of the weights
  kEmptyIndex,        // warning: the index lists no tensors
};
std::string_view CheckpointProblemKindName(CheckpointProblemKind kind);  // "missing-shard", …

struct CheckpointProblem {
  CheckpointProblemKind kind = CheckpointProblemKind::kUnreadableShard;
  bool error = true;    // false: a warning
  std::string file;     // the shard or index concerned
  std::string tensor;   // empty when the problem is the file's
  std::string message;  // names the file and the tensor
};

// A tensor of the weights as its header describes it; for a shard that is absent or unreadable,
// as the index names it (no dtype, no shape).
struct AuditedTensor {
  std::string_view name;  // held by the audit's by_name: valid while the audit or a copy lives
  uint32_t file = 0;      // index into CheckpointAudit::files
  std::optional<StDtype> dtype;
  TensorShape shape;
  uint64_t begin = 0;  // its bytes in the data section, as TensorInfo's (0, 0 when not read)
  uint64_t end = 0;
};

struct CheckpointAudit {
  std::string index;                        // its path; empty without one
  std::vector<std::string> files;           // the shards (or files) the tensors were found in
  std::vector<uint64_t> data_starts;        // per file: where its data section begins (0: unread)
  std::vector<AuditedTensor> tensors;       // shard by shard in name order, header order within
  std::vector<CheckpointProblem> problems;  // in the order found
  // The shards whose headers could not be read (missing, broken, or every shard absent beside
  // its index, which is no problem of its own): their tensors are known by name only.
  std::vector<std::string> unread_files;
  // The tensor named `name` (one per name: a name found twice keeps the first), or nullptr.
  const AuditedTensor* Find(std::string_view name) const;
  const std::string& FileOf(const AuditedTensor& t) const { return files[t.file]; }

  // Names to ids (the index's, then those of tensors it does not list) and per id the index into
  // `tensors`, or kNoTensor for a name the index lists but no header read holds; built with them
  // by AuditCheckpoint.
  static constexpr uint32_t kNoTensor = UINT32_MAX;
  std::shared_ptr<const NameIds> by_name;
  std::vector<uint32_t> tensor_of;
};
// Reads the index and every shard's header, never tensor data. A folder without weights is
// kNotFound and an index that is not a readable weight map is its error; every other problem is
// in the audit.
Result<CheckpointAudit> AuditCheckpoint(const std::filesystem::path& dir);

// Copies a tensor's bytes into an aligned buffer of T (sizeof(T) * elements must equal the byte
// length; otherwise an error naming the tensor). Instantiated for int8_t … uint64_t, float and
// double. Values are little-endian, as on every host quantpath builds for.
template <typename T>
Result<std::vector<T>> CopyTensor(const TensorView& view);

// Decodes a floating tensor (F32, F16, BF16, F8_E4M3, F8_E5M2, F64, and F8_E8M0 and F4 = E2M1
// with element 2i in the low nibble of byte i) to float32. Other dtypes are kUnsupported.
Result<std::vector<float>> TensorToFloat(const TensorView& view);

}  // namespace quantpath
