// libFuzzer target: a safetensors header, optionally followed by a NUL and an index, and
// optionally by another NUL and a config.json → `check` on a folder of that config (by default a
// tiny bf16 Llama: hidden 32, 2 heads of 16, 1 KV head, intermediate 64, vocabulary 32, one layer)
// whose one shard is that header over a data section of zeros as long as the largest
// `data_offsets` end the header's text holds (at most 16 MiB, a hole in the file), named as the
// index names a single shard. CheckFolder runs natively, under vLLM, and at tp 2.
// seeds: tests/fuzz/seeds/check/*
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "quantpath/pipeline.h"

namespace {

constexpr uint64_t kMaxDataBytes = uint64_t{1} << 24;
constexpr char kConfig[] = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
  "num_key_value_heads": 1, "head_dim": 16, "num_hidden_layers": 1, "vocab_size": 32,
  "torch_dtype": "bfloat16", "tie_word_embeddings": false})";

std::filesystem::path Folder() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() /
                              ("quantpath_fuzz_check_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// The data section a header's offsets ask for, read off its text without parsing it: the largest
// number closing a "data_offsets" array, so that a header cut from a real shard finds its bytes.
uint64_t DataBytes(std::string_view header) {
  uint64_t bytes = 0;
  for (size_t at = header.find("\"data_offsets\""); at != std::string_view::npos;
       at = header.find("\"data_offsets\"", at + 1)) {
    const size_t close = header.find(']', at);
    if (close == std::string_view::npos) break;
    size_t digits = close;
    while (digits > at && header[digits - 1] >= '0' && header[digits - 1] <= '9') --digits;
    uint64_t end = 0;
    for (size_t i = digits; i < close && end <= kMaxDataBytes; ++i) {
      end = end * 10 + static_cast<uint64_t>(header[i] - '0');
    }
    bytes = std::max(bytes, std::min(end, kMaxDataBytes));
  }
  return bytes;
}

void Write(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path dir = Folder();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view header = input.substr(0, nul);
  const std::string_view rest = nul == std::string_view::npos ? "" : input.substr(nul + 1);
  const size_t config_nul = rest.find('\0');
  std::string shard(8, '\0');
  for (size_t i = 0; i < 8; ++i) shard[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  shard.append(header);
  std::filesystem::remove(dir / "model.safetensors");
  std::filesystem::remove(dir / "model-00001-of-00001.safetensors");
  std::filesystem::remove(dir / "model.safetensors.index.json");
  const std::filesystem::path shard_path =
      dir /
      (nul == std::string_view::npos ? "model.safetensors" : "model-00001-of-00001.safetensors");
  Write(shard_path, shard);
  std::filesystem::resize_file(shard_path, shard.size() + DataBytes(header));
  if (nul != std::string_view::npos) {
    Write(dir / "model.safetensors.index.json", rest.substr(0, config_nul));
  }
  Write(dir / "config.json", config_nul == std::string_view::npos ? std::string_view(kConfig)
                                                                  : rest.substr(config_nul + 1));
  for (const char* engine : {"native", "vllm@helpers"}) {
    for (int64_t tp : {1, 2}) {
      auto options = quantpath::OpenOptions::Parse(engine, "", "cpu", "auto", tp);
      if (options.ok()) (void)quantpath::CheckFolder(dir.string(), *options);
    }
  }
  return 0;
}
