// CopyTensor and TensorToFloat on tensors whose bytes are written by hand from the format
// specifications, at unaligned addresses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "quantpath/checkpoint.h"
#include "st_test_util.h"

namespace quantpath {
namespace {

using st_test::Bytes;

// A view of `bytes` placed one byte past an aligned address, so every multi-byte read is unaligned.
class UnalignedView {
 public:
  UnalignedView(const std::string& dtype, std::vector<int64_t> shape, const std::string& bytes)
      : storage_(bytes.size() + 1) {
    info_.name = "t";
    info_.dtype = *ParseStDtype(dtype);
    info_.shape = std::move(shape);
    if (!bytes.empty()) std::memcpy(storage_.data() + 1, bytes.data(), bytes.size());
    view_ = TensorView{&info_, "f.safetensors", {storage_.data() + 1, bytes.size()}};
  }
  const TensorView& view() const { return view_; }

 private:
  TensorInfo info_;
  std::vector<std::byte> storage_;
  TensorView view_;
};

std::vector<float> Decoded(const std::string& dtype, std::vector<int64_t> shape,
                           const std::string& bytes) {
  UnalignedView v(dtype, std::move(shape), bytes);
  auto r = TensorToFloat(v.view());
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : std::vector<float>{};
}

TEST(TensorToFloat, DecodesEveryFloatingDtype) {
  // Little-endian patterns: 1.0, -2.0 in each format.
  EXPECT_EQ(Decoded("F32", {2}, Bytes({0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0})),
            (std::vector<float>{1, -2}));
  EXPECT_EQ(Decoded("F64", {2}, Bytes({0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0, 0, 0, 0, 0, 0, 0, 0xC0})),
            (std::vector<float>{1, -2}));
  EXPECT_EQ(Decoded("F16", {2}, Bytes({0x00, 0x3C, 0x00, 0xC0})), (std::vector<float>{1, -2}));
  EXPECT_EQ(Decoded("BF16", {2}, Bytes({0x80, 0x3F, 0x00, 0xC0})), (std::vector<float>{1, -2}));
  // E4M3: 0x38 = 1.0, 0xC0 = -2.0, 0x7E = 448. E5M2: 0x3C = 1.0, 0xC0 = -2.0, 0x7C = inf.
  EXPECT_EQ(Decoded("F8_E4M3", {3}, Bytes({0x38, 0xC0, 0x7E})), (std::vector<float>{1, -2, 448}));
  EXPECT_EQ(Decoded("F8_E5M2", {3}, Bytes({0x3C, 0xC0, 0x7C})),
            (std::vector<float>{1, -2, INFINITY}));
  // E8M0: 127 = 1.0, 128 = 2.0, 0x7E = 0.5.
  EXPECT_EQ(Decoded("F8_E8M0", {3}, Bytes({127, 128, 126})), (std::vector<float>{1, 2, 0.5f}));
  EXPECT_TRUE(std::isnan(Decoded("F8_E4M3", {1}, Bytes({0x7F}))[0]));
}

TEST(TensorToFloat, ReadsF4WithTheEvenElementInTheLowNibble) {
  // Byte 0x72: low nibble 0x2 = 1.0 (element 0), high nibble 0x7 = 6.0 (element 1).
  // Byte 0xA9: low 0x9 = -0.5, high 0xA = -1.0.
  EXPECT_EQ(Decoded("F4", {2, 2}, Bytes({0x72, 0xA9})), (std::vector<float>{1, 6, -0.5f, -1}));
}

TEST(TensorToFloat, RefusesDtypesItDoesNotDecode) {
  for (const char* dtype : {"I32", "U8", "BOOL", "F6_E2M3", "F8_E4M3FNUZ", "C64"}) {
    UnalignedView v(dtype, {4},
                    std::string(static_cast<size_t>(StDtypeBits(*ParseStDtype(dtype))) / 2, 'x'));
    auto r = TensorToFloat(v.view());
    ASSERT_FALSE(r.ok()) << dtype;
    EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(r.status().message().find("f.safetensors: tensor \"t\""), std::string::npos);
  }
}

TEST(CopyTensor, CopiesUnalignedValues) {
  int64_t values[3] = {-1, 1LL << 40, 7};
  UnalignedView v("I64", {3}, std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  auto r = CopyTensor<int64_t>(v.view());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, (std::vector<int64_t>{-1, 1LL << 40, 7}));
  UnalignedView empty("F32", {0, 4}, "");
  auto none = CopyTensor<float>(empty.view());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(CopyTensor, RefusesAnElementSizeThatDoesNotMatch) {
  UnalignedView v("F16", {4}, std::string(8, 'x'));
  auto r = CopyTensor<float>(v.view());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "f.safetensors: tensor \"t\": dtype F16 is 16 bits per element, not the 4 bytes of "
            "the requested type");
  EXPECT_TRUE(CopyTensor<uint16_t>(v.view()).ok());
}

TEST(CopyTensor, RefusesAViewWhoseBytesDisagreeWithItsShape) {
  // Hand-made views are checked too: 6 bytes cannot hold F32 × [2].
  UnalignedView v("F32", {2}, std::string(6, 'x'));
  auto r = CopyTensor<float>(v.view());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("6 bytes do not hold dtype F32 × 2 elements"),
            std::string::npos)
      << r.status().message();
  EXPECT_FALSE(TensorToFloat(v.view()).ok());
  EXPECT_FALSE(TensorToFloat(TensorView{}).ok());
}

}  // namespace
}  // namespace quantpath
