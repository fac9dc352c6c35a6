// quantize's compressed-tensors folders, and the GPTQ / AWQ / ModelOpt NVFP4 producers' folders
// convert re-lays out as compressed-tensors, as compressed-tensors itself reads them back: its
// dequantizer's result on each output (tests/data/producers/quantpath_ct_decompressed.json,
// tools/fixtures/producers/decompress_quantpath.py) against quantpath's fp64 reference of the same
// folder rounded to the scale's dtype, as the decompressor computes in it (bf16 int8 scales, fp16
// GPTQ / AWQ scales), then
// to float32: equal bit for bit. NVFP4 is decompressed as bf16(code · fp32(block scale / global)),
// the quotient rounded first: that is decoded here from the written tensors and must agree bit for
// bit, and the reference within one float32 ulp of the fp32 product.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "fmt/format.h"
#include "quantpath/export.h"
#include "quantpath/materialize.h"
#include "quantpath/numeric.h"
#include "tests/export/export_test_util.h"

namespace quantpath {
namespace {

using testing::FreshDir;
using testing::Producer;

std::string Fnv1a64(const std::vector<float>& values) {
  uint64_t h = 0xCBF29CE484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (size_t i = 0; i < values.size() * sizeof(float); ++i) {
    h = (h ^ bytes[i]) * 0x100000001B3ull;
  }
  return fmt::format("{:016x}", h);
}

// NVFP4 from the written tensors as compressed-tensors decompresses it: E2M1 code (even element in
// the low nibble) · fp32(e4m3 block scale / global), per 16 columns.
std::vector<float> Nvfp4AsDecompressed(const Checkpoint& checkpoint, const std::string& prefix) {
  const TensorView packed = *checkpoint.Get(prefix + ".weight_packed");
  const TensorView scales = *checkpoint.Get(prefix + ".weight_scale");
  float global;
  std::memcpy(&global, checkpoint.Get(prefix + ".weight_global_scale")->bytes.data(), 4);
  const int64_t rows = packed.info->shape[0];
  const int64_t cols = packed.info->shape[1] * 2;
  const int64_t blocks = scales.info->shape[1];
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const auto byte = static_cast<uint8_t>(packed.bytes[r * cols / 2 + c / 2]);
      const auto s = static_cast<uint8_t>(scales.bytes[r * blocks + c / 16]);
      const float step = Fp8E4M3ToFloat(s) / global;
      out[r * cols + c] = E2M1ToFloat(c % 2 != 0 ? byte >> 4 : byte & 0xF) * step;
    }
  }
  return out;
}

// Each quantized weight of `dir` dequantized by the reference, rounded to float32: name → digest.
std::map<std::string, std::string> ReferenceDigests(const std::filesystem::path& dir) {
  std::map<std::string, std::string> out;
  Result<Checkpoint> checkpoint = Checkpoint::Open(dir);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status().message();
  if (!checkpoint.ok()) return out;
  for (const auto& [prefix, weight] : testing::Dequantized(dir, "native")) {
    std::vector<float> values(weight.begin(), weight.end());
    Result<TensorView> scale = checkpoint->Get(prefix + ".weight_scale");
    if (scale.ok() && scale->info->dtype == StDtype::kBF16) {
      for (float& v : values) v = Bf16ToFloat(FloatToBf16(v));
    }
    if (scale.ok() && scale->info->dtype == StDtype::kF16) {  // GPTQ / AWQ scales
      for (float& v : values) v = Fp16ToFloat(FloatToFp16(v));
    }
    if (checkpoint->Has(prefix + ".weight_global_scale")) {
      const std::vector<float> decoded = Nvfp4AsDecompressed(*checkpoint, prefix);
      EXPECT_EQ(decoded.size(), values.size());
      for (size_t i = 0; i < values.size() && i < decoded.size(); ++i) {
        EXPECT_LE(std::abs(values[i] - decoded[i]), std::abs(decoded[i]) * 0x1p-23f + 1e-30f)
            << prefix << " " << i;
      }
      // The decompressor returns NVFP4 weights in bf16, the model's dtype.
      for (size_t i = 0; i < values.size() && i < decoded.size(); ++i) {
        values[i] = Bf16ToFloat(FloatToBf16(decoded[i]));
      }
    }
    out[prefix + ".weight"] = Fnv1a64(values);
  }
  return out;
}

TEST(Quantize, CompressedTensorsDecompressesWhatTheReferenceReads) {
  Result<Json> committed = ReadJsonFile(Producer("quantpath_ct_decompressed.json"));
  ASSERT_TRUE(committed.ok()) << committed.status().message();
  int compared = 0;
  for (const Json::Member& output : committed->Find("outputs")->members()) {
    const std::string folder = output.first.substr(0, output.first.find('/'));
    QuantizeOptions options;
    options.scheme = output.first.substr(folder.size() + 1);
    const std::filesystem::path out = FreshDir("." + folder + "." + options.scheme) / "out";
    Result<ExportReport> report =
        QuantizeCheckpoint(Producer(folder).string(), out.string(), options);
    ASSERT_TRUE(report.ok()) << report.status().message();
    const std::map<std::string, std::string> ours = ReferenceDigests(out);
    EXPECT_EQ(ours.size(), output.second.members().size()) << output.first;
    for (const Json::Member& weight : output.second.members()) {
      auto it = ours.find(weight.first);
      ASSERT_NE(it, ours.end()) << output.first << " " << weight.first;
      EXPECT_EQ(it->second, weight.second.Find("fnv1a64")->string_value())
          << output.first << " " << weight.first;
      ++compared;
    }
  }
  EXPECT_GE(compared, 9 * (14 + 32));
}

TEST(Convert, CompressedTensorsDecompressesWhatTheReferenceReads) {
  Result<Json> committed = ReadJsonFile(Producer("quantpath_ct_decompressed.json"));
  ASSERT_TRUE(committed.ok()) << committed.status().message();
  const Json* converted = committed->Find("converted");
  ASSERT_NE(converted, nullptr);
  int compared = 0;
  for (const Json::Member& folder : converted->members()) {
    ConvertOptions options;
    options.to = CheckpointFormat::kCompressedTensors;
    const std::filesystem::path out = FreshDir("." + folder.first) / "out";
    Result<ExportReport> report =
        ConvertCheckpoint(Producer(folder.first).string(), out.string(), options);
    ASSERT_TRUE(report.ok()) << report.status().message();
    const std::map<std::string, std::string> ours = ReferenceDigests(out);
    EXPECT_EQ(ours.size(), folder.second.members().size()) << folder.first;
    for (const Json::Member& weight : folder.second.members()) {
      auto it = ours.find(weight.first);
      ASSERT_NE(it, ours.end()) << folder.first << " " << weight.first;
      EXPECT_EQ(it->second, weight.second.Find("fnv1a64")->string_value())
          << folder.first << " " << weight.first;
      ++compared;
    }
  }
  EXPECT_GE(compared, 5 * 14 + 32);
}

// The native-fp8 and ModelOpt folders as the `safetensors` package reads them (read_back: the
// tensor count and the FNV-1a 64 of every name and its bytes, in name order), against the same
// folder written here and read by quantpath.
TEST(Export, SafetensorsReadsTheOtherFormatsAsWritten) {
  Result<Json> committed = ReadJsonFile(Producer("quantpath_ct_decompressed.json"));
  ASSERT_TRUE(committed.ok()) << committed.status().message();
  const Json* read_back = committed->Find("read_back");
  ASSERT_NE(read_back, nullptr);
  int compared = 0;
  for (const Json::Member& entry : read_back->members()) {
    SCOPED_TRACE(entry.first);
    std::vector<std::string> words;  // command, folder, then --flag value pairs
    for (size_t at = 0; at <= entry.first.size();) {
      const size_t space = std::min(entry.first.find(' ', at), entry.first.size());
      words.push_back(entry.first.substr(at, space - at));
      at = space + 1;
    }
    ASSERT_GE(words.size(), 4u);
    std::map<std::string, std::string> flags;
    for (size_t i = 2; i + 1 < words.size(); i += 2) flags[words[i]] = words[i + 1];
    const std::filesystem::path out = FreshDir("." + std::to_string(compared)) / "out";
    Result<ExportReport> report = InternalError("no command");
    if (words[0] == "quantize") {
      QuantizeOptions options;
      options.scheme = flags["--scheme"];
      options.format = *ParseCheckpointFormat(flags["--format"]);
      report = QuantizeCheckpoint(Producer(words[1]).string(), out.string(), options);
    } else {
      report = testing::Convert(Producer(words[1]), out, *ParseCheckpointFormat(flags["--to"]));
    }
    ASSERT_TRUE(report.ok()) << report.status().message();
    const auto tensors = testing::ReadAll(out);  // a map: name order
    uint64_t h = 0xCBF29CE484222325ull;
    for (const auto& [name, t] : tensors) {
      for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
      for (const std::byte b : t.bytes) h = (h ^ static_cast<uint8_t>(b)) * 0x100000001B3ull;
    }
    EXPECT_EQ(static_cast<int64_t>(tensors.size()), entry.second.Find("tensors")->int_value());
    EXPECT_EQ(fmt::format("{:016x}", h), entry.second.Find("fnv1a64")->string_value());
    ++compared;
  }
  EXPECT_GE(compared, 8);
}

}  // namespace
}  // namespace quantpath
