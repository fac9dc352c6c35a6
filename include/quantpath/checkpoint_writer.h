// quantpath checkpoint writer: safetensors files, whole (`run --output`) or streamed tensor by
// tensor (`quantize`, `convert`).
//
// Goals: files the reference `safetensors` package reads, each appearing at its path only once
// complete. Non-goals: what goes into a model folder (the export stage: shards, index, config).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"

namespace quantpath {

// One tensor for WriteSafetensors: `bytes` holds its little-endian values, exactly dtype × shape.
struct TensorToWrite {
  std::string name;
  StDtype dtype = StDtype::kF32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;
};

// A safetensors file written piece by piece: Create writes the header (every tensor, in order,
// offsets contiguous, padded with spaces to a multiple of 8 bytes as the reference writer does)
// into a temporary file beside `path`; Append adds the next tensor's bytes; Finish flushes,
// syncs and renames it to `path`, so a reader never sees half a file. Destroyed unfinished, the
// writer removes the temporary file. Errors name the file and the tensor: an empty, reserved or
// repeated name, a bad shape, bytes that are not the tensor's dtype × shape, a tensor too many or
// too few, a failed write.
class SafetensorsWriter {
 public:
  static Result<std::unique_ptr<SafetensorsWriter>> Create(
      const std::filesystem::path& path, std::vector<TensorHeader> tensors,
      const SafetensorsMetadata& metadata = {});
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // The next tensor's bytes (tensors()[appended()]).
  Status Append(std::span<const std::byte> bytes);
  Status Finish();
  const std::vector<TensorHeader>& tensors() const { return tensors_; }
  size_t appended() const { return appended_; }
  uint64_t file_bytes() const { return file_bytes_; }  // the whole file, header included

 private:
  SafetensorsWriter() = default;
  Status Fail(Status status);
  std::filesystem::path path_;
  std::filesystem::path temp_;
  std::FILE* file_ = nullptr;
  std::vector<TensorHeader> tensors_;
  std::vector<uint64_t> lengths_;
  size_t appended_ = 0;
  uint64_t file_bytes_ = 0;
};

// Writes `tensors`, in order, as one safetensors file at `path` through a SafetensorsWriter.
Status WriteSafetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                        const SafetensorsMetadata& metadata = {});

}  // namespace quantpath
