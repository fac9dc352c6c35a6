// A file written by Python's safetensors (the reference writer) reads back identically: names,
// dtypes, shapes, bytes, metadata, and float values as ml_dtypes decodes them.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>

#include "quantpath/checkpoint.h"
#include "st_test_util.h"

namespace quantpath {
namespace {

// Writes argv[1] with safetensors.numpy and prints, per tensor, its bytes in hex, its shape and,
// for floating tensors, the float32 bit patterns ml_dtypes / numpy decode it to.
constexpr const char* kWriterScript = R"(import json
import sys
import numpy as np
import ml_dtypes as m
from safetensors.numpy import save_file
rng = np.random.default_rng(7)
tensors = {
    "model.embed_tokens.weight": rng.standard_normal((3, 4)).astype(np.float32),
    "half": (rng.standard_normal(5) * 100).astype(np.float16),
    "bf16": rng.standard_normal((2, 3)).astype(m.bfloat16),
    "fp8.e4m3": (rng.standard_normal(7) * 50).astype(m.float8_e4m3fn),
    "fp8.e5m2": (rng.standard_normal(4) * 1000).astype(m.float8_e5m2),
    "mx.scale": np.array([1.0, 0.5, 2.0 ** -20], dtype=np.float32).astype(m.float8_e8m0fnu),
    "double": rng.standard_normal(2),
    "i8": np.array([-128, 0, 127], dtype=np.int8),
    "u8": np.array([0, 255], dtype=np.uint8),
    "i32": np.array([[1, -2], [3, -4]], dtype=np.int32),
    "i64": np.array([2 ** 40, -1], dtype=np.int64),
    "flags": np.array([True, False, True]),
    "empty": np.zeros((0, 3), dtype=np.float32),
    "scalar": np.array(3.5, dtype=np.float32),
}
save_file(tensors, sys.argv[1], metadata={"format": "np", "note": "reference writer"})
floating = {"model.embed_tokens.weight", "half", "bf16", "fp8.e4m3", "fp8.e5m2", "mx.scale",
            "double", "empty", "scalar"}
out = {}
for name, t in tensors.items():
    entry = {"hex": t.tobytes().hex(), "shape": list(t.shape)}
    if name in floating:
        entry["float32_bits"] = t.astype(np.float32).reshape(-1).view(np.uint32).tolist()
    out[name] = entry
print(json.dumps(out))
)";

std::string Hex(std::span<const std::byte> bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::byte b : bytes) {
    out += kDigits[static_cast<uint8_t>(b) >> 4];
    out += kDigits[static_cast<uint8_t>(b) & 0xF];
  }
  return out;
}

TEST(SafetensorsPython, ReadsAFileWrittenByTheReferenceWriterIdentically) {
  if (!st_test::PythonHas("safetensors, numpy, ml_dtypes")) {
    GTEST_SKIP() << "python3 with safetensors, numpy and ml_dtypes is not available";
  }
  st_test::TempFolder dir("python_written");
  st_test::WriteFile(dir.path() / "writer.py", kWriterScript);
  std::string output =
      st_test::RunPython(dir.path() / "writer.py", (dir.path() / "model.safetensors").string());
  auto expected = ParseJson(output, "writer output");
  ASSERT_TRUE(expected.ok()) << expected.status().message() << "\n" << output;

  auto file = SafetensorsFile::Open(dir.path() / "model.safetensors");
  ASSERT_TRUE(file.ok()) << file.status().message();
  // The writer keeps metadata in a hash map: its order varies from run to run.
  SafetensorsMetadata metadata = (*file)->metadata();
  std::sort(metadata.begin(), metadata.end());
  EXPECT_EQ(metadata, (SafetensorsMetadata{{"format", "np"}, {"note", "reference writer"}}));
  auto ckpt = Checkpoint::Open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
  EXPECT_EQ(ckpt->TensorNames().size(), expected->members().size());

  const std::map<std::string, std::string> dtypes = {{"model.embed_tokens.weight", "F32"},
                                                     {"half", "F16"},
                                                     {"bf16", "BF16"},
                                                     {"fp8.e4m3", "F8_E4M3"},
                                                     {"fp8.e5m2", "F8_E5M2"},
                                                     {"mx.scale", "F8_E8M0"},
                                                     {"double", "F64"},
                                                     {"i8", "I8"},
                                                     {"u8", "U8"},
                                                     {"i32", "I32"},
                                                     {"i64", "I64"},
                                                     {"flags", "BOOL"},
                                                     {"empty", "F32"},
                                                     {"scalar", "F32"}};
  for (const auto& [name, entry] : expected->members()) {
    SCOPED_TRACE(name);
    auto view = ckpt->Get(name);
    ASSERT_TRUE(view.ok()) << view.status().message();
    EXPECT_EQ(StDtypeName(view->info->dtype), dtypes.at(name));
    std::vector<int64_t> shape;
    for (const Json& d : entry.Find("shape")->items()) shape.push_back(d.int_value());
    EXPECT_EQ(view->info->shape, shape);
    EXPECT_EQ(Hex(view->bytes), entry.Find("hex")->string_value());
    if (const Json* bits = entry.Find("float32_bits")) {
      auto floats = TensorToFloat(*view);
      ASSERT_TRUE(floats.ok()) << floats.status().message();
      ASSERT_EQ(floats->size(), bits->items().size());
      for (size_t i = 0; i < floats->size(); ++i) {
        auto want = std::bit_cast<float>(static_cast<uint32_t>(bits->items()[i].int_value()));
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan((*floats)[i])) << i;
        } else {
          EXPECT_EQ(std::bit_cast<uint32_t>((*floats)[i]), std::bit_cast<uint32_t>(want))
              << i << ": " << (*floats)[i] << " vs " << want;
        }
      }
    }
  }
}

}  // namespace
}  // namespace quantpath
