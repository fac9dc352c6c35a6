// quantpath check MODEL_DIR [--engine E] [--quantization NAME] [--tp N] [--json]
//
// Holds the checkpoint's headers and index against the plan (the pipeline's CheckFolder), never
// reading tensor data: one line per finding, then the tensor-parallel sizes up to 16 at which the
// whole model splits, then a line per severity. Exit 0 when nothing is
// wrong (warnings allowed), 1 with an error finding, 2 when the folder cannot be checked (no
// weights, an unreadable config or index).
#include <iostream>

#include "fmt/format.h"
#include "quantpath/pipeline.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct CheckArgs {
  std::string dir;
  std::string engine = "native";
  std::string quantization;
  std::string modelslim_packing;
  int64_t tp_size = 1;
  bool json = false;
};

std::string SizeList(const std::vector<int64_t>& sizes) {
  std::string text;
  for (int64_t size : sizes) text += fmt::format("{}{}", text.empty() ? "" : ", ", size);
  return text.empty() ? "none" : text;
}

Json ReportToJson(const CheckArgs& args, const CheckReport& report) {
  std::vector<Json> findings;
  for (const Finding& f : report.findings) {
    findings.push_back(Json::Object({{"severity", Json::String(f.error ? "error" : "warning")},
                                     {"kind", Json::String(std::string(f.KindName()))},
                                     {"file", NullIfEmpty(f.file)},
                                     {"tensor", NullIfEmpty(f.tensor)},
                                     {"layer", NullIfEmpty(f.layer)},
                                     {"expected", NullIfEmpty(f.expected)},
                                     {"found", NullIfEmpty(f.found)},
                                     {"message", Json::String(f.message)}}));
  }
  std::vector<Json> not_checked;
  for (const std::string& file : report.not_checked) not_checked.push_back(Json::String(file));
  std::vector<Json> loadable_tp;
  for (int64_t size : report.loadable_tp) loadable_tp.push_back(Json::Int(size));
  return Json::Object({{"model", Json::String(args.dir)},
                       {"engine", Json::String(args.engine)},
                       {"tensors", Json::Int(report.tensors)},
                       {"errors", Json::Int(report.errors)},
                       {"warnings", Json::Int(report.warnings)},
                       {"not_checked", Json::Array(std::move(not_checked))},
                       {"layers_not_checked", NullIfEmpty(report.layers_not_checked)},
                       {"loadable_tp", Json::Array(std::move(loadable_tp))},
                       {"findings", Json::Array(std::move(findings))}});
}

std::string Text(const CheckReport& report) {
  std::string out;
  for (const Finding& f : report.findings) {
    out += fmt::format("{} {}: {}\n", f.error ? "error" : "warning", f.KindName(), f.message);
  }
  if (!report.layers_not_checked.empty()) {
    out += fmt::format("layers not checked: {}\n", report.layers_not_checked);
  }
  for (const std::string& file : report.not_checked) {
    out += fmt::format(
        "not checked: {} (no readable header: its tensors are known by name "
        "only)\n",
        file);
  }
  out += fmt::format("splits at --tp: {} (of 1 to 16)\n", SizeList(report.loadable_tp));
  out +=
      fmt::format("checked {} tensors: {} error{}, {} warning{}\n", report.tensors, report.errors,
                  report.errors == 1 ? "" : "s", report.warnings, report.warnings == 1 ? "" : "s");
  return out;
}

int RunCheck(const CheckArgs& args) {
  Result<OpenOptions> options =
      OpenOptions::Parse(args.engine, args.quantization, "cpu", "auto", args.tp_size);
  if (!options.ok()) return ReportBadInput(options.status().message());
  if (Status s = options->SetModelSlimPacking(args.modelslim_packing); !s.ok()) {
    return ReportBadInput(s.message());
  }
  Result<CheckReport> report = CheckFolder(args.dir, *options);
  if (!report.ok()) return ReportBadInput(report.status().message());
  if (args.json) {
    std::cout << ToJson(ReportToJson(args, *report)) << "\n";
  } else {
    std::cout << Text(*report);
  }
  return report->errors > 0 ? kExitFindings : kExitOk;
}

}  // namespace

void AddCheckCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "check", "Check a checkpoint's headers and index against its config, without reading data");
  AddModelDir(cmd, &args->dir);
  AddEngineOption(cmd, &args->engine);
  AddQuantizationOption(cmd, &args->quantization);
  cmd->add_option("--tp", args->tp_size,
                  "Tensor-parallel size whose per-rank shapes are checked (findings per layer)");
  AddModelSlimPackingOption(cmd, &args->modelslim_packing);
  AddJsonFlag(cmd, &args->json);
  cmd->callback([args, exit_code] { *exit_code = RunCheck(*args); });
}

}  // namespace quantpath::cli
