// quantpath sources: every configuration file of a model folder, parsed once, with provenance.
//
// Goals: find config.json and the standalone quantization files, keep their JSON in document
// order, and say where the quantization description came from (file + JSON pointer).
// Non-goals: interpreting any format's fields (importers do that).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"

namespace quantpath {

// Standalone quantization files, in the order they are looked for.
inline constexpr std::string_view kStandaloneConfigFiles[] = {
    "quantize_config.json",   "quant_config.json",          "quantization_config.json",
    "hf_quant_config.json",   "quant_model_description.json"};

struct SourceFile {
  std::string name;  // file name inside the folder, e.g. "config.json"
  std::filesystem::path path;
  Json root;
};

// A JSON value and where it came from.
struct Located {
  const Json* value = nullptr;
  Provenance where;
};

class ConfigSources {
 public:
  // Reads every known file of `dir`. A file that exists but is not valid JSON is an error naming
  // it; a folder with neither config.json nor a standalone file is an error.
  static Result<ConfigSources> Load(const std::filesystem::path& dir);
  // Sources made from in-memory files (the `match` command's cases, tests). A file named
  // "config.json" plays config.json's role.
  static ConfigSources FromMemory(std::vector<SourceFile> files);

  const std::filesystem::path& dir() const { return dir_; }
  // config.json's root object, or nullptr when the folder has none.
  const Json* config() const;
  // The architecture's own config: `text_config` for multimodal wrappers, else config.json.
  const Json* text_config() const;
  // A parsed standalone file by name, or nullptr.
  const SourceFile* File(std::string_view name) const;
  const std::vector<SourceFile>& files() const { return files_; }
  // The embedded description: config.json's `quantization_config`, else `compression_config`,
  // else one nested in `text_config` or another sub-config object. Empty when none.
  std::optional<Located> Embedded() const;
  // Files present in the folder that look like model folders hold (for messages).
  std::vector<std::string> FileNames() const;

  // Names of checkpoint tensors stored in a quantized dtype (not f16/bf16/f32), when known. vLLM
  // derives GPTQ's modules_in_block_to_quantize from them when the config lacks it.
  const std::optional<std::vector<std::string>>& checkpoint_quantized_params() const {
    return checkpoint_quantized_params_;
  }
  void set_checkpoint_quantized_params(std::vector<std::string> names) {
    checkpoint_quantized_params_ = std::move(names);
  }

  // The method name the user asked for with --quantization, when they did; engines resolve some
  // names differently from the files' own quant_method.
  const std::optional<std::string>& requested_method() const { return requested_method_; }
  void set_requested_method(std::string name) { requested_method_ = std::move(name); }

 private:
  std::filesystem::path dir_;
  std::vector<SourceFile> files_;  // config.json first, then standalone files in the order above
  std::optional<std::vector<std::string>> checkpoint_quantized_params_;
  std::optional<std::string> requested_method_;
};

}  // namespace quantpath
