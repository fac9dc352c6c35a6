// Untrusted JSON and files: every limit gives an error naming the file, in time and memory
// linear in what is read, and special files are refused without blocking.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "quantpath/base.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;

std::string Nested(int depth, std::string_view inner) {
  return std::string(static_cast<size_t>(depth), '[') + std::string(inner) +
         std::string(static_cast<size_t>(depth), ']');
}

TEST(JsonLimits, DepthLimitIsExactAndNamed) {
  const JsonLimits limits;
  EXPECT_TRUE(ParseJson(Nested(limits.max_depth, "1"), "a.json").ok());
  Result<Json> deep = ParseJson(Nested(limits.max_depth + 1, "1"), "a.json");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().message(),
            "a.json: JSON nested deeper than 256 levels (QUANTPATH_MAX_JSON_DEPTH)");
}

// A megabyte of '[' before NaN once made the NaN scan quadratic and printed a 2 MB pointer.
TEST(JsonLimits, MegabyteOfBracketsBeforeNanIsTheDepthError) {
  std::string text(1 << 20, '[');
  text += "NaN";
  Result<Json> r = ParseJson(text, "config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("config.json: not valid JSON", 0), 0u)
      << r.status().message();
  EXPECT_LT(r.status().message().size(), 200u);
}

TEST(JsonLimits, NonFiniteTokensStillNamePointer) {
  Result<Json> r = ParseJson(R"({"a": [1, {"b": NaN}]})", "c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "c.json#/a/1/b: NaN is not valid JSON (write null or a finite number)");
}

TEST(JsonLimits, IntegersBeyondSixtyFourBitsAreOutOfRange) {
  EXPECT_TRUE(
      ParseJson(R"({"n": 18446744073709551615, "m": -9223372036854775808})", "i.json").ok());
  Result<Json> big = ParseJson(R"({"shape": [1, 18446744073709551616]})", "h.json");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().message(),
            "h.json#/shape/1: integer 18446744073709551616 out of range (64 bits)");
  Result<Json> small = ParseJson(R"({"n": -9223372036854775809})", "i.json");
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().message(),
            "i.json#/n: integer -9223372036854775809 out of range (64 bits)");
  // Reals are not integers: simdjson reads 1e400 as an error of its own kind.
  EXPECT_TRUE(ParseJson(R"({"x": 184467440737095516160.5})", "r.json").ok());
}

TEST(JsonLimits, SizeAndValueCountLimits) {
  JsonLimits limits;
  limits.max_bytes = 10;
  Result<Json> big = ParseJson("[1,2,3,4,5,6]", "s.json", limits);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().message(), "s.json: 13 bytes of JSON, over the limit of 10 bytes");

  limits = JsonLimits();
  limits.max_values = 4;
  EXPECT_TRUE(ParseJson("[1,2,3]", "v.json", limits).ok());  // the array is a value too
  Result<Json> many = ParseJson("[1,2,3,4]", "v.json", limits);
  ASSERT_FALSE(many.ok());
  EXPECT_EQ(many.status().message(), "v.json: more than 4 JSON values (QUANTPATH_MAX_JSON_VALUES)");
}

// Output JSON is UTF-8 whatever the input: a folder name in another encoding cannot break it.
TEST(JsonQuote, InvalidUtf8BecomesReplacementCharacter) {
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");             // valid two-byte
  EXPECT_EQ(JsonQuote("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");   // valid four-byte
  EXPECT_EQ(JsonQuote("model-\xe9"), "\"model-\\ufffd\"");            // Latin-1 é
  EXPECT_EQ(JsonQuote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");             // overlong '/'
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate
  EXPECT_EQ(JsonQuote("\xe2\x82"), "\"\\ufffd\\ufffd\"");             // cut short
  Result<Json> parsed = ParseJson(JsonQuote("model-\xe9\x80"), "out.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->string_value(), "model-\xef\xbf\xbd\xef\xbf\xbd");
}

class ReadFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("quantpath_readfile_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ReadFileTest, SpecialFilesAreRefusedWithoutBlocking) {
  const fs::path fifo = dir_ / "config.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Result<std::string> r = ReadFile(fifo);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(fifo.string() + ": not a regular file"), std::string::npos);

  const fs::path link = dir_ / "model.safetensors.index.json";
  fs::create_symlink("/dev/zero", link);
  r = ReadFile(link);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos);

  r = ReadFile(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos);
}

TEST_F(ReadFileTest, SizeLimitNamesTheSetting) {
  const fs::path file = dir_ / "config.json";
  std::ofstream(file) << "{\"a\": 1}";
  Result<std::string> whole = ReadFile(file);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, "{\"a\": 1}");
  Result<std::string> capped = ReadFile(file, 4, "QUANTPATH_MAX_JSON_BYTES");
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.status().message(),
            file.string() + ": 8 bytes, over the limit of 4 bytes (QUANTPATH_MAX_JSON_BYTES)");
}

// Each variable of InputLimits, read from the environment; an unusable value names it.
TEST(InputLimits, EveryVariableChangesItsLimit) {
  struct Setting {
    const char* variable;
    int64_t InputLimits::*field;
  };
  const Setting settings[] = {
      {"QUANTPATH_MAX_HEADER_BYTES", &InputLimits::header_bytes},
      {"QUANTPATH_MAX_TENSORS", &InputLimits::tensors},
      {"QUANTPATH_MAX_SHARDS", &InputLimits::shards},
      {"QUANTPATH_MAX_REGEX_CHARS", &InputLimits::regex_chars},
      {"QUANTPATH_MAX_REGEX_MATCH_STEPS", &InputLimits::regex_match_steps},
      {"QUANTPATH_MAX_REGEX_PLAN_STEPS", &InputLimits::regex_plan_steps},
      {"QUANTPATH_MAX_JSON_BYTES", nullptr},
      {"QUANTPATH_MAX_JSON_VALUES", nullptr},
      {"QUANTPATH_MAX_JSON_DEPTH", nullptr},
  };
  const InputLimits defaults;
  for (const Setting& s : settings) {
    ASSERT_EQ(setenv(s.variable, "7", 1), 0);
    Result<InputLimits> read = ReadInputLimits();
    ASSERT_TRUE(read.ok()) << read.status().message();
    if (s.field != nullptr) {
      EXPECT_EQ((*read).*s.field, 7) << s.variable;
      EXPECT_NE(defaults.*s.field, 7) << s.variable;
    }
    for (const char* bad : {"0", "-3", "12x", "99999999999999999999"}) {
      ASSERT_EQ(setenv(s.variable, bad, 1), 0);
      Result<InputLimits> refused = ReadInputLimits();
      ASSERT_FALSE(refused.ok()) << s.variable << "=" << bad;
      EXPECT_EQ(
          refused.status().message().rfind(std::string(s.variable) + ": expected an integer", 0),
          0u)
          << refused.status().message();
    }
    ASSERT_EQ(unsetenv(s.variable), 0);
  }
  ASSERT_EQ(setenv("QUANTPATH_MAX_JSON_DEPTH", "9", 1), 0);
  EXPECT_EQ(ReadInputLimits()->json.max_depth, 9);
  ASSERT_EQ(setenv("QUANTPATH_MAX_JSON_BYTES", "9", 1), 0);
  EXPECT_EQ(ReadInputLimits()->json.max_bytes, 9);
  ASSERT_EQ(setenv("QUANTPATH_MAX_JSON_VALUES", "9", 1), 0);
  EXPECT_EQ(ReadInputLimits()->json.max_values, 9);
  for (const char* v :
       {"QUANTPATH_MAX_JSON_DEPTH", "QUANTPATH_MAX_JSON_BYTES", "QUANTPATH_MAX_JSON_VALUES"}) {
    ASSERT_EQ(unsetenv(v), 0);
  }
  // PCRE2 holds a match limit in 32 bits, and deeper JSON would exhaust the tree walks' stack.
  ASSERT_EQ(setenv("QUANTPATH_MAX_REGEX_MATCH_STEPS", "4294967296", 1), 0);
  EXPECT_FALSE(ReadInputLimits().ok());
  ASSERT_EQ(unsetenv("QUANTPATH_MAX_REGEX_MATCH_STEPS"), 0);
  ASSERT_EQ(setenv("QUANTPATH_MAX_JSON_DEPTH", "1025", 1), 0);
  EXPECT_FALSE(ReadInputLimits().ok());
  ASSERT_EQ(unsetenv("QUANTPATH_MAX_JSON_DEPTH"), 0);
}

}  // namespace
}  // namespace quantpath
