// The folder listing and the index's weight map (folder.h).
#include "src/checkpoint/folder.h"

#include <algorithm>
#include <array>
#include <optional>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

#include "fmt/format.h"
#include "src/base/json_dom.h"
#include "src/checkpoint/header.h"

namespace quantpath::checkpoint_internal {
namespace {

// A shard name from an index must stay inside the folder: relative, without "..".
bool IsInsideFolder(const std::filesystem::path& shard) {
  if (shard.empty() || shard.is_absolute() || shard.has_root_name()) return false;
  return std::none_of(shard.begin(), shard.end(), [](const auto& part) { return part == ".."; });
}

// A shard named by the index (`text`, for `tensor` at `where`) as a normalised path in the folder.
Result<std::string> ShardPath(std::string_view text, std::string_view tensor,
                              const std::string& where) {
  if (text.find('\0') != std::string_view::npos) {
    // A path is cut at the NUL: another file would be opened than the one named.
    return InvalidInput(fmt::format("{}: tensor \"{}\": shard {} contains a NUL character", where,
                                    tensor, JsonQuote(text)));
  }
  std::filesystem::path shard_path(text);
  if (!IsInsideFolder(shard_path)) {
    return InvalidInput(fmt::format("{}: tensor \"{}\": shard {} must be a file inside the folder",
                                    where, tensor, JsonQuote(text)));
  }
  return shard_path.lexically_normal().string();
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

// Read from simdjson's DOM: the weight map of a large MoE is 150k entries, and copying it into Json
// would cost several times the parse.
Result<IndexFile> ReadIndexFile(const std::string& path) {
  QP_ASSIGN_OR_RETURN(InputLimits limits, CurrentLimits());
  QP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  json_internal::ThreadDomParser parser(text.size());
  QP_ASSIGN_OR_RETURN(simdjson::dom::element root,
                      parser->Parse(text, text.capacity(), path, limits.json));
  std::optional<simdjson::dom::object> weight_map;
  std::optional<Json> metadata;
  if (root.type() == simdjson::dom::element_type::OBJECT) {
    std::unordered_set<std::string_view> keys;
    for (auto [key, value] : simdjson::dom::object(root)) {
      if (!keys.insert(key).second) return json_internal::DuplicateKeyError(path, "", key);
      if (key == "weight_map" && value.type() == simdjson::dom::element_type::OBJECT) {
        weight_map = simdjson::dom::object(value);
        continue;
      }
      // Every other member is small: held to ParseJson's rules by converting it.
      QP_ASSIGN_OR_RETURN(Json owned, json_internal::ToOwnedJson(
                                          value, path, JsonPointerChild("", key), limits.json));
      if (key == "metadata") metadata = std::move(owned);
    }
  }
  if (!weight_map) {
    return InvalidInput(fmt::format("{}: expected an object with a \"weight_map\" object", path));
  }
  if (static_cast<int64_t>(weight_map->size()) > limits.tensors) {
    return LimitError(
        fmt::format("{}: \"weight_map\" lists {} tensors, over the limit of {} "
                    "(QUANTPATH_MAX_TENSORS)",
                    path, weight_map->size(), limits.tensors));
  }
  IndexFile out;
  out.tensors.Reserve(weight_map->size(), text.size());
  out.shard_of.reserve(weight_map->size());
  // A shard name as written → its index in out.shards; consecutive tensors mostly share one.
  std::unordered_map<std::string_view, size_t> shard_by_text;
  std::string_view last_text;
  size_t last_shard = 0;
  // The names kAhead entries on are hashed and their slots prefetched while this one is added.
  constexpr size_t kAhead = 16;
  std::array<uint64_t, kAhead> hashes;
  size_t hashed = 0;
  auto ahead = weight_map->begin();
  const auto hash_ahead = [&] {
    const uint64_t hash = NameIds::HashOf(ahead.key());
    out.tensors.Prefetch(hash);
    hashes[hashed++ % kAhead] = hash;
    ++ahead;
  };
  while (hashed < kAhead && ahead != weight_map->end()) hash_ahead();
  for (auto [tensor, value] : *weight_map) {
    const uint64_t hash = hashes[out.shard_of.size() % kAhead];
    if (ahead != weight_map->end()) hash_ahead();
    const auto where = [&, tensor = tensor] {
      return fmt::format("{}#{}", path, JsonPointerChild("/weight_map", tensor));
    };
    if (value.type() != simdjson::dom::element_type::STRING) {
      return InvalidInput(fmt::format("{}: tensor \"{}\": expected a shard file name, found {}",
                                      where(), tensor, json_internal::DomTypeName(value)));
    }
    const std::string_view text_of_shard(value);
    if (out.tensors.size() == 0 || text_of_shard != last_text) {
      auto [it, added] = shard_by_text.try_emplace(text_of_shard, out.shards.size());
      if (added) {
        QP_ASSIGN_OR_RETURN(std::string shard, ShardPath(text_of_shard, tensor, where()));
        auto known = std::find(out.shards.begin(), out.shards.end(), shard);
        it->second = static_cast<size_t>(known - out.shards.begin());
        if (known == out.shards.end()) {
          if (static_cast<int64_t>(out.shards.size()) >= limits.shards) {
            return LimitError(
                fmt::format("{}: \"weight_map\" names more than {} shard files "
                            "(QUANTPATH_MAX_SHARDS)",
                            path, limits.shards));
          }
          out.shards.push_back(std::move(shard));
          out.listed.emplace_back();
        }
      }
      last_text = text_of_shard;
      last_shard = it->second;
    }
    auto [id, added] = out.tensors.Insert(tensor, hash);
    if (!added) return json_internal::DuplicateKeyError(path, "/weight_map", tensor);
    out.shard_of.push_back(static_cast<uint32_t>(last_shard));
    out.listed[last_shard].push_back(id);
  }
  if (out.tensors.size() == 0) {
    out.empty_warning = fmt::format("{}: \"weight_map\" lists no tensors", path);
  }
  // metadata.total_size is informative: a wrong one is a warning, never an error.
  if (const Json* total = metadata ? metadata->FindNonNull("total_size") : nullptr) {
    if (total->is_int() && total->int_value() >= 0) {
      out.total_size = static_cast<uint64_t>(total->int_value());
    } else {
      out.total_size_warning = fmt::format(
          "{}: total_size is not a non-negative integer; not checked", Where(path, *total));
    }
  }
  return out;
}

void ForEachShard(size_t n, const std::function<void(size_t)>& work) {
  // Dynamic: shards differ in size. The work items catch nothing: they return their errors.
#pragma omp parallel for schedule(dynamic)
  for (size_t i = 0; i < n; ++i) work(i);
}

void RunAlongside(const std::function<void()>& first, size_t n,
                  const std::function<void(size_t)>& work) {
  // Item 0, taken first, is `first`: one thread starts on it while the others start on the work.
#pragma omp parallel for schedule(dynamic)
  for (size_t i = 0; i <= n; ++i) {
    if (i == 0) {
      first();
    } else {
      work(i - 1);
    }
  }
}

NamedHeader ReadNamedHeader(const std::filesystem::path& path) {
  NameIds names;
  Result<SafetensorsHeader> header = ReadHeaderWithNames(path, &names);
  return {std::move(header), std::move(names)};
}

std::vector<NamedHeader> ReadHeaders(const std::vector<std::filesystem::path>& paths) {
  std::vector<std::optional<NamedHeader>> read(paths.size());
  ForEachShard(paths.size(), [&](size_t i) { read[i].emplace(ReadNamedHeader(paths[i])); });
  std::vector<NamedHeader> out;
  out.reserve(paths.size());
  for (std::optional<NamedHeader>& header : read) out.push_back(std::move(*header));
  return out;
}

}  // namespace quantpath::checkpoint_internal
