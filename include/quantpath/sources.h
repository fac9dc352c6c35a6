// quantpath sources: every configuration file of a model folder, parsed once, with provenance.
//
// Goals: find config.json and the standalone quantization files, keep their JSON in document
// order, and say where the quantization description came from (file + JSON pointer); list the
// checkpoint's tensors (names, and dtypes and shapes from the safetensors headers when the shards
// are present) through the checkpoint stage's validating reader, never reading tensor data.
// Non-goals: interpreting any format's fields or tensor names (importers and models do that).
#pragma once

#include <cstdint>
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
    "quantize_config.json", "quant_config.json", "quantization_config.json", "hf_quant_config.json",
    "quant_model_description.json"};

// Options for importers by name, in the order given ("modelslim-packing" → "new").
using FormatOptions = std::vector<std::pair<std::string, std::string>>;

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

// A checkpoint tensor as the folder describes it. dtype and shape are known only from a
// safetensors header; an index alone names the tensor.
struct CheckpointTensor {
  std::string name;
  std::optional<std::string> dtype;           // the header's dtype name: "I32", "BF16", …
  std::optional<std::vector<int64_t>> shape;  // as stored ([] for a scalar)
};

// How much the folder says about its checkpoint.
enum class CheckpointOrigin : uint8_t {
  kUnknown,  // not a folder (sources made in memory): nothing was looked at
  kAbsent,   // a folder with neither safetensors files nor model.safetensors.index.json
  kIndex,    // model.safetensors.index.json without (all of) its shards: names only
  kHeaders,  // the safetensors headers: names, dtypes and shapes
};

struct CheckpointListing {
  CheckpointOrigin origin = CheckpointOrigin::kUnknown;
  std::string source;  // for messages: "model.safetensors.index.json" or the shard file names
  std::vector<CheckpointTensor> tensors;  // sorted by name
  // The index's metadata.total_size, when the folder has an index with a usable one.
  std::optional<int64_t> index_total_size;
};

// The checkpoint tensors of `dir`: every shard's header when the index's shards (or, without an
// index, the folder's *.safetensors files) are present — validated as the checkpoint stage does —
// else the index's tensor names, else nothing (kAbsent). Git LFS pointers in place of the
// safetensors files count as absent shards. Errors name the file and the tensor.
Result<CheckpointListing> ListCheckpoint(const std::filesystem::path& dir);

// The model folder a user names, as Hugging Face tools name it:
//   - a folder: itself, unless it is a Hugging Face cache repo folder (…/hub/models--org--name,
//     holding refs/ and snapshots/), which resolves through refs/main to its snapshot (the only
//     snapshot when there is no refs/main);
//   - otherwise a repo id, "org/name" or "name", looked up in the local Hugging Face cache
//     ($HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
//     ~/.cache/huggingface/hub) as models--org--name and resolved as above. Nothing is downloaded.
// A miss is kNotFound saying where it looked; a broken cache entry (a ref naming no snapshot, a
// ref that is not a commit name) is kInvalidInput naming the file.
Result<std::filesystem::path> ResolveModelDir(std::string_view given);

class ConfigSources {
 public:
  static constexpr std::string_view kConfigFile = "config.json";

  // Reads every known file of `dir` and lists its checkpoint (ListCheckpoint, or `listing` where
  // given: `check` passes what its audit could read of a broken checkpoint); from the headers it
  // also sets checkpoint_quantized_params. A file that exists but is not valid JSON is an error
  // naming it; a folder with neither config.json nor a standalone file is an error.
  static Result<ConfigSources> Load(const std::filesystem::path& dir,
                                    const CheckpointListing* listing = nullptr);
  // Sources made from in-memory files (the `match` command's cases, tests). A file named
  // "config.json" plays config.json's role.
  static ConfigSources FromMemory(std::vector<SourceFile> files);
  // These sources with other file contents (a rewritten description) and everything else — the
  // folder, its checkpoint facts, the requested method — kept.
  ConfigSources WithFiles(std::vector<SourceFile> files) const;

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

  // The folder's checkpoint tensors; origin kUnknown for sources made in memory.
  const CheckpointListing& checkpoint() const { return checkpoint_; }

  // Names of checkpoint tensors stored in a quantized dtype (not f16/bf16/f32), when known: from
  // the shard headers, or given by an engine case. vLLM derives GPTQ's
  // modules_in_block_to_quantize from them when the config lacks it.
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

  // How the engine is started (--dtype, --tp, --speculative): the dtype decides which methods the
  // engine refuses; the commands set it from their options, a case from its extra_inputs.
  const Launch& launch() const { return launch_; }
  void set_launch(const Launch& launch) { launch_ = launch; }

  // Options the user gave beyond the files (`--modelslim-packing new`), by name, as given: carried
  // unread to the importer that declares the option (importers.h, FormatOption).
  const FormatOptions& format_options() const { return format_options_; }
  void set_format_options(FormatOptions options) { format_options_ = std::move(options); }
  // The value given for `name`, or nullopt.
  std::optional<std::string_view> format_option(std::string_view name) const;

 private:
  std::filesystem::path dir_;
  std::vector<SourceFile> files_;  // config.json first, then standalone files in the order above
  CheckpointListing checkpoint_;
  std::optional<std::vector<std::string>> checkpoint_quantized_params_;
  std::optional<std::string> requested_method_;
  Launch launch_;
  FormatOptions format_options_;
};

}  // namespace quantpath
