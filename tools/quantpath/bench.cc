// quantpath bench [--spec ID]… [--m M]… [--n N --k K] [--threads T]… [--warm] [--json]
//
// Measures the machine (DRAM read bandwidth on 1 and all threads, fp32 FMA peak), then times the
// kernel the dispatcher picks per (spec, shape, M, threads), cold unless --warm: one row each, as
// a table or (--json) one object {"machine", "rows"} (docs/json/bench.md). Without --spec, the
// table's specs whose dispatch reaches a fast kernel (reference kernels are the oracle, not a
// figure); without --n/--k, the table's three shapes. Exit 0, or 2 for a bad spec or shape.
#include <iostream>

#include "fmt/format.h"
#include "quantpath/bench.h"
#include "quantpath/kernels.h"
#include "quantpath/specs.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
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

struct BenchArgs {
  std::vector<std::string> specs;
  std::vector<int64_t> m;
  int64_t n = 0;
  int64_t k = 0;
  std::vector<int> threads;
  bool warm = false;
  bool json = false;
};

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

int RunBench(const BenchArgs& args) {
  if ((args.n == 0) != (args.k == 0)) return ReportBadInput("--n and --k go together");
  for (int t : args.threads) {
    if (t < 1) return ReportBadInput(fmt::format("--threads {}: expected at least 1", t));
  }
  std::vector<std::string> specs = args.specs;
  // Unknown specs and activation forms before the machine is measured.
  for (const std::string& spec : specs) {
    Result<BenchWeights> weights = BenchWeights::Make(spec, 64, 64, false, MachineLimits{});
    if (!weights.ok()) return ReportBadInput(weights.status().message());
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
    std::cout << fmt::format(
        "machine: last-level cache {} MiB{}, DRAM read {:.1f} GB/s (1 thread), {:.1f} GB/s ({} "
        "threads); peaks (1 / all threads) fp32 FMA {} / {} GFLOP/s, vdpbf16ps {} / {} GFLOP/s, "
        "vpdpbusd {} / {} GOP/s\n",
        limits.llc_bytes >> 20, limits.llc_known ? "" : " (assumed)", limits.read_gbps_one,
        limits.read_gbps_all, limits.threads, Optional(limits.fma_gflops_one, "{:.0f}"),
        Optional(limits.fma_gflops_all, "{:.0f}"), Optional(limits.bf16_dot_gflops_one, "{:.0f}"),
        Optional(limits.bf16_dot_gflops_all, "{:.0f}"),
        Optional(limits.int8_dot_gops_one, "{:.0f}"), Optional(limits.int8_dot_gops_all, "{:.0f}"));
    std::cout << fmt::format(
        "{:<24} {:>6} {:>6} {:>6} {:>3} {:<5} {:<24} {:>10} {:>7} {:>6} {:>8} {:>6}\n", "spec", "m",
        "n", "k", "thr", "cold", "kernel", "seconds", "GB/s", "%bw", "GFLOP/s", "%peak");
  }
  std::vector<Json> rows;
  for (const std::string& spec : specs) {
    for (const auto& [n, k] : shapes) {
      Result<BenchWeights> weights = BenchWeights::Make(spec, n, k, !args.warm, limits);
      if (!weights.ok()) return ReportBadInput(weights.status().message());
      for (int64_t m : ms) {
        for (int t : threads) {
          Result<BenchRow> row = BenchLinear(*weights, m, t, limits);
          if (!row.ok()) return ReportBadInput(row.status().message());
          if (args.json) {
            rows.push_back(BenchRowJson(*row));
            continue;
          }
          std::cout << fmt::format(
              "{:<24} {:>6} {:>6} {:>6} {:>3} {:<5} {:<24} {:>10.3e} {:>7.2f} {:>6} {:>8.1f} "
              "{:>6}\n",
              row->spec, row->m, row->n, row->k, row->threads, row->cold ? "cold" : "warm",
              row->kernel, row->seconds, row->weight_gbps, Optional(row->pct_bandwidth, "{:.1f}"),
              row->gflops, Optional(row->pct_peak, "{:.1f}"));
        }
      }
    }
  }
  if (args.json) {
    std::cout << ToJson(Json::Object({{"machine", MachineLimitsJson(limits)},
                                      {"rows", Json::Array(std::move(rows))}}))
              << "\n";
  }
  return kExitOk;
}

}  // namespace

void AddBenchCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure the machine and time each spec's kernel against its limits");
  cmd->add_option("--spec", args->specs,
                  "Spec id, or id:ACT with ACT int8-token, fp8-token, fp8-tensor or fp8-group128 "
                  "(repeatable; default: the table's specs that have a fast kernel)");
  cmd->add_option("--m", args->m, "Rows of X (repeatable; default 1 2 4 8 16 64 512 2048)");
  cmd->add_option("--n", args->n, "Output features (with --k; default: the table's three shapes)");
  cmd->add_option("--k", args->k, "Input features (with --n)");
  cmd->add_option("--threads", args->threads, "OpenMP threads (repeatable; default 1 and all)");
  cmd->add_flag("--warm", args->warm, "Reuse one weight copy (default: cold, from DRAM)");
  cmd->add_flag("--json", args->json, "Print one JSON object (docs/json/bench.md)");
  cmd->callback([args, exit_code] { *exit_code = RunBench(*args); });
}

}  // namespace quantpath::cli
