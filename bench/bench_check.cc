// `check`'s reading of tensor data against a plain read of the same bytes in the same run: the
// synthetic bf16 checkpoint of bench/synthetic_llama.h (about QUANTPATH_BENCH_GB GB, default 2)
// quantized once per scheme, then per mode and cache state, pair by pair:
//   BM_Check/<scheme>/<mode>/cold:C  CheckFolder reading `values` (every tensor beside the codes)
//                                    or `every-byte` (--deep); `gb_per_s` = CheckReport's
//                                    bytes_read / read_seconds (the values pass, planning excluded)
//   and right after it, the stretches that pass read (CheckReport::read_stretches), in its order,
//   each pread whole by one thread into one buffer, and nothing else: `plain_gb_per_s`.
//   `vs_plain`, the first over the second, is the figure (the target: at least 0.5).
// Warm: the folder read just before; cold: its pages dropped (bench_files::SetCache) before each
// of the two reads.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "bench/synthetic_llama.h"
#include "quantpath/export.h"
#include "quantpath/pipeline.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;

fs::path Root() { return bench_files::Root("check"); }

// The synthetic checkpoint quantized to `scheme` (compressed-tensors), once per run.
fs::path Quantized(const std::string& scheme) {
  static const bench_files::Synthetic bf16 = bench_files::WriteSyntheticLlama(Root() / "bf16");
  const fs::path out = Root() / scheme;
  if (fs::exists(out / "config.json")) return out;
  QuantizeOptions options;
  options.scheme = scheme;
  if (!QuantizeCheckpoint(bf16.in.string(), out.string(), options).ok()) std::abort();
  return out;
}

// Seconds to pread `stretches` of `files` in order into one buffer, grown as needed.
double PlainRead(const std::vector<std::string>& files, const std::vector<ReadStretch>& stretches) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::byte> buffer;
  int fd = -1;
  uint32_t open_file = UINT32_MAX;
  for (const ReadStretch& s : stretches) {
    if (s.file != open_file) {
      if (fd >= 0) close(fd);
      fd = open(files[s.file].c_str(), O_RDONLY | O_CLOEXEC);
      open_file = s.file;
    }
    if (buffer.size() < s.length) buffer.resize(s.length);
    uint64_t got = 0;
    while (got < s.length) {
      const ssize_t n =
          pread(fd, buffer.data() + got, s.length - got, static_cast<off_t>(s.offset + got));
      if (n <= 0) std::abort();
      got += static_cast<uint64_t>(n);
    }
    benchmark::DoNotOptimize(buffer.data());
  }
  if (fd >= 0) close(fd);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void BM_Check(benchmark::State& state, const std::string& scheme, CheckReads reads) {
  const bool cold = state.range(0) != 0;
  const fs::path dir = Quantized(scheme);
  Result<OpenOptions> options = OpenOptions::Parse("native", "", "cpu", "auto", 1);
  if (!options.ok()) std::abort();
  CheckReading reading;
  reading.reads = reads;
  double check_seconds = 0, plain_seconds = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    bench_files::SetCache(dir, cold);
    Result<CheckReport> report = CheckFolder(dir.string(), *options, reading);
    if (!report.ok() || report->errors > 0) {
      state.SkipWithError(report.ok() ? "findings on a clean checkpoint"
                                      : std::string(report.status().message()).c_str());
      return;
    }
    bench_files::SetCache(dir, cold);
    plain_seconds += PlainRead(report->read_files, report->read_stretches);
    check_seconds += report->read_seconds;
    bytes += report->bytes_read;
  }
  const double check = static_cast<double>(bytes) / check_seconds / 1e9;
  const double plain = static_cast<double>(bytes) / plain_seconds / 1e9;
  state.counters["gb_per_s"] = check;
  state.counters["plain_gb_per_s"] = plain;
  state.counters["vs_plain"] = check / plain;
  state.counters["read_gb"] =
      static_cast<double>(bytes) / static_cast<double>(state.iterations()) / 1e9;
}

void Register() {
  for (const std::string scheme : {"w4a16-int4-g128", "w4a16-nvfp4", "w8a8-fp8-block128x128-dyn"}) {
    for (const auto& [mode, reads] : {std::pair{"values", CheckReads::kValues},
                                      std::pair{"every-byte", CheckReads::kEveryByte}}) {
      benchmark::RegisterBenchmark(fmt::format("BM_Check/{}/{}", scheme, mode).c_str(), BM_Check,
                                   scheme, reads)
          ->DenseRange(0, 1)
          ->ArgName("cold")
          // The values are a few percent of the bytes: more pairs for a steady figure.
          ->Iterations(reads == CheckReads::kValues ? 20 : 3)
          ->Unit(benchmark::kSecond)
          ->UseRealTime();
    }
  }
}

}  // namespace
}  // namespace quantpath

int main(int argc, char** argv) {
  return quantpath::bench_files::RunAndCleanUp(argc, argv, quantpath::Register, quantpath::Root());
}
