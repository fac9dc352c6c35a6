// AuditCheckpoint: every problem of a folder's weights, read from the index and the headers only.
//
// The rules are Checkpoint's (folder.h picks the files, SafetensorsFile validates a header as the
// reference implementation does), applied to the end instead of up to the first error, so that
// `check` can list a missing shard, a tensor in the wrong shard and a broken header together.
#include <algorithm>
#include <map>
#include <system_error>
#include <unordered_map>

#include "fmt/format.h"
#include "quantpath/checkpoint.h"
#include "src/checkpoint/folder.h"

namespace quantpath {
namespace {

using checkpoint_internal::kIndexName;
using Kind = CheckpointProblemKind;

class Auditor {
 public:
  explicit Auditor(std::filesystem::path dir) : dir_(std::move(dir)) {}

  Result<CheckpointAudit> Run() {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir_, ec)) {
      return NotFound(fmt::format("{}: not a folder", dir_.string()));
    }
    QP_ASSIGN_OR_RETURN(std::vector<std::string> files, checkpoint_internal::ListSafetensors(dir_));
    if (std::filesystem::exists(dir_ / kIndexName, ec)) {
      out_.index = (dir_ / kIndexName).string();
      QP_RETURN_IF_ERROR(AuditIndexed(files));
    } else {
      if (files.empty()) {
        return NotFound(fmt::format("{}: no {}, {} or other *.safetensors file", dir_.string(),
                                    kIndexName, checkpoint_internal::kSingleName));
      }
      std::vector<std::string> ignored;  // one message per file left out, in listing order
      const std::vector<std::string> kept = checkpoint_internal::WeightFiles(dir_, files, &ignored);
      for (const std::string& file : kept) AuditUnindexed(file);
      auto message = ignored.begin();
      for (const std::string& file : files) {
        if (std::find(kept.begin(), kept.end(), file) != kept.end()) continue;
        Warn(Kind::kIgnoredFile, (dir_ / file).string(), "", *message++);
      }
    }
    for (auto& [name, tensor] : by_name_) out_.tensors.push_back(std::move(tensor));
    return std::move(out_);
  }

 private:
  Status AuditIndexed(const std::vector<std::string>& present) {
    QP_ASSIGN_OR_RETURN(checkpoint_internal::IndexFile index,
                        checkpoint_internal::ReadIndexFile(out_.index));
    if (index.empty_warning) Warn(Kind::kEmptyIndex, out_.index, "", *index.empty_warning);
    if (index.total_size_warning) {
      Warn(Kind::kTotalSize, out_.index, "", *index.total_size_warning);
    }
    std::map<std::string, std::vector<std::string>> listed;  // shard → its tensors, by name
    std::unordered_map<std::string, std::string> shard_of;
    for (const checkpoint_internal::IndexEntry& entry : index.entries) {
      listed[entry.shard].push_back(entry.tensor);
      shard_of.emplace(entry.tensor, entry.shard);
    }
    // A folder with the index and none of its shards (as a checkpoint's metadata is published
    // apart) can have its names checked only: its shards are not checked rather than missing.
    const bool index_only = std::none_of(listed.begin(), listed.end(), [&](const auto& shard) {
      std::error_code ec;
      return std::filesystem::is_regular_file(dir_ / shard.first, ec);
    });
    uint64_t bytes = 0;
    bool all_read = true;
    for (const auto& [shard, tensors] : listed) {
      const std::filesystem::path path = dir_ / shard;
      std::error_code ec;
      if (index_only) {
        NameOnly(path.string(), tensors);
        all_read = false;
        continue;
      }
      if (!std::filesystem::is_regular_file(path, ec)) {
        Error(Kind::kMissingShard, path.string(), tensors.front(),
              fmt::format("{}: shard \"{}\" (listed for {} tensor{}, the first \"{}\") is not a "
                          "file in {}",
                          out_.index, shard, tensors.size(), tensors.size() == 1 ? "" : "s",
                          tensors.front(), dir_.string()));
        NameOnly(path.string(), tensors);
        all_read = false;
        continue;
      }
      Result<std::shared_ptr<const SafetensorsFile>> file = SafetensorsFile::Open(path);
      if (!file.ok()) {
        Error(Kind::kUnreadableShard, path.string(), "", std::string(file.status().message()));
        NameOnly(path.string(), tensors);
        all_read = false;
        continue;
      }
      for (const TensorInfo& t : (*file)->tensors()) {
        bytes += t.end - t.begin;
        auto it = shard_of.find(t.name);
        if (it == shard_of.end()) {
          Error(Kind::kNotInIndex, path.string(), t.name,
                fmt::format("{}: tensor \"{}\" is not listed in {}", path.string(), t.name,
                            out_.index));
        } else if (it->second != shard) {
          Error(Kind::kIndexedElsewhere, path.string(), t.name,
                fmt::format("{}: tensor \"{}\" is in this shard, but {} lists it in shard \"{}\"",
                            path.string(), t.name, out_.index, it->second));
          continue;  // the index's shard decides where a loader looks
        }
        Add(t, path.string());
      }
      for (const std::string& name : tensors) {
        if ((*file)->Find(name) == nullptr) {
          Error(Kind::kNotInShard, path.string(), name,
                fmt::format("{}: tensor \"{}\" is listed in shard \"{}\", which does not "
                            "contain it",
                            out_.index, name, shard));
        }
      }
    }
    if (all_read && index.total_size && *index.total_size != bytes) {
      Warn(Kind::kTotalSize, out_.index, "",
           fmt::format("{}: metadata.total_size is {} but the shards' tensors take {} bytes",
                       out_.index, *index.total_size, bytes));
    }
    for (const std::string& name : present) {
      if (!listed.contains(name)) {
        Warn(Kind::kIgnoredFile, (dir_ / name).string(), "",
             fmt::format("{}: not listed in {}; ignored", (dir_ / name).string(), kIndexName));
      }
    }
    return {};
  }

  void AuditUnindexed(const std::string& name) {
    const std::filesystem::path path = dir_ / name;
    Result<std::shared_ptr<const SafetensorsFile>> file = SafetensorsFile::Open(path);
    if (!file.ok()) {
      Error(Kind::kUnreadableShard, path.string(), "", std::string(file.status().message()));
      out_.unread_files.push_back(path.string());
      return;
    }
    for (const TensorInfo& t : (*file)->tensors()) {
      if (auto it = by_name_.find(t.name); it != by_name_.end()) {
        Error(Kind::kInTwoFiles, path.string(), t.name,
              fmt::format("{}: tensor \"{}\" is in both {} and {}", dir_.string(), t.name,
                          it->second.file, path.string()));
        continue;
      }
      Add(t, path.string());
    }
  }

  void Add(const TensorInfo& t, const std::string& file) {
    by_name_.emplace(t.name, AuditedTensor{t.name, file, t.dtype, t.shape});
  }

  void NameOnly(const std::string& file, const std::vector<std::string>& tensors) {
    out_.unread_files.push_back(file);
    for (const std::string& name : tensors)
      by_name_.emplace(name, AuditedTensor{name, file, {}, {}});
  }

  void Error(Kind kind, std::string file, std::string tensor, std::string message) {
    out_.problems.push_back({kind, true, std::move(file), std::move(tensor), std::move(message)});
  }
  void Warn(Kind kind, std::string file, std::string tensor, std::string message) {
    out_.problems.push_back({kind, false, std::move(file), std::move(tensor), std::move(message)});
  }

  const std::filesystem::path dir_;
  CheckpointAudit out_;
  std::map<std::string, AuditedTensor> by_name_;
};

}  // namespace

std::string_view CheckpointProblemKindName(CheckpointProblemKind kind) {
  switch (kind) {
    case Kind::kUnreadableShard:
      return "unreadable-shard";
    case Kind::kMissingShard:
      return "missing-shard";
    case Kind::kNotInIndex:
      return "not-in-index";
    case Kind::kIndexedElsewhere:
      return "indexed-elsewhere";
    case Kind::kNotInShard:
      return "not-in-shard";
    case Kind::kInTwoFiles:
      return "in-two-files";
    case Kind::kTotalSize:
      return "total-size";
    case Kind::kIgnoredFile:
      return "ignored-file";
    case Kind::kEmptyIndex:
      return "empty-index";
  }
  return "?";
}

const AuditedTensor* CheckpointAudit::Find(std::string_view name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const AuditedTensor& t, std::string_view n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

Result<CheckpointAudit> AuditCheckpoint(const std::filesystem::path& dir) {
  return Auditor(dir).Run();
}

}  // namespace quantpath
