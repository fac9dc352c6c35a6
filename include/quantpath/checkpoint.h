// quantpath checkpoint: safetensors files and sharded folders, memory-mapped and validated.
//
// Goals: zero-copy access to tensors of untrusted files after strict validation (header length,
// JSON, dtype × shape = byte length, offsets inside the file, contiguous and non-overlapping, no
// duplicate names, index ↔ shard agreement); every failure names the file and the tensor.
// Non-goals: kernels, quantization formats, writing checkpoints (see tools for writers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"

namespace quantpath {

// safetensors dtypes, sized in bits (F4 and F6 are sub-byte).
enum class StDtype : uint8_t {
  kBool, kU8, kI8, kF8E5M2, kF8E4M3, kF8E8M0, kI16, kU16, kF16, kBF16,
  kI32, kU32, kF32, kF64, kI64, kU64, kF4, kF6E2M3, kF6E3M2, kC64,
};
std::string_view StDtypeName(StDtype dtype);              // "F8_E4M3", "BF16", …
std::optional<StDtype> ParseStDtype(std::string_view name);
int StDtypeBits(StDtype dtype);

struct TensorInfo {
  std::string name;
  StDtype dtype = StDtype::kU8;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets relative to the start of the data section
  uint64_t end = 0;
  int64_t Elements() const;
};

// A validated tensor: its description and its bytes (which may be unaligned; read through
// CopyTensor, never by casting the pointer).
struct TensorView {
  const TensorInfo* info = nullptr;
  std::string_view file;
  std::span<const std::byte> bytes;
};

// Parses and validates a safetensors header against a file of `file_size` bytes. `bytes` is the
// whole file or at least its first 8 + header_length bytes. Used by SafetensorsFile and by tests.
Result<std::vector<TensorInfo>> ParseSafetensorsHeader(std::span<const std::byte> bytes,
                                                       uint64_t file_size, std::string_view file,
                                                       uint64_t* data_start);

class SafetensorsFile {
 public:
  static Result<std::shared_ptr<const SafetensorsFile>> Open(const std::filesystem::path& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* Find(std::string_view name) const;
  TensorView View(const TensorInfo& info) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  std::vector<TensorInfo> tensors_;
  const std::byte* map_ = nullptr;
  size_t map_size_ = 0;
  uint64_t data_start_ = 0;
};

// A model folder's weights: `model.safetensors`, or `model.safetensors.index.json` with shards, or
// the folder's *.safetensors files. Shards are opened lazily on first access.
class Checkpoint {
 public:
  // Errors name the folder, the index, the shard and the tensor. A folder without weights is
  // kNotFound.
  static Result<Checkpoint> Open(const std::filesystem::path& dir);

  std::vector<std::string> TensorNames() const;  // sorted
  bool Has(std::string_view name) const;
  Result<TensorView> Get(std::string_view name) const;
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
  std::vector<std::string> warnings_;
};

// Copies a tensor's bytes into an aligned buffer of T (sizeof(T) * elements must equal the byte
// length; otherwise an error naming the tensor).
template <typename T>
Result<std::vector<T>> CopyTensor(const TensorView& view);

// Decodes a floating tensor (F32, F16, BF16, F8_E4M3, F8_E5M2, F64) to float32.
Result<std::vector<float>> TensorToFloat(const TensorView& view);

}  // namespace quantpath
