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
    NameTensors();
    out_.by_name = std::move(names_);
    return std::move(out_);
  }

 private:
  Status AuditIndexed(const std::vector<std::string>& present) {
    // The headers of the folder's .safetensors files are read while the index is parsed: they are
    // its shards, except for a file it does not list (read for nothing) and a shard elsewhere
    // (read once the index names it).
    std::optional<Result<checkpoint_internal::IndexFile>> read_index;
    std::vector<std::optional<checkpoint_internal::NamedHeader>> early(present.size());
    checkpoint_internal::RunAlongside(
        [&] { read_index.emplace(checkpoint_internal::ReadIndexFile(out_.index)); }, present.size(),
        [&](size_t f) {
          early[f].emplace(checkpoint_internal::ReadNamedHeader(dir_ / present[f]));
        });
    QP_ASSIGN_OR_RETURN(checkpoint_internal::IndexFile index, std::move(*read_index));
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
    std::vector<checkpoint_internal::NamedHeader*> headers;  // per shard in `order`, when present
    std::vector<std::filesystem::path> late;                 // shards not among `present`
    for (size_t i : order) {
      std::error_code ec;
      paths.push_back(dir_ / index.shards[i]);
      present_shards.push_back(std::filesystem::is_regular_file(paths.back(), ec));
      const auto f = std::lower_bound(present.begin(), present.end(), index.shards[i]);
      const bool early_read = f != present.end() && *f == index.shards[i];
      headers.push_back(early_read ? &*early[static_cast<size_t>(f - present.begin())] : nullptr);
      if (present_shards.back() && !early_read) late.push_back(paths.back());
    }
    std::vector<checkpoint_internal::NamedHeader> late_headers =
        checkpoint_internal::ReadHeaders(late);
    for (size_t k = 0, l = 0; k < headers.size(); ++k) {
      if (present_shards[k] && headers[k] == nullptr) headers[k] = &late_headers[l++];
    }
    // A folder with the index and none of its shards (as a checkpoint's metadata is published
    // apart) can have its names checked only: its shards are not checked rather than missing.
    const bool index_only =
        std::none_of(present_shards.begin(), present_shards.end(), [](bool p) { return p; });

    // The index's names are the audit's: a tensor the shards hold is recorded against its id.
    *names_ = std::move(index.tensors);
    out_.tensors.reserve(names_->size());
    out_.tensor_of.assign(names_->size(), CheckpointAudit::kNoTensor);
    // Each shard's tensors matched with the index's, several shards at a time; then added in order.
    std::vector<ShardMatch> matches(order.size());
    if (!index_only) {
      checkpoint_internal::ForEachShard(order.size(), [&](size_t k) {
        if (headers[k] != nullptr && headers[k]->header.ok()) {
          matches[k] = Match(index.listed[order[k]], *headers[k]);
        }
      });
    }
    struct Move {
      size_t shard;  // in `order`
      uint32_t file;
      size_t first;  // its first tensor's place in out_.tensors
    };
    std::vector<Move> moves;
    uint64_t bytes = 0;
    bool all_read = true;
    for (size_t k = 0; k < order.size(); ++k) {
      const size_t i = order[k];
      const std::string& shard = index.shards[i];
      const std::vector<uint32_t>& tensors = index.listed[i];
      const std::string path = paths[k].string();
      const uint32_t file = AddFile(path);
      if (index_only) {
        NameOnly(file, tensors);
        all_read = false;
        continue;
      }
      if (!present_shards[k]) {
        Error(Kind::kMissingShard, path, std::string(names_->Name(tensors.front())),
              fmt::format("{}: shard \"{}\" (listed for {} tensor{}, the first \"{}\") is not a "
                          "file in {}",
                          out_.index, shard, tensors.size(), tensors.size() == 1 ? "" : "s",
                          names_->Name(tensors.front()), dir_.string()));
        NameOnly(file, tensors);
        all_read = false;
        continue;
      }
      checkpoint_internal::NamedHeader& read = *headers[k];
      if (!read.header.ok()) {
        Error(Kind::kUnreadableShard, path, "", std::string(read.header.status().message()));
        NameOnly(file, tensors);
        all_read = false;
        continue;
      }
      out_.data_starts[file] = read.header->data_start;
      std::vector<TensorInfo>& held = read.header->tensors;
      const auto& [id_of, not_held, held_bytes] = matches[k];
      bytes += held_bytes;
      size_t held_tensors = 0;  // the tensors already placed
      if (tensors.size() - not_held.size() == held.size()) {
        // Every tensor here is listed here (the common case): its place is kept, and the tensors
        // are moved in with those of the other such shards at the end, several shards at a time.
        moves.push_back({k, file, out_.tensors.size()});
        out_.tensors.resize(out_.tensors.size() + held.size());
        held_tensors = held.size();  // none left for the loop below
      }
      for (size_t t = held_tensors; t < held.size(); ++t) {
        if (id_of[t] == CheckpointAudit::kNoTensor) {
          // Not listed here: listed in another shard, or not at all.
          // (An id past the index's is a name no index lists, already met in an earlier shard.)
          const std::optional<uint32_t> id = names_->Find(held[t].name);
          if (id && *id < index.shard_of.size()) {
            Error(Kind::kIndexedElsewhere, path, held[t].name,
                  fmt::format("{}: tensor \"{}\" is in this shard, but {} lists it in shard "
                              "\"{}\"",
                              path, held[t].name, out_.index, index.shards[index.shard_of[*id]]));
            continue;  // the index's shard decides where a loader looks
          }
          Error(
              Kind::kNotInIndex, path, held[t].name,
              fmt::format("{}: tensor \"{}\" is not listed in {}", path, held[t].name, out_.index));
          AddNamed(std::move(held[t]), file);
          continue;
        }
        Add(std::move(held[t]), file, id_of[t]);
      }
      for (uint32_t id : not_held) {
        Error(Kind::kNotInShard, path, std::string(names_->Name(id)),
              fmt::format("{}: tensor \"{}\" is listed in shard \"{}\", which does not "
                          "contain it",
                          out_.index, names_->Name(id), shard));
      }
    }
    checkpoint_internal::ForEachShard(moves.size(), [&](size_t m) {
      const Move& move = moves[m];
      std::vector<TensorInfo>& held = headers[move.shard]->header->tensors;
      const std::vector<uint32_t>& id_of = matches[move.shard].id_of;
      for (size_t t = 0; t < held.size(); ++t) {
        out_.tensors[move.first + t] = Audited(std::move(held[t]), move.file, true);
        out_.tensor_of[id_of[t]] = static_cast<uint32_t>(move.first + t);
      }
    });
    // The headers are freed several at a time too: their 150k names are no small part of the work.
    checkpoint_internal::ForEachShard(early.size(), [&](size_t f) { early[f].reset(); });
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

  // A shard's header against the ids the index lists for it: per tensor of the header, its id
  // (kNoTensor where not listed here), the listed ids it lacks, and the bytes its tensors take.
  struct ShardMatch {
    std::vector<uint32_t> id_of;
    std::vector<uint32_t> not_held;
    uint64_t bytes = 0;
  };
  ShardMatch Match(const std::vector<uint32_t>& listed,
                   const checkpoint_internal::NamedHeader& read) const {
    // Each listed tensor looked up in the shard's own small table: where the shard holds exactly
    // those (the common case), no tensor needs the index's large one.
    ShardMatch match;
    match.id_of.assign(read.header->tensors.size(), CheckpointAudit::kNoTensor);
    for (uint32_t id : listed) {
      const std::optional<uint32_t> at = read.names.Find(names_->Name(id), names_->Hash(id));
      if (at) {
        match.id_of[*at] = id;
      } else {
        match.not_held.push_back(id);
      }
    }
    for (const TensorInfo& t : read.header->tensors) match.bytes += t.end - t.begin;
    return match;
  }

  void AuditUnindexed(const std::vector<std::string>& names) {
    std::vector<std::filesystem::path> paths;
    for (const std::string& name : names) paths.push_back(dir_ / name);
    std::vector<checkpoint_internal::NamedHeader> headers = checkpoint_internal::ReadHeaders(paths);
    for (size_t k = 0; k < paths.size(); ++k) {
      const std::string path = paths[k].string();
      Result<SafetensorsHeader>& header = headers[k].header;
      if (!header.ok()) {
        Error(Kind::kUnreadableShard, path, "", std::string(header.status().message()));
        out_.unread_files.push_back(path);
        continue;
      }
      const uint32_t file = AddFile(path);
      out_.data_starts[file] = header->data_start;
      for (TensorInfo& t : header->tensors) {
        if (const std::optional<uint32_t> id = names_->Find(t.name)) {
          Error(Kind::kInTwoFiles, path, t.name,
                fmt::format("{}: tensor \"{}\" is in both {} and {}", dir_.string(), t.name,
                            out_.FileOf(out_.tensors[out_.tensor_of[*id]]), path));
          continue;
        }
        AddNamed(std::move(t), file);
      }
    }
  }

  // The tensors of a shard whose header was not read: known by the index's names only.
  void NameOnly(uint32_t file, const std::vector<uint32_t>& tensors) {
    out_.unread_files.push_back(out_.files[file]);
    for (uint32_t id : tensors) {
      Add(TensorInfo(), file, id, false);
    }
  }

  uint32_t AddFile(std::string path) {
    out_.files.push_back(std::move(path));
    out_.data_starts.push_back(0);
    return static_cast<uint32_t>(out_.files.size() - 1);
  }
  // Each tensor's name, a view of names_ (which takes no names after this), several ids at a
  // time.
  void NameTensors() {
    constexpr size_t kIds = 4096;
    checkpoint_internal::ForEachShard((names_->size() + kIds - 1) / kIds, [&](size_t chunk) {
      const auto last = static_cast<uint32_t>(std::min(names_->size(), (chunk + 1) * kIds));
      for (auto id = static_cast<uint32_t>(chunk * kIds); id < last; ++id) {
        if (out_.tensor_of[id] != CheckpointAudit::kNoTensor) {
          out_.tensors[out_.tensor_of[id]].name = names_->Name(id);
        }
      }
    });
  }
  // The name is given by NameTensors.
  static AuditedTensor Audited(TensorInfo t, uint32_t file, bool described) {
    return {{},      file, described ? std::optional(t.dtype) : std::nullopt, std::move(t.shape),
            t.begin, t.end};
  }
  // The tensor of name id `id`.
  void Add(TensorInfo t, uint32_t file, uint32_t id, bool described = true) {
    out_.tensor_of[id] = static_cast<uint32_t>(out_.tensors.size());
    out_.tensors.push_back(Audited(std::move(t), file, described));
  }
  // A tensor no index names. One per name: a name found twice keeps the first.
  void AddNamed(TensorInfo t, uint32_t file) {
    auto [id, added] = names_->Insert(t.name);
    if (!added) return;
    out_.tensor_of.push_back(CheckpointAudit::kNoTensor);
    Add(std::move(t), file, id);
  }

  void Error(Kind kind, std::string file, std::string tensor, std::string message) {
    out_.problems.push_back({kind, true, std::move(file), std::move(tensor), std::move(message)});
  }
  void Warn(Kind kind, std::string file, std::string tensor, std::string message) {
    out_.problems.push_back({kind, false, std::move(file), std::move(tensor), std::move(message)});
  }

  const std::filesystem::path dir_;
  CheckpointAudit out_;
  // The index's names, then those of tensors it does not list; the audit's tensors are views of
  // them, so it is shared with the audit rather than moved into it.
  std::shared_ptr<NameIds> names_ = std::make_shared<NameIds>();
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
  return id && tensor_of[*id] != kNoTensor ? &tensors[tensor_of[*id]] : nullptr;
}

Result<CheckpointAudit> AuditCheckpoint(const std::filesystem::path& dir) {
  return Auditor(dir).Run();
}

}  // namespace quantpath
