// The checkpoint tensors of a model folder, from the safetensors headers when the shards are there
// and from the index's names when only the index is: the facts vLLM reads from a checkpoint before
// any weight is loaded (GPTQ's modules_in_block_to_quantize) and the shapes of sites that no
// architecture builder describes. Tensor data is never read: the checkpoint stage maps each shard
// and validates its header only.
#include <algorithm>
#include <fstream>
#include <system_error>

#include "fmt/format.h"
#include "quantpath/checkpoint.h"
#include "quantpath/sources.h"

namespace quantpath {
namespace {

constexpr std::string_view kIndexFile = "model.safetensors.index.json";

// A Git LFS pointer (a clone made without git-lfs) in place of a safetensors file: a short text
// file starting with the spec line. Such a folder holds no weights, only their names.
bool IsLfsPointer(const std::filesystem::path& path) {
  constexpr std::string_view kSpec = "version https://git-lfs.github.com/spec/";
  std::ifstream in(path, std::ios::binary);
  std::string head(kSpec.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in.gcount() == static_cast<std::streamsize>(kSpec.size()) && head == kSpec;
}

bool HasLfsPointers(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (it->path().extension() == ".safetensors" && IsLfsPointer(it->path())) return true;
  }
  return false;
}

// The index's tensor names, when its shards are missing. Checkpoint::Open has already checked the
// index's structure up to the shards' existence; the checks here only keep this reader safe.
Result<CheckpointListing> IndexNames(const std::filesystem::path& dir) {
  QP_ASSIGN_OR_RETURN(Json index, ReadJsonFile(dir / kIndexFile));
  const Json* weight_map = index.is_object() ? index.Find("weight_map") : nullptr;
  if (weight_map == nullptr || !weight_map->is_object()) {
    return InvalidInput(fmt::format("{}#/weight_map: expected an object of tensor names, found {}",
                                    kIndexFile,
                                    weight_map == nullptr ? "nothing" : weight_map->TypeName()));
  }
  CheckpointListing listing;
  listing.origin = CheckpointOrigin::kIndex;
  listing.source = std::string(kIndexFile);
  for (const auto& [name, shard] : weight_map->members()) listing.tensors.push_back({name, {}, {}});
  const Json* metadata = index.Find("metadata");
  const Json* total = metadata != nullptr && metadata->is_object() ? metadata->Find("total_size")
                                                                    : nullptr;
  if (total != nullptr && total->is_int() && total->int_value() >= 0) {
    listing.index_total_size = total->int_value();
  }
  std::sort(listing.tensors.begin(), listing.tensors.end(),
            [](const CheckpointTensor& a, const CheckpointTensor& b) { return a.name < b.name; });
  return listing;
}

// What a folder without readable shards says: the index's names, or nothing.
Result<CheckpointListing> WithoutShards(const std::filesystem::path& dir, bool has_index) {
  if (has_index) return IndexNames(dir);
  CheckpointListing absent;
  absent.origin = CheckpointOrigin::kAbsent;
  return absent;
}

}  // namespace

Result<CheckpointListing> ListCheckpoint(const std::filesystem::path& dir) {
  std::error_code ec;
  const bool has_index = std::filesystem::is_regular_file(dir / kIndexFile, ec);
  if (HasLfsPointers(dir)) return WithoutShards(dir, has_index);
  Result<Checkpoint> opened = Checkpoint::Open(dir);
  if (!opened.ok()) {
    // NotFound: no weights at all, or an index whose shards are not in the folder (a config-only
    // copy of a model); anything else is a broken checkpoint.
    if (opened.status().code() != ErrorCode::kNotFound) return opened.status();
    return WithoutShards(dir, has_index);
  }
  QP_RETURN_IF_ERROR(opened->Validate());
  CheckpointListing listing;
  listing.origin = CheckpointOrigin::kHeaders;
  listing.source = has_index
                       ? fmt::format("the safetensors headers of the shards {} lists", kIndexFile)
                       : "the safetensors headers";
  if (std::optional<uint64_t> total = opened->IndexTotalSize()) {
    listing.index_total_size = static_cast<int64_t>(*total);
  }
  for (const std::string& name : opened->TensorNames()) {
    QP_ASSIGN_OR_RETURN(TensorView view, opened->Get(name));
    listing.tensors.push_back({name, std::string(StDtypeName(view.info->dtype)), view.info->shape});
  }
  return listing;
}

}  // namespace quantpath
