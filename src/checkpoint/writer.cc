// The safetensors writer: the header first, then each tensor's bytes, into a temporary file next
// to the target that is renamed once complete, so an interrupted write never leaves half a file.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "fmt/format.h"
#include "quantpath/checkpoint_writer.h"

namespace quantpath {
namespace {

// The header as the reference writer lays it out: tensors in order, offsets contiguous; and each
// tensor's byte length.
Result<std::string> Header(const std::filesystem::path& path, std::span<const TensorHeader> tensors,
                           const SafetensorsMetadata& metadata, std::vector<uint64_t>* lengths) {
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
  for (const TensorHeader& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second) {
      return InvalidInput(fmt::format("{}: tensor name {} is empty, reserved or repeated",
                                      path.string(), JsonQuote(t.name)));
    }
    const std::optional<uint64_t> length = TensorByteLength(t);
    if (!length) {
      return InvalidInput(fmt::format("{}: tensor {}: bad shape for {}", path.string(), t.name,
                                      StDtypeName(t.dtype)));
    }
    std::string shape;
    for (int64_t d : t.shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    header += fmt::format("{}{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                          header.size() > 1 ? "," : "", JsonQuote(t.name), StDtypeName(t.dtype),
                          shape, offset, offset + *length);
    offset += *length;
    lengths->push_back(*length);
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

Status WriteAll(std::FILE* file, const void* data, size_t size) {
  return std::fwrite(data, 1, size, file) == size ? Status() : IoError(std::strerror(errno));
}

}  // namespace

Result<std::unique_ptr<SafetensorsWriter>> SafetensorsWriter::Create(
    const std::filesystem::path& path, std::vector<TensorHeader> tensors,
    const SafetensorsMetadata& metadata) {
  std::unique_ptr<SafetensorsWriter> w(new SafetensorsWriter());
  QP_ASSIGN_OR_RETURN(std::string header, Header(path, tensors, metadata, &w->lengths_));
  w->path_ = path;
  w->tensors_ = std::move(tensors);
  // Same folder as the target, so the rename stays within one file system and is atomic.
  w->temp_ = path;
  w->temp_ += fmt::format(".tmp.{}", getpid());
  w->file_ = std::fopen(w->temp_.c_str(), "wb");
  if (w->file_ == nullptr) {
    return IoError(fmt::format("{}: cannot create: {}", w->temp_.string(), std::strerror(errno)));
  }
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(header.size() >> (8 * i));
  Status status = WriteAll(w->file_, length, sizeof(length));
  if (status.ok()) status = WriteAll(w->file_, header.data(), header.size());
  if (!status.ok()) return w->Fail(status);
  w->file_bytes_ = sizeof(length) + header.size();
  return w;
}

SafetensorsWriter::~SafetensorsWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::error_code error;
    std::filesystem::remove(temp_, error);
  }
}

Status SafetensorsWriter::Fail(Status status) {
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
  std::error_code error;
  std::filesystem::remove(temp_, error);
  return IoError(fmt::format("{}: {}", path_.string(), status.message()));
}

Status SafetensorsWriter::Append(std::span<const std::byte> bytes) {
  if (file_ == nullptr)
    return InternalError(fmt::format("{}: written after an error or after Finish", path_.string()));
  if (appended_ == tensors_.size()) {
    return Fail(InvalidInput("a tensor more than the header lists"));
  }
  const TensorHeader& t = tensors_[appended_];
  if (bytes.size() != lengths_[appended_]) {
    return Fail(InvalidInput(fmt::format("tensor {}: {} bytes given, {} × shape needs {}", t.name,
                                         bytes.size(), StDtypeName(t.dtype), lengths_[appended_])));
  }
  if (Status written = WriteAll(file_, bytes.data(), bytes.size()); !written.ok()) {
    return Fail(written);
  }
  file_bytes_ += bytes.size();
  ++appended_;
  return {};
}

Status SafetensorsWriter::Finish() {
  if (file_ == nullptr)
    return InternalError(fmt::format("{}: written after an error or after Finish", path_.string()));
  if (appended_ != tensors_.size()) {
    return Fail(InvalidInput(fmt::format("{} of {} tensors written, next {}", appended_,
                                         tensors_.size(), tensors_[appended_].name)));
  }
  Status status;
  if (std::fflush(file_) != 0 || fsync(fileno(file_)) != 0) status = IoError(std::strerror(errno));
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0 && status.ok()) status = IoError(std::strerror(errno));
  std::error_code error;
  if (status.ok()) {
    std::filesystem::rename(temp_, path_, error);
    if (error) {
      status = IoError(fmt::format("cannot rename {} to it: {}", temp_.string(), error.message()));
    }
  }
  if (!status.ok()) return Fail(status);
  return {};
}

Status WriteSafetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                        const SafetensorsMetadata& metadata) {
  std::vector<TensorHeader> headers;
  for (const TensorToWrite& t : tensors) headers.push_back({t.name, t.dtype, t.shape});
  QP_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsWriter> writer,
                      SafetensorsWriter::Create(path, std::move(headers), metadata));
  for (const TensorToWrite& t : tensors) QP_RETURN_IF_ERROR(writer->Append(t.bytes));
  return writer->Finish();
}

}  // namespace quantpath
