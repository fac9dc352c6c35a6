// bench_linear [--spec ID[:ACT]]… [--m M]… [--n N --k K] [--threads T]… [--warm] [--moe | --no-moe]
//              [--json]
//
// The benchmark table of `quantpath bench` (RunBenchTable) with the peers filled in: after each
// dense quantpath row (MoE rows have none), one row per peer (peers.h) timed on the same shape, M,
// threads and coldness (once, for every spec's row), with `peer`, `peer_gflops` and
// `ratio_to_peer` (quantpath's GFLOP/s over the peer's). A peer with no kernel for this CPU has
// no rows: "bench_linear: no PEER rows: why" on stderr, once; first, each peer library's version
// and threading as it reports them ("bench_linear: peer NAME: …"). Built where oneDNN and OpenBLAS
// are found (Debian's libdnnl-dev, libopenblas-dev). Exit 0, or 2 for bad arguments or a peer that
// fails.
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "bench/peers/peers.h"
#include "quantpath/bench.h"
#include "tools/quantpath/bench_options.h"

namespace quantpath {
namespace {

// The peers' rows. A peer's GEMM does not depend on the spec beside it, so each peer is timed once
// per shape, M, thread count and coldness, and every spec's row there is compared with that figure.
class PeerTimes {
 public:
  Result<std::vector<BenchRow>> Rows(const BenchWeights& weights, const BenchRow& row,
                                     const MachineLimits& limits) {
    std::vector<std::pair<std::string, Result<double>>> peers;
    // `bytes_each`: the peer's bytes per weight, of which a cold row cycles ColdCopies.
    const auto add = [&](const std::string& name, int64_t bytes_each,
                         const std::function<Result<double>(int64_t copies)>& seconds) {
      const Key key{name, row.m, row.n, row.k, row.threads, weights.cold()};
      auto it = times_.find(key);
      if (it == times_.end()) {
        const int64_t copies =
            weights.cold() ? ColdCopies(row.n * row.k * bytes_each, limits.llc_bytes) : 1;
        it = times_.emplace(key, seconds(copies)).first;
      }
      peers.emplace_back(name, it->second);
    };
    add("onednn-bf16", 2, [&](int64_t copies) {
      return peers::OneDnnSeconds(false, row.m, row.n, row.k, row.threads, copies);
    });
    if (weights.spec().activation().dtype == QDType::kINT8 &&
        weights.spec().activation().mode != ActMode::kNone) {
      add("onednn-int8", 1, [&](int64_t copies) {
        return peers::OneDnnSeconds(true, row.m, row.n, row.k, row.threads, copies);
      });
    }
    add("openblas-sgemm", 4, [&](int64_t copies) {
      return peers::OpenBlasSeconds(row.m, row.n, row.k, row.threads, copies);
    });
    std::vector<BenchRow> rows;
    for (auto& [name, seconds] : peers) {
      if (!seconds.ok() && seconds.status().code() == ErrorCode::kUnsupported) {
        if (said_.insert(name).second) {
          std::cerr << "bench_linear: no " << name << " rows: " << seconds.status().message()
                    << "\n";
        }
        continue;
      }
      if (!seconds.ok()) return seconds.status();
      BenchRow r = row;
      r.peer = name;
      r.peer_gflops =
          2.0 * static_cast<double>(row.m * row.n) * static_cast<double>(row.k) / *seconds / 1e9;
      r.ratio_to_peer = row.gflops / *r.peer_gflops;
      rows.push_back(std::move(r));
    }
    return rows;
  }

 private:
  using Key = std::tuple<std::string, int64_t, int64_t, int64_t, int, bool>;
  std::map<Key, Result<double>> times_;
  std::set<std::string> said_;  // peers whose missing rows were reported
};

}  // namespace
}  // namespace quantpath

int main(int argc, char** argv) {
  CLI::App app("Time quantpath's kernels against the machine and against oneDNN and OpenBLAS");
  quantpath::BenchTableArgs args;
  quantpath::cli::AddBenchTableOptions(&app, &args);
  CLI11_PARSE(app, argc, argv);
  // What was measured against, whatever the output's form.
  std::cerr << "bench_linear: peer onednn-bf16, onednn-int8: "
            << quantpath::peers::OneDnnConfiguration()
            << "\nbench_linear: peer openblas-sgemm: " << quantpath::peers::OpenBlasConfiguration()
            << "\n";
  quantpath::PeerTimes peer_times;
  const quantpath::Status status = quantpath::RunBenchTable(
      args, std::cout,
      [&](const quantpath::BenchWeights& weights, const quantpath::BenchRow& row,
          const quantpath::MachineLimits& limits) {
        return peer_times.Rows(weights, row, limits);
      });
  if (!status.ok()) {
    std::cerr << "bench_linear: " << status.message() << "\n";
    return 2;
  }
  return 0;
}
