// A safetensors header read on its own (ReadSafetensorsHeader, for audits that never touch data),
// and one safetensors file, memory-mapped read-only: the header is validated once at Open, and
// tensor views point straight into the mapping (zero copy). The kernel pages in only what is read,
// so opening a large shard to look at its header costs a few pages.
//
// A file truncated by another process after Open would fault on access (SIGBUS), as it would for
// any mmap reader; checkpoints are not expected to change while being read.
#include <fcntl.h>
#include <simdjson.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "fmt/format.h"
#include "quantpath/checkpoint.h"
#include "src/base/json_dom.h"
#include "src/base/name_ids.h"
#include "src/checkpoint/header.h"

namespace quantpath {

namespace {

// A regular file, opened for reading. O_NONBLOCK: opening a FIFO would otherwise wait for a
// writer; it is refused as not a regular file.
struct OpenedFile {
  int fd = -1;
  uint64_t size = 0;
  OpenedFile() = default;
  OpenedFile(const OpenedFile&) = delete;
  OpenedFile& operator=(const OpenedFile&) = delete;
  ~OpenedFile() {
    if (fd >= 0) ::close(fd);
  }
};

Status OpenRegular(const std::string& name, OpenedFile* out) {
  out->fd = ::open(name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (out->fd < 0) {
    std::string reason = std::strerror(errno);
    if (errno == ENOENT) return NotFound(fmt::format("{}: no such file", name));
    return IoError(fmt::format("{}: cannot open ({})", name, reason));
  }
  struct stat st {};
  if (::fstat(out->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return IoError(fmt::format("{}: not a regular file", name));
  }
  out->size = static_cast<uint64_t>(st.st_size);
  return {};
}

// Reads up to `length` bytes at `offset`; fewer only at the end of the file.
Result<size_t> ReadAt(const OpenedFile& file, const std::string& name, uint64_t offset,
                      size_t length, std::byte* out) {
  size_t done = 0;
  while (done < length) {
    const ssize_t n =
        ::pread(file.fd, out + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(fmt::format("{}: read failed ({})", name, std::strerror(errno)));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

// The calling thread's buffer for a header's bytes, kept from header to header (a fresh one costs
// its pages' faults, as much as parsing a large header) unless a huge header grew it.
std::byte* ThreadHeaderBuffer(size_t bytes) {
  constexpr size_t kKeepBytes = json_internal::ThreadDomParser::kKeepBytes;
  thread_local std::unique_ptr<std::byte[]> buffer;
  thread_local size_t size = 0;
  if (bytes > size || (size > kKeepBytes && bytes <= kKeepBytes)) {
    buffer = std::make_unique_for_overwrite<std::byte[]>(bytes);
    size = bytes;
  }
  return buffer.get();
}

// The header of an opened file, read (never mapped: the header is all an audit reads, and copying
// it costs less than faulting its pages in), its names' table in `*ids`.
Result<SafetensorsHeader> ReadHeader(const OpenedFile& file, const std::string& name,
                                     NameIds* ids) {
  QP_ASSIGN_OR_RETURN(InputLimits limits, CurrentLimits());
  // The length prefix, then the header: never more than the header limit (the parser refuses a
  // longer one from the prefix alone), plus the padding its JSON parser reads past the end.
  std::byte prefix[8];
  QP_ASSIGN_OR_RETURN(size_t got, ReadAt(file, name, 0, 8, prefix));
  uint64_t wanted = 0;
  if (got == 8) {
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(prefix[i]);
    wanted = std::min({length, static_cast<uint64_t>(limits.header_bytes), file.size - 8});
  }
  // Only what follows the bytes read is zeroed (the parser's padding): the rest is read over.
  const size_t capacity = 8 + wanted + simdjson::SIMDJSON_PADDING;
  std::byte* bytes = ThreadHeaderBuffer(capacity);
  std::memcpy(bytes, prefix, got);
  if (got == 8) {
    QP_ASSIGN_OR_RETURN(got, ReadAt(file, name, 8, wanted, bytes + 8));
    if (got < wanted) return IoError(fmt::format("{}: the file shrank while being read", name));
    got += 8;
  }
  std::memset(bytes + got, 0, capacity - got);
  SafetensorsHeader out;
  // The padding counts as readable: the parser then needs no copy.
  const size_t readable = got < 8 ? got : std::min(capacity, got + simdjson::SIMDJSON_PADDING);
  QP_ASSIGN_OR_RETURN(out.tensors,
                      checkpoint_internal::ParseHeader({bytes, readable}, file.size, name,
                                                       &out.data_start, &out.metadata, ids));
  return out;
}

}  // namespace

namespace checkpoint_internal {

Result<SafetensorsHeader> ReadHeaderWithNames(const std::filesystem::path& path, NameIds* ids) {
  const std::string name = path.string();
  OpenedFile file;
  QP_RETURN_IF_ERROR(OpenRegular(name, &file));
  return ReadHeader(file, name, ids);
}

}  // namespace checkpoint_internal

Result<SafetensorsHeader> ReadSafetensorsHeader(const std::filesystem::path& path) {
  NameIds ids;
  return checkpoint_internal::ReadHeaderWithNames(path, &ids);
}

Result<std::shared_ptr<const SafetensorsFile>> SafetensorsFile::Open(
    const std::filesystem::path& path) {
  std::string name = path.string();
  OpenedFile opened;
  QP_RETURN_IF_ERROR(OpenRegular(name, &opened));
  auto by_name = std::make_unique<NameIds>();
  QP_ASSIGN_OR_RETURN(SafetensorsHeader header, ReadHeader(opened, name, by_name.get()));
  // make_shared cannot reach the private constructor; the destructor unmaps on every path below.
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = name;
  file->map_size_ = static_cast<size_t>(opened.size);
  if (file->map_size_ > 0) {
    void* map = ::mmap(nullptr, file->map_size_, PROT_READ, MAP_PRIVATE, opened.fd, 0);
    if (map == MAP_FAILED) {
      std::string reason = std::strerror(errno);
      file->map_size_ = 0;
      return IoError(fmt::format("{}: cannot map ({})", name, reason));
    }
    file->map_ = static_cast<const std::byte*>(map);
  }
  // Closing the file (when `opened` goes) leaves the mapping, which keeps the file alive.

  file->tensors_ = std::move(header.tensors);
  file->metadata_ = std::move(header.metadata);
  file->data_start_ = header.data_start;
  file->by_name_ = std::move(by_name);
  return std::shared_ptr<const SafetensorsFile>(std::move(file));
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(const_cast<std::byte*>(map_), map_size_);
}

const TensorInfo* SafetensorsFile::Find(std::string_view name) const {
  const std::optional<uint32_t> id = by_name_->Find(name);
  return id ? &tensors_[*id] : nullptr;
}

TensorView SafetensorsFile::View(const TensorInfo& info) const {
  // Validation guarantees data_start_ + info.end <= map_size_.
  return TensorView{&info, path_, {map_ + data_start_ + info.begin, info.end - info.begin}};
}

}  // namespace quantpath
