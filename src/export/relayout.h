// A quantized projection moved from its checkpoint's source layout into another format's, every
// stored code kept: one self-registering row per kind of move under relayouts/ (packed integers
// repacked, global scales inverted); layouts without a row move tensor by tensor under the other
// layout's names (same parameter slot, same bytes).
#pragma once

#include <string>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/export.h"
#include "quantpath/ir.h"
#include "src/export/export_unit.h"

namespace quantpath::export_internal {

// One projection of a layer: a leg, or one expert's projection.
struct Projection {
  std::string layer;   // for messages
  std::string prefix;  // its checkpoint module
  int64_t rows = 0;
  int64_t cols = 0;
  bool expert = false;
};

struct RelayoutRow {
  bool (*applies)(SourceLayout from, SourceLayout to);
  // The tensors written for `p`, whose tensors in scheme.weight.load.layout are `stored` (in the
  // layout's table order), without reading their values.
  Result<std::vector<TensorHeader>> (*headers)(const std::vector<TensorHeader>& stored,
                                               const QuantScheme& scheme, SourceLayout to,
                                               const Projection& p);
  // Their bytes, in that order, from `source` (the checkpoint, or a quantizer's tensors). A value
  // `to` cannot hold as stored is an error naming the layer, unless `lossy`.
  Result<std::vector<OutputBytes>> (*produce)(const Checkpoint& source, const QuantScheme& scheme,
                                              SourceLayout to, const Projection& p, bool lossy);
  // Said once in the report's notes when the row moved a layer of `scheme` (what it changed or
  // what reads it, if anything); empty for nothing to say.
  std::string (*note)(const QuantScheme& scheme);
};

struct RelayoutRegistrar {
  explicit RelayoutRegistrar(const RelayoutRow& row);
};

// The row moving `from` to `to`, or nullptr where tensors move under the other layout's names.
const RelayoutRow* FindRelayout(SourceLayout from, SourceLayout to);

// `p` of `scheme` (stored in scheme.weight.load.layout) in layout `to`; `notes` gets the row's
// note once.
Result<ExportUnit> RelaidProjection(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                    SourceLayout to, const Projection& p, bool lossy,
                                    std::vector<std::string>* notes);

// Adds `row`'s note on `scheme` to `notes` unless it is empty or there already.
void AddRelayoutNote(const RelayoutRow& row, const QuantScheme& scheme,
                     std::vector<std::string>* notes);

}  // namespace quantpath::export_internal
