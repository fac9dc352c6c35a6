// Pieces the plan, explain and run reports share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "quantpath/report.h"

namespace quantpath {

// The spec_id of `spec`, or null.
Json SpecIdOrNull(const std::optional<SpecKey>& spec);
Json NonEmptyOrNull(const std::string& v);
// {"dtype", "scheme": T|null, "engine_method": string|null} (docs/json/plan.md).
Json KvCacheToJson(const KvCache& kv);
// "bf16 (auto), Fp8KVCacheMethod", "fp8_e4m3": the tables' spelling of a KV cache.
std::string KvCacheText(const KvCache& kv);
// The tables' scheme: the weight scheme's canonical name, an attention site's "kv " + KV cache,
// or "-".
std::string SchemeText(const LayerDecision& l);
// "1.50 MiB": binary units, two decimals.
std::string HumanBytes(double v);

// The plan summary: params and bytes over the same layer sites (bytes leave error rows out);
// other_params and other_bytes over every other tensor (norms …), stored in the checkpoint's
// torch_dtype.
struct PlanTotals {
  int64_t quantized = 0;
  int64_t unquantized = 0;
  int64_t errors = 0;
  int64_t params = 0;
  int64_t bytes = 0;
  int64_t other_params = 0;
  int64_t other_bytes = 0;
};
PlanTotals SumLayers(const Model& model, const std::vector<LayerDecision>& layers);

}  // namespace quantpath
