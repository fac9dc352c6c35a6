// `quantize` throughput on a synthetic bf16 checkpoint of about 2 GB (bench/synthetic_llama.h:
// QUANTPATH_BENCH_GB sets the size in GB, rounded to whole layers), against the machine's own file
// limit measured in the same run:
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

#include "bench/synthetic_llama.h"
#include "fmt/format.h"
#include "quantpath/export.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;

fs::path Root() { return bench_files::Root("export"); }

const bench_files::Synthetic& Folder() {
  static const bench_files::Synthetic folder = bench_files::WriteSyntheticLlama(Root() / "in");
  return folder;
}

void SetCache(bool cold) { bench_files::SetCache(Folder().in, cold); }

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
  return quantpath::bench_files::RunAndCleanUp(argc, argv, quantpath::Register, quantpath::Root());
}
