// Internal to src/pipeline: `check`'s second pass, the tensors' values (check.h CheckReads).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "quantpath/checkpoint.h"
#include "quantpath/pipeline/check.h"
#include "quantpath/specs.h"

namespace quantpath::pipeline_internal {

// A tensor whose values `check` reads, found by the header pass.
struct ValueTensor {
  const AuditedTensor* tensor = nullptr;
  std::string layer;      // the site's path; empty for a tensor of no layer
  SourceValues values{};  // its rule (kCodes: read by --deep only)
  // Its leg as the layout's rules see it (rows 0 where the tensor belongs to no leg), and the
  // leg's module prefix: an integer layout's leg is decoded whole once its last tensor is read.
  SourceLeg leg;
  std::string prefix;
};

struct ValueReport {
  std::vector<Finding> findings;
  uint64_t bytes = 0;
  double seconds = 0;
  std::vector<ReadStretch> stretches;  // file indices are the audit's
};

// Reads `tensors` file by file in offset order and holds each to its rule. Tensors of files the
// audit could not read are skipped (their problem is the audit's).
ValueReport ReadValues(const CheckpointAudit& audit, std::vector<ValueTensor> tensors,
                       const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace quantpath::pipeline_internal
