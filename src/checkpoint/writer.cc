// The safetensors writer behind `run --output`: one small file of plain tensors, written to a
// temporary file next to the target and renamed, so an interrupted run never leaves half a file.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "fmt/format.h"
#include "quantpath/checkpoint_writer.h"

namespace quantpath {
namespace {

// The header as the reference writer lays it out: tensors in order, offsets contiguous.
Result<std::string> Header(const std::filesystem::path& path,
                           std::span<const TensorToWrite> tensors,
                           const SafetensorsMetadata& metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      header += (i ? "," : "") + JsonQuote(metadata[i].first) + ":" + JsonQuote(metadata[i].second);
    }
    header += "}";
  }
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second) {
      return InvalidInput(fmt::format("{}: tensor name {} is empty, reserved or repeated",
                                      path.string(), JsonQuote(t.name)));
    }
    int64_t elements = 1;
    for (int64_t d : t.shape) {
      if (d < 0 || (d > 0 && elements > INT64_MAX / d)) {
        return InvalidInput(fmt::format("{}: tensor {}: bad shape", path.string(), t.name));
      }
      elements *= d;
    }
    const std::optional<uint64_t> length = StDtypeByteLength(t.dtype, elements);
    if (!length || *length != t.bytes.size()) {
      return InvalidInput(fmt::format("{}: tensor {}: {} bytes given, {} × shape needs {}",
                                      path.string(), t.name, t.bytes.size(), StDtypeName(t.dtype),
                                      length ? *length : 0));
    }
    std::string shape;
    for (int64_t d : t.shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    header += fmt::format("{}{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                          header.size() > 1 ? "," : "", JsonQuote(t.name), StDtypeName(t.dtype),
                          shape, offset, offset + *length);
    offset += *length;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

Status WriteAll(std::FILE* file, const void* data, size_t size) {
  return std::fwrite(data, 1, size, file) == size ? Status() : IoError(std::strerror(errno));
}

}  // namespace

Status WriteSafetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                        const SafetensorsMetadata& metadata) {
  QP_ASSIGN_OR_RETURN(std::string header, Header(path, tensors, metadata));
  // Same folder as the target, so the rename stays within one file system and is atomic.
  std::filesystem::path temp = path;
  temp += fmt::format(".tmp.{}", getpid());
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  if (file == nullptr) {
    return IoError(fmt::format("{}: cannot create: {}", temp.string(), std::strerror(errno)));
  }
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(header.size() >> (8 * i));
  Status status = WriteAll(file, length, sizeof(length));
  if (status.ok()) status = WriteAll(file, header.data(), header.size());
  for (const TensorToWrite& t : tensors) {
    if (status.ok()) status = WriteAll(file, t.bytes.data(), t.bytes.size());
  }
  if (status.ok() && (std::fflush(file) != 0 || fsync(fileno(file)) != 0)) {
    status = IoError(std::strerror(errno));
  }
  if (std::fclose(file) != 0 && status.ok()) status = IoError(std::strerror(errno));
  std::error_code error;
  if (status.ok()) {
    std::filesystem::rename(temp, path, error);
    if (error)
      status = IoError(fmt::format("cannot rename {} to it: {}", temp.string(), error.message()));
  }
  if (!status.ok()) {
    std::filesystem::remove(temp, error);
    return IoError(fmt::format("{}: {}", path.string(), status.message()));
  }
  return Status();
}

}  // namespace quantpath
