// Memory-mapped files and model folders: single file, sharded with an index, a set of files, and
// each index rule broken once.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>

#include "quantpath/checkpoint.h"
#include "st_test_util.h"

namespace quantpath {
namespace {

using st_test::FileBytes;
using st_test::FileFor;
using st_test::RawTensor;
using st_test::TempFolder;
using st_test::WriteFile;

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

std::string U8(int n, char fill = 'a') { return std::string(static_cast<size_t>(n), fill); }

// Two shards and their index: "a.w" and "a.b" in the first, "b.w" in the second.
void WriteShardedFolder(const std::filesystem::path& dir, const std::string& total_size = "13") {
  WriteFile(dir / "model-00001-of-00002.safetensors",
            FileFor({{"a.w", "U8", {2, 4}, U8(8)}, {"a.b", "U8", {2}, U8(2)}}));
  WriteFile(dir / "model-00002-of-00002.safetensors", FileFor({{"b.w", "U8", {3}, U8(3)}}));
  WriteFile(dir / "model.safetensors.index.json",
            R"({"metadata": {"total_size": )" + total_size + R"(}, "weight_map": {
                 "a.w": "model-00001-of-00002.safetensors",
                 "a.b": "model-00001-of-00002.safetensors",
                 "b.w": "model-00002-of-00002.safetensors"}})");
}

TEST(SafetensorsFile, MapsAFileAndViewsUnalignedTensorsWithoutCopying) {
  TempFolder dir("st_file");
  // Trailing spaces pad the header so that the data section starts at an odd offset.
  std::string header = st_test::HeaderFor({{"w", "F64", {2}, U8(16)}, {"i", "I32", {1}, U8(4)}});
  while ((8 + header.size()) % 8 != 1) header += ' ';
  double values[2] = {1.5, -2.25};
  int32_t answer = 42;
  std::string data(reinterpret_cast<const char*>(values), sizeof(values));
  data += std::string(reinterpret_cast<const char*>(&answer), sizeof(answer));
  WriteFile(dir.path() / "x.safetensors", FileBytes(header, data));

  auto file = SafetensorsFile::Open(dir.path() / "x.safetensors");
  ASSERT_TRUE(file.ok()) << file.status().message();
  ASSERT_EQ((*file)->tensors().size(), 2u);
  const TensorInfo* w = (*file)->Find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ((*file)->Find("missing"), nullptr);
  TensorView view = (*file)->View(*w);
  EXPECT_EQ(view.file, (*file)->path());
  EXPECT_EQ(view.bytes.size(), 16u);
  EXPECT_NE(reinterpret_cast<uintptr_t>(view.bytes.data()) % alignof(double), 0u);
  auto copied = CopyTensor<double>(view);
  ASSERT_TRUE(copied.ok()) << copied.status().message();
  EXPECT_EQ(*copied, (std::vector<double>{1.5, -2.25}));
  auto ints = CopyTensor<int32_t>((*file)->View(*(*file)->Find("i")));
  ASSERT_TRUE(ints.ok());
  EXPECT_EQ((*ints)[0], 42);
}

TEST(SafetensorsFile, ReportsMissingEmptyAndNonRegularFiles) {
  TempFolder dir("st_file_bad");
  auto missing = SafetensorsFile::Open(dir.path() / "none.safetensors");
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(missing.status().message(), "none.safetensors"));
  EXPECT_EQ(SafetensorsFile::Open(dir.path()).status().code(), ErrorCode::kIo);
  WriteFile(dir.path() / "empty.safetensors", "");
  auto empty = SafetensorsFile::Open(dir.path() / "empty.safetensors");
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(Contains(empty.status().message(), "empty.safetensors: 0 bytes"));
}

TEST(Checkpoint, OpensASingleFileFolder) {
  TempFolder dir("ckpt_single");
  WriteFile(dir.path() / "model.safetensors",
            FileFor({{"z.w", "U8", {2}, "xy"}, {"a.w", "U8", {1}, "q"}}, R"({"format": "pt"})"));
  WriteFile(dir.path() / "adapter.safetensors", FileFor({{"lora", "U8", {1}, "l"}}));
  auto ckpt = Checkpoint::Open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
  EXPECT_EQ(ckpt->TensorNames(), (std::vector<std::string>{"a.w", "z.w"}));
  EXPECT_TRUE(ckpt->Has("z.w"));
  EXPECT_FALSE(ckpt->Has("lora"));
  auto view = ckpt->Get("z.w");
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(view->bytes.data()), view->bytes.size()),
            "xy");
  ASSERT_EQ(ckpt->warnings().size(), 1u);
  EXPECT_TRUE(Contains(ckpt->warnings()[0], "adapter.safetensors: ignored"));
  auto missing = ckpt->Get("nope");
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(missing.status().message(), "no tensor \"nope\""));
  EXPECT_TRUE(ckpt->Validate().ok());
}

TEST(Checkpoint, OpensEveryFileOfAFolderWithoutIndexAndRefusesDuplicates) {
  TempFolder dir("ckpt_files");
  WriteFile(dir.path() / "part1.safetensors", FileFor({{"a", "U8", {1}, "a"}}));
  WriteFile(dir.path() / "part2.safetensors", FileFor({{"b", "U8", {1}, "b"}}));
  auto ckpt = Checkpoint::Open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
  EXPECT_EQ(ckpt->TensorNames(), (std::vector<std::string>{"a", "b"}));
  WriteFile(dir.path() / "part3.safetensors", FileFor({{"a", "U8", {1}, "c"}}));
  auto dup = Checkpoint::Open(dir.path());
  ASSERT_FALSE(dup.ok());
  EXPECT_TRUE(Contains(dup.status().message(),
                       "tensor \"a\" is in both part1.safetensors and part3.safetensors"))
      << dup.status().message();
}

TEST(Checkpoint, OpensShardsLazilyThroughTheIndex) {
  TempFolder dir("ckpt_sharded");
  WriteShardedFolder(dir.path());
  auto ckpt = Checkpoint::Open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
  EXPECT_EQ(ckpt->TensorNames(), (std::vector<std::string>{"a.b", "a.w", "b.w"}));
  // Names come from the index alone: a broken second shard does not matter until it is read.
  WriteFile(dir.path() / "model-00002-of-00002.safetensors", "garbage!");
  auto a = ckpt->Get("a.w");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->info->shape, (std::vector<int64_t>{2, 4}));
  auto b = ckpt->Get("b.w");
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(Contains(b.status().message(), "reading tensor \"b.w\""));
  EXPECT_TRUE(Contains(b.status().message(), "model-00002-of-00002.safetensors"));
  EXPECT_FALSE(ckpt->Validate().ok());
}

TEST(Checkpoint, ValidateChecksTotalSizeAsAWarning) {
  TempFolder dir("ckpt_total");
  WriteShardedFolder(dir.path());
  auto ckpt = Checkpoint::Open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
  ASSERT_TRUE(ckpt->Validate().ok());
  EXPECT_TRUE(ckpt->warnings().empty());

  WriteShardedFolder(dir.path(), "99");
  auto wrong = Checkpoint::Open(dir.path());
  ASSERT_TRUE(wrong.ok()) << wrong.status().message();
  ASSERT_TRUE(wrong->Validate().ok());
  ASSERT_TRUE(wrong->Validate().ok());
  ASSERT_EQ(wrong->warnings().size(), 1u);
  EXPECT_TRUE(Contains(wrong->warnings()[0],
                       "metadata.total_size is 99 but the shards' tensors "
                       "take 13 bytes"));

  WriteShardedFolder(dir.path(), "\"13\"");
  auto text = Checkpoint::Open(dir.path());
  ASSERT_TRUE(text.ok()) << text.status().message();
  ASSERT_EQ(text->warnings().size(), 1u);
  EXPECT_TRUE(Contains(text->warnings()[0], "total_size is not a non-negative integer"));
}

// Opens the folder and validates it; returns the first error's message ("" when all is well).
std::string OpenAndValidate(const std::filesystem::path& dir) {
  auto ckpt = Checkpoint::Open(dir);
  if (!ckpt.ok()) return ckpt.status().message();
  Status status = ckpt->Validate();
  return status.ok() ? "" : status.message();
}

TEST(Checkpoint, RefusesAnIndexThatDisagreesWithItsShards) {
  TempFolder dir("ckpt_disagree");
  const std::filesystem::path& d = dir.path();
  const std::string index = "model.safetensors.index.json";

  WriteShardedFolder(d);
  std::filesystem::remove(d / "model-00002-of-00002.safetensors");
  std::string message = OpenAndValidate(d);
  EXPECT_TRUE(Contains(message, index + ": shard \"model-00002-of-00002.safetensors\" (listed for "
                                        "tensor \"b.w\") is not a file"))
      << message;

  // Listed in the index, absent from its shard.
  WriteShardedFolder(d);
  WriteFile(d / "model-00002-of-00002.safetensors", FileFor({{"other", "U8", {3}, U8(3)}}));
  message = OpenAndValidate(d);
  EXPECT_TRUE(Contains(message, "model-00002-of-00002.safetensors: tensor \"other\" is not listed"))
      << message;
  WriteFile(d / "model-00002-of-00002.safetensors", FileFor({}));
  message = OpenAndValidate(d);
  EXPECT_TRUE(Contains(message, index + ": tensor \"b.w\" is listed in shard "
                                        "\"model-00002-of-00002.safetensors\", which does not "
                                        "contain it"))
      << message;

  // In two shards: the index places "a.b" in the first, the second holds it too.
  WriteShardedFolder(d);
  WriteFile(d / "model-00002-of-00002.safetensors",
            FileFor({{"b.w", "U8", {3}, U8(3)}, {"a.b", "U8", {2}, U8(2)}}));
  message = OpenAndValidate(d);
  EXPECT_TRUE(Contains(message,
                       "model-00002-of-00002.safetensors: tensor \"a.b\" is in this "
                       "shard, but"))
      << message;
  EXPECT_TRUE(Contains(message, "lists it in shard \"model-00001-of-00002.safetensors\""))
      << message;
}

TEST(Checkpoint, RefusesMalformedIndexes) {
  TempFolder dir("ckpt_index");
  const std::filesystem::path& d = dir.path();
  WriteFile(d / "s.safetensors", FileFor({{"w", "U8", {1}, "w"}}));
  auto index_error = [&](const std::string& json) {
    WriteFile(d / "model.safetensors.index.json", json);
    return OpenAndValidate(d);
  };
  EXPECT_TRUE(Contains(index_error(R"({"metadata": {}})"), "a \"weight_map\" object"));
  EXPECT_TRUE(Contains(index_error(R"({"weight_map": {"w": 3}})"),
                       "#/weight_map/w: tensor \"w\": expected a shard file name, found integer"));
  EXPECT_TRUE(Contains(index_error(R"({"weight_map": {"w": "../s.safetensors"}})"),
                       "shard \"../s.safetensors\" must be a file inside the folder"));
  EXPECT_TRUE(Contains(index_error(R"({"weight_map": {"w": "/etc/passwd"}})"),
                       "must be a file inside the folder"));
  EXPECT_TRUE(Contains(index_error(R"({"weight_map": {"w": "s.safetensors", "w": "s"}})"),
                       "duplicate key"));
  EXPECT_EQ(index_error(R"({"weight_map": {"w": "./s.safetensors"}})"), "");
  // The path would be cut at the NUL and name another file.
  EXPECT_TRUE(Contains(index_error(R"({"weight_map": {"w": "s.safetensors\u0000.bin"}})"),
                       "shard \"s.safetensors\\u0000.bin\" contains a NUL character"));
}

// An index or shard that is a FIFO or a device is refused at once: reading it would block forever
// or never end.
TEST(Checkpoint, RefusesSpecialFilesWithoutBlocking) {
  TempFolder dir("ckpt_special");
  const std::filesystem::path& d = dir.path();
  std::filesystem::create_symlink("/dev/zero", d / "model.safetensors.index.json");
  EXPECT_TRUE(Contains(OpenAndValidate(d), "not a regular file"));
  std::filesystem::remove(d / "model.safetensors.index.json");

  WriteFile(d / "model.safetensors.index.json", R"({"weight_map": {"w": "s.safetensors"}})");
  ASSERT_EQ(mkfifo((d / "s.safetensors").c_str(), 0600), 0);
  const std::string m = OpenAndValidate(d);
  EXPECT_TRUE(Contains(m, "shard \"s.safetensors\" (listed for tensor \"w\") is not a file")) << m;
}

TEST(Checkpoint, WarnsAboutFilesTheIndexDoesNotList) {
  TempFolder dir("ckpt_extra");
  WriteShardedFolder(dir.path());
  WriteFile(dir.path() / "consolidated.safetensors", FileFor({{"all", "U8", {1}, "x"}}));
  auto ckpt = Checkpoint::Open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
  ASSERT_EQ(ckpt->warnings().size(), 1u);
  EXPECT_TRUE(Contains(ckpt->warnings()[0],
                       "consolidated.safetensors: not listed in "
                       "model.safetensors.index.json; ignored"));
  EXPECT_FALSE(ckpt->Has("all"));
}

TEST(Checkpoint, ReportsFoldersWithoutWeights) {
  TempFolder dir("ckpt_empty");
  WriteFile(dir.path() / "config.json", "{}");
  auto none = Checkpoint::Open(dir.path());
  EXPECT_EQ(none.status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(none.status().message(), "no model.safetensors.index.json"));
  EXPECT_EQ(Checkpoint::Open(dir.path() / "config.json").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(Checkpoint::Open(dir.path() / "absent").status().code(), ErrorCode::kNotFound);
}

TEST(Checkpoint, HoldsTensorsGivenInMemory) {
  auto bytes = [](std::initializer_list<uint8_t> v) {
    std::vector<std::byte> out;
    for (uint8_t b : v) out.push_back(std::byte{b});
    return out;
  };
  Result<Checkpoint> held = Checkpoint::FromTensors(
      "layer quantized at load", {{"a.weight", StDtype::kU8, {2, 2}, bytes({1, 2, 3, 4})},
                                  {"a.scale", StDtype::kBF16, {1}, bytes({0x80, 0x3F})}});
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_EQ(held->TensorNames(), (std::vector<std::string>{"a.scale", "a.weight"}));
  EXPECT_TRUE(held->Has("a.weight"));
  EXPECT_FALSE(held->Has("a.bias"));
  Result<TensorView> view = held->Get("a.weight");
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view->info->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(view->file, "layer quantized at load");
  ASSERT_EQ(view->bytes.size(), 4u);
  EXPECT_EQ(view->bytes[3], std::byte{4});
  Result<TensorView> missing = held->Get("a.bias");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "a.bias")) << missing.status().message();

  // Bytes that are not dtype × shape, and a repeated name, are refused naming the tensor.
  Result<Checkpoint> short_bytes =
      Checkpoint::FromTensors("held", {{"b.weight", StDtype::kF32, {2}, bytes({0, 0, 0, 0})}});
  ASSERT_FALSE(short_bytes.ok());
  EXPECT_TRUE(Contains(short_bytes.status().message(), "b.weight"))
      << short_bytes.status().message();
  Result<Checkpoint> twice = Checkpoint::FromTensors(
      "held", {{"c", StDtype::kU8, {1}, bytes({1})}, {"c", StDtype::kU8, {1}, bytes({2})}});
  ASSERT_FALSE(twice.ok());
  EXPECT_TRUE(Contains(twice.status().message(), "given twice")) << twice.status().message();
}

}  // namespace
}  // namespace quantpath
