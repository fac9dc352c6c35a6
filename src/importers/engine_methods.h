// The quantization methods an engine release registers on each platform it runs on, as its
// "Unknown quantization method" error lists them, and the platforms quantpath reproduces.
#pragma once

#include <span>
#include <string_view>

#include "quantpath/base.h"
#include "quantpath/ir.h"

namespace quantpath {

// QUANTIZATION_METHODS of `dialect`'s release on `platform` as Python prints the list; empty for
// native and the helper recordings, which never raise that error.
std::string_view RegisteredMethodsText(const Dialect& dialect, Platform platform);

// An error naming the dialect, the platform and the platforms quantpath reproduces it on, unless
// it reproduces `dialect` on `platform` for `importer` (empty: any; native answers for every
// platform: it is no engine).
Status CheckPlatformReproduced(const Dialect& dialect, Platform platform,
                               std::string_view importer = {});

// Experts sites whose method the engine cannot build on `platform` (no MoE kernel there): their
// rules raise the constructor's error instead.
void RefuseExperts(const Dialect& dialect, Platform platform, QuantPlan* plan);

// SGLang on a CPU with AMX: the only methods get_quantization_config accepts
// (CPU_QUANTIZATION_METHODS); empty where the platform gates nothing.
std::span<const std::string_view> PlatformMethodGate(const Dialect& dialect, Platform platform);

}  // namespace quantpath
