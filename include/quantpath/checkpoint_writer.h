// quantpath checkpoint writer: one small safetensors writer, for results (`run --output`).
//
// Goals: a file the reference `safetensors` package reads, written atomically.
// Non-goals: writing quantized checkpoints or shards (tools/fixtures has the producers' writers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
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

// Writes `tensors`, in order, as one safetensors file at `path`, atomically: into a temporary file
// in the same folder, flushed, then renamed over `path`, so a reader never sees half a file. The
// header is padded with spaces to a multiple of 8 bytes, as the reference writer does. Errors
// name the file and the tensor: an empty or duplicate name, bytes that do not match dtype ×
// shape, a failed write (the temporary file is then removed).
Status WriteSafetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                        const SafetensorsMetadata& metadata = {});

}  // namespace quantpath
