// Every producer-written and documentation-written fixture loads the same from two shards as from
// its single file. Each folder is rewritten into model-0000{1,2}-of-00002.safetensors with a
// model.safetensors.index.json, its tensors dealt to the shards in turn, so that every layer's
// tensors (weight, scales, zero points, a leg's and the next leg's) lie in both files. Then:
//   - LoadModel consumes every tensor of both and reports, site by site, the same spec, tensors,
//     bytes read and bytes held as the single file;
//   - every linear site's seeded Forward gives the same Y, bit for bit.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/checkpoint_writer.h"
#include "quantpath/pipeline.h"
#include "tests/pipeline/producer_values.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;

// `dir` rewritten as two shards and an index in a fresh folder; every other file copied.
Result<fs::path> Reshard(const fs::path& dir, const fs::path& out) {
  fs::remove_all(out);
  fs::create_directories(out);
  QP_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::Open(dir));
  std::vector<std::vector<TensorToWrite>> shards(2);
  std::string weight_map;
  int64_t total = 0;
  const std::vector<std::string> names = checkpoint.TensorNames();
  for (size_t i = 0; i < names.size(); ++i) {
    QP_ASSIGN_OR_RETURN(TensorView view, checkpoint.Get(names[i]));
    shards[i % 2].push_back({names[i], view.info->dtype, view.info->shape, view.bytes});
    weight_map += fmt::format("{}\"{}\": \"model-0000{}-of-00002.safetensors\"", i == 0 ? "" : ", ",
                              names[i], i % 2 + 1);
    total += static_cast<int64_t>(view.bytes.size());
  }
  for (size_t s = 0; s < shards.size(); ++s) {
    QP_RETURN_IF_ERROR(
        WriteSafetensors(out / fmt::format("model-0000{}-of-00002.safetensors", s + 1), shards[s]));
  }
  std::ofstream(out / "model.safetensors.index.json") << fmt::format(
      R"({{"metadata": {{"total_size": {}}}, "weight_map": {{{}}}}})", total, weight_map);
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".safetensors") continue;
    fs::copy_file(entry.path(), out / entry.path().filename());
  }
  return out;
}

Result<Model> Open(const fs::path& dir, const std::string& name) {
  QP_ASSIGN_OR_RETURN(OpenOptions options, testing::FixtureOptions("/" + name));
  return OpenModel(dir.string(), options);
}

TEST(ShardedLoad, EveryFixtureLoadsTheSameFromTwoShards) {
  const fs::path scratch =
      fs::temp_directory_path() / fmt::format("quantpath_sharded_{}", getpid());
  size_t folders = 0;
  size_t runs = 0;
  for (const std::string& name : testing::FixtureFolders()) {
    SCOPED_TRACE(name);
    const fs::path dir = fs::path(QUANTPATH_TEST_DATA) / name;
    Result<fs::path> sharded = Reshard(dir, scratch / "model");
    ASSERT_TRUE(sharded.ok()) << sharded.status().message();
    Result<Model> whole = Open(dir, name);
    Result<Model> split = Open(*sharded, name);
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    ASSERT_TRUE(split.ok()) << split.status().message();
    Result<ModelLoad> a = LoadModel(*whole);
    Result<ModelLoad> b = LoadModel(*split);
    ASSERT_TRUE(a.ok()) << a.status().message();
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(a->tensors, b->tensors);
    EXPECT_EQ(a->bytes_read, b->bytes_read);
    EXPECT_EQ(a->bytes_held, b->bytes_held);
    ASSERT_EQ(a->sites.size(), b->sites.size());
    for (size_t s = 0; s < a->sites.size(); ++s) {
      const SiteLoad& x = a->sites[s];
      const SiteLoad& y = b->sites[s];
      SCOPED_TRACE(x.site->path);
      EXPECT_EQ(x.loaded, y.loaded);
      EXPECT_EQ(x.spec_id, y.spec_id);
      EXPECT_EQ(x.tensors, y.tensors);
      EXPECT_EQ(x.bytes_read, y.bytes_read);
      EXPECT_EQ(x.bytes_held, y.bytes_held);
      if (!x.loaded || x.site->kind != SiteKind::kLinear) continue;
      Result<LoadedLayer> la = LoadLayer(*whole, x.site->path);
      Result<LoadedLayer> lb = LoadLayer(*split, x.site->path);
      ASSERT_TRUE(la.ok()) << la.status().message();
      ASSERT_TRUE(lb.ok()) << lb.status().message();
      Result<LayerRun> ra = RunSeeded(*la, 3, 7);
      Result<LayerRun> rb = RunSeeded(*lb, 3, 7);
      ASSERT_TRUE(ra.ok()) << ra.status().message();
      ASSERT_TRUE(rb.ok()) << rb.status().message();
      EXPECT_EQ(ra->y, rb->y);
      ++runs;
    }
    ++folders;
  }
  fs::remove_all(scratch);
  EXPECT_GE(folders, 36u);
  EXPECT_GE(runs, 36u * 4);
}

}  // namespace
}  // namespace quantpath
