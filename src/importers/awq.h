// The AWQ plan builder, shared with the AutoRound importer (AutoRound checkpoints packed as AWQ).
#pragma once

#include <optional>
#include <string>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "src/importers/gptq_family.h"

namespace quantpath {

// The plan for an AWQ description `config` (located by the caller in `sources`) in `dialect` on
// the launch's platform. Compares the embedded block with the standalone copies first. The user's
// --quantization name, when given, matters: an explicit "awq" keeps SGLang off Marlin.
Result<QuantPlan> BuildAwqPlan(const ConfigSources& sources, const Dialect& dialect,
                               const FamilyConfig& config);

}  // namespace quantpath
