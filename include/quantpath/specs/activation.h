// quantpath specs: activation quantization: how a spec's kernels quantize X before the product. It
// is part of the dispatcher key because a kernel either fuses it or not. Each way of quantizing X
// is a registered activation kind (activation_kinds.h), which makes the ActivationQuant of the
// scheme inputs it claims and rounds X for the reference kernels and the fp64 reference.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/device.h"
#include "quantpath/ir.h"
#include "quantpath/specs/name_hash.h"

namespace quantpath {

enum class ActMode : uint8_t {
  kNone,              // X stays in high precision (weight-only quantization, bf16 layers)
  kDynamicPerToken,   // one scale per row of X, computed at run time
  kDynamicPerTensor,  // one scale for all of X, computed at run time
  kDynamicGroup,      // one scale per row and per group_size columns of X (DeepSeek 1×128)
  kStaticPerTensor,   // the checkpoint's input_scale (the max over fused legs)
};

struct ActivationQuant {
  ActMode mode = ActMode::kNone;
  int64_t group_size = 0;           // kDynamicGroup only
  QDType dtype = QDType::kFP8E4M3;  // what X is rounded to (fp8, int8, nvfp4, mxfp8); unused
                                    // for kNone
  bool symmetric = true;            // false: a zero point / input offset as well
  // The kind, where the fields above do not name it: NVFP4 activations whose rows are each
  // divided by their own global (nvfp4_family.h) are `nvfp4_per_token_global`, those against the
  // checkpoint's input global have no id. Empty for every kind those fields name.
  ActivationKind kind{};
  bool operator==(const ActivationQuant&) const = default;
  // Whether X is rounded to `to` at run time, one scale per row of X and no zero point.
  bool SymmetricPerToken(QDType to) const {
    return mode == ActMode::kDynamicPerToken && dtype == to && symmetric;
  }
  // Its kind's name for it: "none", "fp8 dynamic per-token", "int8 static per-tensor asym",
  // "fp8 dynamic group 128", …
  std::string ToString() const;
};

// Dynamic fp8 activation scales are fp32 values, max(absmax, kActAbsMaxFloor) / 448 divided in
// fp32, so that an all-zero row or group gets a finite scale (the floor vLLM's per-token-group
// quantizer uses). Values are then X / scale rounded to e4m3 with ties to even, saturating at
// ±448. (The scale must be the fp32 one: with bf16 inputs, X / (absmax / 448) often lands exactly
// on an e4m3 tie, which the last bit of the scale then decides.)
inline constexpr double kActAbsMaxFloor = 1e-10;
inline constexpr double kFp8E4M3Max = 448.0;

}  // namespace quantpath
