// The files of an output folder besides its weights: config.json with the new
// quantization_config, and the input's other files (tokenizer, generation config, chat template).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "quantpath/base.h"

namespace quantpath::export_internal {

// Writes `in`'s config.json into `out` with its quantization_config (and compression_config,
// its older name) replaced by `quantization_config`, or removed when that is null; every other
// key is kept in its place.
Status WriteConfig(const std::filesystem::path& in, const std::filesystem::path& out,
                   const Json& quantization_config);

// Copies `in`'s regular files (symlinks followed, as a Hugging Face cache snapshot holds them)
// into `out`, but for the weights (*.safetensors and their index), config.json, the files that
// describe a quantization (which the new config replaces) and weights in other formats; each file
// left out, and each sub-folder, is named in `notes`.
Status CopyOtherFiles(const std::filesystem::path& in, const std::filesystem::path& out,
                      std::vector<std::string>* notes);

}  // namespace quantpath::export_internal
