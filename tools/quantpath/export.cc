// quantpath quantize IN_DIR OUT_DIR --scheme NAME [--format F] [--ignore PATTERN…] [--force]
// quantpath convert  IN_DIR OUT_DIR --to FORMAT [--lossy] [--force]
//   both: [--threads T] [--shard-bytes B] [--json]
//
// Write a model folder (the library's QuantizeCheckpoint / ConvertCheckpoint) and report what was
// written: layers, tensors and bytes in and out, seconds, GB/s, the files and the notes. Progress
// goes to stderr. Exit 0 when the folder was written, 2 otherwise (nothing is left at OUT_DIR).
#include <iostream>
#include <memory>

#include "fmt/format.h"
#include "quantpath/export.h"
#include "quantpath/specs.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct ExportArgs {
  std::string in_dir;
  std::string out_dir;
  std::string scheme;
  std::string format;
  std::vector<std::string> ignore;
  bool force = false;
  bool lossy = false;
  int threads = 0;
  int64_t shard_bytes = ExportOptions().max_shard_bytes;
  bool json = false;
};

Json ReportToJson(const ExportReport& r) {
  std::vector<Json> files;
  for (const std::string& f : r.files) files.push_back(Json::String(f));
  std::vector<Json> notes;
  for (const std::string& n : r.notes) notes.push_back(Json::String(n));
  return Json::Object({{"out_dir", Json::String(r.out_dir)},
                       {"format", Json::String(r.format)},
                       {"scheme", NullIfEmpty(r.scheme)},
                       {"layers_written", Json::Int(r.layers_written)},
                       {"tensors_in", Json::Int(r.tensors_in)},
                       {"tensors_out", Json::Int(r.tensors_out)},
                       {"bytes_in", Json::Int(r.bytes_in)},
                       {"bytes_out", Json::Int(r.bytes_out)},
                       {"seconds", Json::Double(r.seconds)},
                       {"gb_per_s", Json::Double(r.gb_per_s)},
                       {"files", Json::Array(std::move(files))},
                       {"notes", Json::Array(std::move(notes))}});
}

std::string ReportText(const ExportReport& r, std::string_view verb) {
  std::string text = fmt::format("wrote {} ({}{})\n", r.out_dir, r.format,
                                 r.scheme.empty() ? "" : ", " + r.scheme);
  text += fmt::format("layers {}: {}\n", verb, r.layers_written);
  text += fmt::format("tensors: {} read, {} written\n", r.tensors_in, r.tensors_out);
  text += fmt::format("bytes:   {} read, {} written in {:.2f} s ({:.2f} GB/s read + written)\n",
                      DecimalBytes(r.bytes_in), DecimalBytes(r.bytes_out), r.seconds, r.gb_per_s);
  text += fmt::format("files:   {}\n", Join(r.files, ", "));
  for (const std::string& note : r.notes) text += "note: " + note + "\n";
  return text;
}

ExportProgressFn ExportProgressPrinter(std::string command) {
  return [line = ProgressPrinter(std::move(command), "tensors")](const ExportProgress& p) {
    line(static_cast<size_t>(p.tensors_done), static_cast<size_t>(p.tensors_total),
         fmt::format("{} of {} written", DecimalBytes(p.bytes_done), DecimalBytes(p.bytes_total)));
  };
}

int Print(const Result<ExportReport>& report, const ExportArgs& args, std::string_view verb) {
  if (!report.ok()) return ReportBadInput(report.status().message());
  if (args.json) {
    std::cout << ToJson(ReportToJson(*report)) << "\n";
  } else {
    std::cout << ReportText(*report, verb);
  }
  return kExitOk;
}

template <typename Options>
void SetCommon(const ExportArgs& args, std::string command, Options* options) {
  options->force = args.force;
  options->threads = args.threads;
  options->max_shard_bytes = args.shard_bytes;
  options->progress = ExportProgressPrinter(std::move(command));
}

int RunQuantize(const ExportArgs& args) {
  QuantizeOptions options;
  SetCommon(args, "quantize", &options);
  options.scheme = args.scheme;
  options.ignore = args.ignore;
  if (!args.format.empty()) {
    Result<CheckpointFormat> format = ParseCheckpointFormat(args.format);
    if (!format.ok()) return ReportBadInput(format.status().message());
    options.format = *format;
  }
  return Print(QuantizeCheckpoint(args.in_dir, args.out_dir, options), args, "quantized");
}

int RunConvert(const ExportArgs& args) {
  ConvertOptions options;
  SetCommon(args, "convert", &options);
  Result<CheckpointFormat> to = ParseCheckpointFormat(args.format);
  if (!to.ok()) return ReportBadInput(to.status().message());
  options.to = *to;
  options.lossy = args.lossy;
  return Print(ConvertCheckpoint(args.in_dir, args.out_dir, options), args, "converted");
}

CLI::App* AddCommon(CLI::App& app, const std::string& name, const std::string& description,
                    ExportArgs* args) {
  CLI::App* cmd = app.add_subcommand(name, description);
  AddModelDir(cmd, &args->in_dir);
  Completes(cmd->add_option("OUT_DIR", args->out_dir,
                            "The folder to write (it must not exist, unless --force)")
                ->required(),
            {ValueCompletion::kDirs, {}});
  cmd->add_flag("--force", args->force, "Replace OUT_DIR if it exists (never the input)");
  cmd->add_option("--threads", args->threads, "Layers written at once (default: every core)");
  cmd->add_option("--shard-bytes", args->shard_bytes,
                  "The largest safetensors shard, in bytes (default 5 GB)");
  AddJsonFlag(cmd, &args->json);
  return cmd;
}

}  // namespace

void AddQuantizeCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd =
      AddCommon(app, "quantize",
                "Quantize a bf16/fp16/fp32 checkpoint to nearest into a new folder", args.get());
  std::vector<std::string> schemes;
  for (const OnlineTarget& target : OnlineTargets()) {
    if (target.refusal.empty()) schemes.push_back(target.name);
  }
  AddChoiceOption(cmd, "--scheme", &args->scheme, "The scheme of every linear layer", schemes)
      ->required();
  AddChoiceOption(cmd, "--format", &args->format,
                  "The checkpoint format (default compressed-tensors)", CheckpointFormatNames());
  cmd->add_option("--ignore", args->ignore,
                  "Leave these modules unquantized: a module name, or re:REGEX matched from the "
                  "start (compressed-tensors' ignore)");
  cmd->callback([args, exit_code] { *exit_code = RunQuantize(*args); });
}

void AddConvertCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = AddCommon(
      app, "convert", "Write a quantized checkpoint in another format, or dequantized to bf16",
      args.get());
  AddChoiceOption(cmd, "--to", &args->format, "The format to write", CheckpointFormatNames())
      ->required();
  cmd->add_flag("--lossy", args->lossy,
                "Write values the target cannot hold as stored the way the engines read them "
                "(default: refuse, saying why)");
  cmd->callback([args, exit_code] { *exit_code = RunConvert(*args); });
}

}  // namespace quantpath::cli
