// ResolveModelDir against a Hugging Face hub cache laid out as huggingface_hub writes it
// (models--org--name/refs/main holding the commit, snapshots/<commit>/ holding symlinks into
// blobs/): the repo folder, a snapshot, repo ids through HF_HUB_CACHE / HF_HOME / XDG_CACHE_HOME,
// misses that say where they looked, and refs that would lead out of the cache.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "quantpath/sources.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// An environment variable set (or unset) for one test, restored after it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class HubCache : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("quantpath-hub-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    hub_ = root_ / "hub";
    repo_ = hub_ / "models--org--tiny-model";
    snapshot_ = repo_ / "snapshots" / kCommit;
    Write(repo_ / "blobs" / "c0ffee", "{\"architectures\": [\"LlamaForCausalLM\"]}");
    fs::create_directories(snapshot_);
    fs::create_symlink("../../blobs/c0ffee", snapshot_ / "config.json");
    Write(repo_ / "refs" / "main", kCommit);
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_, hub_, repo_, snapshot_;
};

TEST_F(HubCache, RepoFolderResolvesThroughRefsMain) {
  Result<fs::path> dir = ResolveModelDir(repo_.string());
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(*dir, snapshot_);
}

TEST_F(HubCache, SnapshotAndPlainFoldersAreThemselves) {
  EXPECT_EQ(*ResolveModelDir(snapshot_.string()), snapshot_);
  EXPECT_EQ(*ResolveModelDir(root_.string()), root_);
}

TEST_F(HubCache, RefsMainMayEndInANewline) {
  Write(repo_ / "refs" / "main", std::string(kCommit) + "\n");
  EXPECT_EQ(*ResolveModelDir(repo_.string()), snapshot_);
}

TEST_F(HubCache, RepoIdIsLookedUpInHfHubCacheFirst) {
  ScopedEnv cache("HF_HUB_CACHE", hub_.string());
  ScopedEnv home("HF_HOME", (root_ / "elsewhere").string());
  Result<fs::path> dir = ResolveModelDir("org/tiny-model");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(*dir, snapshot_);
}

TEST_F(HubCache, RepoIdThroughHfHomeThenXdgCacheHome) {
  ScopedEnv cache("HF_HUB_CACHE", std::nullopt);
  {
    ScopedEnv home("HF_HOME", root_.string());  // $HF_HOME/hub
    EXPECT_EQ(*ResolveModelDir("org/tiny-model"), snapshot_);
  }
  ScopedEnv home("HF_HOME", std::nullopt);
  fs::create_directories(root_ / "xdg" / "huggingface");
  fs::rename(hub_, root_ / "xdg" / "huggingface" / "hub");
  ScopedEnv xdg("XDG_CACHE_HOME", (root_ / "xdg").string());  // $XDG_CACHE_HOME/huggingface/hub
  Result<fs::path> dir = ResolveModelDir("org/tiny-model");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(*dir, root_ / "xdg" / "huggingface" / "hub" / "models--org--tiny-model" / "snapshots" /
                      kCommit);
}

TEST_F(HubCache, MissSaysWhereItLooked) {
  ScopedEnv cache("HF_HUB_CACHE", hub_.string());
  Result<fs::path> dir = ResolveModelDir("org/absent-model");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(dir.status().message().find((hub_ / "models--org--absent-model").string()),
            std::string::npos)
      << dir.status().message();
  EXPECT_NE(dir.status().message().find("nothing is downloaded"), std::string::npos);
}

TEST_F(HubCache, APathThatIsNoRepoIdIsOnlyAMissingFolder) {
  Result<fs::path> dir = ResolveModelDir((root_ / "no" / "such" / "folder").string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(dir.status().message().find("cache"), std::string::npos) << dir.status().message();
}

// A file where a folder is expected (config.json itself, a shard) says so and names its folder,
// with no cache lookup of the file's name.
TEST_F(HubCache, AFileIsNotAModelFolder) {
  ScopedEnv cache("HF_HUB_CACHE", hub_.string());
  const fs::path file = snapshot_ / "config.json";
  Result<fs::path> dir = ResolveModelDir(file.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(dir.status().message(),
            file.string() +
                ": a file, not a model folder; give the folder that holds the "
                "model's files (" +
                snapshot_.string() + ")");
}

TEST_F(HubCache, RefLeadingOutOfTheCacheIsRefused) {
  Write(repo_ / "refs" / "main", "../../../../etc");
  Result<fs::path> dir = ResolveModelDir(repo_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(dir.status().message().find("refs/main"), std::string::npos) << dir.status().message();
}

TEST_F(HubCache, RefNamingNoSnapshotIsAnError) {
  Write(repo_ / "refs" / "main", "feedfacefeedfacefeedfacefeedfacefeedface");
  Result<fs::path> dir = ResolveModelDir(repo_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("feedface"), std::string::npos) << dir.status().message();
}

TEST_F(HubCache, WithoutRefsMainTheOnlySnapshot) {
  fs::remove_all(repo_ / "refs");
  EXPECT_EQ(*ResolveModelDir(repo_.string()), snapshot_);
  fs::create_directories(repo_ / "snapshots" / "other");
  Result<fs::path> dir = ResolveModelDir(repo_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("2 snapshots"), std::string::npos)
      << dir.status().message();
}

TEST_F(HubCache, ConfigSourcesReadTheSnapshotThroughItsSymlinks) {
  Result<fs::path> dir = ResolveModelDir(repo_.string());
  ASSERT_TRUE(dir.ok());
  Result<ConfigSources> sources = ConfigSources::Load(*dir);
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  ASSERT_NE(sources->config(), nullptr);
}

}  // namespace
}  // namespace quantpath
