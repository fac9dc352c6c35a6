// Test fixtures: writes small safetensors folders from in-memory tensors, makes fp8 legs with
// random or given contents, and the fp8 schemes they are read with. Header-only; used by the specs,
// kernels and linear tests.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "src/specs/bf16_family.h"
#include "src/specs/bnb_family.h"
#include "src/specs/fp8_family.h"
#include "src/specs/mx_family.h"
#include "src/specs/nvfp4_family.h"

namespace quantpath::testing {

// The spec of `key` through its family row, loading `layout` — by default the layout the test
// checkpoints of that family are written in: dense for bf16, DeepSeek's `weight_scale_inv` for
// block fp8, `weight_scale` for the other fp8 families, bitsandbytes' own for theirs.
inline std::unique_ptr<WeightSpec> TestSpec(const SpecKey& key, const ActivationQuant& act = {},
                                            std::optional<SourceLayout> layout = std::nullopt) {
  LoadFacts facts;
  facts.layout = layout.value_or(key.family == kBf16Family       ? SourceLayout::kDense
                                 : key.family == kFp8BlockFamily ? SourceLayout::kFp8ScaleInv
                                 : key.family == kNvfp4Family ? SourceLayout::kCtNvfp4PackQuantized
                                 : key.family == kMxfp4Family ? SourceLayout::kCtMxfp4PackQuantized
                                 : key.family == kMxfp8Family ? SourceLayout::kCtFloatQuantized
                                 : key.family == kNf4Family || key.family == kFp4Family
                                     ? SourceLayout::kBnb4bit
                                 : key.family == kBnbInt8Family ? SourceLayout::kBnb8bit
                                                                : SourceLayout::kFp8Scale);
  Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(key, act, facts);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return spec.ok() ? std::move(*spec) : nullptr;
}

// fp8 e4m3 quantization of one tensor at `granularity`.
inline TensorQuant Fp8Quant(Granularity granularity, Dynamic dynamic = Dynamic::kStatic) {
  TensorQuant t;
  t.dtype = QDType::kFP8E4M3;
  t.granularity = granularity;
  t.dynamic = dynamic;
  return t;
}

// DeepSeek's scheme: 128 × 128 weight blocks (`weight_scale_inv`), dynamic 1 × 128 activation
// groups.
inline QuantScheme Fp8BlockScheme() {
  QuantScheme s;
  s.weight = Fp8Quant(Granularity::kBlock);
  s.weight.block_shape = std::array<int64_t, 2>{128, 128};
  s.weight.load.layout = SourceLayout::kFp8ScaleInv;
  s.input = Fp8Quant(Granularity::kGroup, Dynamic::kDynamic);
  s.input->group_size = 128;
  return s;
}

struct TestTensor {
  std::string name;
  std::string dtype;  // safetensors spelling: "F8_E4M3", "BF16", "F16", "F32"
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

inline TestTensor F32Tensor(std::string name, std::vector<int64_t> shape,
                            const std::vector<float>& values) {
  TestTensor t{std::move(name), "F32", std::move(shape), std::vector<uint8_t>(values.size() * 4)};
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

inline TestTensor Bf16Tensor(std::string name, std::vector<int64_t> shape,
                             const std::vector<float>& values) {
  TestTensor t{std::move(name), "BF16", std::move(shape), std::vector<uint8_t>(values.size() * 2)};
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t bits = FloatToBf16(values[i]);
    std::memcpy(t.bytes.data() + 2 * i, &bits, 2);
  }
  return t;
}

inline TestTensor F16Tensor(std::string name, std::vector<int64_t> shape,
                            const std::vector<float>& values) {
  TestTensor t{std::move(name), "F16", std::move(shape), std::vector<uint8_t>(values.size() * 2)};
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t bits = FloatToFp16(values[i]);
    std::memcpy(t.bytes.data() + 2 * i, &bits, 2);
  }
  return t;
}

inline TestTensor Fp8Tensor(std::string name, std::vector<int64_t> shape,
                            std::vector<uint8_t> bits) {
  return TestTensor{std::move(name), "F8_E4M3", std::move(shape), std::move(bits)};
}

// Writes `tensors` as the safetensors file `file` (its folder is created).
inline void WriteSafetensors(const std::filesystem::path& file,
                             const std::vector<TestTensor>& tensors) {
  std::filesystem::create_directories(file.parent_path());
  std::string header = "{";
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TestTensor& t = tensors[i];
    std::vector<std::string> dims;
    for (int64_t d : t.shape) dims.push_back(std::to_string(d));
    header += (i ? "," : "") + JsonQuote(t.name) + ":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" +
              Join(dims, ",") + "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + t.bytes.size()) + "]}";
    offset += t.bytes.size();
  }
  header += "}";
  while ((8 + header.size()) % 8 != 0) header += ' ';
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  const uint64_t length = header.size();
  out.write(reinterpret_cast<const char*>(&length), 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const TestTensor& t : tensors) {
    out.write(reinterpret_cast<const char*>(t.bytes.data()),
              static_cast<std::streamsize>(t.bytes.size()));
  }
}

// A fresh folder under the test temp dir, named after the running test.
inline std::filesystem::path FreshDir(const std::string& suffix = "") {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name() + suffix;
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "quantpath_tests" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Writes `tensors` into a fresh folder and opens it as a checkpoint.
inline Checkpoint OpenTestCheckpoint(const std::vector<TestTensor>& tensors) {
  const std::filesystem::path dir = FreshDir();
  WriteSafetensors(dir / "model.safetensors", tensors);
  Result<Checkpoint> checkpoint = Checkpoint::Open(dir);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status().message();
  return std::move(checkpoint).value();
}

// Random finite e4m3 bytes (never the NaN patterns 0x7F / 0xFF).
inline std::vector<uint8_t> RandomFp8(std::mt19937* rng, int64_t count) {
  std::vector<uint8_t> bits(static_cast<size_t>(count));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : bits) {
    do {
      b = static_cast<uint8_t>(byte(*rng));
    } while ((b & 0x7F) == 0x7F);
  }
  return bits;
}

// Random positive scales in [lo, hi).
inline std::vector<float> RandomScales(std::mt19937* rng, int64_t count, float lo = 1e-3f,
                                       float hi = 4e-3f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = dist(*rng);
  return values;
}

// Random bf16-representable values in [-1, 1).
inline std::vector<float> RandomBf16Values(std::mt19937* rng, int64_t count) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = Bf16ToFloat(FloatToBf16(dist(*rng)));
  return values;
}

}  // namespace quantpath::testing
