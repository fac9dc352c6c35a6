// libFuzzer target: a safetensors header, optionally followed by a NUL and an index → `check` on
// a folder of a tiny bf16 Llama config (hidden 32, 2 heads of 16, 1 KV head, intermediate 64,
// vocabulary 32, one layer) whose one shard is that header over 22,720 zero bytes of data (the
// size the seeds' offsets cover), named as the index names a single shard. CheckFolder runs
// natively, under vLLM, and at tp 2.
// seeds: tests/fuzz/seeds/check/*
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "quantpath/pipeline.h"

namespace {

constexpr size_t kDataBytes = 22720;
constexpr char kConfig[] = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
  "num_key_value_heads": 1, "head_dim": 16, "num_hidden_layers": 1, "vocab_size": 32,
  "torch_dtype": "bfloat16", "tie_word_embeddings": false})";

std::filesystem::path Folder() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() /
                              ("quantpath_fuzz_check_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    std::ofstream(d / "config.json") << kConfig;
    return d;
  }();
  return dir;
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
  std::string shard(8, '\0');
  for (size_t i = 0; i < 8; ++i) shard[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  shard.append(header);
  shard.append(kDataBytes, '\0');
  std::filesystem::remove(dir / "model.safetensors");
  std::filesystem::remove(dir / "model-00001-of-00001.safetensors");
  std::filesystem::remove(dir / "model.safetensors.index.json");
  if (nul == std::string_view::npos) {
    Write(dir / "model.safetensors", shard);
  } else {
    Write(dir / "model-00001-of-00001.safetensors", shard);
    Write(dir / "model.safetensors.index.json", input.substr(nul + 1));
  }
  for (const char* engine : {"native", "vllm"}) {
    for (int64_t tp : {1, 2}) {
      auto options = quantpath::OpenOptions::Parse(engine, "", "cpu", "auto", tp);
      if (options.ok()) (void)quantpath::CheckFolder(dir.string(), *options);
    }
  }
  return 0;
}
