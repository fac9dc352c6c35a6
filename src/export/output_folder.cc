// The output folder's safety rules and its atomic appearance (output_folder.h).
#include "src/export/output_folder.h"

#include <unistd.h>

#include "fmt/format.h"

namespace quantpath::export_internal {
namespace {

namespace fs = std::filesystem;

// Whether `inner` is `outer` or lies under it (both absolute and normalized).
bool Within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

// `p` absolute with its symlinks resolved as far as it exists (an output folder often does not).
fs::path Resolved(const fs::path& p) {
  std::error_code error;
  fs::path resolved = fs::weakly_canonical(fs::absolute(p), error);
  return error ? fs::absolute(p).lexically_normal() : resolved;
}

}  // namespace

Result<std::unique_ptr<OutputFolder>> OutputFolder::Create(const fs::path& in, const fs::path& out,
                                                           bool force) {
  const fs::path in_path = Resolved(in);
  fs::path out_path = Resolved(out);
  if (out_path.filename().empty()) out_path = out_path.parent_path();
  if (Within(out_path, in_path)) {
    return InvalidInput(
        fmt::format("{}: the output folder is the input folder or lies inside it "
                    "({}); the input is never written to",
                    out.string(), in_path.string()));
  }
  if (Within(in_path, out_path)) {
    return InvalidInput(
        fmt::format("{}: the output folder holds the input folder ({}); "
                    "replacing it would delete the input",
                    out.string(), in_path.string()));
  }
  std::error_code error;
  const fs::file_status status = fs::symlink_status(out_path, error);
  if (fs::exists(status)) {
    if (!force) {
      return InvalidInput(fmt::format(
          "{}: already exists; give --force to replace it, or another folder", out.string()));
    }
    if (!fs::is_directory(status)) {
      return InvalidInput(
          fmt::format("{}: exists and is not a folder; not replaced", out.string()));
    }
  }
  // Missing parents are made, as save_pretrained makes them.
  const fs::path parent = out_path.parent_path();
  if (!fs::is_directory(parent, error) && !fs::create_directories(parent, error)) {
    return IoError(fmt::format("{}: cannot create the folder {}: {}", out.string(), parent.string(),
                               error.message()));
  }
  std::unique_ptr<OutputFolder> folder(new OutputFolder());
  folder->out_ = out_path;
  folder->force_ = force;
  folder->temp_ = parent / fmt::format(".{}.partial-{}", out_path.filename().string(), getpid());
  fs::remove_all(folder->temp_, error);  // a leftover of this same process id
  if (!fs::create_directory(folder->temp_, error)) {
    return IoError(fmt::format("{}: cannot create: {}", folder->temp_.string(),
                               error ? error.message() : "it exists"));
  }
  return folder;
}

OutputFolder::~OutputFolder() {
  if (committed_) return;
  std::error_code error;
  fs::remove_all(temp_, error);
}

Status OutputFolder::Commit() {
  std::error_code error;
  fs::path old;
  if (fs::exists(fs::symlink_status(out_, error))) {
    if (!force_) {
      return InvalidInput(fmt::format("{}: appeared while writing; not replaced", out_.string()));
    }
    old = out_.parent_path() / fmt::format(".{}.old-{}", out_.filename().string(), getpid());
    fs::rename(out_, old, error);
    if (error) {
      return IoError(fmt::format("{}: cannot move it aside: {}", out_.string(), error.message()));
    }
  }
  fs::rename(temp_, out_, error);
  if (error) {
    const std::string why = error.message();
    if (!old.empty()) fs::rename(old, out_, error);  // put the previous folder back
    return IoError(fmt::format("cannot rename {} to {}: {}", temp_.string(), out_.string(), why));
  }
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, error);
  return {};
}

}  // namespace quantpath::export_internal
