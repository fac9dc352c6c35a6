// libFuzzer target: model.safetensors.index.json → the checkpoint's index reading and validation
// (shard names inside the folder, every listed shard opened). The folder holds one small shard,
// written once, so inputs that name it reach the index-versus-shard checks.
// seeds: tests/data/**/model.safetensors.index.json examples/**/model.safetensors.index.json
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "quantpath/checkpoint.h"

namespace {

std::filesystem::path Folder() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() /
                              ("quantpath_fuzz_index_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    const std::string header = R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
    std::string file(8, '\0');
    for (size_t i = 0; i < 8; ++i) file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    std::ofstream(d / "model-00001-of-00001.safetensors", std::ios::binary)
        << file << header << 'x';
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path dir = Folder();
  {
    std::ofstream out(dir / "model.safetensors.index.json", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto checkpoint = quantpath::Checkpoint::Open(dir);
  if (checkpoint.ok()) (void)checkpoint->Validate();
  return 0;
}
