// The format rows (format_row.h) and the names the command line reads.
#include <algorithm>
#include <cstdlib>
#include <deque>
#include <mutex>

#include "fmt/format.h"
#include "src/export/format_row.h"

namespace quantpath {
namespace export_internal {
namespace {

struct Registry {
  std::mutex mu;
  std::deque<FormatRow> rows;
};

Registry& Rows() {
  static Registry* registry = new Registry();  // never destroyed: used at exit
  return *registry;
}

const FormatRow* Find(CheckpointFormat format) {
  Registry& r = Rows();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const FormatRow& row : r.rows) {
    if (row.format == format) return &row;
  }
  return nullptr;
}

}  // namespace

FormatRegistrar::FormatRegistrar(const FormatRow& row) {
  Registry& r = Rows();
  std::lock_guard<std::mutex> lock(r.mu);
  r.rows.push_back(row);
}

const FormatRow& FormatRowOf(CheckpointFormat format) {
  const FormatRow* row = Find(format);
  if (row == nullptr) std::abort();  // every enumerator has its file under formats/
  return *row;
}

}  // namespace export_internal

std::string_view CheckpointFormatName(CheckpointFormat format) {
  return export_internal::FormatRowOf(format).name;
}

std::vector<std::string> CheckpointFormatNames() {
  export_internal::Registry& r = export_internal::Rows();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const export_internal::FormatRow& row : r.rows) names.emplace_back(row.name);
  std::sort(names.begin(), names.end());
  return names;
}

Result<CheckpointFormat> ParseCheckpointFormat(std::string_view name) {
  export_internal::Registry& r = export_internal::Rows();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (const export_internal::FormatRow& row : r.rows) {
      if (row.name == name) return row.format;
    }
  }
  return InvalidInput(fmt::format("unknown format \"{}\" (formats: {})", name,
                                  Join(CheckpointFormatNames(), ", ")));
}

}  // namespace quantpath
