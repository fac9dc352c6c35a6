// Helpers for the checkpoint tests: safetensors bytes built by hand (so a test controls every byte
// of the header), temporary folders, and Python through popen for the cross-checks.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "quantpath/checkpoint.h"

namespace quantpath::st_test {

struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string data;  // exactly the tensor's bytes
};

// A header for `tensors` laid out one after the other in the given order.
inline std::string HeaderFor(const std::vector<RawTensor>& tensors,
                             const std::string& metadata_json = "") {
  std::string header = "{";
  if (!metadata_json.empty()) header += "\"__metadata__\": " + metadata_json;
  size_t offset = 0;
  for (const RawTensor& t : tensors) {
    if (header.size() > 1) header += ", ";
    std::string shape;
    for (int64_t d : t.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    header += JsonQuote(t.name) + ": {\"dtype\": \"" + t.dtype + "\", \"shape\": [" + shape +
              "], \"data_offsets\": [" + std::to_string(offset) + ", " +
              std::to_string(offset + t.data.size()) + "]}";
    offset += t.data.size();
  }
  return header + "}";
}

// [u64 little-endian header length][header][data].
inline std::string FileBytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header + data;
}

inline std::string FileFor(const std::vector<RawTensor>& tensors,
                           const std::string& metadata_json = "") {
  std::string data;
  for (const RawTensor& t : tensors) data += t.data;
  return FileBytes(HeaderFor(tensors, metadata_json), data);
}

inline std::span<const std::byte> AsBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Parses a whole file held in memory.
inline Result<std::vector<TensorInfo>> ParseBytes(const std::string& file_bytes,
                                                  std::string_view file = "test.safetensors") {
  uint64_t data_start = 0;
  return ParseSafetensorsHeader(AsBytes(file_bytes), file_bytes.size(), file, &data_start);
}

inline std::string Bytes(std::initializer_list<uint8_t> bytes) {
  return std::string(bytes.begin(), bytes.end());
}

// Removes the file first: rewriting a file in place (or renaming over it) makes ext4 flush it to
// disk on close, which would dominate the mutation tests' time.
inline void WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A fresh folder under the test temp dir, removed at the end of the test.
class TempFolder {
 public:
  explicit TempFolder(const std::string& name)
      : path_(std::filesystem::path(::testing::TempDir()) /
              ("quantpath_" + name + "_" + std::to_string(getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline bool PythonHas(const std::string& modules) {
  return std::system(("python3 -c 'import " + modules + "' > /dev/null 2>&1").c_str()) == 0;
}

// Runs `python3 script args` and returns its standard output.
inline std::string RunPython(const std::filesystem::path& script, const std::string& args) {
  std::string text;
  FILE* pipe = popen(("python3 " + script.string() + " " + args).c_str(), "r");
  if (pipe == nullptr) return text;
  char buffer[65536];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) text.append(buffer, n);
  pclose(pipe);
  return text;
}

}  // namespace quantpath::st_test
