#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <new>

#include "fmt/format.h"
#include "quantpath/version.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {

std::string DefaultExampleDir() {
  if (const char* env = std::getenv("QUANTPATH_EXAMPLES"))
    return std::string(env) + "/llama-tiny-fp8";
  // An installed CLI finds the examples installed beside it (cmake/install.cmake), a build tree's
  // those of its source tree.
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path installed =
        exe.parent_path().parent_path() / "share/quantpath/examples/llama-tiny-fp8";
    if (std::filesystem::is_directory(installed, error)) return installed.string();
  }
  return std::string(QUANTPATH_EXAMPLES_DIR) + "/llama-tiny-fp8";
}

namespace {

bool json_errors = false;

// The quoted name after `label` in `message` (`tensor "x"`, `layer "y"`), or null.
Json QuotedAfter(std::string_view message, std::string_view label) {
  const std::string open = std::string(label) + " \"";
  const size_t at = message.find(open);
  if (at == std::string_view::npos) return Json::Null();
  const size_t begin = at + open.size();
  const size_t end = message.find('"', begin);
  if (end == std::string_view::npos) return Json::Null();
  return Json::String(std::string(message.substr(begin, end - begin)));
}

// The error as JSON: messages start with where ("dir/config.json#/quantization_config/bits: …",
// "config.json:3:7: …", "DIR: …"), which gives the file and the key (its JSON pointer).
Json ErrorToJson(const std::string& message) {
  Json file = Json::Null(), key = Json::Null();
  const size_t colon = message.find(": ");
  std::string_view where = std::string_view(message).substr(0, colon);
  if (colon != std::string::npos && !where.empty() && where.find(' ') == std::string_view::npos) {
    // "file:line:column" from a JSON syntax error keeps the file.
    while (true) {
      const size_t last = where.rfind(':');
      if (last == std::string_view::npos || last + 1 == where.size() ||
          where.find_first_not_of("0123456789", last + 1) != std::string_view::npos) {
        break;
      }
      where = where.substr(0, last);
    }
    const size_t hash = where.find('#');
    file = Json::String(std::string(where.substr(0, hash)));
    if (hash != std::string_view::npos) key = Json::String(std::string(where.substr(hash + 1)));
  }
  return Json::Object({{"error", Json::Object({{"message", Json::String(message)},
                                               {"file", std::move(file)},
                                               {"key", std::move(key)},
                                               {"tensor", QuotedAfter(message, "tensor")},
                                               {"layer", QuotedAfter(message, "layer")}})}});
}

}  // namespace

void ReportErrorsAsJson() { json_errors = true; }

int ReportBadInput(const std::string& message) {
  std::cerr << "quantpath: " << message << "\n";
  if (json_errors) std::cout << ToJson(ErrorToJson(message)) << "\n";
  return kExitBadInput;
}

Json NullIfEmpty(const std::string& s) { return s.empty() ? Json::Null() : Json::String(s); }

}  // namespace quantpath::cli

int main(int argc, char** argv) {
  using namespace quantpath::cli;
  CLI::App app{"quantpath: from a quantized model folder's config files to a kernel per layer"};
  app.name("quantpath");
  app.set_version_flag("--version", fmt::format("quantpath {}", quantpath::kVersion));
  app.require_subcommand(1);
  int exit_code = kExitOk;
  AddPlanCommand(app, &exit_code);
  AddExplainCommand(app, &exit_code);
  AddLoadCommand(app, &exit_code);
  AddCheckCommand(app, &exit_code);
  AddRunCommand(app, &exit_code);
  AddMatchCommand(app, &exit_code);
  AddDiffCommand(app, &exit_code);
  AddBenchCommand(app, &exit_code);
  AddQuantizeCommand(app, &exit_code);
  AddConvertCommand(app, &exit_code);
  AddCompletionCommand(app, &exit_code);
  app.footer("\nRun `quantpath COMMAND --help` for a command's options.\n");
  if (argc == 1) {
    // As git and hf do: the command list, and the usage error's exit code.
    std::cerr << app.help();
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  } catch (const std::bad_alloc&) {
    // Every input size is capped; an input that still needs more memory than the machine has is
    // unusable input, not a crash.
    return ReportBadInput(
        "out of memory reading the input (the limits in README.md#limits bound what is read)");
  }
  return exit_code;
}
