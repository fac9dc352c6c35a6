// The safetensors writer: files it writes pass this library's strict reader and, when python3 has
// it, the reference `safetensors` package reads the same names, dtypes, shapes and bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "quantpath/checkpoint_writer.h"
#include "st_test_util.h"

namespace quantpath {
namespace {

std::span<const std::byte> Bytes(const std::string& s) { return st_test::AsBytes(s); }

// Three tensors whose header (with metadata) does not end on 8 bytes, so padding is exercised.
struct Written {
  std::string y = std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x00\x40\x40", 12);  // 1,-2,3
  std::string h = std::string("\x80\x3f\x00\xc0", 4);                                   // bf16 1,-2
  std::string i = std::string("\x07\x00\x00\x00\x00\x00\x00\x00", 8);                   // int64 7
  std::vector<TensorToWrite> tensors() const {
    return {{"y", StDtype::kF32, {1, 3}, Bytes(y)},
            {"x.bf16", StDtype::kBF16, {2}, Bytes(h)},
            {"count", StDtype::kI64, {}, Bytes(i)}};
  }
};

TEST(SafetensorsWriter, WritesAFileTheStrictReaderAccepts) {
  st_test::TempFolder dir("writer_ok");
  const Written w;
  const auto path = dir.path() / "y.safetensors";
  ASSERT_TRUE(WriteSafetensors(path, w.tensors(), {{"by", "quantpath"}}).ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ((*file)->metadata(), (SafetensorsMetadata{{"by", "quantpath"}}));
  ASSERT_EQ((*file)->tensors().size(), 3u);
  for (const TensorToWrite& t : w.tensors()) {
    SCOPED_TRACE(t.name);
    const TensorInfo* info = (*file)->Find(t.name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->dtype, t.dtype);
    EXPECT_EQ(info->shape, t.shape);
    const TensorView view = (*file)->View(*info);
    ASSERT_EQ(view.bytes.size(), t.bytes.size());
    EXPECT_EQ(std::memcmp(view.bytes.data(), t.bytes.data(), t.bytes.size()), 0);
  }
  // The data section starts on 8 bytes, and no temporary file is left behind.
  std::string bytes(16, '\0');
  std::ifstream(path, std::ios::binary).read(bytes.data(), 16);
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  EXPECT_EQ(header % 8, 0u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(SafetensorsWriter, ReplacesAnExistingFileWhole) {
  st_test::TempFolder dir("writer_replace");
  const auto path = dir.path() / "y.safetensors";
  st_test::WriteFile(path, std::string(1000, 'z'));
  const Written w;
  ASSERT_TRUE(WriteSafetensors(path, w.tensors()).ok());
  EXPECT_TRUE(SafetensorsFile::Open(path).ok());
}

TEST(SafetensorsWriter, RejectsWhatItCannotWriteAndLeavesNothing) {
  st_test::TempFolder dir("writer_bad");
  const auto path = dir.path() / "y.safetensors";
  const std::string six(6, '\0');
  const std::vector<TensorToWrite> short_bytes = {{"y", StDtype::kF32, {2}, Bytes(six)}};
  Status s = WriteSafetensors(path, short_bytes);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor y"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(path.string()), std::string::npos) << s.message();
  const std::string four(4, '\0');
  const std::vector<TensorToWrite> twice = {{"y", StDtype::kF32, {1}, Bytes(four)},
                                            {"y", StDtype::kF32, {1}, Bytes(four)}};
  EXPECT_FALSE(WriteSafetensors(path, twice).ok());
  // A folder that does not exist: an I/O error naming the file.
  s = WriteSafetensors(dir.path() / "missing" / "y.safetensors", std::vector<TensorToWrite>{});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("missing"), std::string::npos) << s.message();
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 0);
}

// Prints, per tensor of argv[1] as safetensors.numpy reads it: name, dtype, shape, bytes in hex.
constexpr const char* kReaderScript = R"(import json
import sys
from safetensors import safe_open
out = {}
with safe_open(sys.argv[1], framework="numpy") as f:
    out["__metadata__"] = f.metadata()
    for name in f.keys():
        t = f.get_tensor(name)
        out[name] = {"dtype": str(t.dtype), "shape": list(t.shape), "hex": t.tobytes().hex()}
print(json.dumps(out))
)";

TEST(SafetensorsWriter, TheReferencePackageReadsWhatItWrites) {
  if (!st_test::PythonHas("safetensors, numpy")) {
    GTEST_SKIP() << "python3 with safetensors and numpy is not available";
  }
  st_test::TempFolder dir("writer_python");
  const Written w;
  // bf16 needs ml_dtypes in numpy; the reference reads F32 and I64 natively.
  const std::vector<TensorToWrite> tensors = {w.tensors()[0], w.tensors()[2]};
  const auto path = dir.path() / "y.safetensors";
  ASSERT_TRUE(WriteSafetensors(path, tensors, {{"by", "quantpath"}}).ok());
  st_test::WriteFile(dir.path() / "reader.py", kReaderScript);
  const std::string output = st_test::RunPython(dir.path() / "reader.py", path.string());
  auto read = ParseJson(output, "reader output");
  ASSERT_TRUE(read.ok()) << read.status().message() << "\n" << output;
  ASSERT_TRUE(read->Find("__metadata__") && read->Find("y") && read->Find("count")) << output;
  EXPECT_EQ(read->Find("__metadata__")->Find("by")->string_value(), "quantpath");
  const auto expect = [&](const char* name, const char* dtype, std::vector<int64_t> shape,
                          const char* hex) {
    SCOPED_TRACE(name);
    const Json& t = *read->Find(name);
    EXPECT_EQ(t.Find("dtype")->string_value(), dtype);
    std::vector<int64_t> got;
    for (const Json& d : t.Find("shape")->items()) got.push_back(d.int_value());
    EXPECT_EQ(got, shape);
    EXPECT_EQ(t.Find("hex")->string_value(), hex);
  };
  expect("y", "float32", {1, 3}, "0000803f000000c000004040");
  expect("count", "int64", {}, "0700000000000000");
}

}  // namespace
}  // namespace quantpath
