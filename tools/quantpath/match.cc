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
    if (args.verify) {
      std::cout << VerifyCases(*results, file, &passed, &failed);
    } else {
      Json decided = CaseResultsToJson(*results);
      for (Json& r : decided.mutable_items()) out.mutable_items().push_back(std::move(r));
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
  CLI::App* cmd = app.add_subcommand(
      "match", "Decide recorded engine cases (JSON lists of cases with their configs)");
  Completes(cmd->add_option("cases", args->files, "Case files (JSON lists of cases)")->required(),
            {ValueCompletion::kFiles, {}});
  AddEngineOption(cmd, &args->engine, "Decide every case as this engine does (default: its own)");
  cmd->add_flag("--verify", args->verify, "Compare with the recorded decisions");
  cmd->callback([args, exit_code] { *exit_code = RunMatch(*args); });
}

}  // namespace quantpath::cli
