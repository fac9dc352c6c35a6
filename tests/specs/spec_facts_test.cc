// The spec family table, spec_id parsing, layout sizes and devices.
#include <gtest/gtest.h>

#include "quantpath/specs.h"

namespace quantpath {
namespace {

TEST(SpecIdTest, RoundTripsEveryFamily) {
  for (std::string_view id :
       {"bf16", "fp8_per_tensor", "fp8_per_channel", "fp8_block_128_128", "fp8_block_64_32"}) {
    Result<SpecKey> key = ParseSpecId(id);
    ASSERT_TRUE(key.ok()) << id << ": " << key.status().message();
    EXPECT_EQ(key->ToId(), id);
  }
  Result<SpecKey> block = ParseSpecId("fp8_block_64_32");
  EXPECT_EQ(block->family, SpecFamily::kFp8Block);
  EXPECT_EQ(block->block, (std::array<int64_t, 2>{64, 32}));
}

TEST(SpecIdTest, RejectsMalformedIds) {
  for (std::string_view id :
       {"", "int4_group_128", "fp8_block", "fp8_block_128", "fp8_block_0_128",
        "fp8_block_128_128_1", "fp8_block_-1_128", "fp8_block_a_b", "fp8_per_tensor_1", "bf16x"}) {
    Result<SpecKey> key = ParseSpecId(id);
    ASSERT_FALSE(key.ok()) << id;
    EXPECT_NE(key.status().message().find("fp8_block_<n>_<k>"), std::string::npos);
  }
}

TEST(LayoutBytesTest, DesignExamples) {
  // DESIGN.md: fused_qkv_a_proj [168, 256] in fp8_block_128_128 stores 43008 + 2 × 2 × 4 bytes.
  EXPECT_EQ(LayoutBytes(*ParseSpecId("fp8_block_128_128"), 168, 256, 16), 43024);
  // embed_tokens [512, 256] in bf16.
  EXPECT_EQ(LayoutBytes(*ParseSpecId("bf16"), 512, 256, 16), 262144);
}

TEST(LayoutBytesTest, EachFamily) {
  EXPECT_EQ(LayoutBytes(*ParseSpecId("bf16"), 3, 5, 32), 60);
  EXPECT_EQ(LayoutBytes(*ParseSpecId("fp8_per_tensor"), 3, 5, 16), 15 + 12);
  EXPECT_EQ(LayoutBytes(*ParseSpecId("fp8_per_channel"), 3, 5, 16), 15 + 12);
  // Edge blocks are clipped, not padded: [130, 129] with 128 × 128 blocks has a 2 × 2 grid.
  EXPECT_EQ(LayoutBytes(*ParseSpecId("fp8_block_128_128"), 130, 129, 16), 130 * 129 + 16);
  EXPECT_EQ(Fp8BlockLayout({128, 64}).ScaleRows(256), 2);
  EXPECT_EQ(Fp8BlockLayout({128, 64}).ScaleCols(65), 2);
}

TEST(SpecFamilyTableTest, FactsAgreeWithLayouts) {
  for (const SpecFamilyInfo& info : kSpecFamilies) {
    EXPECT_EQ(&FamilyInfo(info.family), &info);
    EXPECT_EQ(info.scales == ScaleLayout::kNone, info.scale_bits == 0) << info.id;
    EXPECT_EQ(info.weight_dtype_from_request, info.family == SpecFamily::kBf16) << info.id;
  }
}

TEST(DeviceTest, ParsesKnownDevices) {
  EXPECT_EQ(ParseDevice("cpu")->sm, 0);
  EXPECT_TRUE(ParseDevice("cpu")->is_cpu());
  EXPECT_EQ(ParseDevice("sm80")->sm, 80);
  EXPECT_EQ(ParseDevice("sm90")->sm, 90);
  EXPECT_EQ(ParseDevice("sm100")->sm, 100);
  EXPECT_FALSE(ParseDevice("sm100")->is_cpu());
  Result<DeviceCaps> bad = ParseDevice("gpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cpu, sm80, sm90, sm100"), std::string::npos);
}

TEST(ActivationQuantTest, Names) {
  EXPECT_EQ(ActivationQuant{}.ToString(), "none");
  EXPECT_EQ((ActivationQuant{ActMode::kDynamicGroup, 128}).ToString(), "fp8 dynamic group 128");
  EXPECT_EQ((ActivationQuant{ActMode::kStaticPerTensor, 0}).ToString(), "fp8 static per-tensor");
}

TEST(ParamTensorTest, ZeroedAlignedStorage) {
  ParamTensor t(QDType::kFP8E4M3, 3, 5);
  EXPECT_EQ(t.bytes(), 15);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  for (int64_t i = 0; i < t.elements(); ++i) EXPECT_EQ(t.data<uint8_t>()[i], 0);
  ParamTensor f(QDType::kBF16, 2, 2);
  EXPECT_EQ(f.bytes(), 8);
  EXPECT_TRUE(ParamTensor().empty());
}

}  // namespace
}  // namespace quantpath
