// One safetensors file, memory-mapped read-only: the header is validated once at Open, and tensor
// views point straight into the mapping (zero copy). The kernel pages in only what is read, so
// opening a large shard to look at its header costs a few pages.
//
// A file truncated by another process after Open would fault on access (SIGBUS), as it would for
// any mmap reader; checkpoints are not expected to change while being read.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fmt/format.h"
#include "quantpath/checkpoint.h"

namespace quantpath {

Result<std::shared_ptr<const SafetensorsFile>> SafetensorsFile::Open(
    const std::filesystem::path& path) {
  std::string name = path.string();
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; it is refused below.
  int fd = ::open(name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    std::string reason = std::strerror(errno);
    if (errno == ENOENT) return NotFound(fmt::format("{}: no such file", name));
    return IoError(fmt::format("{}: cannot open ({})", name, reason));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError(fmt::format("{}: not a regular file", name));
  }
  // make_shared cannot reach the private constructor; the destructor unmaps on every path below.
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = name;
  file->map_size_ = static_cast<size_t>(st.st_size);
  if (file->map_size_ > 0) {
    void* map = ::mmap(nullptr, file->map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      std::string reason = std::strerror(errno);
      ::close(fd);
      file->map_size_ = 0;
      return IoError(fmt::format("{}: cannot map ({})", name, reason));
    }
    file->map_ = static_cast<const std::byte*>(map);
  }
  ::close(fd);  // the mapping keeps the file alive

  QP_ASSIGN_OR_RETURN(file->tensors_,
                      ParseSafetensorsHeader({file->map_, file->map_size_}, file->map_size_, name,
                                             &file->data_start_, &file->metadata_));
  file->by_name_.reserve(file->tensors_.size());
  for (size_t i = 0; i < file->tensors_.size(); ++i) {
    file->by_name_.emplace(file->tensors_[i].name, i);
  }
  return std::shared_ptr<const SafetensorsFile>(std::move(file));
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(const_cast<std::byte*>(map_), map_size_);
}

const TensorInfo* SafetensorsFile::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

TensorView SafetensorsFile::View(const TensorInfo& info) const {
  // Validation guarantees data_start_ + info.end <= map_size_.
  return TensorView{&info, path_, {map_ + data_start_ + info.begin, info.end - info.begin}};
}

}  // namespace quantpath
