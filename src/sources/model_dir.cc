// ResolveModelDir: a folder, a Hugging Face cache repo folder or a repo id in the local cache, to
// the folder whose files are read (huggingface_hub's cache layout: models--org--name/refs/<ref>
// holds a commit hash, snapshots/<hash>/ the files).
#include <cstdlib>
#include <system_error>

#include "fmt/format.h"
#include "quantpath/sources.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kCacheRepoPrefix = "models--";

bool IsDirectory(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool IsCacheRepoFolder(const fs::path& dir) {
  return dir.filename().string().starts_with(kCacheRepoPrefix) && IsDirectory(dir / "snapshots");
}

// A commit hash or branch-free ref target: one path segment of safe characters, so a ref file's
// content can never lead out of snapshots/.
bool IsSnapshotName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

Result<fs::path> SnapshotOf(const fs::path& repo) {
  const fs::path ref = repo / "refs" / "main";
  std::error_code ec;
  if (fs::exists(ref, ec)) {
    QP_ASSIGN_OR_RETURN(std::string text, ReadFile(ref, /*max_bytes=*/256));
    // huggingface_hub writes the hash alone; a hand-edited ref may end in a newline.
    std::string_view name = text;
    while (!name.empty() && (name.back() == '\n' || name.back() == '\r' || name.back() == ' ')) {
      name.remove_suffix(1);
    }
    if (!IsSnapshotName(name)) {
      return InvalidInput(fmt::format("{}: not a commit name ('{}')", ref.string(), name));
    }
    const fs::path snapshot = repo / "snapshots" / std::string(name);
    if (!IsDirectory(snapshot)) {
      return InvalidInput(fmt::format("{}: names snapshot {}, which is not in {}", ref.string(),
                                      name, (repo / "snapshots").string()));
    }
    return snapshot;
  }
  std::vector<fs::path> snapshots;
  for (const fs::directory_entry& entry : fs::directory_iterator(repo / "snapshots", ec)) {
    if (IsDirectory(entry.path())) snapshots.push_back(entry.path());
  }
  if (snapshots.size() == 1) return snapshots.front();
  return InvalidInput(fmt::format(
      "{}: no refs/main and {} snapshots; name the snapshot folder (…/snapshots/<commit>)",
      repo.string(), snapshots.size()));
}

// The hub cache huggingface_hub uses, from the same variables in the same order.
fs::path HubCache() {
  if (const char* cache = std::getenv("HF_HUB_CACHE"); cache != nullptr && *cache != '\0') {
    return cache;
  }
  if (const char* home = std::getenv("HF_HOME"); home != nullptr && *home != '\0') {
    return fs::path(home) / "hub";
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return fs::path(xdg) / "huggingface" / "hub";
  }
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr ? home : "") / ".cache" / "huggingface" / "hub";
}

// "org/name" or "name" as the Hub spells repo ids; anything else is a path only.
bool IsRepoId(std::string_view given) {
  const std::vector<std::string> parts = Split(given, '/');
  if (parts.size() > 2) return false;
  for (const std::string& part : parts) {
    if (!IsSnapshotName(part) || part.starts_with('.') || part.starts_with('-')) return false;
  }
  return true;
}

}  // namespace

Result<fs::path> ResolveModelDir(std::string_view given) {
  const fs::path path(given);
  if (IsDirectory(path)) return IsCacheRepoFolder(path) ? SnapshotOf(path) : path;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
    return InvalidInput(fmt::format(
        "{}: a file, not a model folder; give the folder that holds the model's files ({})", given,
        folder.string()));
  }
  const std::string missing = fmt::format("{}: not a model folder (no such directory)", given);
  if (!IsRepoId(given)) return NotFound(missing);
  std::string repo_folder(kCacheRepoPrefix);
  for (char c : given) repo_folder += c == '/' ? std::string("--") : std::string(1, c);
  const fs::path repo = HubCache() / repo_folder;
  if (!IsDirectory(repo)) {
    return NotFound(fmt::format(
        "{}; as a repo id, not in the local Hugging Face cache (looked for {}; HF_HUB_CACHE or "
        "HF_HOME choose the cache; nothing is downloaded)",
        missing, repo.string()));
  }
  return SnapshotOf(repo);
}

}  // namespace quantpath
