// quantpath bench [--spec ID[:ACT]]… [--m M]… [--n N --k K] [--threads T]… [--warm]
//                 [--moe | --no-moe] [--json]
//
// The benchmark table (RunBenchTable, src/bench/bench_table.cc): the machine measured, then one
// row per (spec, shape, M, threads), then the MoE rows, as a table or (--json) one object
// {"machine", "rows"} (docs/json/bench.md). Exit 0, or 2 for a bad spec, activation form, shape or
// thread count (with --json also {"error": …} on stdout).
#include <iostream>

#include "quantpath/bench.h"
#include "tools/quantpath/bench_options.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

int RunBench(const BenchTableArgs& args) {
  // bench_options.h is shared with bench_linear, which prints no JSON errors: the flag's effect
  // on errors is the CLI's.
  if (args.json) ReportErrorsAsJson();
  const Status status = RunBenchTable(args, std::cout);
  return status.ok() ? kExitOk : ReportBadInput(status.message());
}

}  // namespace

void AddBenchCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<BenchTableArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure the machine and time each spec's kernel against its limits");
  AddBenchTableOptions(cmd, args.get());
  cmd->callback([args, exit_code] { *exit_code = RunBench(*args); });
}

}  // namespace quantpath::cli
