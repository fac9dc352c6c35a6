#include <gtest/gtest.h>

#include "quantpath/base.h"

namespace quantpath {
namespace {

TEST(Json, KeepsDocumentOrderAndPointers) {
  auto r = ParseJson(R"({"z": 1, "a": {"b/c": [true, null, "x"]}, "m": 2.5})", "t.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Json& j = *r;
  ASSERT_EQ(j.members().size(), 3u);
  EXPECT_EQ(j.members()[0].first, "z");
  EXPECT_EQ(j.members()[1].first, "a");
  EXPECT_EQ(j.members()[2].first, "m");
  const Json& arr = *j.Find("a")->Find("b/c");
  EXPECT_EQ(arr.pointer(), "/a/b~1c");
  EXPECT_EQ(arr.items()[2].pointer(), "/a/b~1c/2");
  EXPECT_TRUE(j.Find("z")->is_int());
  EXPECT_FALSE(j.Find("m")->is_int());
  EXPECT_DOUBLE_EQ(j.Find("m")->number_value(), 2.5);
}

TEST(Json, DuplicateKeyNamesPointer) {
  auto r = ParseJson(R"({"q": {"bits": 4, "bits": 8}})", "config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("config.json#/q/bits"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("duplicate"), std::string::npos);
}

TEST(Json, NonFiniteNumbersNamePointer) {
  for (const char* token : {"NaN", "Infinity", "-Infinity"}) {
    std::string text = std::string(R"({"a": [1, {"s": "NaN,", "v": )") + token + "}]}";
    auto r = ParseJson(text, "c.json");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("c.json#/a/1/v"), std::string::npos)
        << r.status().message();
  }
}

TEST(Json, TypedAccessNamesPointerAndKey) {
  auto r = ParseJson(R"({"bits": "4", "ignore": ["a", 3], "n": null})", "q.json");
  ASSERT_TRUE(r.ok());
  auto bits = OptionalInt(*r, "bits", "q.json");
  ASSERT_FALSE(bits.ok());
  EXPECT_NE(bits.status().message().find("q.json#/bits"), std::string::npos);
  auto ignore = OptionalStringList(*r, "ignore", "q.json");
  ASSERT_FALSE(ignore.ok());
  EXPECT_NE(ignore.status().message().find("q.json#/ignore/1"), std::string::npos);
  auto n = OptionalInt(*r, "n", "q.json");
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->has_value());
}

TEST(Json, RoundTripsThroughWriter) {
  const char* text = R"({"a": [1, -2, 0.5, "q\"\\\n"], "b": {"c": false, "d": null}, "e": 3.0})";
  auto r = ParseJson(text, "t");
  ASSERT_TRUE(r.ok());
  auto again = ParseJson(ToJson(*r, 2), "t2");
  ASSERT_TRUE(again.ok()) << ToJson(*r, 2);
  EXPECT_EQ(*r, *again);
  EXPECT_EQ(ToJson(*r), text);
}

TEST(Json, GarbageIsAnErrorNotACrash) {
  for (const char* text : {"", "{", "[1,", "{\"a\" 1}", "\xff\xfe", "{\"a\":tru}"}) {
    EXPECT_FALSE(ParseJson(text, "bad.json").ok()) << text;
  }
}

// simdjson says what went wrong, not where: the message names the line and column of the first
// place the text breaks JSON's grammar, and what was expected there.
TEST(Json, SyntaxErrorsNameLineAndColumn) {
  const auto message = [](std::string_view text) {
    Result<Json> r = ParseJson(text, "config.json");
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(message("{\n  \"a\": 1,,\n}"),
            "config.json:2:10: not valid JSON: expected a key in double quotes (found ',')");
  EXPECT_EQ(message("{\"a\": [1, 2}"),
            "config.json:1:12: not valid JSON: expected ',' or ']' (found '}')");
  EXPECT_EQ(message("{\"a\": tru}"),
            "config.json:1:7: not valid JSON: expected a value (found 't')");
  EXPECT_EQ(
      message("{\"a\": 1} x"),
      "config.json:1:10: not valid JSON: text after the end of the JSON document (found 'x')");
  EXPECT_EQ(message("{\"a\": \"b"),
            "config.json:1:7: not valid JSON: a string that does not end (found '\"')");
  EXPECT_EQ(message("{\"a\": 01}"),
            "config.json:1:8: not valid JSON: expected ',' or '}' (found '1')");
  EXPECT_EQ(message("{\"a\": \"\\q\"}"),
            "config.json:1:9: not valid JSON: an invalid escape in a string (found 'q')");
  EXPECT_EQ(message("{\"a\":\n\t-}"),
            "config.json:2:3: not valid JSON: an invalid number (found '}')");
  EXPECT_EQ(message(""),
            "config.json:1:1: not valid JSON: expected a value, found the end of the file");
  // Text within the grammar that fails for another reason keeps simdjson's words.
  EXPECT_EQ(message("{\"\xff\": 1}").rfind("config.json: not valid JSON (", 0), 0u);
}

}  // namespace
}  // namespace quantpath
