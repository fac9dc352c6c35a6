// The AWQ plan builder, shared with the AutoRound importer (AutoRound checkpoints packed as AWQ).
#pragma once

#include <optional>
#include <string>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "src/importers/gptq_family.h"

namespace quantpath {

// The plan for an AWQ description `config` (located by the caller) in `dialect`. Compares the
// embedded block with the standalone copies first. `requested` is the user's --quantization name,
// when given (an explicit "awq" keeps SGLang off Marlin).
Result<QuantPlan> BuildAwqPlan(const Dialect& dialect, const FamilyConfig& config,
                               const std::optional<std::string>& requested = std::nullopt);

}  // namespace quantpath
