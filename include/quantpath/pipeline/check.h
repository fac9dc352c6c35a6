// quantpath pipeline: checking a checkpoint against its config (`quantpath check`): the headers
// and the index, then the values of every tensor that is not a weight's bulk codes (scales, zero
// points, g_idx, …), or every byte.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/checkpoint.h"
#include "quantpath/pipeline/lint.h"
#include "quantpath/pipeline/open_model.h"

namespace quantpath {

enum class FindingKind : uint8_t {
  kCheckpoint,         // a problem of the files themselves (Finding::checkpoint says which)
  kDecidedError,       // the engine would refuse the layer's quantization (legs that disagree, …)
  kNoSpec,             // the layer's scheme has no physical spec (spec_note says why)
  kMissingTensor,      // a tensor the layer's source layout needs is not in the checkpoint
  kShape,              // a tensor whose shape is not the one its layer or parameter reads
  kDtype,              // a quantized layer's tensor in a dtype its source layout never stores
  kStoredQuantized,    // the config leaves the layer unquantized; the checkpoint quantizes it
  kStoredUnquantized,  // the config quantizes the layer; the checkpoint stores it unquantized
  kUnconsumed,         // no layer and no non-layer parameter of the architecture reads it
  kSkipped,            // warning: a tensor the engine skips when it loads (rotary inv_freq, …)
  kTensorParallel,     // at the launch's --tp, a layer whose rank shapes break its layout
  // Values (CheckReads::kValues and kEveryByte):
  kBadValue,     // NaN, ±inf, a negative scale, a zero divisor, an fp8 NaN code
  kDeadRows,     // a scale tensor or a row of it all zero (--deep: an all-zero weight row)
  kZeroPoint,    // out of the code range, or not the midpoint where the scheme is symmetric
  kGroupMap,     // a g_idx that does not map whole groups
  kStoredShape,  // a weight_shape that is not the layer's shape
};
std::string_view FindingKindName(FindingKind kind);  // "missing-tensor", …

struct Finding {
  FindingKind kind = FindingKind::kCheckpoint;
  std::optional<CheckpointProblemKind> checkpoint;  // kCheckpoint only
  bool error = true;                                // false: a warning
  std::string file;                                 // the shard, index or folder concerned
  std::string tensor;                               // empty when the finding is a file's or layer's
  std::string layer;                                // the site's path; empty when none
  std::string expected;
  std::string found;
  std::string message;  // names the file, the tensor and the layer
  // "missing-tensor", or the checkpoint problem's kind ("not-in-index", …).
  std::string_view KindName() const;
};

// What `check` reads beyond the index and the headers.
enum class CheckReads : uint8_t {
  kHeaders,    // --headers-only: nothing else
  kValues,     // every tensor of a quantized layer that is not its weight's bulk codes
  kEveryByte,  // --deep: every byte of every tensor (fp8 NaN codes, all-zero weight rows)
};
std::string_view CheckReadsName(CheckReads reads);  // "headers", "values", "every-byte"

struct CheckReading {
  CheckReads reads = CheckReads::kValues;
  // Called as bytes are read (done, total), from the calling thread; may be empty.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// One stretch of a file that `check` read, in the order it read them (a benchmark reads the same
// stretches plainly to compare).
struct ReadStretch {
  uint32_t file = 0;  // index into CheckReport::read_files
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct CheckReport {
  std::vector<Finding> findings;  // checkpoint problems first, then per site, then left over
  int64_t errors = 0;
  int64_t warnings = 0;
  int64_t tensors = 0;  // in the checkpoint
  // What the folder did not let `check` see: shards known from the index only (their tensors'
  // dtypes and shapes are not checked).
  std::vector<std::string> not_checked;
  // Why the layers were not checked at all, when the files are too broken to plan from (the
  // checkpoint problems above say how); empty when they were.
  std::string layers_not_checked;
  // The tensor-parallel sizes up to 16 at which every layer splits as the engine splits it (whole
  // groups, blocks, packed bytes and experts' blocks per rank, heads and KV heads as
  // QKVParallelLinear divides them, the vocabulary).
  std::vector<int64_t> loadable_tp;
  // Description entries that match no module under native or an engine's newest release: each a
  // warning (counted in `warnings`).
  std::vector<UnmatchedEntry> unmatched;
  // What was read of the tensors' data, and how long it took.
  CheckReads reads = CheckReads::kHeaders;
  uint64_t bytes_read = 0;
  double read_seconds = 0;
  std::vector<std::string> read_files;
  std::vector<ReadStretch> read_stretches;
};

// Audits the folder's files (AuditCheckpoint), then holds every tensor of its headers against the
// sites as `options`' dialect decides them: each site's tensors by its source layout
// (SourceTensors) under each leg's and expert's prefix, its bias, whether it is stored quantized
// as decided, and what no site consumes; and at the launch's --tp every layer's split. Then reads
// what `reading` asks and holds each value to its tensor's SourceValues rule, the integer layouts'
// zero points and g_idx as their loaders do (CheckIntegerSourceValues). A folder without weights
// is kNotFound; one whose config cannot be planned is that error, unless the files' own problems
// explain it (then the report has them and `layers_not_checked`).
Result<CheckReport> CheckFolder(const std::string& dir, const OpenOptions& options,
                                const CheckReading& reading = {});

}  // namespace quantpath
