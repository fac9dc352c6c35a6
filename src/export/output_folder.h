// The output folder of `quantize` and `convert`: written as a hidden sibling of its final path
// and renamed into place once complete, so that no reader ever sees half a model and a failure
// leaves nothing behind.
#pragma once

#include <filesystem>
#include <memory>

#include "quantpath/base.h"

namespace quantpath::export_internal {

class OutputFolder {
 public:
  // Refuses an output that is the input folder, lies inside it or holds it (`force` would delete
  // it), and an existing output without `force`. Creates `.<name>.partial-<pid>` beside `out`
  // (and the folders above it that are missing).
  static Result<std::unique_ptr<OutputFolder>> Create(const std::filesystem::path& in,
                                                      const std::filesystem::path& out, bool force);
  ~OutputFolder();  // removes the temporary folder unless committed
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  const std::filesystem::path& temp() const { return temp_; }
  const std::filesystem::path& out() const { return out_; }
  // Renames the temporary folder to `out`; an existing `out` (with `force`) is moved aside first
  // and removed once the new folder is in place.
  Status Commit();

 private:
  OutputFolder() = default;
  std::filesystem::path out_;
  std::filesystem::path temp_;
  bool force_ = false;
  bool committed_ = false;
};

}  // namespace quantpath::export_internal
