// Reads config.json and the standalone quantization files of a model folder, once, in document
// order, and locates the embedded quantization description.
#include <system_error>

#include "fmt/format.h"
#include "quantpath/checkpoint.h"
#include "quantpath/sources.h"

namespace quantpath {
namespace {

// vLLM's unquantized dtypes (GPTQMarlinConfig.maybe_update_config) are IsUnquantized's: any
// other dtype in a header marks a quantized parameter.
bool IsUnquantizedDtype(const std::string& name) {
  const std::optional<StDtype> dtype = ParseStDtype(name);
  return dtype && IsUnquantized(*dtype);
}

// Sub-configs of multimodal wrappers that may carry the language model's quantization config.
bool LooksLikeSubConfig(const Json::Member& member) {
  return member.second.is_object() && member.second.Find("quantization_config") != nullptr;
}

}  // namespace

Result<ConfigSources> ConfigSources::Load(const std::filesystem::path& dir,
                                          const CheckpointListing* listing) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return NotFound(fmt::format("{}: not a model folder (no such directory)", dir.string()));
  }
  ConfigSources sources;
  sources.dir_ = dir;
  std::vector<std::string_view> names = {kConfigFile};
  names.insert(names.end(), std::begin(kStandaloneConfigFiles), std::end(kStandaloneConfigFiles));
  for (std::string_view name : names) {
    std::filesystem::path path = dir / name;
    // Absent files are skipped; anything else under the name (a FIFO, a device, a directory, a
    // dangling symlink) is an error from ReadFile, never a file silently left out.
    if (std::filesystem::symlink_status(path, ec).type() == std::filesystem::file_type::not_found) {
      continue;
    }
    QP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    QP_ASSIGN_OR_RETURN(Json root, ParseJson(text, name));
    if (!root.is_object()) {
      return InvalidInput(fmt::format("{}: expected a JSON object at the top level, found {}",
                                      path.string(), root.TypeName()));
    }
    sources.files_.push_back({std::string(name), path, std::move(root)});
  }
  if (sources.files_.empty()) {
    std::vector<std::string> excerpts;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      std::string file = entry.path().filename().string();
      if (file.ends_with(".excerpt.json")) excerpts.push_back(file);
    }
    if (!excerpts.empty()) {
      return InvalidInput(fmt::format(
          "{}: holds only excerpts ({}), which are text cut from a file rather than the file; "
          "a plan needs config.json or a complete standalone quantization file",
          dir.string(), Join(excerpts, ", ")));
    }
    return NotFound(
        fmt::format("{}: no config.json and no standalone quantization file ({}); "
                    "name the model's own folder, its Hugging Face cache folder or "
                    "its repo id",
                    dir.string(),
                    "quantize_config.json, quant_config.json, "
                    "quantization_config.json, hf_quant_config.json, "
                    "quant_model_description.json"));
  }
  if (listing != nullptr) {
    sources.checkpoint_ = *listing;
  } else {
    QP_ASSIGN_OR_RETURN(sources.checkpoint_, ListCheckpoint(dir));
  }
  if (sources.checkpoint_.origin == CheckpointOrigin::kHeaders) {
    std::vector<std::string> quantized;
    for (const CheckpointTensor& t : sources.checkpoint_.tensors) {
      if (!IsUnquantizedDtype(*t.dtype)) quantized.push_back(t.name);
    }
    sources.checkpoint_quantized_params_ = std::move(quantized);
  }
  return sources;
}

ConfigSources ConfigSources::WithFiles(std::vector<SourceFile> files) const {
  ConfigSources copy = *this;
  copy.files_ = std::move(files);
  return copy;
}

ConfigSources ConfigSources::FromMemory(std::vector<SourceFile> files) {
  ConfigSources sources;
  sources.files_ = std::move(files);
  return sources;
}

const Json* ConfigSources::config() const {
  const SourceFile* f = File(kConfigFile);
  return f ? &f->root : nullptr;
}

const Json* ConfigSources::text_config() const {
  const Json* root = config();
  if (root == nullptr) return nullptr;
  const Json* text = root->Find("text_config");
  return text != nullptr && text->is_object() ? text : root;
}

std::optional<std::string_view> ConfigSources::format_option(std::string_view name) const {
  for (const auto& [given, value] : format_options_) {
    if (given == name) return value;
  }
  return std::nullopt;
}

const SourceFile* ConfigSources::File(std::string_view name) const {
  for (const SourceFile& f : files_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::optional<Located> ConfigSources::Embedded() const {
  const Json* root = config();
  if (root == nullptr) return std::nullopt;
  const std::string file(kConfigFile);
  for (std::string_view key : {"quantization_config", "compression_config"}) {
    if (const Json* v = root->FindNonNull(key)) return Located{v, {file, v->pointer()}};
  }
  if (const Json* text = root->Find("text_config")) {
    if (const Json* v = text->FindNonNull("quantization_config")) {
      return Located{v, {file, v->pointer()}};
    }
  }
  for (const Json::Member& m : root->members()) {
    if (LooksLikeSubConfig(m)) {
      const Json* v = m.second.FindNonNull("quantization_config");
      if (v != nullptr) return Located{v, {file, v->pointer()}};
    }
  }
  return std::nullopt;
}

std::vector<std::string> ConfigSources::FileNames() const {
  std::vector<std::string> names;
  for (const SourceFile& f : files_) names.push_back(f.name);
  return names;
}

}  // namespace quantpath
