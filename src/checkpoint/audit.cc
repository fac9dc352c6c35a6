// AuditCheckpoint: every problem of a folder's weights, read from the index and the headers only.
//
// The rules are Checkpoint's (folder.h picks the files, SafetensorsFile validates a header as the
// reference implementation does), applied to the end instead of up to the first error, so that
// `check` can list a missing shard, a tensor in the wrong shard and a broken header together.
#include <algorithm>
#include <numeric>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

#include "fmt/format.h"
#include "quantpath/checkpoint.h"
#include "src/base/name_ids.h"
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
      AuditUnindexed(kept);
      auto message = ignored.begin();
      for (const std::string& file : files) {
        if (std::find(kept.begin(), kept.end(), file) != kept.end()) continue;
        Warn(Kind::kIgnoredFile, (dir_ / file).string(), "", *message++);
      }
    }
    out_.by_name = std::move(by_name_);
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
    // Shards in name order, so that problems come in the same order whatever the index's order.
    std::vector<size_t> order(index.shards.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return index.shards[a] < index.shards[b]; });
    std::vector<std::filesystem::path> paths;
    std::vector<bool> present_shards;
    for (size_t i : order) {
      std::error_code ec;
      paths.push_back(dir_ / index.shards[i]);
      present_shards.push_back(std::filesystem::is_regular_file(paths.back(), ec));
    }
    // A folder with the index and none of its shards (as a checkpoint's metadata is published
    // apart) can have its names checked only: its shards are not checked rather than missing.
    const bool index_only =
        std::none_of(present_shards.begin(), present_shards.end(), [](bool p) { return p; });
    std::vector<std::filesystem::path> to_read;
    for (size_t k = 0; k < paths.size(); ++k) {
      if (present_shards[k]) to_read.push_back(paths[k]);
    }
    std::vector<Result<SafetensorsHeader>> headers = checkpoint_internal::ReadHeaders(to_read);
    auto next_header = headers.begin();

    Reserve(index.tensors.size());
    std::vector<bool> found(index.tensors.size());  // per id: in the header of its shard
    uint64_t bytes = 0;
    bool all_read = true;
    for (size_t k = 0; k < order.size(); ++k) {
      const size_t i = order[k];
      const std::string& shard = index.shards[i];
      const std::vector<uint32_t>& tensors = index.listed[i];
      const std::string path = paths[k].string();
      const uint32_t file = AddFile(path);
      if (index_only) {
        NameOnly(file, index, tensors);
        all_read = false;
        continue;
      }
      if (!present_shards[k]) {
        Error(Kind::kMissingShard, path, std::string(index.tensors.Name(tensors.front())),
              fmt::format("{}: shard \"{}\" (listed for {} tensor{}, the first \"{}\") is not a "
                          "file in {}",
                          out_.index, shard, tensors.size(), tensors.size() == 1 ? "" : "s",
                          index.tensors.Name(tensors.front()), dir_.string()));
        NameOnly(file, index, tensors);
        all_read = false;
        continue;
      }
      Result<SafetensorsHeader>& header = *next_header++;
      if (!header.ok()) {
        Error(Kind::kUnreadableShard, path, "", std::string(header.status().message()));
        NameOnly(file, index, tensors);
        all_read = false;
        continue;
      }
      for (TensorInfo& t : header->tensors) {
        bytes += t.end - t.begin;
        const std::optional<uint32_t> id = index.tensors.Find(t.name);
        if (!id) {
          Error(Kind::kNotInIndex, path, t.name,
                fmt::format("{}: tensor \"{}\" is not listed in {}", path, t.name, out_.index));
        } else if (index.shard_of[*id] != i) {
          Error(Kind::kIndexedElsewhere, path, t.name,
                fmt::format("{}: tensor \"{}\" is in this shard, but {} lists it in shard \"{}\"",
                            path, t.name, out_.index, index.shards[index.shard_of[*id]]));
          continue;  // the index's shard decides where a loader looks
        } else {
          found[*id] = true;
        }
        Add(std::move(t), file);
      }
      for (uint32_t id : tensors) {
        if (found[id]) continue;
        Error(Kind::kNotInShard, path, std::string(index.tensors.Name(id)),
              fmt::format("{}: tensor \"{}\" is listed in shard \"{}\", which does not "
                          "contain it",
                          out_.index, index.tensors.Name(id), shard));
      }
    }
    if (all_read && index.total_size && *index.total_size != bytes) {
      Warn(Kind::kTotalSize, out_.index, "",
           fmt::format("{}: metadata.total_size is {} but the shards' tensors take {} bytes",
                       out_.index, *index.total_size, bytes));
    }
    std::unordered_set<std::string_view> listed(index.shards.begin(), index.shards.end());
    for (const std::string& name : present) {
      if (!listed.contains(name)) {
        Warn(Kind::kIgnoredFile, (dir_ / name).string(), "",
             fmt::format("{}: not listed in {}; ignored", (dir_ / name).string(), kIndexName));
      }
    }
    return {};
  }

  void AuditUnindexed(const std::vector<std::string>& names) {
    std::vector<std::filesystem::path> paths;
    for (const std::string& name : names) paths.push_back(dir_ / name);
    std::vector<Result<SafetensorsHeader>> headers = checkpoint_internal::ReadHeaders(paths);
    for (size_t k = 0; k < paths.size(); ++k) {
      const std::string path = paths[k].string();
      if (!headers[k].ok()) {
        Error(Kind::kUnreadableShard, path, "", std::string(headers[k].status().message()));
        out_.unread_files.push_back(path);
        continue;
      }
      const uint32_t file = AddFile(path);
      for (TensorInfo& t : headers[k]->tensors) {
        if (const std::optional<uint32_t> id = by_name_->Find(t.name)) {
          Error(Kind::kInTwoFiles, path, t.name,
                fmt::format("{}: tensor \"{}\" is in both {} and {}", dir_.string(), t.name,
                            out_.FileOf(out_.tensors[*id]), path));
          continue;
        }
        Add(std::move(t), file);
      }
    }
  }

  void NameOnly(uint32_t file, const checkpoint_internal::IndexFile& index,
                const std::vector<uint32_t>& tensors) {
    out_.unread_files.push_back(out_.files[file]);
    for (uint32_t id : tensors) {
      TensorInfo named;
      named.name = index.tensors.Name(id);
      Add(std::move(named), file, false);
    }
  }

  void Reserve(size_t tensors) {
    out_.tensors.reserve(tensors);
    by_name_->Reserve(tensors, 0);
  }
  uint32_t AddFile(std::string path) {
    out_.files.push_back(std::move(path));
    return static_cast<uint32_t>(out_.files.size() - 1);
  }
  // One per name: a name found twice (a tensor no index lists, in two shards) keeps the first.
  void Add(TensorInfo t, uint32_t file, bool described = true) {
    if (!by_name_->Insert(t.name).second) return;
    out_.tensors.push_back({std::move(t.name), file,
                            described ? std::optional(t.dtype) : std::nullopt, std::move(t.shape)});
  }

  void Error(Kind kind, std::string file, std::string tensor, std::string message) {
    out_.problems.push_back({kind, true, std::move(file), std::move(tensor), std::move(message)});
  }
  void Warn(Kind kind, std::string file, std::string tensor, std::string message) {
    out_.problems.push_back({kind, false, std::move(file), std::move(tensor), std::move(message)});
  }

  const std::filesystem::path dir_;
  CheckpointAudit out_;
  std::shared_ptr<NameIds> by_name_ = std::make_shared<NameIds>();
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
  const std::optional<uint32_t> id = by_name ? by_name->Find(name) : std::nullopt;
  return id ? &tensors[*id] : nullptr;
}

Result<CheckpointAudit> AuditCheckpoint(const std::filesystem::path& dir) {
  return Auditor(dir).Run();
}

}  // namespace quantpath
