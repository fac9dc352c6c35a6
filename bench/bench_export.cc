// `quantize` throughput on a synthetic bf16 checkpoint of about 2 GB (a Llama-3-8B-shaped model
// cut to 4 decoder layers and a 16k vocabulary; QUANTPATH_BENCH_GB sets the size in GB, rounded to
// whole layers), against the machine's own file limit measured in the same run:
//   BM_Copy        every input file read and written to a new file (8 MiB read() / write(), then
//                  fsync, as the safetensors writer ends), `gb_per_s` = (bytes read + bytes
//                  written) / seconds: what a program that only moves the bytes reaches here
//   BM_Quantize    QuantizeCheckpoint of the folder to each scheme, `gb_per_s` the same way
//                  (ExportReport's bytes in and out), and `vs_copy`, its speed over BM_Copy's in
//                  the same cache state: the figure
// each with the page cache warm (the input read just before) and cold (the input's pages dropped
// with posix_fadvise(POSIX_FADV_DONTNEED) after an fsync, which needs no privileges; the output is
// always new). The folder is written under $TMPDIR once per run and removed at the end.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/checkpoint_writer.h"
#include "quantpath/export.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kHidden = 4096;
constexpr int64_t kIntermediate = 14336;
constexpr int64_t kKvRows = 1024;  // 8 KV heads of 128
constexpr int64_t kVocab = 16384;
constexpr int64_t kLayerBytes =
    2 * (2 * kHidden * kHidden + 2 * kKvRows * kHidden + 3 * kIntermediate * kHidden);

fs::path Root() {
  const char* tmp = std::getenv("TMPDIR");
  return fs::path(tmp != nullptr ? tmp : "/tmp") /
         fmt::format("quantpath_bench_export_{}", getpid());
}

int Layers() {
  const char* gb = std::getenv("QUANTPATH_BENCH_GB");
  const double bytes = (gb != nullptr ? std::atof(gb) : 2.0) * 1e9;
  return std::max(1, static_cast<int>(bytes / static_cast<double>(kLayerBytes) + 0.5));
}

// bf16 values of about N(0, 0.02), from a xorshift stream: cheap, and no two tensors alike.
std::vector<std::byte> RandomBf16(int64_t count, uint64_t seed) {
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
  fs::path in;
  int64_t bytes = 0;
};

Synthetic& Folder() {
  static Synthetic* s = [] {
    auto* out = new Synthetic{Root() / "in", 0};
    fs::create_directories(out->in);
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
    auto writer = SafetensorsWriter::Create(out->in / "model.safetensors", headers);
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
    out->bytes = static_cast<int64_t>((*writer)->file_bytes());
    const std::string config = fmt::format(
        R"({{"architectures": ["LlamaForCausalLM"], "hidden_size": {}, "intermediate_size": {},
 "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 32,
 "num_hidden_layers": {}, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
 "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": {}}}
)",
        kHidden, kIntermediate, layers, kVocab);
    if (!WriteFileAtomically(out->in / "config.json", config).ok()) std::abort();
    return out;
  }();
  return *s;
}

// Drops the input's pages from the cache (cold), or reads it all once (warm).
void SetCache(bool cold) {
  for (const fs::directory_entry& e : fs::directory_iterator(Folder().in)) {
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

// Copy speed per cache state, for vs_copy.
std::map<bool, double>& CopySpeed() {
  static std::map<bool, double> speed;
  return speed;
}

void BM_Copy(benchmark::State& state) {
  const bool cold = state.range(0) != 0;
  const fs::path out = Root() / "copy";
  int64_t moved = 0;
  double seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove_all(out);
    fs::create_directories(out);
    SetCache(cold);
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    std::vector<char> buffer(8 << 20);
    for (const fs::directory_entry& e : fs::directory_iterator(Folder().in)) {
      const int from = open(e.path().c_str(), O_RDONLY);
      const int to = open((out / e.path().filename()).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (from < 0 || to < 0) std::abort();
      ssize_t n;
      while ((n = read(from, buffer.data(), buffer.size())) > 0) {
        if (write(to, buffer.data(), static_cast<size_t>(n)) != n) std::abort();
        moved += 2 * n;
      }
      fsync(to);
      close(from);
      close(to);
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  fs::remove_all(out);
  const double gbps = static_cast<double>(moved) / seconds / 1e9;
  CopySpeed()[cold] = gbps;
  state.counters["gb_per_s"] = gbps;
  state.counters["input_gb"] = static_cast<double>(Folder().bytes) / 1e9;
}

void BM_Quantize(benchmark::State& state, const std::string& scheme) {
  const bool cold = state.range(0) != 0;
  const fs::path out = Root() / "out";
  QuantizeOptions options;
  options.scheme = scheme;
  options.force = true;
  int64_t moved = 0;
  double seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove_all(out);
    SetCache(cold);
    state.ResumeTiming();
    Result<ExportReport> report = QuantizeCheckpoint(Folder().in.string(), out.string(), options);
    if (!report.ok()) {
      state.SkipWithError(std::string(report.status().message()).c_str());
      return;
    }
    moved += report->bytes_in + report->bytes_out;
    seconds += report->seconds;
  }
  fs::remove_all(out);
  const double gbps = static_cast<double>(moved) / seconds / 1e9;
  state.counters["gb_per_s"] = gbps;
  if (CopySpeed().contains(cold)) state.counters["vs_copy"] = gbps / CopySpeed()[cold];
}

void Register() {
  for (const int cold : {0, 1}) {
    benchmark::RegisterBenchmark("BM_Copy", BM_Copy)
        ->Arg(cold)
        ->ArgName("cold")
        ->Iterations(2)
        ->Unit(benchmark::kSecond)
        ->UseRealTime();
    for (const std::string scheme : {"w8a8-fp8-block128x128-dyn", "w8a16-int8-channel",
                                     "w4a16-int4-g128", "w4a16-nvfp4", "w4a16-mxfp4"}) {
      benchmark::RegisterBenchmark(("BM_Quantize/" + scheme).c_str(), BM_Quantize, scheme)
          ->Arg(cold)
          ->ArgName("cold")
          ->Iterations(2)
          ->Unit(benchmark::kSecond)
          ->UseRealTime();
    }
  }
}

}  // namespace
}  // namespace quantpath

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  quantpath::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(quantpath::Root());
  return 0;
}
