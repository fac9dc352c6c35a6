// The options of the benchmark table (BenchTableArgs), shared by `quantpath bench` and
// bench/bench_linear so that both take the same command line.
#pragma once

#include "CLI/CLI.hpp"
#include "quantpath/bench.h"

namespace quantpath::cli {

inline void AddBenchTableOptions(CLI::App* cmd, BenchTableArgs* args) {
  std::string grammars;
  if (Result<std::vector<const SpecFamilyRow*>> families = RegisteredFamilies(); families.ok()) {
    for (const SpecFamilyRow* family : *families) {
      grammars += (grammars.empty() ? "" : ", ") + std::string(family->grammar());
    }
  }
  cmd->add_option("--spec", args->specs,
                  "Spec id, or id:ACT with ACT int8-token, fp8-token, fp8-tensor or fp8-group128 "
                  "(repeatable; default: the table's specs that have a fast kernel); ids: " +
                      grammars);
  cmd->add_option("--m", args->m, "Rows of X (repeatable; default 1 2 4 8 16 64 512 2048)");
  cmd->add_option("--n", args->n,
                  "Output features (with --k; default: the table's three shapes; given, no MoE "
                  "rows unless --moe)");
  cmd->add_option("--k", args->k, "Input features (with --n)");
  cmd->add_option("--threads", args->threads, "OpenMP threads (repeatable; default 1 and all)");
  cmd->add_flag("--warm", args->warm,
                "Reuse one weight copy, and one routing for MoE rows (default: cold, from DRAM)");
  CLI::Option* moe = cmd->add_flag_callback(
      "--moe", [args] { args->layers = BenchLayers::kMoe; },
      "Only the MoE rows (64 experts of 7168 x 2048, top-8; with --n N --k K experts of H = N, "
      "I = K)");
  CLI::Option* no_moe = cmd->add_flag_callback(
      "--no-moe", [args] { args->layers = BenchLayers::kDense; }, "Only the dense rows");
  moe->excludes(no_moe);
  cmd->add_flag("--json", args->json, "Print one JSON list of rows instead of the table");
}

}  // namespace quantpath::cli
