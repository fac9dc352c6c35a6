// Sharding the output and writing its index (shards.h).
#include "src/export/shards.h"

#include <algorithm>

#include "fmt/format.h"

namespace quantpath::export_internal {
namespace {

// transformers writes {"format": "pt"} into every shard; some readers look for it.
const SafetensorsMetadata kMetadata = {{"format", "pt"}};

uint64_t Bytes(const TensorHeader& t) { return TensorByteLength(t).value_or(0); }

}  // namespace

ShardPlan PlanShards(std::span<const TensorHeader> tensors, int64_t max_shard_bytes) {
  ShardPlan plan;
  plan.tensors.emplace_back();
  uint64_t size = 0;
  for (const TensorHeader& t : tensors) {
    if (!plan.tensors.back().empty() && size + Bytes(t) > static_cast<uint64_t>(max_shard_bytes)) {
      plan.tensors.emplace_back();
      size = 0;
    }
    plan.tensors.back().push_back(t);
    size += Bytes(t);
  }
  const size_t n = plan.tensors.size();
  for (size_t i = 0; i < n; ++i) {
    plan.files.push_back(n == 1 ? "model.safetensors"
                                : fmt::format("model-{:05}-of-{:05}.safetensors", i + 1, n));
  }
  return plan;
}

Status ShardWriter::OpenNext() {
  QP_ASSIGN_OR_RETURN(writer_, SafetensorsWriter::Create(folder_ / plan_.files[shard_],
                                                         plan_.tensors[shard_], kMetadata));
  return {};
}

Status ShardWriter::Write(std::span<const std::byte> bytes) {
  while (writer_ == nullptr || writer_->appended() == writer_->tensors().size()) {
    if (writer_ != nullptr) {
      QP_RETURN_IF_ERROR(writer_->Finish());
      bytes_ += static_cast<int64_t>(writer_->file_bytes());
      ++shard_;
    }
    if (shard_ == plan_.files.size()) {
      return InternalError(fmt::format("{}: a tensor more than the plan", folder_.string()));
    }
    QP_RETURN_IF_ERROR(OpenNext());
  }
  return writer_->Append(bytes);
}

Result<int64_t> ShardWriter::Finish() {
  // A plan of no tensors still writes its one (empty) file.
  if (writer_ == nullptr) QP_RETURN_IF_ERROR(OpenNext());
  QP_RETURN_IF_ERROR(writer_->Finish());
  bytes_ += static_cast<int64_t>(writer_->file_bytes());
  if (shard_ + 1 != plan_.files.size()) {
    return InternalError(fmt::format("{}: {} of {} shards written", folder_.string(), shard_ + 1,
                                     plan_.files.size()));
  }
  if (plan_.files.size() == 1) return bytes_;
  // As transformers writes it: metadata.total_size, then the weight map sorted by name.
  std::vector<std::pair<std::string, std::string>> map;
  uint64_t total = 0;
  for (size_t i = 0; i < plan_.files.size(); ++i) {
    for (const TensorHeader& t : plan_.tensors[i]) {
      map.emplace_back(t.name, plan_.files[i]);
      total += Bytes(t);
    }
  }
  std::sort(map.begin(), map.end());
  std::vector<Json::Member> weight_map;
  for (auto& [name, file] : map) weight_map.emplace_back(name, Json::String(file));
  const Json index = Json::Object(
      {{"metadata", Json::Object({{"total_size", Json::Int(static_cast<int64_t>(total))}})},
       {"weight_map", Json::Object(std::move(weight_map))}});
  const std::string text = ToJson(index, 2) + "\n";
  QP_RETURN_IF_ERROR(WriteFileAtomically(folder_ / "model.safetensors.index.json", text));
  return bytes_ + static_cast<int64_t>(text.size());
}

}  // namespace quantpath::export_internal
