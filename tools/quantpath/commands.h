// The quantpath command line: one file per subcommand, each thin over the library.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "quantpath/report.h"

namespace quantpath::cli {

// Exit codes shared by every command (DESIGN.md): 0 success; 1 the command worked and found
// problems; 2 unusable input or usage.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitBadInput = 2;

// Each Add*Command registers a subcommand whose callback stores its exit code in *exit_code.
void AddPlanCommand(CLI::App& app, int* exit_code);
void AddExplainCommand(CLI::App& app, int* exit_code);
void AddRunCommand(CLI::App& app, int* exit_code);
void AddMatchCommand(CLI::App& app, int* exit_code);
void AddDiffCommand(CLI::App& app, int* exit_code);
void AddLoadCommand(CLI::App& app, int* exit_code);
void AddCheckCommand(CLI::App& app, int* exit_code);
void AddBenchCommand(CLI::App& app, int* exit_code);
void AddQuantizeCommand(CLI::App& app, int* exit_code);
void AddConvertCommand(CLI::App& app, int* exit_code);
// `completion bash|zsh`: the shell completion script, from the commands defined on `app`.
void AddCompletionCommand(CLI::App& app, int* exit_code);

// --dtype, --tp, --speculative and --platform, shared by the commands that decide layers (plan,
// explain, diff); OpenOptions::Parse checks them.
struct LaunchArgs {
  std::string dtype = "auto";
  int64_t tp_size = 1;
  bool speculative = false;
  std::string platform = "cuda";
};
// --platform alone (check).
void AddPlatformOption(CLI::App* cmd, std::string* platform);
void AddLaunchOptions(CLI::App* cmd, LaunchArgs* args);

// What the shell completions offer for an option's value (completion.cc).
struct ValueCompletion {
  enum Kind { kWords, kFiles, kDirs } kind = kWords;
  std::vector<std::string> words;  // kWords
};
// Records what `option`'s value completes to; returns `option`.
CLI::Option* Completes(CLI::Option* option, ValueCompletion completion);
// What was recorded for `option`, or null (a value the shell cannot guess, such as a number).
const ValueCompletion* CompletionOf(const CLI::Option* option);
// An option taking one of `values`, listed in its help and its completions.
CLI::Option* AddChoiceOption(CLI::App* cmd, const std::string& name, std::string* value,
                             const std::string& description, std::vector<std::string> values);
// --engine (every dialect, versioned ones included), --quantization (every importer's name),
// --device (every device name).
CLI::Option* AddEngineOption(CLI::App* cmd, std::string* engine,
                             const std::string& description = "Decide as this engine does");
CLI::Option* AddQuantizationOption(CLI::App* cmd, std::string* quantization);
CLI::Option* AddDeviceOption(CLI::App* cmd, std::string* device,
                             const std::string& description = "The device to lay layers out for");
// The model folder positional (ResolveModelDir says what it accepts).
CLI::Option* AddModelDir(CLI::App* cmd, std::string* dir, bool required = true);
// --json.
CLI::Option* AddJsonFlag(CLI::App* cmd, bool* json);
// The importers' own options (FormatOptionsDeclared: --modelslim-packing old|new), each value
// under its name; an option not given stays empty.
using FormatArgs = std::map<std::string, std::string>;
void AddFormatOptions(CLI::App* cmd, FormatArgs* args);
// Hands the given ones to `options` (OpenOptions::SetFormatOption checks them).
Status SetFormatOptions(const FormatArgs& args, OpenOptions* options);
// --online SCHEME, the help listing the schemes this build quantizes at load
// (OpenOptions::SetOnline reads it).
void AddOnlineOption(CLI::App* cmd, std::string* online);
// --int8-activations (OpenOptions::int8_activations)
void AddInt8ActivationsFlag(CLI::App* cmd, bool* int8_activations);

// How tables go to stdout: its terminal's width (COLUMNS, else the terminal's; 0 when neither),
// --wide, and colour on a terminal unless NO_COLOR is set.
TableStyle StdoutStyle(bool wide);

// Decimal units, as GB/s is: "512 B", "221.5 kB", "983.63 MB", "1.23 GB".
std::string DecimalBytes(int64_t bytes);
// Progress of `done` of `total` `unit`s on stderr: a bar redrawn in place on a terminal; elsewhere
// (logs, pipes) one line at the end, "<command>: 100% (10/10 <unit>, <detail>)".
using ProgressLine = std::function<void(size_t done, size_t total, const std::string& detail)>;
ProgressLine ProgressPrinter(std::string command, std::string unit);

// The bundled example folder used when a command is given no model folder.
std::string DefaultExampleDir();
// Prints "quantpath: <message>" to stderr and returns kExitBadInput. After --json it also prints
// {"error": {"message", "file", "key", "tensor", "layer"}} on stdout (docs/json/plan.md).
int ReportBadInput(const std::string& message);
// Makes ReportBadInput print its JSON object too (the --json flag's callback).
void ReportErrorsAsJson();
// A JSON string, or null for an empty one (the JSON outputs' optional texts).
Json NullIfEmpty(const std::string& s);

}  // namespace quantpath::cli
