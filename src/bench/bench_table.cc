// RunBenchTable (bench.h): the benchmark table, its defaults, and the rows printed as a table or
// one JSON object (docs/json/bench.md).
#include <iostream>

#include "fmt/format.h"
#include "quantpath/bench.h"
#include "quantpath/kernels.h"
#include "quantpath/specs.h"

namespace quantpath {
namespace {

// The benchmark table: every spec family's usual id (with the activations engines quantize for it,
// where they do), the shapes of a 7–8B model's layers, decode and prefill M.
constexpr const char* kTableSpecs[] = {"bf16",
                                       "fp8_per_tensor",
                                       "fp8_per_channel",
                                       "fp8_per_channel:fp8-token",
                                       "fp8_block_128_128",
                                       "fp8_block_128_128:fp8-group128",
                                       "int4_group_128",
                                       "int4_group_128_zp",
                                       "int4_channel",
                                       "int8_channel",
                                       "int8_channel:int8-token",
                                       "int8_tensor",
                                       "int4_group_128_prescaled",
                                       "nvfp4_block_16_linear",
                                       "mxfp4_block_32",
                                       "mxfp8_block_32",
                                       "nf4_block_64",
                                       "fp4_block_64",
                                       "int8_rowwise_bnb"};
constexpr std::pair<int64_t, int64_t> kTableShapes[] = {{4096, 4096}, {14336, 4096}, {4096, 14336}};
constexpr int64_t kTableM[] = {1, 2, 4, 8, 16, 64, 512, 2048};

// Whether the dispatcher reaches a kernel above the reference for `spec_id` at M = 1.
bool HasFastKernel(const std::string& spec_id) {
  Result<BenchWeights> weights = BenchWeights::Make(spec_id, 64, 64, false, MachineLimits{});
  Result<std::shared_ptr<Dispatcher>> dispatcher = Dispatcher::Default();
  if (!weights.ok() || !dispatcher.ok()) return false;
  const WeightSpec& spec = weights->spec();
  Result<const LinearKernel*> kernel =
      (*dispatcher)
          ->Select(KernelProbe{spec.key(), 1, 4096, 4096, QDType::kBF16, QDType::kBF16,
                               DeviceCaps{}, spec.activation(),
                               weights->copies().front().tensor(Slot::kWeight).dtype()});
  return kernel.ok() && (*kernel)->priority() > kReferencePriority;
}

std::string Optional(std::optional<double> v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : "-";
}

}  // namespace

Status RunBenchTable(const BenchTableArgs& args, std::ostream& out, const BenchPeers& peers) {
  if ((args.n == 0) != (args.k == 0)) return InvalidInput("--n and --k go together");
  for (int t : args.threads) {
    if (t < 1) return InvalidInput(fmt::format("--threads {}: expected at least 1", t));
  }
  std::vector<std::string> specs = args.specs;
  // Unknown specs and activation forms before the machine is measured.
  for (const std::string& spec : specs) {
    Result<BenchWeights> weights = BenchWeights::Make(spec, 64, 64, false, MachineLimits{});
    if (!weights.ok()) return weights.status();
  }
  if (specs.empty()) {
    for (const char* spec : kTableSpecs) {
      if (HasFastKernel(spec)) specs.emplace_back(spec);
    }
  }
  std::vector<std::pair<int64_t, int64_t>> shapes;
  if (args.n > 0) {
    shapes.emplace_back(args.n, args.k);
  } else {
    shapes.assign(std::begin(kTableShapes), std::end(kTableShapes));
  }
  const std::vector<int64_t> ms =
      args.m.empty() ? std::vector<int64_t>(std::begin(kTableM), std::end(kTableM)) : args.m;
  const MachineLimits limits = MeasureMachine();
  const std::vector<int> threads =
      args.threads.empty() ? std::vector<int>{1, limits.threads} : args.threads;
  if (!args.json) {
    out << fmt::format(
        "machine: last-level cache {} MiB{}, DRAM read {:.1f} GB/s (1 thread), {:.1f} GB/s ({} "
        "threads); peaks (1 / all threads) fp32 FMA {} / {} GFLOP/s, vdpbf16ps {} / {} GFLOP/s, "
        "vpdpbusd {} / {} GOP/s\n",
        limits.llc_bytes >> 20, limits.llc_known ? "" : " (assumed)", limits.read_gbps_one,
        limits.read_gbps_all, limits.threads, Optional(limits.fma_gflops_one, "{:.0f}"),
        Optional(limits.fma_gflops_all, "{:.0f}"), Optional(limits.bf16_dot_gflops_one, "{:.0f}"),
        Optional(limits.bf16_dot_gflops_all, "{:.0f}"),
        Optional(limits.int8_dot_gops_one, "{:.0f}"), Optional(limits.int8_dot_gops_all, "{:.0f}"));
    out << fmt::format(
        "{:<24} {:>6} {:>6} {:>6} {:>3} {:<5} {:<24} {:>10} {:>7} {:>6} {:>8} {:>6}\n", "spec", "m",
        "n", "k", "thr", "cold", "kernel", "seconds", "GB/s", "%bw", "GFLOP/s", "%peak");
  }
  std::vector<Json> rows;
  for (const std::string& spec : specs) {
    for (const auto& [n, k] : shapes) {
      Result<BenchWeights> weights = BenchWeights::Make(spec, n, k, !args.warm, limits);
      if (!weights.ok()) return weights.status();
      for (int64_t m : ms) {
        for (int t : threads) {
          Result<BenchRow> row = BenchLinear(*weights, m, t, limits);
          if (!row.ok()) return row.status();
          std::vector<BenchRow> emitted = {*row};
          if (peers) {
            Result<std::vector<BenchRow>> with_peers = peers(*weights, *row);
            if (!with_peers.ok()) return with_peers.status();
            emitted = std::move(*with_peers);
          }
          for (const BenchRow& r : emitted) {
            if (args.json) {
              rows.push_back(BenchRowJson(r));
              continue;
            }
            out << fmt::format(
                "{:<24} {:>6} {:>6} {:>6} {:>3} {:<5} {:<24} {:>10.3e} {:>7.2f} {:>6} {:>8.1f} "
                "{:>6}{}\n",
                r.spec, r.m, r.n, r.k, r.threads, r.cold ? "cold" : "warm", r.kernel, r.seconds,
                r.weight_gbps, Optional(r.pct_bandwidth, "{:.1f}"), r.gflops,
                Optional(r.pct_peak, "{:.1f}"),
                r.peer ? fmt::format("  {} {:.1f} GFLOP/s, ×{:.2f}", *r.peer, *r.peer_gflops,
                                     *r.ratio_to_peer)
                       : "");
          }
        }
      }
    }
  }
  if (args.json) {
    out << ToJson(Json::Object(
               {{"machine", MachineLimitsJson(limits)}, {"rows", Json::Array(std::move(rows))}}))
        << "\n";
  }
  return {};
}

}  // namespace quantpath
