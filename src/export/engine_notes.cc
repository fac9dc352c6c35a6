// The engines' view of a written folder (engine_notes.h).
#include "src/export/engine_notes.h"

#include "fmt/format.h"
#include "quantpath/pipeline.h"

namespace quantpath::export_internal {

void AddEngineNotes(const std::string& out_dir, std::vector<std::string>* notes) {
  // The releases users run: the newest of each engine.
  for (const Engine e : {Engine::kVllm, Engine::kSglang}) {
    const std::string_view engine = NewestRelease(e).name;
    Result<OpenOptions> options = OpenOptions::Parse(engine, "", "cpu");
    Result<CheckReport> report =
        options.ok() ? CheckFolder(out_dir, *options) : Result<CheckReport>(options.status());
    if (!report.ok()) {
      notes->push_back(
          fmt::format("{}: the folder cannot be checked: {}", engine, report.status().message()));
      continue;
    }
    if (report->errors == 0) continue;
    const Finding* first = nullptr;
    for (const Finding& f : report->findings) {
      if (f.error && first == nullptr) first = &f;
    }
    notes->push_back(
        fmt::format("{} would not load it: {} errors in `quantpath check --engine {}`, "
                    "the first: {}",
                    engine, report->errors, engine, first->message));
  }
}

}  // namespace quantpath::export_internal
