// The folder listing and the index's weight map (folder.h).
#include "src/checkpoint/folder.h"

#include <algorithm>
#include <system_error>
#include <unordered_set>

#include "fmt/format.h"

namespace quantpath::checkpoint_internal {
namespace {

// A shard name from an index must stay inside the folder: relative, without "..".
bool IsInsideFolder(const std::filesystem::path& shard) {
  if (shard.empty() || shard.is_absolute() || shard.has_root_name()) return false;
  return std::none_of(shard.begin(), shard.end(), [](const auto& part) { return part == ".."; });
}

}  // namespace

Result<std::vector<std::string>> ListSafetensors(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::filesystem::path& path = it->path();
    std::error_code type_ec;
    if (path.extension() == ".safetensors" && std::filesystem::is_regular_file(path, type_ec)) {
      names.push_back(path.filename().string());
    }
  }
  if (ec)
    return IoError(fmt::format("{}: cannot list the folder ({})", dir.string(), ec.message()));
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> WeightFiles(const std::filesystem::path& dir,
                                     std::vector<std::string> files,
                                     std::vector<std::string>* warnings) {
  if (std::find(files.begin(), files.end(), kSingleName) == files.end()) return files;
  for (const std::string& other : files) {
    if (other != kSingleName) {
      warnings->push_back(
          fmt::format("{}: ignored, the weights are in {}", (dir / other).string(), kSingleName));
    }
  }
  return {std::string(kSingleName)};
}

Result<IndexFile> ReadIndexFile(const std::string& path) {
  QP_ASSIGN_OR_RETURN(Json root, ReadJsonFile(path));
  const Json* weight_map = root.Find("weight_map");
  if (!root.is_object() || weight_map == nullptr || !weight_map->is_object()) {
    return InvalidInput(fmt::format("{}: expected an object with a \"weight_map\" object", path));
  }
  QP_ASSIGN_OR_RETURN(InputLimits limits, CurrentLimits());
  if (static_cast<int64_t>(weight_map->members().size()) > limits.tensors) {
    return LimitError(
        fmt::format("{}: \"weight_map\" lists {} tensors, over the limit of {} "
                    "(QUANTPATH_MAX_TENSORS)",
                    path, weight_map->members().size(), limits.tensors));
  }
  IndexFile out;
  std::unordered_set<std::string> shards;
  for (const auto& [tensor, value] : weight_map->members()) {
    if (!value.is_string()) {
      return InvalidInput(fmt::format("{}: tensor \"{}\": expected a shard file name, found {}",
                                      Where(path, value), tensor, value.TypeName()));
    }
    if (value.string_value().find('\0') != std::string::npos) {
      // A path is cut at the NUL: another file would be opened than the one named.
      return InvalidInput(fmt::format("{}: tensor \"{}\": shard {} contains a NUL character",
                                      Where(path, value), tensor, JsonQuote(value.string_value())));
    }
    std::filesystem::path shard_path(value.string_value());
    if (!IsInsideFolder(shard_path)) {
      return InvalidInput(
          fmt::format("{}: tensor \"{}\": shard {} must be a file inside the "
                      "folder",
                      Where(path, value), tensor, JsonQuote(value.string_value())));
    }
    std::string shard = shard_path.lexically_normal().string();
    if (shards.insert(shard).second && static_cast<int64_t>(shards.size()) > limits.shards) {
      return LimitError(
          fmt::format("{}: \"weight_map\" names more than {} shard files "
                      "(QUANTPATH_MAX_SHARDS)",
                      path, limits.shards));
    }
    out.entries.push_back({tensor, std::move(shard)});
  }
  if (out.entries.empty()) {
    out.empty_warning = fmt::format("{}: \"weight_map\" lists no tensors", path);
  }
  // metadata.total_size is informative: a wrong one is a warning, never an error.
  if (const Json* metadata = root.FindNonNull("metadata")) {
    const Json* total = metadata->FindNonNull("total_size");
    if (total != nullptr && total->is_int() && total->int_value() >= 0) {
      out.total_size = static_cast<uint64_t>(total->int_value());
    } else if (total != nullptr) {
      out.total_size_warning = fmt::format(
          "{}: total_size is not a non-negative integer; not checked", Where(path, *total));
    }
  }
  return out;
}

}  // namespace quantpath::checkpoint_internal
