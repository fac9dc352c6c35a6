// Header parsing and validation of a large sharded checkpoint, against a plain simdjson DOM parse
// of the same header bytes in the same run (`check`'s target: at least 0.4 of the DOM parse).
//
// The checkpoint: 160 shards of 938 tensors each (150,080 in all, named and shaped as the
// per-expert projections of an MoE of 256 experts, each a U8 weight and a BF16 scale), each shard a
// safetensors header over a sparse data section (the file is truncated to its size, so it takes a
// few KB of disk), and the index naming them all.
//   BM_SimdjsonDom        the same JSON (every header and the index) parsed by simdjson's DOM
//                         parser, from memory, and nothing else
//   BM_AuditCheckpoint    AuditCheckpoint: the index, every header parsed and validated
//   BM_CheckpointValidate Checkpoint::Open + Validate, as load opens a checkpoint
// Each reports `bytes_per_second` over those JSON bytes (the headers' and the index's); the last
// two also `vs_dom`, their speed over the DOM parse's, timed pair by pair: the figure.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <simdjson.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/checkpoint.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;

constexpr int kShards = 160;
constexpr int kTensorsPerShard = 938;

struct Synthetic {
  fs::path dir;
  // Each shard's header JSON and the index, padded for simdjson.
  std::vector<simdjson::padded_string> json;
  int64_t json_bytes = 0;
};

// The header of shard `s` (its tensors' names appended to `names`): tensor g = s · 938 + t is
// the weight (even g) or the scale (odd g) of projection g / 2 of the model, in layer, expert,
// projection order, with contiguous offsets.
std::string HeaderOf(int s, std::vector<std::string>* names, uint64_t* data_bytes) {
  constexpr const char* kProjections[] = {"gate_proj", "up_proj", "down_proj"};
  std::string json = "{";
  uint64_t offset = 0;
  for (int t = 0; t < kTensorsPerShard; ++t) {
    const int64_t g = int64_t{s} * kTensorsPerShard + t;
    const int64_t projection = g / 2;
    const bool scale = g % 2 == 1;
    std::string name =
        fmt::format("model.layers.{}.mlp.experts.{}.{}.{}", projection / 768, projection % 768 / 3,
                    kProjections[projection % 3], scale ? "weight_scale" : "weight");
    const uint64_t size = scale ? 2048 * 56 * 2 : 2048 * 3584;
    json += fmt::format(
        "{}\"{}\":{{\"dtype\":\"{}\",\"shape\":[2048,{}],\"data_offsets\":[{},{}]}}", t ? "," : "",
        name, scale ? "BF16" : "U8", scale ? 56 : 3584, offset, offset + size);
    offset += size;
    names->push_back(std::move(name));
  }
  json += "}";
  *data_bytes = offset;
  return json;
}

const Synthetic& Checkpoint160() {
  static const Synthetic synthetic = [] {
    Synthetic out;
    out.dir = fs::temp_directory_path() / fmt::format("quantpath_bench_headers_{}", getpid());
    fs::create_directories(out.dir);
    std::string index = "{\"weight_map\":{";
    for (int s = 0; s < kShards; ++s) {
      uint64_t data = 0;
      std::vector<std::string> names;
      std::string header = HeaderOf(s, &names, &data);
      const std::string name = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, kShards);
      {
        std::ofstream file(out.dir / name, std::ios::binary);
        const uint64_t length = header.size();
        file.write(reinterpret_cast<const char*>(&length), 8);
        file << header;
      }
      // The data section is a hole: the file has its size without its bytes.
      fs::resize_file(out.dir / name, 8 + header.size() + data);
      for (const std::string& tensor : names) {
        index += fmt::format("{}\"{}\":\"{}\"", index.back() == '{' ? "" : ",", tensor, name);
      }
      out.json_bytes += static_cast<int64_t>(header.size());
      out.json.emplace_back(header);
    }
    index += "}}";
    std::ofstream(out.dir / "model.safetensors.index.json") << index;
    out.json_bytes += static_cast<int64_t>(index.size());
    out.json.emplace_back(index);
    return out;
  }();
  return synthetic;
}

// Parses every header and the index with simdjson's DOM parser; false on a parse error.
bool DomParse(const Synthetic& c, simdjson::dom::parser& parser) {
  for (const simdjson::padded_string& text : c.json) {
    simdjson::dom::element doc;
    if (parser.parse(text).get(doc) != simdjson::SUCCESS) return false;
    benchmark::DoNotOptimize(doc);
  }
  return true;
}

void BM_SimdjsonDom(benchmark::State& state) {
  const Synthetic& c = Checkpoint160();
  simdjson::dom::parser parser;
  for (auto _ : state) {
    if (!DomParse(c, parser)) state.SkipWithError("parse");
  }
  state.SetBytesProcessed(state.iterations() * c.json_bytes);
}

// Times `run` per iteration with a DOM parse of the same bytes timed just before it, untimed by the
// benchmark: `vs_dom` is the DOM parse's total time over `run`'s, the figure. Taken pair by pair,
// it holds while the machine's speed drifts between benchmarks (shared hosts drift by a third).
template <typename Run>
void AgainstDom(benchmark::State& state, const Run& run) {
  using Clock = std::chrono::steady_clock;
  const Synthetic& c = Checkpoint160();
  simdjson::dom::parser parser;
  Clock::duration dom{}, measured{};
  for (auto _ : state) {
    state.PauseTiming();
    const Clock::time_point parse_start = Clock::now();
    if (!DomParse(c, parser)) state.SkipWithError("parse");
    dom += Clock::now() - parse_start;
    state.ResumeTiming();
    const Clock::time_point start = Clock::now();
    if (!run(c)) state.SkipWithError("run");
    measured += Clock::now() - start;
  }
  state.SetBytesProcessed(state.iterations() * c.json_bytes);
  state.counters["vs_dom"] =
      std::chrono::duration<double>(dom) / std::chrono::duration<double>(measured);
}

void BM_AuditCheckpoint(benchmark::State& state) {
  AgainstDom(state, [](const Synthetic& c) {
    Result<CheckpointAudit> audit = AuditCheckpoint(c.dir);
    benchmark::DoNotOptimize(audit);
    return audit.ok() && audit->problems.empty();
  });
}

void BM_CheckpointValidate(benchmark::State& state) {
  AgainstDom(state, [](const Synthetic& c) {
    Result<Checkpoint> checkpoint = Checkpoint::Open(c.dir);
    const bool valid = checkpoint.ok() && checkpoint->Validate().ok();
    benchmark::DoNotOptimize(checkpoint);
    return valid;
  });
}

BENCHMARK(BM_SimdjsonDom)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AuditCheckpoint)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CheckpointValidate)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace quantpath

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(quantpath::Checkpoint160().dir);
  return 0;
}
