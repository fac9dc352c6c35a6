// config.json and the input's other files (model_files.h).
#include "src/export/model_files.h"

#include <algorithm>
#include <array>

#include "fmt/format.h"

namespace quantpath::export_internal {
namespace {

namespace fs = std::filesystem;

// Files read by the importers as a quantization's description: a folder written in another
// format must not carry them (an engine would read the old description).
constexpr std::array<std::string_view, 6> kQuantizationFiles = {
    "hf_quant_config.json",     "quantize_config.json",         "quant_config.json",
    "quantization_config.json", "quant_model_description.json", "recipe.yaml"};
// Weights in formats other than safetensors: the new folder's weights are its safetensors.
constexpr std::array<std::string_view, 6> kOtherWeights = {".bin",  ".pt",   ".pth",
                                                           ".ckpt", ".gguf", ".h5"};

}  // namespace

Status WriteConfig(const fs::path& in, const fs::path& out, const Json& quantization_config) {
  QP_ASSIGN_OR_RETURN(Json config, ReadJsonFile(in / "config.json"));
  if (!config.is_object()) {
    return InvalidInput(fmt::format("{}: not a JSON object", (in / "config.json").string()));
  }
  std::vector<Json::Member> members;
  bool placed = false;
  for (Json::Member& m : config.mutable_members()) {
    if (m.first == "quantization_config" || m.first == "compression_config") {
      if (!placed && !quantization_config.is_null()) {
        members.emplace_back("quantization_config", quantization_config);
      }
      placed = true;
      continue;
    }
    members.push_back(std::move(m));
  }
  if (!placed && !quantization_config.is_null()) {
    // transformers writes config.json with sorted keys: keep that order where it holds.
    auto at = std::find_if(members.begin(), members.end(),
                           [](const Json::Member& m) { return m.first > "quantization_config"; });
    members.insert(at, {"quantization_config", quantization_config});
  }
  return WriteFileAtomically(out / "config.json",
                             ToJson(Json::Object(std::move(members)), 2) + "\n");
}

Status CopyOtherFiles(const fs::path& in, const fs::path& out, std::vector<std::string>* notes) {
  std::error_code error;
  std::vector<fs::path> entries;
  for (const fs::directory_entry& e : fs::directory_iterator(in, error))
    entries.push_back(e.path());
  if (error) return IoError(fmt::format("{}: cannot list: {}", in.string(), error.message()));
  std::sort(entries.begin(), entries.end());
  std::vector<std::string> left_out;
  for (const fs::path& path : entries) {
    const std::string name = path.filename().string();
    const std::string ext = path.extension().string();
    if (name == "config.json" || ext == ".safetensors" || name == "model.safetensors.index.json") {
      continue;
    }
    const bool quantization = std::find(kQuantizationFiles.begin(), kQuantizationFiles.end(),
                                        name) != kQuantizationFiles.end();
    const bool weights =
        std::find(kOtherWeights.begin(), kOtherWeights.end(), ext) != kOtherWeights.end();
    if (fs::is_directory(path, error)) {
      left_out.push_back(name + "/ (a folder)");
      continue;
    }
    if (quantization || weights || name.ends_with(".index.json") ||
        !fs::is_regular_file(path, error)) {
      left_out.push_back(name);
      continue;
    }
    fs::copy_file(path, out / name, error);
    if (error) {
      return IoError(
          fmt::format("cannot copy {} to {}: {}", path.string(), out.string(), error.message()));
    }
  }
  if (!left_out.empty()) {
    notes->push_back(fmt::format(
        "not copied from the input: {} (weights and quantization descriptions of the input's "
        "format, and folders)",
        Join(left_out, ", ")));
  }
  return {};
}

}  // namespace quantpath::export_internal
