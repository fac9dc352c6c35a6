// The safetensors header rules, each broken once on a file built byte by byte, with the message
// naming the file and the tensor.
#include <gtest/gtest.h>

#include "quantpath/checkpoint.h"
#include "st_test_util.h"

namespace quantpath {
namespace {

using st_test::Bytes;
using st_test::FileBytes;
using st_test::FileFor;
using st_test::ParseBytes;
using st_test::RawTensor;

constexpr char kFile[] = "model-00002-of-00003.safetensors";

// Expects `bytes` to be refused with `code` and a message holding the file name and `fragments`.
void ExpectRefused(const std::string& bytes, const std::vector<std::string>& fragments,
                   ErrorCode code = ErrorCode::kInvalidInput) {
  auto r = ParseBytes(bytes, kFile);
  ASSERT_FALSE(r.ok()) << "accepted: " << bytes.substr(8);
  EXPECT_EQ(r.status().code(), code) << r.status().message();
  EXPECT_NE(r.status().message().find(kFile), std::string::npos) << r.status().message();
  for (const std::string& fragment : fragments) {
    EXPECT_NE(r.status().message().find(fragment), std::string::npos)
        << "missing \"" << fragment << "\" in: " << r.status().message();
  }
}

// A file with `header` and `data_bytes` bytes of data.
std::string WithHeader(const std::string& header, size_t data_bytes = 0) {
  return FileBytes(header, std::string(data_bytes, '\x01'));
}

TEST(SafetensorsHeader, ParsesAValidFile) {
  std::string bytes =
      FileFor({{"w", "F32", {2, 2}, std::string(16, '\x02')}, {"b", "I8", {3}, "abc"}},
              R"({"format": "pt", "quant": "fp8"})");
  uint64_t data_start = 0;
  SafetensorsMetadata metadata;
  auto r =
      ParseSafetensorsHeader(st_test::AsBytes(bytes), bytes.size(), kFile, &data_start, &metadata);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name, "w");
  EXPECT_EQ((*r)[0].dtype, StDtype::kF32);
  EXPECT_EQ((*r)[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ((*r)[0].Elements(), 4);
  EXPECT_EQ((*r)[1].name, "b");
  EXPECT_EQ((*r)[1].begin, 16u);
  EXPECT_EQ((*r)[1].end, 19u);
  EXPECT_EQ(data_start, bytes.size() - 19);
  EXPECT_EQ(metadata, (SafetensorsMetadata{{"format", "pt"}, {"quant", "fp8"}}));
}

TEST(SafetensorsHeader, ReturnsTensorsInFileOrderWhateverTheDocumentOrder) {
  std::string header = R"({"late": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]},
                           "early": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})";
  auto r = ParseBytes(WithHeader(header, 4));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].name, "early");
  EXPECT_EQ((*r)[1].name, "late");
}

TEST(SafetensorsHeader, AcceptsWhatTheReferenceAccepts) {
  // Null metadata, unknown fields in an entry, trailing spaces (writers pad to 8 bytes), scalars,
  // empty tensors (several at one offset), an empty header.
  std::string header =
      R"({"__metadata__": null, "s": {"dtype": "F16", "shape": [], "data_offsets": [0, 2], "x": 1},
          "e1": {"dtype": "F32", "shape": [0, 5], "data_offsets": [2, 2]},
          "e2": {"dtype": "BF16", "shape": [3, 0], "data_offsets": [2, 2]}}     )";
  auto r = ParseBytes(WithHeader(header, 2));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->size(), 3u);
  EXPECT_TRUE(ParseBytes(WithHeader("{}")).ok());
  EXPECT_TRUE(ParseBytes(WithHeader("{ }  ")).ok());
}

TEST(SafetensorsHeader, SizesSubByteDtypesInBits) {
  // F4: 4 bits, F6: 6 bits per element.
  auto r = ParseBytes(FileFor({{"a", "F4", {2, 4}, "1234"},
                               {"b", "F6_E2M3", {4}, "567"},
                               {"c", "F6_E3M2", {8}, "890123"}}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  // An odd number of F4 values does not end on a byte boundary; the reference refuses it
  // ("MisalignedSlice") rather than rounding up.
  ExpectRefused(
      FileFor({{"odd", "F4", {3}, "12"}}),
      {"tensor \"odd\"", "dtype F4 × shape [3] = 3 × 4 bits, not a whole number of bytes"});
}

TEST(SafetensorsHeader, KnowsEveryReferenceDtype) {
  const std::pair<const char*, int> dtypes[] = {
      {"BOOL", 8},        {"U8", 8},         {"I8", 8},      {"F8_E5M2", 8}, {"F8_E4M3", 8},
      {"F8_E8M0", 8},     {"I16", 16},       {"U16", 16},    {"F16", 16},    {"BF16", 16},
      {"I32", 32},        {"U32", 32},       {"F32", 32},    {"F64", 64},    {"I64", 64},
      {"U64", 64},        {"F4", 4},         {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"C64", 64},
      {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}};
  for (auto [name, bits] : dtypes) {
    std::optional<StDtype> dtype = ParseStDtype(name);
    ASSERT_TRUE(dtype.has_value()) << name;
    EXPECT_EQ(StDtypeName(*dtype), name);
    EXPECT_EQ(StDtypeBits(*dtype), bits) << name;
    // Eight elements always end on a byte boundary.
    auto r = ParseBytes(FileFor({{"t", name, {8}, std::string(static_cast<size_t>(bits), 'x')}}));
    EXPECT_TRUE(r.ok()) << name << ": " << r.status().message();
  }
  EXPECT_FALSE(ParseStDtype("F8_E4M3FN").has_value());
  EXPECT_FALSE(ParseStDtype("f32").has_value());
}

TEST(SafetensorsHeader, NamesFileTensorAndSizesOnALengthMismatch) {
  std::string header = R"({"model.layers.0.mlp.up_proj.weight": {"dtype": "F8_E4M3", )"
                       R"("shape": [128, 64], "data_offsets": [0, 8190]}})";
  auto r = ParseBytes(WithHeader(header, 8190), kFile);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "model-00002-of-00003.safetensors: tensor \"model.layers.0.mlp.up_proj.weight\": "
            "dtype F8_E4M3 × shape [128, 64] = 8192 bytes but offsets give 8190");
}

TEST(SafetensorsHeader, RefusesBadLengthPrefixes) {
  ExpectRefused("abc", {"3 bytes, too small"});
  ExpectRefused("", {"0 bytes"});
  // 100,000,001: one past safetensors' MAX_HEADER_SIZE.
  ExpectRefused(Bytes({0x01, 0xE1, 0xF5, 0x05, 0, 0, 0, 0}) + "{}",
                {"header length 100000001 exceeds the limit"}, ErrorCode::kLimit);
  ExpectRefused(Bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}), {"exceeds the limit"},
                ErrorCode::kLimit);
  ExpectRefused(Bytes({10, 0, 0, 0, 0, 0, 0, 0}) + "{}", {"runs past the end of the file"});
}

TEST(SafetensorsHeader, RefusesHeadersThatAreNotAJsonObject) {
  ExpectRefused(WithHeader(""), {"must begin with '{', found an empty header"});
  ExpectRefused(WithHeader(" {}"), {"must begin with '{', found byte 0x20"});
  ExpectRefused(WithHeader("[]"), {"must begin with '{'"});
  ExpectRefused(WithHeader(R"({"a": })"), {"not valid JSON"});
  ExpectRefused(WithHeader("{} x"), {"not valid JSON"});
  ExpectRefused(WithHeader("{\"\xff\": 1}"), {"not valid JSON"});  // not UTF-8
}

TEST(SafetensorsHeader, RefusesDuplicateNames) {
  std::string entry = R"({"dtype": "U8", "shape": [1], "data_offsets": [0, 1]})";
  ExpectRefused(WithHeader("{\"w\": " + entry + ", \"w\": " + entry + "}", 1),
                {"duplicate", "\"w\""});
  // Inside an entry, a field given twice, known or not, and a duplicate deeper in a field that is
  // otherwise ignored, are refused as anywhere else in JSON.
  ExpectRefused(
      WithHeader(R"({"w": {"dtype": "U8", "dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})",
                 1),
      {"#/w/dtype: duplicate key \"dtype\""});
  ExpectRefused(
      WithHeader(R"({"w": {"x": 1, "dtype": "U8", "x": 2, "shape": [1], "data_offsets": [0, 1]}})",
                 1),
      {"#/w/x: duplicate key \"x\""});
  ExpectRefused(
      WithHeader(
          R"({"w": {"x": {"a": 1, "a": 2}, "dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})",
          1),
      {"#/w/x/a: duplicate key \"a\""});
  ExpectRefused(WithHeader(R"({"__metadata__": {}, "__metadata__": {}})"),
                {"#/__metadata__: duplicate key"});
}

TEST(SafetensorsHeader, RefusesMetadataThatIsNotStrings) {
  ExpectRefused(WithHeader(R"({"__metadata__": {"format": "pt", "step": 3}})"),
                {"\"__metadata__\" entry \"step\" must be a string, found integer"});
  ExpectRefused(WithHeader(R"({"__metadata__": ["pt"]})"),
                {"\"__metadata__\" must be an object of strings, found array"});
}

TEST(SafetensorsHeader, RefusesMalformedEntries) {
  auto entry = [](const std::string& body, size_t data = 4) {
    return WithHeader(R"({"layer.w": )" + body + "}", data);
  };
  const std::string t = "tensor \"layer.w\"";
  ExpectRefused(entry("3"), {t,
                             "expected an object with dtype, shape and data_offsets, found "
                             "integer"});
  ExpectRefused(entry(R"({"shape": [4], "data_offsets": [0, 4]})"), {t, "missing \"dtype\""});
  ExpectRefused(entry(R"({"dtype": "U8", "data_offsets": [0, 4]})"), {t, "missing \"shape\""});
  ExpectRefused(entry(R"({"dtype": "U8", "shape": [4]})"), {t, "missing \"data_offsets\""});
  ExpectRefused(entry(R"({"dtype": 8, "shape": [4], "data_offsets": [0, 4]})"),
                {t, "\"dtype\" must be a string, found integer"});
  ExpectRefused(entry(R"({"dtype": "U7", "shape": [4], "data_offsets": [0, 4]})"),
                {t, "unknown dtype \"U7\""});
  ExpectRefused(entry(R"({"dtype": "U8", "shape": 4, "data_offsets": [0, 4]})"),
                {t, "\"shape\" must be a list"});
  ExpectRefused(entry(R"({"dtype": "U8", "shape": [-4], "data_offsets": [0, 4]})"),
                {t, "shape[0] = -4 is not a non-negative integer"});
  ExpectRefused(entry(R"({"dtype": "U8", "shape": [2, 2.0], "data_offsets": [0, 4]})"),
                {t, "shape[1] = 2.0 is not a non-negative integer"});
  ExpectRefused(entry(R"({"dtype": "U8", "shape": [1, "4"], "data_offsets": [0, 4]})"),
                {t, "shape[1] = \"4\""});
  ExpectRefused(
      entry(R"({"dtype": "U8", "shape": [18446744073709551615], "data_offsets": [0, 4]})"),
      {t, "shape[0]", "is not a non-negative integer"});
  ExpectRefused(entry(R"({"dtype": "U8", "shape": [4], "data_offsets": [0]})"),
                {t, "\"data_offsets\" must be [begin, end]", "found [0]"});
  ExpectRefused(entry(R"({"dtype": "U8", "shape": [4], "data_offsets": [-1, 3]})"),
                {t, "\"data_offsets\" must be [begin, end]"});
  ExpectRefused(entry(R"({"dtype": "U8", "shape": [4], "data_offsets": ["0", 4]})"),
                {t, "\"data_offsets\" must be [begin, end]"});
}

TEST(SafetensorsHeader, RefusesShapesWhoseSizeOverflows) {
  auto entry = [](const std::string& dtype, const std::string& shape) {
    return WithHeader(R"({"big": {"dtype": ")" + dtype + R"(", "shape": )" + shape +
                          R"(, "data_offsets": [0, 4]}})",
                      4);
  };
  ExpectRefused(entry("U8", "[4294967296, 4294967296, 4]"),
                {"tensor \"big\"", "more elements than fit in 63 bits"});
  ExpectRefused(entry("F64", "[1152921504606846976]"),
                {"tensor \"big\"", "dtype F64 × shape [1152921504606846976] overflows"});
}

TEST(SafetensorsHeader, RefusesOffsetsThatDoNotTileTheData) {
  auto u8 = [](const std::string& name, int begin, int end) {
    return "\"" + name + R"(": {"dtype": "U8", "shape": [)" + std::to_string(end - begin) +
           R"(], "data_offsets": [)" + std::to_string(begin) + ", " + std::to_string(end) + "]}";
  };
  ExpectRefused(WithHeader(R"({"w": {"dtype": "U8", "shape": [4], "data_offsets": [8, 4]}})", 8),
                {"tensor \"w\"", "data_offsets [8, 4] end before they begin"});
  ExpectRefused(WithHeader("{" + u8("late", 4, 8) + "}", 8),
                {"tensor \"late\"", "must start at 0"});
  ExpectRefused(WithHeader("{" + u8("a", 0, 4) + ", " + u8("b", 8, 12) + "}", 12),
                {"tensor \"b\"",
                 "data_offsets [8, 12] leave a gap after tensor \"a\", which ends "
                 "at 4"});
  ExpectRefused(WithHeader("{" + u8("a", 0, 8) + ", " + u8("b", 4, 12) + "}", 12),
                {"tensor \"b\"", "overlap tensor \"a\", which ends at 8"});
  ExpectRefused(WithHeader("{" + u8("a", 0, 4) + ", " + u8("b", 4, 8) + "}", 10),
                {"tensor \"b\"", "ends at data offset 8 but the file has 10 bytes", "unused"});
  ExpectRefused(WithHeader("{" + u8("a", 0, 4) + ", " + u8("b", 4, 8) + "}", 6),
                {"tensor \"b\"", "the file has 6 bytes", "runs past the end"});
  ExpectRefused(WithHeader("{}", 3), {"lists no tensors but 3 bytes of data follow"});
}

TEST(SafetensorsHeader, RefusesAShortBufferInsteadOfReadingPastIt) {
  std::string bytes = FileFor({{"w", "U8", {4}, "abcd"}});
  uint64_t data_start = 0;
  auto r =
      ParseSafetensorsHeader(st_test::AsBytes(bytes).first(12), bytes.size(), kFile, &data_start);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
}

}  // namespace
}  // namespace quantpath
