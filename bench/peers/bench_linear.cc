// bench_linear [--spec ID[:ACT]]… [--m M]… [--n N --k K] [--threads T]… [--warm] [--moe | --no-moe]
//              [--json]
//
// The benchmark table of `quantpath bench` (RunBenchTable) with the peers filled in: after each
// dense quantpath row (MoE rows have none), one row per peer (peers.h) timed on the same shape, M,
// threads and copies, with `peer`, `peer_gflops` and `ratio_to_peer` (quantpath's GFLOP/s over the
// peer's). A peer with no kernel for this CPU has no rows: "bench_linear: no PEER rows: why" on
// stderr, once. Built where oneDNN and OpenBLAS are found (Debian's libdnnl-dev, libopenblas-dev).
// Exit 0, or 2 for bad arguments or a peer that fails.
#include <iostream>
#include <set>
#include <string>

#include "CLI/CLI.hpp"
#include "bench/peers/peers.h"
#include "quantpath/bench.h"
#include "tools/quantpath/bench_options.h"

namespace quantpath {
namespace {

Result<std::vector<BenchRow>> WithPeers(const BenchWeights& weights, const BenchRow& row) {
  const bool int8 = weights.spec().activation().dtype == QDType::kINT8 &&
                    weights.spec().activation().mode != ActMode::kNone;
  const int64_t copies = static_cast<int64_t>(weights.copies().size());
  std::vector<std::pair<std::string, Result<double>>> peers;
  peers.emplace_back("onednn-bf16",
                     peers::OneDnnSeconds(false, row.m, row.n, row.k, row.threads, copies));
  if (int8) {
    peers.emplace_back("onednn-int8",
                       peers::OneDnnSeconds(true, row.m, row.n, row.k, row.threads, copies));
  }
  peers.emplace_back("openblas-sgemm",
                     peers::OpenBlasSeconds(row.m, row.n, row.k, row.threads, copies));
  std::vector<BenchRow> rows;
  for (auto& [name, seconds] : peers) {
    if (!seconds.ok() && seconds.status().code() == ErrorCode::kUnsupported) {
      static std::set<std::string> said;
      if (said.insert(name).second) {
        std::cerr << "bench_linear: no " << name << " rows: " << seconds.status().message() << "\n";
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

}  // namespace
}  // namespace quantpath

int main(int argc, char** argv) {
  CLI::App app("Time quantpath's kernels against the machine and against oneDNN and OpenBLAS");
  quantpath::BenchTableArgs args;
  quantpath::cli::AddBenchTableOptions(&app, &args);
  CLI11_PARSE(app, argc, argv);
  const quantpath::Status status = quantpath::RunBenchTable(args, std::cout, quantpath::WithPeers);
  if (!status.ok()) {
    std::cerr << "bench_linear: " << status.message() << "\n";
    return 2;
  }
  return 0;
}
