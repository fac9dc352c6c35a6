#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "quantpath/base.h"

namespace quantpath {

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
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path.string() + ": cannot open for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return IoError(path.string() + ": read failed");
  return buffer.str();
}

Status WriteFileAtomically(const std::filesystem::path& path, std::string_view content) {
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::random_device{}());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return IoError(tmp.string() + ": cannot open for writing");
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      return IoError(tmp.string() + ": write failed");
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
