// What an output folder is made of: units, each a layer (or a tensor copied as stored) whose
// output tensors are described before any is computed, so that every shard's header can be
// written first and the data streamed after it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"

namespace quantpath::export_internal {

// A tensor's bytes to write: its own, or a view of the input checkpoint's (which outlives the
// write).
struct OutputBytes {
  std::vector<std::byte> owned;
  std::span<const std::byte> view;
  static OutputBytes Own(std::vector<std::byte> bytes) {
    OutputBytes out{std::move(bytes), {}};
    out.view = out.owned;
    return out;
  }
  static OutputBytes View(std::span<const std::byte> bytes) { return {{}, bytes}; }
};

struct ExportUnit {
  std::string layer;                  // the layer written; empty for a tensor copied as stored
  std::vector<TensorHeader> outputs;  // in the order produce returns them
  std::vector<std::string> inputs;    // the checkpoint tensors it reads
  int64_t bytes_in = 0;
  std::function<Result<std::vector<OutputBytes>>()> produce;
};

// The tensor `view` of the input, written as stored.
ExportUnit CopyUnit(const TensorView& view);

// The folder's units: every checkpoint tensor in name order, through the unit of `layers` that
// reads it (placed where its first input comes), else copied as stored, unless `drop` says to
// leave it out (it is then added to `dropped`).
Result<std::vector<ExportUnit>> UnitsInOrder(const Checkpoint& checkpoint,
                                             std::vector<ExportUnit> layers,
                                             const std::function<bool(const std::string&)>& drop,
                                             std::vector<std::string>* dropped);

}  // namespace quantpath::export_internal
