// The output's safetensors files: tensors in order, split into shards as transformers'
// save_pretrained does (a new shard once the next tensor would pass the limit), with
// `model.safetensors.index.json` when there are several.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/checkpoint_writer.h"

namespace quantpath::export_internal {

struct ShardPlan {
  std::vector<std::string> files;  // "model.safetensors" or "model-0000i-of-0000n…"
  std::vector<std::vector<TensorHeader>> tensors;  // per file, in order
};
// Tensors whose byte length overflows are the caller's to reject (TensorByteLength).
ShardPlan PlanShards(std::span<const TensorHeader> tensors, int64_t max_shard_bytes);

// Writes a ShardPlan's files into `folder` tensor by tensor, in plan order.
class ShardWriter {
 public:
  ShardWriter(std::filesystem::path folder, ShardPlan plan)
      : folder_(std::move(folder)), plan_(std::move(plan)) {}
  // The next tensor's bytes.
  Status Write(std::span<const std::byte> bytes);
  // Finishes the last shard and writes the index when there are several. Returns the bytes of
  // every file written.
  Result<int64_t> Finish();

 private:
  Status OpenNext();
  std::filesystem::path folder_;
  ShardPlan plan_;
  size_t shard_ = 0;
  std::unique_ptr<SafetensorsWriter> writer_;
  int64_t bytes_ = 0;
};

}  // namespace quantpath::export_internal
