// Writing an output folder from its units (export_unit.h): shards planned from the units'
// described outputs, the units produced a batch at a time on OpenMP threads and written in order,
// then config.json and the input's other files, then the folder renamed into place.
#pragma once

#include <string>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/export.h"
#include "src/export/export_unit.h"

namespace quantpath::export_internal {

struct FolderContent {
  std::string in_dir;  // resolved
  std::vector<ExportUnit> units;
  Json quantization_config;                                     // null: none
  std::vector<std::pair<std::string, Json>> description_files;  // beside config.json
  ExportReport report;  // format, scheme, layers_written and notes filled by the caller
};

Result<ExportReport> WriteModelFolder(const std::string& out_dir, FolderContent content,
                                      const ExportOptions& options);

}  // namespace quantpath::export_internal
