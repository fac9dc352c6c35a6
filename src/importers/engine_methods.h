// The quantization methods an engine release registers, as its "Unknown quantization method"
// error lists them.
#pragma once

#include <string_view>

#include "quantpath/ir.h"

namespace quantpath {

// QUANTIZATION_METHODS of `dialect`'s release as Python prints the list; empty for native and
// the helper recordings, which never raise that error.
std::string_view RegisteredMethodsText(const Dialect& dialect);

}  // namespace quantpath
