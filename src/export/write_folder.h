// Writing an output folder from its units (export_unit.h): shards planned from the units'
// described outputs, the units produced a batch at a time on OpenMP threads and written in order,
// then config.json and the input's other files, then the folder renamed into place.
#pragma once

#include <string>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/export.h"
#include "src/export/export_unit.h"
#include "src/export/format_row.h"

namespace quantpath::export_internal {

struct FolderContent {
  std::string in_dir;  // resolved
  std::vector<ExportUnit> units;
  Json quantization_config;                                     // null: none
  std::vector<std::pair<std::string, Json>> description_files;  // beside config.json
  ExportReport report;  // format, scheme, layers_written and notes filled by the caller
};

// Sets `content`'s quantization_config, and the files the format keeps beside config.json, for
// layers of `scheme` stored in `layout` and the unquantized modules `ignore`.
void Describe(const FormatRow& row, const QuantScheme& scheme, SourceLayout layout,
              const std::vector<std::string>& ignore, FolderContent* content);

// Writes the folder, renames it into place, then checks it as every engine dialect loads it
// (the refusals go to the report's notes).
Result<ExportReport> WriteModelFolder(const std::string& out_dir, FolderContent content,
                                      const ExportOptions& options);

}  // namespace quantpath::export_internal
