// quantpath match CASES.json... [--engine E] [--verify]
#include <iostream>

#include "fmt/format.h"
#include "quantpath/report.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct MatchArgs {
  std::vector<std::string> files;
  std::string engine;
  bool verify = false;
};

int RunMatch(const MatchArgs& args) {
  std::optional<Dialect> engine;
  if (!args.engine.empty()) {
    if (args.verify) return ReportBadInput("--engine cannot be combined with --verify");
    engine = ParseDialect(args.engine);
    if (!engine) return ReportBadInput("--engine: unknown dialect " + args.engine);
  }
  Json out = Json::Array();
  int passed = 0;
  int failed = 0;
  for (const std::string& file : args.files) {
    Result<Json> cases = ReadJsonFile(file);
    if (!cases.ok()) return ReportBadInput(cases.status().message());
    Result<std::vector<CaseResult>> results = MatchCases(*cases, file, engine);
    if (!results.ok()) return ReportBadInput(results.status().message());
    for (const CaseResult& r : *results) {
      Json decisions = Json::Array();
      for (size_t i = 0; i < r.decisions.size(); ++i) {
        const CaseDecision& got = r.decisions[i];
        decisions.mutable_items().push_back(Json::Object({{"prefix", Json::String(got.prefix)},
                                                          {"decision", Json::String(got.decision)},
                                                          {"detail", Json::String(got.detail)}}));
        if (!args.verify) continue;
        if (i >= r.expected.size()) {
          std::cout << fmt::format("{} {} {}: no expected decision recorded\n", file, r.id,
                                   got.prefix);
          ++failed;
          continue;
        }
        const CaseDecision& want = r.expected[i];
        if (want.decision != got.decision) {
          ++failed;
          std::cout << fmt::format(
              "MISMATCH {} {} [{}] {}: expected {} ({}), got {} ({})\n", file, r.id, i,
              got.prefix, want.decision, want.detail, got.decision, got.detail);
        } else {
          ++passed;
          if (want.detail != got.detail) {
            std::cout << fmt::format("note {} {} [{}] {}: detail expected \"{}\", got \"{}\"\n",
                                     file, r.id, i, got.prefix, want.detail, got.detail);
          }
        }
      }
      out.mutable_items().push_back(
          Json::Object({{"id", Json::String(r.id)}, {"decisions", std::move(decisions)}}));
    }
  }
  if (args.verify) {
    std::cout << fmt::format("{} passed, {} failed\n", passed, failed);
    return failed == 0 ? kExitOk : kExitFindings;
  }
  std::cout << ToJson(out, 1) << "\n";
  return kExitOk;
}

}  // namespace

void AddMatchCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<MatchArgs>();
  CLI::App* cmd = app.add_subcommand("match", "Decide recorded engine cases (oracle schema)");
  cmd->add_option("cases", args->files, "Case files (JSON lists of cases)")->required();
  cmd->add_option("--engine", args->engine, "Override each case's engine (native|vllm|sglang)");
  cmd->add_flag("--verify", args->verify, "Compare with the recorded decisions");
  cmd->callback([args, exit_code] { *exit_code = RunMatch(*args); });
}

}  // namespace quantpath::cli
