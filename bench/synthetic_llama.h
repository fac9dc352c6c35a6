// The synthetic bf16 checkpoint the file benchmarks read (bench_export, bench_check): a
// Llama-3-8B-shaped model cut to whole decoder layers of about QUANTPATH_BENCH_GB GB in all
// (default 2) and a 16k vocabulary, random bf16 weights, written once per run under $TMPDIR; and
// the page cache set warm (read just before) or cold (dropped with
// posix_fadvise(POSIX_FADV_DONTNEED) after an fsync, which needs no privileges).
#pragma once

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "quantpath/checkpoint_writer.h"

namespace quantpath::bench_files {

namespace fs = std::filesystem;

// $TMPDIR/quantpath_bench_<name>_<pid>: the run's own folder, removed at its end.
inline fs::path Root(std::string_view name) {
  const char* tmp = std::getenv("TMPDIR");
  return fs::path(tmp != nullptr ? tmp : "/tmp") /
         fmt::format("quantpath_bench_{}_{}", name, getpid());
}

inline constexpr int64_t kHidden = 4096;
inline constexpr int64_t kIntermediate = 14336;
inline constexpr int64_t kKvRows = 1024;  // 8 KV heads of 128
inline constexpr int64_t kVocab = 16384;
inline constexpr int64_t kLayerBytes =
    2 * (2 * kHidden * kHidden + 2 * kKvRows * kHidden + 3 * kIntermediate * kHidden);

inline int Layers() {
  const char* gb = std::getenv("QUANTPATH_BENCH_GB");
  const double bytes = (gb != nullptr ? std::atof(gb) : 2.0) * 1e9;
  return std::max(1, static_cast<int>(bytes / static_cast<double>(kLayerBytes) + 0.5));
}

// bf16 values of about N(0, 0.02), from a xorshift stream: cheap, and no two tensors alike.
inline std::vector<std::byte> RandomBf16(int64_t count, uint64_t seed) {
  std::vector<std::byte> bytes(static_cast<size_t>(count) * 2);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < count; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    // The sum of four uniform bytes, centred: roughly normal.
    const int sum =
        static_cast<int>((s & 0xFF) + (s >> 8 & 0xFF) + (s >> 16 & 0xFF) + (s >> 24 & 0xFF)) - 510;
    const float v = static_cast<float>(sum) * (0.02f / 148.0f);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    const auto b = static_cast<uint16_t>(bits >> 16);
    std::memcpy(bytes.data() + 2 * i, &b, 2);
  }
  return bytes;
}

struct Synthetic {
  fs::path in;  // the folder
  int64_t bytes = 0;
};

// Writes the checkpoint into `dir` (config.json and model.safetensors).
inline Synthetic WriteSyntheticLlama(const fs::path& dir) {
  Synthetic out{dir, 0};
  fs::create_directories(out.in);
  const int layers = Layers();
  std::vector<TensorHeader> headers;
  auto add = [&](const std::string& name, int64_t rows, int64_t cols) {
    headers.push_back({name, StDtype::kBF16, {rows, cols}});
  };
  add("lm_head.weight", kVocab, kHidden);
  add("model.embed_tokens.weight", kVocab, kHidden);
  for (int l = 0; l < layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    add(p + "mlp.down_proj.weight", kHidden, kIntermediate);
    add(p + "mlp.gate_proj.weight", kIntermediate, kHidden);
    add(p + "mlp.up_proj.weight", kIntermediate, kHidden);
    add(p + "self_attn.k_proj.weight", kKvRows, kHidden);
    add(p + "self_attn.o_proj.weight", kHidden, kHidden);
    add(p + "self_attn.q_proj.weight", kHidden, kHidden);
    add(p + "self_attn.v_proj.weight", kKvRows, kHidden);
  }
  // The norms: ones.
  std::vector<std::string> norms = {"model.norm.weight"};
  for (int l = 0; l < layers; ++l) {
    norms.push_back(fmt::format("model.layers.{}.input_layernorm.weight", l));
    norms.push_back(fmt::format("model.layers.{}.post_attention_layernorm.weight", l));
  }
  for (const std::string& n : norms) headers.push_back({n, StDtype::kBF16, {kHidden}});
  auto writer = SafetensorsWriter::Create(out.in / "model.safetensors", headers);
  if (!writer.ok()) std::abort();
  uint64_t seed = 1;
  for (const TensorHeader& h : headers) {
    const int64_t count = h.shape.size() == 2 ? h.shape[0] * h.shape[1] : h.shape[0];
    std::vector<std::byte> bytes;
    if (h.shape.size() == 2) {
      bytes = RandomBf16(count, seed++);
    } else {
      bytes.resize(static_cast<size_t>(count) * 2);
      for (int64_t i = 0; i < count; ++i) {
        bytes[2 * i] = std::byte{0x80};
        bytes[2 * i + 1] = std::byte{0x3F};  // 1.0
      }
    }
    if (!(*writer)->Append(bytes).ok()) std::abort();
  }
  if (!(*writer)->Finish().ok()) std::abort();
  out.bytes = static_cast<int64_t>((*writer)->file_bytes());
  const std::string config = fmt::format(
      R"({{"architectures": ["LlamaForCausalLM"], "hidden_size": {}, "intermediate_size": {},
 "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 32,
 "num_hidden_layers": {}, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
 "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": {}}}
)",
      kHidden, kIntermediate, layers, kVocab);
  if (!WriteFileAtomically(out.in / "config.json", config).ok()) std::abort();
  return out;
}

// Drops the pages of `dir`'s files from the cache (cold), or reads them all once (warm).
inline void SetCache(const fs::path& dir, bool cold) {
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const int fd = open(e.path().c_str(), O_RDONLY);
    if (fd < 0) std::abort();
    if (cold) {
      fdatasync(fd);
      posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    } else {
      std::vector<char> buffer(8 << 20);
      while (read(fd, buffer.data(), buffer.size()) > 0) {
      }
    }
    close(fd);
  }
}

// A file benchmark's main: `register_all` adds its benchmarks, which run; then the run's folder
// `root` is removed.
inline int RunAndCleanUp(int argc, char** argv, void (*register_all)(), const fs::path& root) {
  benchmark::Initialize(&argc, argv);
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  fs::remove_all(root);
  return 0;
}

}  // namespace quantpath::bench_files
