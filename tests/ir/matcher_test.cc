// Tests of Matcher, one per MatchKind, and of every matcher case in
// tests/data/patterns/python_answers.json against the answer the Python reference (vLLM's
// is_layer_skipped_bnb, fnmatch, `in`, re) gave.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "tests/ir/python_answers.h"

namespace quantpath {
namespace {

constexpr MatchKind kAllMatchKinds[] = {
    MatchKind::kExact,          MatchKind::kLeadingPath,      MatchKind::kDottedSuffix,
    MatchKind::kSubstring,      MatchKind::kReverseSubstring, MatchKind::kSubstringIgnoreCase,
    MatchKind::kRegexMatch,     MatchKind::kRegexFullMatch,   MatchKind::kGlob,
    MatchKind::kGlobAnySegment, MatchKind::kClassName,
};

std::optional<MatchKind> KindNamed(std::string_view name) {
  for (MatchKind kind : kAllMatchKinds) {
    if (MatchKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

Matcher Make(MatchKind kind, std::string pattern, RegexFlavor flavor = RegexFlavor::kPythonRe) {
  auto m = Matcher::Create(kind, pattern, flavor);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(*m) : Matcher();
}

bool Hits(const Matcher& m, std::string_view path, std::string_view cls = {}) {
  auto r = m.Matches(path, cls);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() && *r;
}

// ---------------------------------------------------------------------------------------------
// Python's answers from the JSON.

struct MatcherCase {
  size_t index = 0;
  std::string kind;
  std::string pattern;
  std::string why;
  std::vector<std::string> hits;
};

void PrintTo(const MatcherCase& c, std::ostream* os) {
  *os << c.kind << " " << JsonQuote(c.pattern);
}

struct Subject {
  std::string path;
  std::string module_class;
};

std::vector<Subject> Subjects() {
  std::vector<Subject> subjects;
  if (const Json* list = PythonAnswers().Find("matcher_subjects")) {
    for (const Json& s : list->items()) {
      subjects.push_back({s.Find("path")->string_value(), s.Find("class")->string_value()});
    }
  }
  return subjects;
}

std::vector<MatcherCase> LoadCases() {
  std::vector<MatcherCase> cases;
  const Json* list = PythonAnswers().Find("matcher_cases");
  if (list == nullptr) return cases;
  for (const Json& item : list->items()) {
    MatcherCase c;
    c.index = cases.size();
    c.kind = item.Find("kind")->string_value();
    c.pattern = item.Find("pattern")->string_value();
    c.why = item.Find("why")->string_value();
    for (const Json& h : item.Find("hits")->items()) c.hits.push_back(h.string_value());
    cases.push_back(std::move(c));
  }
  return cases;
}

class PythonMatcherAnswers : public testing::TestWithParam<MatcherCase> {};

TEST_P(PythonMatcherAnswers, HitsLikePython) {
  const MatcherCase& c = GetParam();
  SCOPED_TRACE(c.kind + " " + JsonQuote(c.pattern) + " (" + c.why + ")");
  const std::optional<MatchKind> kind = KindNamed(c.kind);
  ASSERT_TRUE(kind.has_value()) << "no MatchKind is named " << c.kind;
  auto matcher = Matcher::Create(*kind, c.pattern);
  ASSERT_TRUE(matcher.ok()) << matcher.status().message();
  EXPECT_EQ(matcher->kind(), *kind);
  EXPECT_EQ(matcher->pattern(), c.pattern);
  for (const Subject& s : Subjects()) {
    const bool want = std::find(c.hits.begin(), c.hits.end(), s.path) != c.hits.end();
    auto got = matcher->Matches(s.path, s.module_class);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(*got, want) << JsonQuote(s.path) << " (" << s.module_class << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Patterns, PythonMatcherAnswers, testing::ValuesIn(LoadCases()),
                         [](const testing::TestParamInfo<MatcherCase>& info) {
                           return "m" + std::to_string(info.param.index) + "_" + info.param.kind;
                         });

TEST(Matcher, AnswersFileCoversEveryKindAndTheCorpus) {
  const std::vector<MatcherCase> cases = LoadCases();
  for (MatchKind kind : kAllMatchKinds) {
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const MatcherCase& c) {
      return c.kind == MatchKindName(kind);
    })) << MatchKindName(kind);
  }
  EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [](const MatcherCase& c) {
    return c.kind == "glob" && c.why.rfind("corpus:", 0) == 0;
  }));
  EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [](const MatcherCase& c) {
    return c.kind == "leading_path" && c.why.rfind("corpus:", 0) == 0;
  }));
}

// ---------------------------------------------------------------------------------------------
// One test per kind.

TEST(Matcher, KindNamesAreDistinct) {
  std::vector<std::string_view> names;
  for (MatchKind kind : kAllMatchKinds) names.push_back(MatchKindName(kind));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  EXPECT_EQ(MatchKindName(MatchKind::kGlob), "glob");
  EXPECT_EQ(MatchKindName(MatchKind::kRegexFullMatch), "regex_fullmatch");
}

TEST(Matcher, Exact) {
  const Matcher m = Make(MatchKind::kExact, "lm_head");
  EXPECT_TRUE(Hits(m, "lm_head"));
  EXPECT_FALSE(Hits(m, "model.lm_head"));
  EXPECT_FALSE(Hits(m, "lm_head.weight"));
}

TEST(Matcher, LeadingPathIsBitsandbytesSkip) {
  // vLLM is_layer_skipped_bnb: a component of the path, or the path cut after a component.
  const Matcher component = Make(MatchKind::kLeadingPath, "self_attn");
  EXPECT_TRUE(Hits(component, "model.layers.0.self_attn.q_proj"));
  EXPECT_FALSE(Hits(component, "model.layers.0.self_attn_norm"));
  const Matcher prefix = Make(MatchKind::kLeadingPath, "model.layers.1");
  EXPECT_TRUE(Hits(prefix, "model.layers.1.mlp.down_proj"));
  EXPECT_TRUE(Hits(prefix, "model.layers.1"));
  EXPECT_FALSE(Hits(prefix, "model.layers.15.mlp.down_proj"));
  const Matcher middle = Make(MatchKind::kLeadingPath, "layers.1");
  EXPECT_FALSE(Hits(middle, "model.layers.1.mlp"));  // dotted, but not a prefix
}

TEST(Matcher, DottedSuffix) {
  const Matcher m = Make(MatchKind::kDottedSuffix, "self_attn.o_proj");
  EXPECT_TRUE(Hits(m, "model.layers.0.self_attn.o_proj"));
  EXPECT_TRUE(Hits(m, "self_attn.o_proj"));
  EXPECT_FALSE(Hits(m, "model.layers.0.cross_self_attn.o_proj.x"));
  EXPECT_FALSE(Hits(m, "model.layers.0.xself_attn.o_proj"));
}

TEST(Matcher, Substring) {
  const Matcher m = Make(MatchKind::kSubstring, "mlp.gate");
  EXPECT_TRUE(Hits(m, "model.layers.1.mlp.gate"));
  EXPECT_TRUE(Hits(m, "model.layers.1.mlp.gate_up_proj"));  // vLLM's substring quirk
  EXPECT_FALSE(Hits(m, "model.layers.1.MLP.GATE"));
}

TEST(Matcher, ReverseSubstring) {
  const Matcher m = Make(MatchKind::kReverseSubstring, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_TRUE(Hits(m, "model.layers.0.self_attn.q_proj"));
  EXPECT_TRUE(Hits(m, "self_attn"));
  EXPECT_FALSE(Hits(m, "model.layers.0.self_attn.k_proj"));
}

TEST(Matcher, SubstringIgnoreCase) {
  const Matcher m = Make(MatchKind::kSubstringIgnoreCase, "MLP.Gate");
  EXPECT_TRUE(Hits(m, "model.layers.1.mlp.gate"));
  EXPECT_TRUE(Hits(m, "MODEL.LAYERS.1.MLP.GATE_PROJ"));
  EXPECT_FALSE(Hits(m, "model.layers.1.mlp.up_proj"));
}

TEST(Matcher, RegexMatchIsAnchoredAtTheStartOnly) {
  const Matcher m = Make(MatchKind::kRegexMatch, R"(model\.layers\.1)");
  EXPECT_TRUE(Hits(m, "model.layers.1.mlp"));
  EXPECT_TRUE(Hits(m, "model.layers.15.mlp"));
  EXPECT_FALSE(Hits(m, "x.model.layers.1"));
  const Matcher lookahead = Make(MatchKind::kRegexMatch, "^(?!.*experts).*$");
  EXPECT_TRUE(Hits(lookahead, "model.layers.3.mlp.down_proj"));
  EXPECT_FALSE(Hits(lookahead, "model.layers.3.mlp.experts.0.down_proj"));
}

TEST(Matcher, RegexFullMatch) {
  const Matcher m = Make(MatchKind::kRegexFullMatch, R"(.*mtp\..*proj$)");
  EXPECT_TRUE(Hits(m, "mtp.layers.0.mlp.down_proj"));
  EXPECT_FALSE(Hits(m, "mtp.fc"));
  EXPECT_FALSE(Hits(m, "mtp.layers.0.mlp.down_proj\n"));  // $ may match before it; full may not
  const Matcher prefix = Make(MatchKind::kRegexFullMatch, R"(model\.layers\.1)");
  EXPECT_FALSE(Hits(prefix, "model.layers.1.mlp"));
}

TEST(Matcher, RegexFlavorSelectsTheSyntax) {
  // (?<name>…) is a named group for the regex module (vLLM) and an error for re.
  auto re = Matcher::Create(MatchKind::kRegexMatch, R"((?<b>mlp)\.)", RegexFlavor::kPythonRe);
  ASSERT_FALSE(re.ok());
  EXPECT_EQ(re.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(re.status().message().find("(?<b>mlp)"), std::string::npos) << re.status().message();
  const Matcher module =
      Make(MatchKind::kRegexMatch, R"((?<b>mlp)\.)", RegexFlavor::kPythonRegexModule);
  EXPECT_TRUE(Hits(module, "mlp.gate"));
}

TEST(Matcher, RegexLimitIsAnErrorNamingThePattern) {
  const Matcher m = Make(MatchKind::kRegexMatch, "(a+)+$");
  auto r = m.Matches(std::string(60, 'a') + "!");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kLimit);
  EXPECT_NE(r.status().message().find("(a+)+$"), std::string::npos);
}

TEST(Matcher, GlobStarCrossesDots) {
  const Matcher m = Make(MatchKind::kGlob, "model.layers.*.self_attn*");
  EXPECT_TRUE(Hits(m, "model.layers.0.self_attn"));
  EXPECT_TRUE(Hits(m, "model.layers.12.self_attn.q_proj"));
  EXPECT_TRUE(Hits(m, "model.layers.a.b.self_attn"));
  EXPECT_FALSE(Hits(m, "model.layers.0.mlp"));
  const Matcher sets = Make(MatchKind::kGlob, "layer[!0-4]?");
  EXPECT_TRUE(Hits(sets, "layer5x"));
  EXPECT_FALSE(Hits(sets, "layer3x"));
  EXPECT_FALSE(Hits(sets, "layer5"));
  const Matcher literal_bracket = Make(MatchKind::kGlob, "a[b");
  EXPECT_TRUE(Hits(literal_bracket, "a[b"));
  const Matcher case_sensitive = Make(MatchKind::kGlob, "LM_HEAD");
  EXPECT_FALSE(Hits(case_sensitive, "lm_head"));
}

TEST(Matcher, GlobAnySegment) {
  const Matcher m = Make(MatchKind::kGlobAnySegment, "expert?");
  EXPECT_TRUE(Hits(m, "model.layers.3.mlp.experts.7.down_proj"));
  EXPECT_FALSE(Hits(m, "model.layers.3.mlp.shared_experts.gate"));
  const Matcher dotted = Make(MatchKind::kGlobAnySegment, "mlp.*");
  EXPECT_FALSE(Hits(dotted, "model.mlp.gate"));
}

TEST(Matcher, ClassNameIsACaseInsensitiveSubstring) {
  const Matcher m = Make(MatchKind::kClassName, "linear");
  EXPECT_TRUE(Hits(m, "model.layers.0.mlp.down_proj", "RowParallelLinear"));
  EXPECT_FALSE(Hits(m, "model.layers.1.mlp.experts", "FusedMoE"));
  EXPECT_FALSE(Hits(m, "linear", ""));  // only the class is read
}

}  // namespace
}  // namespace quantpath
