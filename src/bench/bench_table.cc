// RunBenchTable (bench.h): the benchmark table, its defaults, and the rows printed as a table or
// one JSON object (docs/json/bench.md).
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/bench.h"
#include "quantpath/kernels.h"
#include "quantpath/specs.h"

namespace quantpath {
namespace {

// The benchmark table: every spec family's usual id (with the activations engines quantize for it,
// where they do; int4 groups also with int8 activations, compressed-tensors' W4A8 and
// --int8-activations), the shapes of a 7–8B model's layers, decode and prefill M.
constexpr const char* kTableSpecs[] = {"bf16",
                                       "fp8_per_tensor",
                                       "fp8_per_channel",
                                       "fp8_per_channel:fp8-token",
                                       "fp8_block_128_128",
                                       "fp8_block_128_128:fp8-group128",
                                       "int4_group_128",
                                       "int4_group_128_zp",
                                       "int4_channel",
                                       "int4_group_128:int8-token",
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
// The MoE rows (MoeBenchShape's layer): the weight formats DeepSeek-V3 / Kimi-K2 experts ship in,
// decode, a decode batch and a prefill.
constexpr const char* kMoeSpecs[] = {"int4_group_128", "fp8_block_128_128"};
constexpr int64_t kMoeM[] = {1, 16, 512};

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

// The table's specs, or the given ones.
std::vector<std::string> SpecsOr(const std::vector<std::string>& given,
                                 std::span<const char* const> table) {
  if (!given.empty()) return given;
  std::vector<std::string> specs;
  for (const char* spec : table) {
    if (HasFastKernel(spec)) specs.emplace_back(spec);
  }
  return specs;
}

std::vector<int64_t> MOr(const std::vector<int64_t>& given, std::span<const int64_t> table) {
  return given.empty() ? std::vector<int64_t>(table.begin(), table.end()) : given;
}

// One row of the text table.
std::string RowText(const BenchRow& r) {
  return fmt::format(
      "{:<24} {:>6} {:>6} {:>6} {:>3} {:<5} {:<24} {:>10.3e} {:>7.2f} {:>6} {:>8.1f} {:>6} {:>6.1f}"
      "{}{}\n",
      r.spec, r.m, r.n, r.k, r.threads, r.cold ? "cold" : "warm", r.kernel, r.seconds,
      r.weight_gbps, Optional(r.pct_bandwidth, "{:.1f}"), r.gflops, Optional(r.pct_peak, "{:.1f}"),
      r.pct_roofline,
      r.experts ? fmt::format("  MoE: {} experts, top-{}", *r.experts, *r.top_k) : "",
      r.peer
          ? fmt::format("  {} {:.1f} GFLOP/s, ×{:.2f}", *r.peer, *r.peer_gflops, *r.ratio_to_peer)
          : "");
}

}  // namespace

Status RunBenchTable(const BenchTableArgs& args, std::ostream& out, const BenchPeers& peers) {
  if ((args.n == 0) != (args.k == 0)) return InvalidInput("--n and --k go together");
  for (int t : args.threads) {
    if (t < 1) return InvalidInput(fmt::format("--threads {}: expected at least 1", t));
  }
  // Unknown specs and activation forms before the machine is measured.
  for (const std::string& spec : args.specs) {
    Result<BenchWeights> weights = BenchWeights::Make(spec, 64, 64, false, MachineLimits{});
    if (!weights.ok()) return weights.status();
  }
  const bool dense = args.layers != BenchLayers::kMoe;
  // --n and --k name one dense shape, or under --moe the experts' H and I.
  const bool moe =
      args.layers == BenchLayers::kMoe || (args.layers == BenchLayers::kAll && args.n == 0);
  MoeBenchShape moe_shape;
  if (args.layers == BenchLayers::kMoe && args.n > 0) {
    moe_shape.hidden = args.n;
    moe_shape.intermediate = args.k;
  }
  std::vector<std::pair<int64_t, int64_t>> shapes;
  if (args.n > 0) {
    shapes.emplace_back(args.n, args.k);
  } else {
    shapes.assign(std::begin(kTableShapes), std::end(kTableShapes));
  }
  // An invalid QUANTPATH_DOT_UNITS before the machine is measured, as the dispatcher would refuse
  // it at the first row.
  if (Result<DotUnitPeaks> peaks = ResolveDotUnitPeaks(); !peaks.ok()) return peaks.status();
  const MachineLimits limits = MeasureMachine();
  const std::vector<int> threads =
      args.threads.empty() ? std::vector<int>{1, limits.threads} : args.threads;
  if (!args.json) {
    out << fmt::format(
        "machine: last-level cache {} MiB{}, DRAM read {:.1f} GB/s (1 thread), {:.1f} GB/s ({} "
        "threads); peaks (1 / all threads) fp32 FMA {} / {} GFLOP/s, vdpbf16ps {} / {} GFLOP/s, "
        "vpdpbusd {} / {} GOP/s, vpmaddwd + vpaddd {} / {} GOP/s, vpmaddubsw on int4 {} / {} "
        "GOP/s\n",
        limits.llc_bytes >> 20, limits.llc_known ? "" : " (assumed)", limits.read_gbps_one,
        limits.read_gbps_all, limits.threads, Optional(limits.fma_gflops_one, "{:.0f}"),
        Optional(limits.fma_gflops_all, "{:.0f}"), Optional(limits.bf16_dot_gflops_one, "{:.0f}"),
        Optional(limits.bf16_dot_gflops_all, "{:.0f}"),
        Optional(limits.int8_dot_gops_one, "{:.0f}"), Optional(limits.int8_dot_gops_all, "{:.0f}"),
        Optional(limits.int16_dot_gops_one, "{:.0f}"),
        Optional(limits.int16_dot_gops_all, "{:.0f}"), Optional(limits.int4_dot_gops_one, "{:.0f}"),
        Optional(limits.int4_dot_gops_all, "{:.0f}"));
    out << fmt::format(
        "dot units: the dispatcher's table row \"{}\"{}; {}\n", limits.unit_table.row,
        limits.unit_table.overridden ? fmt::format(" with {}", kDotUnitsEnv) : "",
        limits.unit_table_disagrees.empty() ? std::string("the peaks measured here agree with it")
                                            : "it disagrees with the peaks measured here: " +
                                                  Join(limits.unit_table_disagrees, "; "));
    out << fmt::format(
        "{:<24} {:>6} {:>6} {:>6} {:>3} {:<5} {:<24} {:>10} {:>7} {:>6} {:>8} {:>6} {:>6}\n",
        "spec", "m", "n", "k", "thr", "cold", "kernel", "seconds", "GB/s", "%bw", "GFLOP/s",
        "%peak", "%roof");
  }
  std::vector<Json> rows;
  const auto emit = [&](const BenchRow& row) {
    if (args.json) {
      rows.push_back(BenchRowJson(row));
    } else {
      out << RowText(row) << std::flush;
    }
  };
  if (dense) {
    for (const std::string& spec : SpecsOr(args.specs, kTableSpecs)) {
      for (const auto& [n, k] : shapes) {
        Result<BenchWeights> weights = BenchWeights::Make(spec, n, k, !args.warm, limits);
        if (!weights.ok()) return weights.status();
        for (int64_t m : MOr(args.m, kTableM)) {
          for (int t : threads) {
            Result<BenchRow> row = BenchLinear(*weights, m, t, limits);
            if (!row.ok()) return row.status();
            std::vector<BenchRow> emitted = {*row};
            if (peers) {
              Result<std::vector<BenchRow>> with_peers = peers(*weights, *row, limits);
              if (!with_peers.ok()) return with_peers.status();
              emitted = std::move(*with_peers);
            }
            for (const BenchRow& r : emitted) emit(r);
          }
        }
      }
    }
  }
  // MoE rows have no peer: none of the peers has a grouped expert kernel.
  if (moe) {
    for (const std::string& spec : SpecsOr(args.specs, kMoeSpecs)) {
      // Made once per spec and freed before the next one's (gigabytes each).
      Result<MoeBenchWeights> weights = MoeBenchWeights::Make(spec, moe_shape);
      if (!weights.ok()) return weights.status();
      for (int64_t m : MOr(args.m, kMoeM)) {
        for (int t : threads) {
          Result<BenchRow> row = BenchMoe(*weights, m, t, !args.warm, limits);
          if (!row.ok()) return row.status();
          emit(*row);
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
