// A model folder's safetensors weights: which files hold them (index, single file or a set of
// files), which tensor lives in which file, and the agreement between the index and the shards.
#include <algorithm>
#include <mutex>
#include <system_error>
#include <unordered_set>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "quantpath/checkpoint.h"
#include "src/base/name_ids.h"
#include "src/checkpoint/folder.h"

namespace quantpath {

using checkpoint_internal::kIndexName;
using checkpoint_internal::kSingleName;

struct Checkpoint::Impl {
  struct Shard {
    std::string name;              // as the index (or the folder listing) names it
    std::vector<uint32_t> listed;  // the ids of the tensors the index places here
    std::once_flag once;
    std::shared_ptr<const SafetensorsFile> file;
    Status status;
  };

  std::filesystem::path dir;
  std::string index;  // the index's path, empty when the folder has none
  // FromTensors: the tensors held in memory (no shards), by name, and the label of their views.
  std::string label;
  std::vector<TensorInfo> memory_infos;
  std::vector<std::vector<std::byte>> memory_bytes;
  std::unordered_map<std::string, size_t> memory_of;
  std::optional<uint64_t> total_size;
  std::vector<std::unique_ptr<Shard>> shards;
  NameIds tensors;                 // every tensor of the shards, by name
  std::vector<uint32_t> shard_of;  // per tensor id: index into shards

  size_t AddShard(std::string name) {
    shards.push_back(std::make_unique<Shard>());
    shards.back()->name = std::move(name);
    return shards.size() - 1;
  }

  // Opens shard `i` once; with an index, also checks that the shard holds exactly the tensors the
  // index places in it. Later calls return the first call's outcome.
  Result<const SafetensorsFile*> OpenShard(size_t i) const {
    Shard& shard = *shards[i];
    std::call_once(shard.once, [&] {
      auto opened = SafetensorsFile::Open(dir / shard.name);
      if (!opened.ok()) {
        shard.status = opened.status();
        return;
      }
      if (!index.empty()) shard.status = CheckAgainstIndex(i, **opened);
      if (shard.status.ok()) shard.file = std::move(opened).value();
    });
    if (!shard.status.ok()) return shard.status;
    return shard.file.get();
  }

  Status CheckAgainstIndex(size_t i, const SafetensorsFile& file) const {
    // The common case, looked up in the shard's own small table rather than the index's: the
    // index lists as many tensors here as the file holds, and the file holds each of them (names
    // being unique on both sides, the two sets are then equal).
    const std::vector<uint32_t>& listed = shards[i]->listed;
    if (file.tensors().size() == listed.size() &&
        std::all_of(listed.begin(), listed.end(),
                    [&](uint32_t id) { return file.Find(tensors.Name(id)) != nullptr; })) {
      return {};
    }
    for (const TensorInfo& t : file.tensors()) {
      const std::optional<uint32_t> id = tensors.Find(t.name);
      if (!id) {
        return InvalidInput(
            fmt::format("{}: tensor \"{}\" is not listed in {}", file.path(), t.name, index));
      }
      if (shard_of[*id] != i) {
        return InvalidInput(
            fmt::format("{}: tensor \"{}\" is in this shard, but {} lists it in "
                        "shard \"{}\"",
                        file.path(), t.name, index, shards[shard_of[*id]]->name));
      }
    }
    // Every tensor of the file is one the index lists here, so the index lists one more.
    for (uint32_t id : listed) {
      const std::string_view name = tensors.Name(id);
      if (file.Find(name) == nullptr) {
        return InvalidInput(
            fmt::format("{}: tensor \"{}\" is listed in shard \"{}\", which does "
                        "not contain it",
                        index, name, shards[i]->name));
      }
    }
    return InternalError(
        fmt::format("{}: the index and shard \"{}\" disagree", index, shards[i]->name));
  }

  Status ReadIndex(std::vector<std::string>* warnings) {
    QP_ASSIGN_OR_RETURN(checkpoint_internal::IndexFile file,
                        checkpoint_internal::ReadIndexFile(index));
    for (size_t i = 0; i < file.shards.size(); ++i) {
      AddShard(std::move(file.shards[i]));
      shards[i]->listed = std::move(file.listed[i]);
    }
    tensors = std::move(file.tensors);
    shard_of = std::move(file.shard_of);
    for (const auto& shard : shards) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(dir / shard->name, ec)) {
        return NotFound(
            fmt::format("{}: shard \"{}\" (listed for tensor \"{}\") is not a file in {}", index,
                        shard->name, tensors.Name(shard->listed.front()), dir.string()));
      }
    }
    for (const std::optional<std::string>& warning :
         {file.empty_warning, file.total_size_warning}) {
      if (warning) warnings->push_back(*warning);
    }
    total_size = file.total_size;
    QP_ASSIGN_OR_RETURN(std::vector<std::string> present,
                        checkpoint_internal::ListSafetensors(dir));
    std::unordered_set<std::string_view> listed_shards;
    for (const auto& shard : shards) listed_shards.insert(shard->name);
    for (const std::string& name : present) {
      if (!listed_shards.contains(name)) {
        warnings->push_back(
            fmt::format("{}: not listed in {}; ignored", (dir / name).string(), kIndexName));
      }
    }
    return {};
  }

  // Without an index every file is opened now: the headers are the only map of names to files.
  Status OpenAll(const std::vector<std::string>& files) {
    QP_ASSIGN_OR_RETURN(InputLimits limits, CurrentLimits());
    if (static_cast<int64_t>(files.size()) > limits.shards) {
      return LimitError(
          fmt::format("{}: {} safetensors files, over the limit of {} "
                      "(QUANTPATH_MAX_SHARDS)",
                      dir.string(), files.size(), limits.shards));
    }
    for (const std::string& name : files) {
      size_t i = AddShard(name);
      QP_ASSIGN_OR_RETURN(const SafetensorsFile* file, OpenShard(i));
      for (const TensorInfo& t : file->tensors()) {
        auto [id, added] = tensors.Insert(t.name);
        if (!added) {
          return InvalidInput(fmt::format("{}: tensor \"{}\" is in both {} and {}", dir.string(),
                                          t.name, shards[shard_of[id]]->name, name));
        }
        shard_of.push_back(static_cast<uint32_t>(i));
      }
      if (static_cast<int64_t>(shard_of.size()) > limits.tensors) {
        return LimitError(
            fmt::format("{}: the safetensors files up to {} hold {} tensors, over "
                        "the limit of {} (QUANTPATH_MAX_TENSORS)",
                        dir.string(), name, shard_of.size(), limits.tensors));
      }
    }
    return {};
  }
};

Result<Checkpoint> Checkpoint::Open(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return NotFound(fmt::format("{}: not a folder", dir.string()));
  }
  Checkpoint checkpoint;
  checkpoint.impl_ = std::make_shared<Impl>();
  Impl& impl = *checkpoint.impl_;
  impl.dir = dir;
  if (std::filesystem::exists(dir / kIndexName, ec)) {
    impl.index = (dir / kIndexName).string();
    QP_RETURN_IF_ERROR(impl.ReadIndex(&checkpoint.warnings_));
    return checkpoint;
  }
  QP_ASSIGN_OR_RETURN(std::vector<std::string> files, checkpoint_internal::ListSafetensors(dir));
  if (files.empty()) {
    return NotFound(fmt::format("{}: no {}, {} or other *.safetensors file", dir.string(),
                                kIndexName, kSingleName));
  }
  QP_RETURN_IF_ERROR(
      impl.OpenAll(checkpoint_internal::WeightFiles(dir, std::move(files), &checkpoint.warnings_)));
  return checkpoint;
}

Result<Checkpoint> Checkpoint::FromTensors(std::string label, std::vector<OwnedTensor> tensors) {
  Checkpoint checkpoint;
  checkpoint.impl_ = std::make_shared<Impl>();
  Impl& impl = *checkpoint.impl_;
  impl.dir = label;
  impl.label = std::move(label);
  uint64_t offset = 0;
  for (OwnedTensor& t : tensors) {
    TensorInfo info{t.name, t.dtype, t.shape};
    const std::optional<uint64_t> length = StDtypeByteLength(t.dtype, info.Elements());
    if (t.name.empty() || !length || *length != t.bytes.size()) {
      return InvalidInput(fmt::format("{}: tensor \"{}\": {} bytes, but {} [{}] takes {}",
                                      impl.label, t.name, t.bytes.size(), StDtypeName(t.dtype),
                                      fmt::join(t.shape, ", "), length.value_or(0)));
    }
    info.begin = offset;
    info.end = offset + *length;
    offset = info.end;
    if (!impl.memory_of.emplace(t.name, impl.memory_infos.size()).second) {
      return InvalidInput(fmt::format("{}: tensor \"{}\" given twice", impl.label, t.name));
    }
    impl.memory_infos.push_back(std::move(info));
    impl.memory_bytes.push_back(std::move(t.bytes));
  }
  return checkpoint;
}

std::vector<std::string> Checkpoint::TensorNames() const {
  std::vector<std::string> names;
  names.reserve(impl_->shard_of.size() + impl_->memory_of.size());
  for (uint32_t id = 0; id < impl_->tensors.size(); ++id) {
    names.emplace_back(impl_->tensors.Name(id));
  }
  for (const auto& [name, i] : impl_->memory_of) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

bool Checkpoint::Has(std::string_view name) const {
  return impl_->tensors.Find(name) || impl_->memory_of.contains(std::string(name));
}

Result<TensorView> Checkpoint::Get(std::string_view name) const {
  if (auto held = impl_->memory_of.find(std::string(name)); held != impl_->memory_of.end()) {
    const std::vector<std::byte>& bytes = impl_->memory_bytes[held->second];
    return TensorView{
        &impl_->memory_infos[held->second], impl_->label, {bytes.data(), bytes.size()}};
  }
  const std::optional<uint32_t> id = impl_->tensors.Find(name);
  if (!id) return NotFound(fmt::format("{}: no tensor \"{}\"", impl_->dir.string(), name));
  auto file = impl_->OpenShard(impl_->shard_of[*id]);
  if (!file.ok()) return file.status().WithContext(fmt::format("reading tensor \"{}\"", name));
  const TensorInfo* info = (*file)->Find(name);
  if (info == nullptr) {
    // OpenShard checked that the shard holds every tensor mapped to it.
    return InternalError(fmt::format("{}: tensor \"{}\" vanished", (*file)->path(), name));
  }
  return (*file)->View(*info);
}

std::optional<uint64_t> Checkpoint::IndexTotalSize() const { return impl_->total_size; }

Status Checkpoint::Validate() {
  // Every shard opened at once (each once: OpenShard keeps its outcome), then the first error in
  // shard order is the one reported.
  checkpoint_internal::ForEachShard(impl_->shards.size(),
                                    [&](size_t i) { (void)impl_->OpenShard(i); });
  uint64_t bytes = 0;
  for (size_t i = 0; i < impl_->shards.size(); ++i) {
    QP_ASSIGN_OR_RETURN(const SafetensorsFile* file, impl_->OpenShard(i));
    for (const TensorInfo& t : file->tensors()) bytes += t.end - t.begin;
  }
  if (impl_->total_size && *impl_->total_size != bytes) {
    std::string warning =
        fmt::format("{}: metadata.total_size is {} but the shards' tensors take {} bytes",
                    impl_->index, *impl_->total_size, bytes);
    // Idempotent: validating twice does not repeat the warning.
    if (std::find(warnings_.begin(), warnings_.end(), warning) == warnings_.end()) {
      warnings_.push_back(std::move(warning));
    }
  }
  return {};
}

}  // namespace quantpath
