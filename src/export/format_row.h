// The formats an output folder is written in, one self-registering row per file under formats/:
// how the format stores a quantized layer (a source layout of the table in specs.h, so a layer
// moves between formats tensor by tensor through its parameter slots) and its quantization_config.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/export.h"
#include "quantpath/ir.h"

namespace quantpath::export_internal {

struct FormatRow {
  CheckpointFormat format;
  std::string_view name;  // as --format and --to spell it
  // The source layout in which the format stores layers of `scheme`; kUnsupported saying why
  // where it cannot.
  Result<SourceLayout> (*layout)(const QuantScheme& scheme);
  // The quantization_config of a folder whose quantized layers store `scheme` (in `layout`),
  // `ignore` the modules left unquantized (module names, or "re:" patterns); null for none.
  Json (*config)(const QuantScheme& scheme, SourceLayout layout,
                 const std::vector<std::string>& ignore);
  // Whether the format's ignore list reads "re:" patterns; where not, --ignore's matches are
  // listed by module name.
  bool ignore_patterns = false;
  // Files the format keeps beside config.json, made from its quantization_config (name, content);
  // null for none.
  std::vector<std::pair<std::string, Json>> (*description_files)(const Json& config) = nullptr;
};

struct FormatRegistrar {
  explicit FormatRegistrar(const FormatRow& row);
};
const FormatRow& FormatRowOf(CheckpointFormat format);

}  // namespace quantpath::export_internal
