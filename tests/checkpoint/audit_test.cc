// AuditCheckpoint: every problem of a folder's weights at once, each naming its file and tensor,
// on folders with exactly one defect each and on one with several.
#include <gtest/gtest.h>

#include "quantpath/checkpoint.h"
#include "st_test_util.h"

namespace quantpath {
namespace {

using st_test::FileFor;
using st_test::TempFolder;
using st_test::WriteFile;
using Kind = CheckpointProblemKind;

std::string U8(int n) { return std::string(static_cast<size_t>(n), 'a'); }

const char kShard1[] = "model-00001-of-00002.safetensors";
const char kShard2[] = "model-00002-of-00002.safetensors";

// "a.w" and "a.b" in shard 1, "b.w" in shard 2, as the index says unless `index` replaces it.
void WriteSharded(const std::filesystem::path& dir, const std::string& index = "") {
  WriteFile(dir / kShard1, FileFor({{"a.w", "U8", {2, 4}, U8(8)}, {"a.b", "U8", {2}, U8(2)}}));
  WriteFile(dir / kShard2, FileFor({{"b.w", "U8", {3}, U8(3)}}));
  WriteFile(dir / "model.safetensors.index.json",
            index.empty() ? std::string(R"({"metadata": {"total_size": 13}, "weight_map": {
                 "a.w": "model-00001-of-00002.safetensors",
                 "a.b": "model-00001-of-00002.safetensors",
                 "b.w": "model-00002-of-00002.safetensors"}})")
                          : index);
}

CheckpointAudit Audit(const std::filesystem::path& dir) {
  Result<CheckpointAudit> audit = AuditCheckpoint(dir);
  EXPECT_TRUE(audit.ok()) << audit.status().message();
  return audit.ok() ? std::move(*audit) : CheckpointAudit{};
}

// The only problem of `audit`, which must be of `kind`, in `file`, about `tensor`.
void ExpectOnly(const CheckpointAudit& audit, Kind kind, const std::filesystem::path& file,
                const std::string& tensor) {
  ASSERT_EQ(audit.problems.size(), 1u);
  const CheckpointProblem& p = audit.problems[0];
  EXPECT_EQ(p.kind, kind) << CheckpointProblemKindName(p.kind) << ": " << p.message;
  EXPECT_EQ(p.file, file.string());
  EXPECT_EQ(p.tensor, tensor);
  EXPECT_NE(p.message.find(file.filename().string()), std::string::npos) << p.message;
  if (!tensor.empty()) {
    EXPECT_NE(p.message.find(tensor), std::string::npos) << p.message;
  }
}

TEST(AuditCheckpoint, ACleanShardedFolderHasNoProblemsAndEveryHeader) {
  TempFolder dir("audit_clean");
  WriteSharded(dir.path());
  const CheckpointAudit audit = Audit(dir.path());
  EXPECT_TRUE(audit.problems.empty());
  EXPECT_TRUE(audit.unread_files.empty());
  ASSERT_EQ(audit.tensors.size(), 3u);
  const AuditedTensor* aw = audit.Find("a.w");
  ASSERT_NE(aw, nullptr);
  EXPECT_EQ(aw->dtype, StDtype::kU8);
  EXPECT_EQ(aw->shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(audit.FileOf(*aw), (dir.path() / kShard1).string());
  EXPECT_EQ(audit.Find("c.w"), nullptr);
}

TEST(AuditCheckpoint, AMissingShardKeepsItsTensorsByName) {
  TempFolder dir("audit_missing");
  WriteSharded(dir.path());
  std::filesystem::remove(dir.path() / kShard2);
  const CheckpointAudit audit = Audit(dir.path());
  ExpectOnly(audit, Kind::kMissingShard, dir.path() / kShard2, "b.w");
  const AuditedTensor* bw = audit.Find("b.w");
  ASSERT_NE(bw, nullptr);
  EXPECT_FALSE(bw->dtype.has_value());
  EXPECT_EQ(audit.unread_files, (std::vector<std::string>{(dir.path() / kShard2).string()}));
}

// An index published without its shards: every name, no problem, nothing read.
TEST(AuditCheckpoint, AnIndexAloneGivesTheNamesOnly) {
  TempFolder dir("audit_index_only");
  WriteSharded(dir.path());
  std::filesystem::remove(dir.path() / kShard1);
  std::filesystem::remove(dir.path() / kShard2);
  const CheckpointAudit audit = Audit(dir.path());
  EXPECT_TRUE(audit.problems.empty());
  EXPECT_EQ(audit.tensors.size(), 3u);
  EXPECT_EQ(audit.unread_files.size(), 2u);
  EXPECT_FALSE(audit.Find("a.w")->dtype.has_value());
}

TEST(AuditCheckpoint, IndexAndShardsDisagree) {
  TempFolder unlisted("audit_unlisted");
  WriteSharded(unlisted.path(), R"({"weight_map": {"a.w": "model-00001-of-00002.safetensors",
                                   "b.w": "model-00002-of-00002.safetensors"}})");
  ExpectOnly(Audit(unlisted.path()), Kind::kNotInIndex, unlisted.path() / kShard1, "a.b");

  TempFolder elsewhere("audit_elsewhere");
  WriteSharded(elsewhere.path(), R"({"weight_map": {"a.w": "model-00001-of-00002.safetensors",
                                    "a.b": "model-00002-of-00002.safetensors",
                                    "b.w": "model-00002-of-00002.safetensors"}})");
  // The index places a.b in shard 2 (which lacks it) and shard 1 holds it: both are reported.
  const CheckpointAudit audit = Audit(elsewhere.path());
  ASSERT_EQ(audit.problems.size(), 2u);
  EXPECT_EQ(audit.problems[0].kind, Kind::kIndexedElsewhere);
  EXPECT_EQ(audit.problems[0].tensor, "a.b");
  EXPECT_EQ(audit.problems[1].kind, Kind::kNotInShard);
  EXPECT_EQ(audit.problems[1].file, (elsewhere.path() / kShard2).string());
}

// A name no index lists, held by both shards: not in the index in each, the first copy kept.
TEST(AuditCheckpoint, AnUnlistedNameInTwoShards) {
  TempFolder dir("audit_unlisted_twice");
  WriteFile(dir.path() / kShard1, FileFor({{"a.w", "U8", {2}, U8(2)}, {"x", "U8", {1}, U8(1)}}));
  WriteFile(dir.path() / kShard2, FileFor({{"b.w", "U8", {3}, U8(3)}, {"x", "U8", {4}, U8(4)}}));
  WriteFile(dir.path() / "model.safetensors.index.json",
            R"({"weight_map": {"a.w": "model-00001-of-00002.safetensors",
                               "b.w": "model-00002-of-00002.safetensors"}})");
  const CheckpointAudit audit = Audit(dir.path());
  ASSERT_EQ(audit.problems.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(audit.problems[i].kind, Kind::kNotInIndex) << audit.problems[i].message;
    EXPECT_EQ(audit.problems[i].tensor, "x");
  }
  EXPECT_EQ(audit.problems[1].file, (dir.path() / kShard2).string());
  const AuditedTensor* x = audit.Find("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->shape, (std::vector<int64_t>{1}));
  EXPECT_EQ(audit.tensors.size(), 3u);
}

TEST(AuditCheckpoint, AnUnreadableShardIsItsOwnProblemAndTheOthersAreStillRead) {
  TempFolder dir("audit_unreadable");
  WriteSharded(dir.path());
  WriteFile(dir.path() / kShard1, "\x10\x00\x00\x00\x00\x00\x00\x00{\"a.w\":");  // cut short
  const CheckpointAudit audit = Audit(dir.path());
  ExpectOnly(audit, Kind::kUnreadableShard, dir.path() / kShard1, "");
  ASSERT_NE(audit.Find("b.w"), nullptr);
  EXPECT_TRUE(audit.Find("b.w")->dtype.has_value());
  EXPECT_FALSE(audit.Find("a.w")->dtype.has_value());
}

TEST(AuditCheckpoint, WarningsForTotalSizeAndIgnoredFiles) {
  TempFolder dir("audit_warnings");
  WriteSharded(dir.path(), R"({"metadata": {"total_size": 99}, "weight_map": {
                 "a.w": "model-00001-of-00002.safetensors",
                 "a.b": "model-00001-of-00002.safetensors",
                 "b.w": "model-00002-of-00002.safetensors"}})");
  WriteFile(dir.path() / "extra.safetensors", FileFor({{"x", "U8", {1}, U8(1)}}));
  const CheckpointAudit audit = Audit(dir.path());
  ASSERT_EQ(audit.problems.size(), 2u);
  EXPECT_EQ(audit.problems[0].kind, Kind::kTotalSize);
  EXPECT_FALSE(audit.problems[0].error);
  EXPECT_NE(audit.problems[0].message.find("99"), std::string::npos);
  EXPECT_EQ(audit.problems[1].kind, Kind::kIgnoredFile);
  EXPECT_FALSE(audit.problems[1].error);
  EXPECT_EQ(audit.Find("x"), nullptr);
}

TEST(AuditCheckpoint, WithoutAnIndexANameInTwoFiles) {
  TempFolder dir("audit_two_files");
  WriteFile(dir.path() / "a.safetensors", FileFor({{"w", "U8", {1}, U8(1)}}));
  WriteFile(dir.path() / "b.safetensors", FileFor({{"w", "U8", {2}, U8(2)}}));
  const CheckpointAudit audit = Audit(dir.path());
  ExpectOnly(audit, Kind::kInTwoFiles, dir.path() / "b.safetensors", "w");
  EXPECT_EQ(audit.Find("w")->shape, (std::vector<int64_t>{1}));
}

TEST(AuditCheckpoint, NoWeightsIsNotFoundAndABrokenIndexIsItsError) {
  TempFolder empty("audit_empty");
  Result<CheckpointAudit> none = AuditCheckpoint(empty.path());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kNotFound);
  TempFolder broken("audit_broken_index");
  WriteFile(broken.path() / "model.safetensors.index.json", R"({"weight_map": [1]})");
  Result<CheckpointAudit> index = AuditCheckpoint(broken.path());
  ASSERT_FALSE(index.ok());
  EXPECT_NE(index.status().message().find("weight_map"), std::string::npos);
}

}  // namespace
}  // namespace quantpath
