// How a model folder lays out its weights, shared by Checkpoint (which opens them) and
// AuditCheckpoint (which reports every problem of them): the file names, the folder listing and
// the index's weight map.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "src/base/name_ids.h"

namespace quantpath::checkpoint_internal {

inline constexpr std::string_view kIndexName = "model.safetensors.index.json";
inline constexpr std::string_view kSingleName = "model.safetensors";

// The folder's *.safetensors regular files (symlinks followed, as in the Hugging Face cache),
// sorted by name.
Result<std::vector<std::string>> ListSafetensors(const std::filesystem::path& dir);

// The files a folder without an index keeps as its weights: model.safetensors alone when present
// (as in transformers; a warning per other file ignored), else every *.safetensors file.
std::vector<std::string> WeightFiles(const std::filesystem::path& dir,
                                     std::vector<std::string> files,
                                     std::vector<std::string>* warnings);

// An index's weight map: the shard of each tensor (a relative path inside the folder, normalised)
// and the tensors of each shard in the index's order, with metadata.total_size when that is a
// non-negative integer. Errors name the index and the JSON pointer (not an object, a duplicate
// tensor, a shard that is not a string or leaves the folder, over the limits); a malformed
// total_size is a warning, and so is an empty weight map.
struct IndexFile {
  std::vector<std::string> shards;            // in the order first listed
  NameIds tensors;                            // in the index's order
  std::vector<uint32_t> shard_of;             // per tensor id: index into shards
  std::vector<std::vector<uint32_t>> listed;  // per shard: its tensors' ids
  std::optional<uint64_t> total_size;
  std::optional<std::string> empty_warning;       // the weight map lists no tensors
  std::optional<std::string> total_size_warning;  // total_size is there but not usable
};
Result<IndexFile> ReadIndexFile(const std::string& path);

// ReadSafetensorsHeader of each path, in order; several at a time where OpenMP is built in (a
// header costs parsing, not waiting: one thread per core).
struct NamedHeader {
  Result<SafetensorsHeader> header;
  NameIds names;  // header.tensors' names, each its tensor's index
};
NamedHeader ReadNamedHeader(const std::filesystem::path& path);
std::vector<NamedHeader> ReadHeaders(const std::vector<std::filesystem::path>& paths);

// Runs work(i) for i in [0, n), several at a time where OpenMP is built in.
void ForEachShard(size_t n, const std::function<void(size_t)>& work);
// Runs first() alongside work(i) for i in [0, n), as ForEachShard does: an index is parsed while
// shards are read.
void RunAlongside(const std::function<void()>& first, size_t n,
                  const std::function<void(size_t)>& work);

}  // namespace quantpath::checkpoint_internal
