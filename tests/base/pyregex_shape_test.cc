// Tests of DottedShape, the PCRE2-free path of CompiledRegex: every pattern of
// tests/data/patterns/python_answers.json it takes gives Python's answer on every subject it
// answers for, it takes the shapes importers and configs write, and it leaves the rest to PCRE2.
#include "src/base/pyregex_shape.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "quantpath/base.h"
#include "tests/ir/python_answers.h"

namespace quantpath::pyregex_internal {
namespace {

bool Listed(const Json* list, const std::string& subject) {
  return list != nullptr && std::any_of(list->items().begin(), list->items().end(),
                                        [&](const Json& s) { return s.string_value() == subject; });
}

TEST(DottedShape, AgreesWithPythonOnEveryPatternItTakes) {
  const Json* subjects = PythonAnswers().Find("subjects");
  const Json* cases = PythonAnswers().Find("regex_cases");
  ASSERT_NE(subjects, nullptr);
  ASSERT_NE(cases, nullptr);
  int taken = 0;
  int answered = 0;
  for (const Json& item : cases->items()) {
    const std::string pattern = item.Find("pattern")->string_value();
    for (const char* flavor : {"re", "regex"}) {
      const Json& answers = *item.Find(flavor);
      if (answers.Find("error") != nullptr || answers.Find("unsupported") != nullptr) continue;
      const std::optional<DottedShape> shape = DottedShape::Parse(pattern);
      if (!shape) continue;
      ++taken;
      std::vector<std::string> all;
      for (const Json& s : subjects->items()) all.push_back(s.string_value());
      for (const Json& s : item.Find("extra_subjects")->items()) all.push_back(s.string_value());
      for (const std::string& subject : all) {
        for (bool full : {false, true}) {
          const std::optional<bool> got = shape->Match(subject, full);
          if (!got) continue;  // not ASCII: PCRE2 answers
          ++answered;
          EXPECT_EQ(*got, Listed(answers.Find(full ? "fullmatch" : "match"), subject))
              << flavor << (full ? " fullmatch " : " match ") << JsonQuote(pattern) << " on "
              << JsonQuote(subject);
        }
      }
    }
  }
  EXPECT_GE(taken, 16);
  EXPECT_GE(answered, 1000);
}

TEST(DottedShape, TakesTheShapesImportersAndConfigsWrite) {
  for (
      const char* pattern : {
          R"((?!(?:.*\.)?(?:qkv_proj|gate_up_proj)$)(?:.*\.)?model\.layers\.9\.self_attn\.q_b_proj(?:\..*)?)",
          R"((?:.*\.)?model\.layers\.0\.mlp\.(?:.*\.)?)"
          "x",  // not a shape: a second prefix
          R"((?:.*\.)?[^.]*kv_a_proj_with_mqa[^.]*)",
          R"(model\.layers\.9\.self_attn\..*)",
          R"(model.layers.1)",
          R"((?:model\.layers\.0\.self_attn\.q_proj))",
      }) {
    const bool second_prefix = std::string_view(pattern).find(".(?:.*") != std::string_view::npos;
    EXPECT_EQ(DottedShape::Parse(pattern).has_value(), !second_prefix) << pattern;
  }
}

TEST(DottedShape, LeavesEverythingElseToPcre2) {
  for (const char* pattern : {
           R"(model\.layers\.\d+)",
           "a+",
           "a?",
           "a{2}",
           ".*?x",
           ".*x",
           "[abc]",
           "[^.]+",
           "a|b",
           "(?:a)*",
           "(?i)a",
           "(?P<n>a)",
           "(?<=a)b",
           "(a)\\1",
           "^a",
           "a$",
           "(?:language_model\\.)?x",
           "caf\xc3\xa9",
           "",
       }) {
    EXPECT_FALSE(DottedShape::Parse(pattern).has_value()) << pattern;
  }
  const std::optional<DottedShape> shape = DottedShape::Parse(R"((?:.*\.)?x)");
  ASSERT_TRUE(shape.has_value());
  EXPECT_FALSE(shape->Match("caf\xc3\xa9.x", true).has_value());
}

TEST(DottedShape, NewlinesAndDotsAtEveryDistance) {
  // `.*` and `(?:.*\.)?` stop at "\n"; `[^.]*` crosses it.
  const std::optional<DottedShape> segments = DottedShape::Parse(R"((?:.*\.)?x(?:\..*)?)");
  const std::optional<DottedShape> last = DottedShape::Parse(R"((?:.*\.)?[^.]*x[^.]*)");
  ASSERT_TRUE(segments && last);
  for (size_t at = 0; at < 40; at += 3) {
    std::string s(40, 'a');
    s[at] = '\n';
    EXPECT_EQ(segments->Match(s + ".x", true), false) << at;
    EXPECT_EQ(segments->Match("x." + s, true), false) << at;
    EXPECT_EQ(last->Match("b." + s + "x", true), true) << at;
    EXPECT_EQ(last->Match(s + ".x", true), false) << at;
  }
  EXPECT_EQ(segments->Match("a.b.x.c.d", true), true);
  EXPECT_EQ(segments->Match("a.bx.c", true), false);
}

}  // namespace
}  // namespace quantpath::pyregex_internal
