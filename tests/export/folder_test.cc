// The output folder's rules: never the input, never an existing folder without --force, complete
// or absent, the input's other files copied and its config kept but for quantization_config.
#include <gtest/gtest.h>

#include <fstream>

#include "quantpath/export.h"
#include "tests/export/export_test_util.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;
using testing::FreshDir;
using testing::Producer;
using testing::ReadAll;

// A writable copy of bf16_llama with a tokenizer, a generation config, a folder and a .bin.
fs::path InputCopy(const fs::path& dir) {
  const fs::path in = dir / "in";
  fs::create_directories(in / "original");
  fs::copy(Producer("bf16_llama") / "config.json", in);
  fs::copy(Producer("bf16_llama") / "model.safetensors", in);
  std::ofstream(in / "tokenizer.json") << "{\"version\": \"1.0\"}";
  std::ofstream(in / "generation_config.json") << "{\"do_sample\": false}";
  std::ofstream(in / "original" / "consolidated.pth") << "x";
  std::ofstream(in / "pytorch_model.bin") << "x";
  return in;
}

// Every file under `dir` with its bytes.
std::map<std::string, std::string> Snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    files[fs::relative(e.path(), dir).string()] =
        std::string(std::istreambuf_iterator<char>(f), {});
  }
  return files;
}

QuantizeOptions Fp8() {
  QuantizeOptions options;
  options.scheme = "w8a8-fp8-block128x128-dyn";
  return options;
}

TEST(OutputFolder, CopiesTheOtherFilesAndKeepsTheConfig) {
  const fs::path dir = FreshDir();
  const fs::path in = InputCopy(dir);
  const auto before = Snapshot(in);
  Result<ExportReport> report = QuantizeCheckpoint(in.string(), (dir / "out").string(), Fp8());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(Snapshot(in), before);  // the input is untouched
  EXPECT_EQ(report->files, (std::vector<std::string>{"config.json", "generation_config.json",
                                                     "model.safetensors", "tokenizer.json"}));
  EXPECT_NE(Join(report->notes, "\n").find("original/ (a folder)"), std::string::npos);
  EXPECT_NE(Join(report->notes, "\n").find("pytorch_model.bin"), std::string::npos);
  const auto out = Snapshot(dir / "out");
  EXPECT_EQ(out.at("tokenizer.json"), before.at("tokenizer.json"));
  Result<Json> original = ReadJsonFile(in / "config.json");
  Result<Json> written = ReadJsonFile(dir / "out" / "config.json");
  ASSERT_TRUE(original.ok() && written.ok());
  // Every key kept with its value; quantization_config added in its sorted place.
  std::vector<std::string> keys;
  for (const Json::Member& m : written->members()) {
    keys.push_back(m.first);
    if (m.first == "quantization_config") continue;
    ASSERT_NE(original->Find(m.first), nullptr) << m.first;
    EXPECT_EQ(*original->Find(m.first), m.second) << m.first;
  }
  EXPECT_EQ(keys.size(), original->members().size() + 1);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_EQ(report->tensors_in, static_cast<int64_t>(ReadAll(in).size()));
  EXPECT_EQ(report->tensors_out, static_cast<int64_t>(ReadAll(dir / "out").size()));
}

TEST(OutputFolder, ReplacesAnExistingFolderOnlyWithForce) {
  const fs::path dir = FreshDir();
  const fs::path out = dir / "out";
  fs::create_directories(out);
  std::ofstream(out / "keep.txt") << "mine";
  Result<ExportReport> report =
      QuantizeCheckpoint(Producer("bf16_llama").string(), out.string(), Fp8());
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("--force"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "keep.txt"));
  QuantizeOptions force = Fp8();
  force.force = true;
  report = QuantizeCheckpoint(Producer("bf16_llama").string(), out.string(), force);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_FALSE(fs::exists(out / "keep.txt"));
  EXPECT_TRUE(fs::exists(out / "model.safetensors"));
  // Nothing but the folder itself is left beside it.
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path().filename());
  EXPECT_EQ(entries, std::vector<std::string>{"out"});
}

TEST(OutputFolder, NeverTheInputNorAFolderAroundIt) {
  const fs::path dir = FreshDir();
  const fs::path in = InputCopy(dir);
  const auto before = Snapshot(dir);
  QuantizeOptions force = Fp8();
  force.force = true;
  for (const fs::path& out : {in, in / "sub", dir, in / ".."}) {
    Result<ExportReport> report = QuantizeCheckpoint(in.string(), out.string(), force);
    ASSERT_FALSE(report.ok()) << out;
    EXPECT_NE(report.status().message().find("input"), std::string::npos)
        << report.status().message();
  }
  EXPECT_EQ(Snapshot(dir), before);
}

}  // namespace
}  // namespace quantpath
