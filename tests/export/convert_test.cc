// `convert`: fp8 block folders between the native and compressed-tensors layouts (every stored
// code and scale kept), and any producer's folder dequantized to bf16, equal to the producer's own
// dequantization rounded to bf16.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quantpath/export.h"
#include "quantpath/numeric.h"
#include "tests/export/export_test_util.h"

namespace quantpath {
namespace {

using testing::Convert;
using testing::Decisions;
using testing::ExpectCheckClean;
using testing::FreshDir;
using testing::Producer;
using testing::ReadAll;
using testing::ReadFile;

TEST(Convert, Fp8BlocksToNativeAndBackKeepEveryTensor) {
  for (const std::string folder : {"ct_llama_fp8_block", "ct_qwen3moe_fp8_block"}) {
    const std::filesystem::path dir = FreshDir("." + folder);
    Result<ExportReport> there =
        Convert(Producer(folder), dir / "native", CheckpointFormat::kNativeFp8);
    ASSERT_TRUE(there.ok()) << there.status().message();
    ExpectCheckClean(dir / "native", "vllm@0.33");
    // SGLang's fp8 blocks need whole 128-row blocks per leg; k/v have 64 rows here, which its
    // compressed-tensors path takes and its fp8 path refuses, and the report says so.
    EXPECT_NE(Join(there->notes, "\n").find("sglang@0.5.23 would not load it"), std::string::npos);
    const auto native = ReadAll(dir / "native");
    EXPECT_TRUE(native.contains("model.layers.0.mlp.down_proj.weight_scale_inv") ||
                native.contains("model.layers.0.mlp.experts.0.down_proj.weight_scale_inv"));
    Result<ExportReport> back =
        Convert(dir / "native", dir / "back", CheckpointFormat::kCompressedTensors);
    ASSERT_TRUE(back.ok()) << back.status().message();
    const auto original = ReadAll(Producer(folder));
    const auto returned = ReadAll(dir / "back");
    ASSERT_EQ(original.size(), returned.size());
    for (const auto& [name, t] : original) {
      auto it = returned.find(name);
      ASSERT_NE(it, returned.end()) << name;
      EXPECT_EQ(it->second.dtype, t.dtype) << name;
      EXPECT_EQ(it->second.shape, t.shape) << name;
      EXPECT_EQ(it->second.bytes, t.bytes) << name;
    }
    for (const std::string engine : {"vllm@0.33", "sglang@0.5.23"}) {
      EXPECT_EQ(Decisions(dir / "back", engine), Decisions(Producer(folder), engine)) << engine;
      auto native_decisions = Decisions(dir / "native", engine);
      for (auto& [path, decision] : native_decisions) {
        if (engine.starts_with("sglang") && path.ends_with("qkv_proj") && decision == "error") {
          decision = "w8a8-fp8-block128x128-dyn";
        }
      }
      EXPECT_EQ(native_decisions, Decisions(Producer(folder), engine)) << engine;
    }
  }
}

// A producer's dequantized value (bf16, fp16 or fp32), and how far its own rounding may have
// taken it from the exact value quantpath rounds once: nothing for bf16 (the products of bf16
// scales are exact in the producers' fp32), half an fp16 ulp for fp16 (GPTQ, AWQ: one rounded
// product), an fp32 ulp for fp32 (ModelOpt rounds the two scales' product, then the value).
struct ProducerValue {
  double value = 0;
  double rounding = 0;
};
ProducerValue ValueOf(const testing::StoredTensor& t, size_t i) {
  uint16_t h;
  float f;
  switch (t.dtype) {
    case StDtype::kBF16:
      std::memcpy(&h, t.bytes.data() + 2 * i, 2);
      return {Bf16ToFloat(h), 0};
    case StDtype::kF16:
      std::memcpy(&h, t.bytes.data() + 2 * i, 2);
      f = Fp16ToFloat(h);
      return {f, std::ldexp(1.0, std::ilogb(std::max(std::abs(f), 0x1p-14f)) - 11)};
    default:
      std::memcpy(&f, t.bytes.data() + 4 * i, 4);
      return {f, f == 0 ? 0 : std::ldexp(1.0, std::ilogb(f) - 23)};
  }
}

class ConvertToBf16 : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvertToBf16, EqualsTheProducersDequantization) {
  const std::string folder = GetParam();
  const std::filesystem::path out = FreshDir() / "out";
  Result<ExportReport> report = Convert(Producer(folder), out, CheckpointFormat::kBf16);
  ASSERT_TRUE(report.ok()) << report.status().message();
  const auto dequant = ReadFile(Producer(folder) / "dequant.safetensors");
  const auto written = ReadAll(out);
  ASSERT_FALSE(dequant.empty());
  for (const auto& [name, ref] : dequant) {
    auto it = written.find(name);
    ASSERT_NE(it, written.end()) << name;
    ASSERT_EQ(it->second.dtype, StDtype::kBF16) << name;
    ASSERT_EQ(it->second.shape, ref.shape) << name;
    // bf16 of the producer's value where it is exact; else within its rounding plus half a
    // bf16 ulp of it.
    const size_t n = it->second.bytes.size() / 2;
    size_t beyond = 0;
    for (size_t i = 0; i < n; ++i) {
      uint16_t got;
      std::memcpy(&got, it->second.bytes.data() + 2 * i, 2);
      const ProducerValue p = ValueOf(ref, i);
      const double ours = Bf16ToFloat(got);
      if (p.rounding == 0) {  // compared as numbers: a code of −0 dequantizes to −0 or +0
        beyond += ours != Bf16ToFloat(FloatToBf16(static_cast<float>(p.value))) ? 1 : 0;
        continue;
      }
      const double half_ulp = p.value == 0 ? 0 : std::ldexp(1.0, std::ilogb(p.value) - 8);
      beyond += std::abs(ours - p.value) > p.rounding + half_ulp ? 1 : 0;
    }
    EXPECT_EQ(beyond, 0u) << folder << " " << name << " of " << n;
  }
  Result<Json> config = ReadJsonFile(out / "config.json");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->Find("quantization_config"), nullptr);
  EXPECT_FALSE(std::filesystem::exists(out / "hf_quant_config.json"));
  EXPECT_FALSE(std::filesystem::exists(out / "dequant.safetensors"));
  for (const std::string engine : {"vllm@0.33", "sglang@0.5.23"}) {
    ExpectCheckClean(out, engine);
    for (const auto& [path, decision] : Decisions(out, engine)) {
      EXPECT_EQ(decision, "unquantized") << engine << " " << path;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Producers, ConvertToBf16,
                         ::testing::Values("ct_llama_fp8_block", "ct_llama_w4a16_g64_asym",
                                           "ct_llama_nvfp4a16", "ct_llama_mxfp4a16",
                                           "ct_llama_w8a8_int8_dynamic",
                                           "ct_qwen3moe_w4a16_g64_sym",
                                           "gm_llama_gptq_w4g64_sym_desc_act",
                                           "ar_llama_auto_awq_w4g64_asym", "mo_llama_nvfp4",
                                           "mo_llama_fp8", "bnb_llama_nf4_dq"));

TEST(Convert, RefusesWhatItCannotWriteAndLeavesNothing) {
  const std::filesystem::path out = FreshDir() / "out";
  Result<ExportReport> report =
      Convert(Producer("ct_llama_w4a16_g64_sym"), out, CheckpointFormat::kNativeFp8);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("fp8 e4m3 weights only"), std::string::npos)
      << report.status().message();
  report = Convert(Producer("ct_llama_fp8_block"), out, CheckpointFormat::kCompressedTensors);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("already"), std::string::npos)
      << report.status().message();
  // bitsandbytes codes have no compressed-tensors form: the refusal says what to do instead.
  report = Convert(Producer("bnb_llama_nf4_b128"), out, CheckpointFormat::kCompressedTensors);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find(
                "(bnb-4bit) has no place in the ct-pack-quantized layout, so convert cannot keep "
                "it exactly; write bf16 instead (`quantpath convert IN MID --to bf16`), then "
                "quantize that"),
            std::string::npos)
      << report.status().message();
  report = Convert(Producer("bf16_llama"), out, CheckpointFormat::kBf16);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("not quantized"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out));
  for (const auto& e : std::filesystem::directory_iterator(out.parent_path())) {
    ADD_FAILURE() << "left behind: " << e.path();
  }
}

}  // namespace
}  // namespace quantpath
