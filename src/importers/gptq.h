// The GPTQ importer's pieces that other files of the family use: the plan builder (AutoRound
// checkpoints packed as GPTQ reuse it) and the `dynamic` rule builder (gptq_dynamic.cc).
//
// Goals: keep the GPTQ field meanings in one place. Non-goals: locating the description (see
// gptq_family.h) and anything about tensors.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/sources.h"
#include "src/importers/gptq_family.h"

namespace quantpath {

// The four fields of a GPTQ scheme that `dynamic` may override per layer.
struct GptqSettings {
  int64_t bits = 4;
  int64_t group_size = 128;  // -1 = one group per output channel
  bool desc_act = false;
  bool sym = true;
};

// How one dialect reads `dynamic`.
struct DynamicStyle {
  RegexFlavor regex = RegexFlavor::kPythonRe;
  // GPTQModel fails on an override it cannot use; vLLM and SGLang skip values whose Python type
  // is wrong (isinstance checks in override_config).
  bool strict_values = true;
  SiteKindSet kinds = kAllKinds;
  FusedPolicy fused = FusedPolicy::kLegsMustAgree;
  // The engine method a "-:" key leaves on an LM head / MoE site, when it is not the skip action's
  // (vLLM: UnquantizedEmbeddingMethod, UnquantizedFusedMoEMethod). Empty: the skip action's.
  std::string_view lm_head_skip_detail;
  std::string_view moe_skip_detail;
};

// The action of a `+:` rule whose effective settings are `settings`; an error for settings the
// dialect rejects while reading the config.
using GptqQuantizeAction =
    std::function<Result<Action>(const GptqSettings& settings, const Provenance& where)>;

// The rule group "dynamic": one rule per key of `dynamic` (a JSON object), in document order, so
// that the planner's first hit is GPTQModel's and the engines' first hit. A key is a Python regex
// matched with re.match (start-anchored, not end-anchored) on the module path, after removing a
// "-:" (leave the layer unquantized) or "+:" (override) prefix; no prefix means "+:". A key that
// is not a valid regex in the dialect's flavour is an error naming the key's pointer.
Result<RuleGroup> BuildDynamicGroup(const ConfigCopy& copy, const Json& dynamic,
                                    const GptqSettings& base, const DynamicStyle& style,
                                    const GptqQuantizeAction& quantize, const Action& skip,
                                    std::vector<std::string>* notes);

// The plan for a GPTQ description `config` (located by the caller) in `dialect`. Compares the
// embedded block with the standalone copies first (bits, group_size, sym, desc_act, dynamic,
// lm_head and modules_in_block_to_quantize decide; other differences are warnings).
Result<QuantPlan> BuildGptqPlan(const ConfigSources& sources, const Dialect& dialect,
                                const FamilyConfig& config);

}  // namespace quantpath
