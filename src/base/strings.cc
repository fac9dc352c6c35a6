#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <fstream>
#include <ostream>
#include <random>

#include "fmt/format.h"
#include "quantpath/base.h"

namespace quantpath {

const std::string& SharedText::Empty() {
  static const std::string empty;
  return empty;
}

std::ostream& operator<<(std::ostream& out, const SharedText& text) { return out << text.str(); }

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    parts.emplace_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::string_view ParentPath(std::string_view path) {
  size_t pos = path.rfind('.');
  return pos == std::string_view::npos ? std::string_view() : path.substr(0, pos);
}

std::string_view LastSegment(std::string_view path) {
  size_t pos = path.rfind('.');
  return pos == std::string_view::npos ? path : path.substr(pos + 1);
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

Result<std::string> ReadFile(const std::filesystem::path& path) {
  QP_ASSIGN_OR_RETURN(InputLimits limits, CurrentLimits());
  return ReadFile(path, limits.json.max_bytes, "QUANTPATH_MAX_JSON_BYTES");
}

Result<std::string> ReadFile(const std::filesystem::path& path, int64_t max_bytes,
                             std::string_view limit_name) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return IoError(path.string() + ": cannot open for reading");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return IoError(path.string() + ": cannot stat");
  if (!S_ISREG(st.st_mode)) {
    return InvalidInput(path.string() +
                        ": not a regular file (a directory, FIFO, device or socket)");
  }
  if (st.st_size > max_bytes) {
    return InvalidInput(fmt::format("{}: {} bytes, over the limit of {} bytes{}", path.string(),
                                    st.st_size, max_bytes,
                                    limit_name.empty() ? "" : fmt::format(" ({})", limit_name)));
  }
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size) + kReadFilePadding);
  text.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(path.string() + ": read failed");
    if (n == 0) break;  // the file shrank while being read
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  return text;
}

Status WriteFileAtomically(const std::filesystem::path& path, std::string_view content) {
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::random_device{}());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return IoError(path.string() + ": cannot write (opening " + tmp.string() + ")");
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      return IoError(path.string() + ": write failed (" + tmp.string() + ")");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return IoError(path.string() + ": cannot move the written file into place");
  }
  return {};
}

}  // namespace quantpath
