// Tests of CompiledRegex against the answers CPython 3.11's `re` and the `regex` module gave for
// real config patterns and constructed syntax (tests/data/patterns/python_answers.json, written by
// generate.py beside it), plus the limits, cache, threading and error contracts.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "quantpath/base.h"
#include "src/base/pyregex.h"
#include "tests/ir/python_answers.h"

namespace quantpath {
namespace {

// One pattern of python_answers.json with what both Python flavours said about it.
struct RegexCase {
  size_t index = 0;
  std::string pattern;
  std::string why;
  std::vector<std::string> subjects;  // the shared subjects, then the case's extra ones
  Json re;
  Json regex;
};

// gtest prints a failing parameter with this instead of its bytes.
void PrintTo(const RegexCase& c, std::ostream* os) { *os << JsonQuote(c.pattern); }

std::vector<RegexCase> LoadCases() {
  std::vector<RegexCase> cases;
  const Json* subjects = PythonAnswers().Find("subjects");
  const Json* list = PythonAnswers().Find("regex_cases");
  if (subjects == nullptr || list == nullptr) return cases;
  for (const Json& item : list->items()) {
    RegexCase c;
    c.index = cases.size();
    c.pattern = item.Find("pattern")->string_value();
    c.why = item.Find("why")->string_value();
    for (const Json& s : subjects->items()) c.subjects.push_back(s.string_value());
    for (const Json& s : item.Find("extra_subjects")->items())
      c.subjects.push_back(s.string_value());
    c.re = *item.Find("re");
    c.regex = *item.Find("regex");
    cases.push_back(std::move(c));
  }
  return cases;
}

bool Listed(const Json* list, const std::string& subject) {
  if (list == nullptr) return false;
  return std::any_of(list->items().begin(), list->items().end(),
                     [&](const Json& s) { return s.string_value() == subject; });
}

// Checks one flavour of one case: the Python error, kUnsupported, or every answer.
void CheckFlavor(const RegexCase& c, PyRegexFlavor flavor, const Json& expected) {
  const char* name = flavor == PyRegexFlavor::kRe ? "re" : "regex";
  SCOPED_TRACE(std::string(name) + " " + JsonQuote(c.pattern) + " (" + c.why + ")");
  auto compiled = CompiledRegex::Compile(c.pattern, flavor);
  if (const Json* error = expected.Find("error")) {
    ASSERT_FALSE(compiled.ok()) << "Python: " << error->string_value();
    EXPECT_EQ(compiled.status().code(), ErrorCode::kInvalidInput) << compiled.status().message();
    EXPECT_NE(compiled.status().message().find(JsonQuote(c.pattern)), std::string::npos)
        << "the message names the pattern: " << compiled.status().message();
    return;
  }
  if (expected.Find("unsupported") != nullptr) {
    ASSERT_FALSE(compiled.ok());
    EXPECT_EQ(compiled.status().code(), ErrorCode::kUnsupported) << compiled.status().message();
    return;
  }
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  for (const std::string& subject : c.subjects) {
    for (bool full : {false, true}) {
      auto got = (*compiled)->Match(subject, full);
      ASSERT_TRUE(got.ok()) << got.status().message();
      const bool want = Listed(expected.Find(full ? "fullmatch" : "match"), subject);
      EXPECT_EQ(*got, want) << (full ? "fullmatch " : "match ") << JsonQuote(subject)
                            << " via PCRE2 " << (*compiled)->pcre2_pattern();
    }
  }
}

class PythonAnswers : public testing::TestWithParam<RegexCase> {};

TEST_P(PythonAnswers, MatchesLikePython) {
  CheckFlavor(GetParam(), PyRegexFlavor::kRe, GetParam().re);
  CheckFlavor(GetParam(), PyRegexFlavor::kRegexModule, GetParam().regex);
}

INSTANTIATE_TEST_SUITE_P(Patterns, PythonAnswers, testing::ValuesIn(LoadCases()),
                         [](const testing::TestParamInfo<RegexCase>& info) {
                           std::string name = "p" + std::to_string(info.param.index) + "_";
                           for (char ch : info.param.why.substr(0, 40)) {
                             name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           }
                           return name;
                         });

TEST(PyRegex, AnswersFileCoversTheCorpusAndRejections) {
  const std::vector<RegexCase> cases = LoadCases();
  EXPECT_GE(cases.size(), 60u);
  const auto count = [&](auto pred) { return std::count_if(cases.begin(), cases.end(), pred); };
  EXPECT_GE(count([](const RegexCase& c) { return c.why.rfind("corpus:", 0) == 0; }), 10);
  EXPECT_GE(count([](const RegexCase& c) { return c.re.Find("error") != nullptr; }), 20);
}

TEST(PyRegex, RealConfigPatterns) {
  // The look-ahead of a real compressed-tensors ignore list, and a GPTQ dynamic key.
  auto not_experts = CompiledRegex::Compile("^(?!.*experts).*$", PyRegexFlavor::kRe);
  ASSERT_TRUE(not_experts.ok()) << not_experts.status().message();
  EXPECT_TRUE(*(*not_experts)->Match("model.layers.0.mlp.down_proj", true));
  EXPECT_FALSE(*(*not_experts)->Match("model.layers.0.mlp.experts.3.down_proj", true));
  auto layers = CompiledRegex::Compile(R"(.*\.layers\.(1[0-9]|2[0-9])\..*)", PyRegexFlavor::kRe);
  ASSERT_TRUE(layers.ok());
  EXPECT_TRUE(*(*layers)->Match("model.layers.17.mlp.down_proj", false));
  EXPECT_FALSE(*(*layers)->Match("model.layers.7.mlp.down_proj", false));
  EXPECT_FALSE(*(*layers)->Match("model.layers.170.mlp.down_proj", false));
}

TEST(PyRegex, PythonSyntaxIsMappedExplicitly) {
  const auto translated = [](std::string_view pattern) {
    auto c = CompiledRegex::Compile(pattern, PyRegexFlavor::kRe);
    return c.ok() ? (*c)->pcre2_pattern() : c.status().message();
  };
  EXPECT_EQ(translated(R"(a\Z)"), R"(a\z)");
  EXPECT_EQ(translated(R"(a{,3})"), "a{0,3}");
  EXPECT_EQ(translated(R"((?P<x>a)(?P=x))"), R"((a)\g{1})");
  // Every literal that could mean something to PCRE2 is spelled \x{…}.
  EXPECT_EQ(translated("a.b-c"), R"(a.b\x{2d}c)");
}

TEST(PyRegex, DollarMatchesBeforeAFinalNewline) {
  auto c = CompiledRegex::Compile("proj$", PyRegexFlavor::kRe);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(*(*c)->Match("proj\n", false));
  EXPECT_FALSE(*(*c)->Match("proj\n", true));  // fullmatch must consume the newline
  EXPECT_FALSE(*(*c)->Match("proj\n\n", false));
}

TEST(PyRegex, PythonRejectionsAreErrorsNamingThePattern) {
  for (const char* pattern : {"(", R"(a\z)", "*x", "a**", R"(\p{L})", "(?<=a+)b", "[b-a]"}) {
    auto c = CompiledRegex::Compile(pattern, PyRegexFlavor::kRe);
    ASSERT_FALSE(c.ok()) << pattern;
    EXPECT_EQ(c.status().code(), ErrorCode::kInvalidInput) << pattern;
    EXPECT_NE(c.status().message().find(JsonQuote(pattern)), std::string::npos)
        << c.status().message();
    EXPECT_NE(c.status().message().find("at position"), std::string::npos);
  }
}

TEST(PyRegex, RegexModuleFlavorAcceptsItsExtensions) {
  auto z = CompiledRegex::Compile(R"(.*proj\z)", PyRegexFlavor::kRegexModule);
  ASSERT_TRUE(z.ok()) << z.status().message();
  EXPECT_FALSE(*(*z)->Match("q_proj\n", false));
  auto named = CompiledRegex::Compile(R"((?<b>mlp)\.\g<b>)", PyRegexFlavor::kRegexModule);
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_TRUE(*(*named)->Match("mlp.mlp", true));
  // Its extensions without a PCRE2 spelling are kUnsupported, never a different meaning.
  auto lookbehind = CompiledRegex::Compile("(?<=a|bc)x", PyRegexFlavor::kRegexModule);
  ASSERT_FALSE(lookbehind.ok());
  EXPECT_EQ(lookbehind.status().code(), ErrorCode::kUnsupported);
}

TEST(PyRegex, CatastrophicBacktrackingIsALimitErrorNotAHang) {
  // Python would take about 2^60 steps here. PCRE2 (JIT or not) stops at the match limit; the
  // answer is a kLimit error naming the pattern, or (should PCRE2 ever see through it) a correct
  // "no match". Either way it must come back quickly.
  const std::string subject = std::string(60, 'a') + "!";
  for (const char* pattern : {"(a+)+$", "(a|aa)+$", "(.*a){20}$"}) {
    auto c = CompiledRegex::Compile(pattern, PyRegexFlavor::kRe);
    ASSERT_TRUE(c.ok()) << c.status().message();
    RegexStepBudget budget(int64_t{1} << 40);
    auto got = (*c)->Match(subject, false);
    // The runs under 32, 512, 8192 and 131072 steps, and the last at the per-match limit.
    EXPECT_EQ(budget.spent(), 1'139'808) << pattern;
    if (got.ok()) {
      EXPECT_FALSE(*got) << pattern;
    } else {
      EXPECT_EQ(got.status().code(), ErrorCode::kLimit) << got.status().message();
      EXPECT_NE(got.status().message().find(JsonQuote(pattern)), std::string::npos);
    }
  }
  // With this PCRE2 build the first one does hit the limit: the documented outcome.
  auto nested = CompiledRegex::Compile("(a+)+$", PyRegexFlavor::kRe);
  auto got = (*nested)->Match(subject, false);
  EXPECT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kLimit);
}

// Steps are counted per plan: ordinary matches cost one run under the first tier, a backtracking
// one the tiers it needed, and once the budget is spent every later match is the budget's error.
TEST(RegexStepBudget, ChargesTiersAndStopsWhenSpent) {
  auto plain = CompiledRegex::Compile(R"(model\.layers\.\d+\.mlp\..*)", PyRegexFlavor::kRe);
  auto slow = CompiledRegex::Compile("(?:.*.*.*.*)[0-9]{9}", PyRegexFlavor::kRe);
  ASSERT_TRUE(plain.ok() && slow.ok());
  const std::string path = "model.layers.100.mlp.gate_proj";
  {
    RegexStepBudget budget(1'000'000);
    EXPECT_TRUE(*(*plain)->Match(path, true));
    EXPECT_FALSE(*(*plain)->Match("lm_head", true));
    EXPECT_EQ(budget.spent(), 64);  // 32 per match
    Result<bool> backtracked = (*slow)->Match(path, false);
    ASSERT_TRUE(backtracked.ok()) << backtracked.status().message();
    EXPECT_FALSE(*backtracked);
    // About 61k steps here: the runs under 32, 512, 8192 and 131072 steps.
    EXPECT_EQ(budget.spent(), 64 + 32 + 512 + 8192 + 131072);
    EXPECT_EQ(budget.limit_error(), nullptr);
  }
  {
    RegexStepBudget budget(50'000);
    Result<bool> spent = (*slow)->Match(path, false);
    ASSERT_FALSE(spent.ok());
    EXPECT_EQ(spent.status().code(), ErrorCode::kLimit);
    EXPECT_EQ(spent.status().message(),
              "regex \"(?:.*.*.*.*)[0-9]{9}\" on \"model.layers.100.mlp.gate_proj\": hit the regex "
              "step budget of one plan (50000 steps, QUANTPATH_MAX_REGEX_PLAN_STEPS); the rules "
              "together backtrack too much to decide");
    EXPECT_EQ(budget.spent(), 50'000);
    ASSERT_NE(budget.limit_error(), nullptr);
    EXPECT_EQ(budget.limit_error()->message(), spent.status().message());
    // Spent: even a match of a few steps is refused, without running.
    EXPECT_FALSE((*plain)->Match(path, true).ok());
    {
      // An inner budget is charged instead, and the outer one is back when it ends.
      RegexStepBudget inner(1000);
      EXPECT_TRUE(*(*plain)->Match(path, true));
      EXPECT_EQ(inner.spent(), 32);
    }
    EXPECT_FALSE((*plain)->Match(path, true).ok());
  }
  // Without a budget only the per-match limit applies.
  EXPECT_TRUE(*(*plain)->Match(path, true));
  EXPECT_FALSE(*(*slow)->Match(path, false));
}

TEST(PyRegex, CompileIsCachedPerPatternAndFlavor) {
  auto a = CompiledRegex::Compile("cache.*me", PyRegexFlavor::kRe);
  auto b = CompiledRegex::Compile("cache.*me", PyRegexFlavor::kRe);
  auto c = CompiledRegex::Compile("cache.*me", PyRegexFlavor::kRegexModule);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_NE(a->get(), c->get());
  EXPECT_EQ((*c)->flavor(), PyRegexFlavor::kRegexModule);
  EXPECT_GE(CompiledRegex::CacheSize(), 2u);
  EXPECT_LE(CompiledRegex::CacheSize(), kPyRegexCacheCapacity);
}

TEST(PyRegex, ThreadsShareCompiledPatterns) {
  auto c = CompiledRegex::Compile(R"(model\.layers\.(\d+)\.mlp\..*_proj)", PyRegexFlavor::kRe);
  ASSERT_TRUE(c.ok());
  std::vector<int> wrong(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string path = "model.layers." + std::to_string(i) + ".mlp.down_proj";
        auto m =
            CompiledRegex::Compile(R"(model\.layers\.(\d+)\.mlp\..*_proj)", PyRegexFlavor::kRe);
        auto hit = (*m)->Match(path, true);
        auto miss = (*c)->Match(path + ".bias", true);
        if (!hit.ok() || !*hit || !miss.ok() || *miss) ++wrong[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int w : wrong) EXPECT_EQ(w, 0);
}

TEST(PyRegex, UntrustedInputLimits) {
  const std::string deep = std::string(300, '(') + std::string(300, ')');
  auto nested = CompiledRegex::Compile(deep, PyRegexFlavor::kRe);
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.status().code(), ErrorCode::kLimit);

  const std::string shallow = std::string(150, '(') + "a" + std::string(150, ')');
  EXPECT_TRUE(CompiledRegex::Compile(shallow, PyRegexFlavor::kRe).ok());

  auto long_pattern = CompiledRegex::Compile(std::string(100000, 'a'), PyRegexFlavor::kRe);
  ASSERT_FALSE(long_pattern.ok());
  EXPECT_EQ(long_pattern.status().code(), ErrorCode::kLimit);
}

TEST(PyRegex, Utf8IsRequired) {
  auto bad_pattern = CompiledRegex::Compile("a\xff", PyRegexFlavor::kRe);
  ASSERT_FALSE(bad_pattern.ok());
  EXPECT_EQ(bad_pattern.status().code(), ErrorCode::kInvalidInput);

  auto c = CompiledRegex::Compile("a.*", PyRegexFlavor::kRe);
  ASSERT_TRUE(c.ok());
  auto bad_subject = (*c)->Match("a\xc3", false);
  ASSERT_FALSE(bad_subject.ok());
  EXPECT_EQ(bad_subject.status().code(), ErrorCode::kInvalidInput);
  // Characters, not bytes: '.' takes the two bytes of "é" at once.
  auto one = CompiledRegex::Compile("a.", PyRegexFlavor::kRe);
  EXPECT_TRUE(*(*one)->Match("a\xc3\xa9", true));
}

TEST(PyRegex, EmptyPatternAndSubject) {
  auto empty = CompiledRegex::Compile("", PyRegexFlavor::kRe);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(*(*empty)->Match("anything", false));
  EXPECT_FALSE(*(*empty)->Match("anything", true));
  EXPECT_TRUE(*(*empty)->Match("", true));
  EXPECT_TRUE(*(*empty)->Match(std::string_view(), true));
}

TEST(PyRegex, PcreVerbsInThePatternAreNeverVerbs) {
  // "(*LIMIT_MATCH=1)" would lower the limit for PCRE2; for Python it is "nothing to repeat".
  auto c = CompiledRegex::Compile("(*LIMIT_MATCH=1)a", PyRegexFlavor::kRe);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kInvalidInput);
  auto literal = CompiledRegex::Compile(R"(\(\*UTF\)x)", PyRegexFlavor::kRe);
  ASSERT_TRUE(literal.ok());
  EXPECT_TRUE(*(*literal)->Match("(*UTF)x", true));
}

}  // namespace
}  // namespace quantpath
