// Tests of RuleIndex: the literal each matcher requires must occur in every path Python says it
// matches (tests/data/patterns/python_answers.json), and the first candidate that hits is the
// per-pattern loop's first hit.
#include "src/ir/rule_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "tests/ir/python_answers.h"

namespace quantpath {
namespace {

Matcher Make(MatchKind kind, std::string pattern, RegexFlavor flavor = RegexFlavor::kPythonRe) {
  auto m = Matcher::Create(kind, std::move(pattern), flavor);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *std::move(m) : *Matcher::Create(MatchKind::kExact, "");
}

std::string Literal(MatchKind kind, std::string pattern) {
  return RequiredLiteral(Make(kind, std::move(pattern)));
}

TEST(RequiredLiteral, ReadsPythonRegexConservatively) {
  EXPECT_EQ(Literal(MatchKind::kRegexFullMatch,
                    R"((?:language_model\.)?(?:model\.layers\.0\.self_attn\.q_proj))"),
            "model.layers.0.self_attn.q_proj");
  EXPECT_EQ(Literal(MatchKind::kRegexFullMatch, R"((?:.*\.)?[^.]*q_a_proj[^.]*)"), "q_a_proj");
  EXPECT_EQ(Literal(MatchKind::kRegexMatch, R"(model\.layers\.1\.self_attn\..*)"),
            "model.layers.1.self_attn.");
  EXPECT_EQ(Literal(MatchKind::kRegexMatch, "abcd*e"), "abc");      // d may be absent
  EXPECT_EQ(Literal(MatchKind::kRegexMatch, "ab{2}cd"), "cd");      // b's count is not literal
  EXPECT_EQ(Literal(MatchKind::kRegexMatch, "(?:abc)?de"), "de");   // optional group
  EXPECT_EQ(Literal(MatchKind::kRegexMatch, "x(?:ab|cd)y"), "x");   // alternation inside
  EXPECT_EQ(Literal(MatchKind::kRegexMatch, "ab|cd"), "");          // alternation at the top
  EXPECT_EQ(Literal(MatchKind::kRegexMatch, "(?i)mlp"), "");        // flags change letters
  EXPECT_EQ(Literal(MatchKind::kRegexMatch, R"(\x41bc)"), "");      // an escape's arguments
  EXPECT_EQ(Literal(MatchKind::kRegexMatch, R"((?=mlp)\w+)"), "");  // look-ahead
  EXPECT_EQ(Literal(MatchKind::kRegexMatch, R"(.*[qk]_proj)"), "_proj");
  EXPECT_EQ(Literal(MatchKind::kGlob, "model.layers.61*"), "model.layers.61");
  EXPECT_EQ(Literal(MatchKind::kGlob, "*mlp.[gu]*"), "mlp.");
  EXPECT_EQ(Literal(MatchKind::kDottedSuffix, "o_proj"), "o_proj");
  EXPECT_EQ(Literal(MatchKind::kReverseSubstring, "experts"), "");
  EXPECT_EQ(Literal(MatchKind::kClassName, "Linear"), "");
}

// Python's answers: a pattern's literal occurs in every subject it matches.
TEST(RequiredLiteral, OccursInEveryPythonMatch) {
  std::vector<std::string> subjects;
  for (const Json& s : PythonAnswers().Find("subjects")->items())
    subjects.push_back(s.string_value());
  size_t checked = 0;
  for (const Json& c : PythonAnswers().Find("regex_cases")->items()) {
    const std::string pattern = c.Find("pattern")->string_value();
    for (const auto& [flavor_key, flavor] : {std::pair{"re", RegexFlavor::kPythonRe},
                                             std::pair{"regex", RegexFlavor::kPythonRegexModule}}) {
      const Json* answer = c.Find(flavor_key);
      if (answer == nullptr || answer->Find("error") != nullptr) continue;
      for (const auto& [list, kind] : {std::pair{"match", MatchKind::kRegexMatch},
                                       std::pair{"fullmatch", MatchKind::kRegexFullMatch}}) {
        auto m = Matcher::Create(kind, pattern, flavor);
        if (!m.ok()) continue;  // a pattern PCRE2 cannot spell is pyregex's test
        const std::string literal = RequiredLiteral(*m);
        for (const Json& hit : answer->Find(list)->items()) {
          EXPECT_NE(hit.string_value().find(literal), std::string::npos)
              << JsonQuote(pattern) << " " << flavor_key << "." << list << " literal "
              << JsonQuote(literal) << " not in " << JsonQuote(hit.string_value());
          ++checked;
        }
      }
    }
  }
  for (const Json& c : PythonAnswers().Find("matcher_cases")->items()) {
    for (MatchKind kind : {MatchKind::kExact, MatchKind::kLeadingPath, MatchKind::kDottedSuffix,
                           MatchKind::kSubstring, MatchKind::kGlob, MatchKind::kRegexMatch,
                           MatchKind::kRegexFullMatch}) {
      if (c.Find("kind")->string_value() != MatchKindName(kind)) continue;
      const std::string literal = Literal(kind, c.Find("pattern")->string_value());
      for (const Json& hit : c.Find("hits")->items()) {
        EXPECT_NE(hit.string_value().find(literal), std::string::npos)
            << MatchKindName(kind) << " " << JsonQuote(c.Find("pattern")->string_value());
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100u);
}

// Python's answers: where FullMatchNames lists a pattern's names, re.fullmatch hits exactly those
// among the subjects Python was asked about.
TEST(FullMatchNames, AreWhatPythonFullMatches) {
  EXPECT_EQ(FullMatchNames(R"((?:language_model\.)?(?:model\.norm))"),
            (std::vector<std::string>{"language_model.model.norm", "model.norm"}));
  EXPECT_EQ(FullMatchNames(R"(a\\b\-c)"), std::vector<std::string>{R"(a\b-c)"});
  for (const char* open : {R"(model\.norm?)", R"((?:model)??\.norm)", R"(model\.(?:a(?:b))?)",
                           R"(model\d)", R"(model\.[ab])", R"(a|b)", R"(model$)", "(?i:mlp)",
                           "(?:a|b)(?:c|d)(?:e|f)(?:g|h)(?:i|j)"}) {
    EXPECT_TRUE(FullMatchNames(open).empty()) << open;
  }
  std::vector<std::string> subjects;
  for (const Json& s : PythonAnswers().Find("subjects")->items())
    subjects.push_back(s.string_value());
  size_t listed = 0;
  for (const Json& c : PythonAnswers().Find("regex_cases")->items()) {
    const std::string pattern = c.Find("pattern")->string_value();
    const std::vector<std::string> names = FullMatchNames(pattern);
    if (names.empty()) continue;
    ++listed;
    std::vector<std::string> asked = subjects;
    for (const Json& s : c.Find("extra_subjects")->items()) asked.push_back(s.string_value());
    std::vector<std::string> hits;
    for (const Json& hit : c.Find("re")->Find("fullmatch")->items()) {
      hits.push_back(hit.string_value());
    }
    for (const std::string& subject : asked) {
      const bool named = std::find(names.begin(), names.end(), subject) != names.end();
      const bool python = std::find(hits.begin(), hits.end(), subject) != hits.end();
      EXPECT_EQ(named, python) << JsonQuote(pattern) << " on " << JsonQuote(subject);
    }
  }
  EXPECT_GE(listed, 4u);
}

Rule MakeRule(MatchKind kind, std::string pattern) {
  Rule rule;
  rule.matcher = Make(kind, std::move(pattern));
  return rule;
}

// The first candidate that hits is the loop's first hit, for every subject of the answers file.
TEST(RuleIndex, FirstCandidateHitIsTheLoopsFirstHit) {
  const std::vector<Rule> rules = {
      MakeRule(MatchKind::kGlob, "model.layers.61*"),
      MakeRule(MatchKind::kRegexFullMatch, R"((?:.*\.)?[^.]*q_a_proj[^.]*)"),
      MakeRule(MatchKind::kExact, "lm_head"),
      MakeRule(MatchKind::kSubstring, "mlp.gate"),
      MakeRule(MatchKind::kReverseSubstring, "model.layers.3.mlp.experts"),
      MakeRule(MatchKind::kDottedSuffix, "down_proj"),
      MakeRule(MatchKind::kLeadingPath, "mtp"),
      MakeRule(MatchKind::kRegexMatch, R"(model\.layers\.\d+\.self_attn\.[qk]_proj)"),
      MakeRule(MatchKind::kSubstringIgnoreCase, "MLP.GATE"),
      MakeRule(MatchKind::kGlob, "*"),
      MakeRule(MatchKind::kGlob, "model.embed_tokens"),  // looked up by the whole path
      MakeRule(MatchKind::kExact, "model.embed_tokens"),
      MakeRule(MatchKind::kRegexFullMatch,
               R"((?:language_model\.)?(?:model\.embed_tokens|lm_head))"),
  };
  const RuleIndex index(rules);
  const RuleIndex untabled(rules, /*max_table_entries=*/0);  // walks the trie's edges instead
  std::vector<uint32_t> candidates;
  std::vector<uint32_t> untabled_candidates;
  size_t subjects = 0;
  for (const Json& s : PythonAnswers().Find("subjects")->items()) {
    const std::string& path = s.string_value();
    std::optional<size_t> loop;
    for (size_t i = 0; i < rules.size() && !loop; ++i) {
      if (*rules[i].matcher.Matches(path)) loop = i;
    }
    index.Candidates(path, &candidates);
    EXPECT_TRUE(std::is_sorted(candidates.begin(), candidates.end()));
    untabled.Candidates(path, &untabled_candidates);
    EXPECT_EQ(untabled_candidates, candidates) << JsonQuote(path);
    std::optional<size_t> screened;
    for (uint32_t i : candidates) {
      if (*rules[i].matcher.Matches(path)) {
        screened = i;
        break;
      }
    }
    EXPECT_EQ(screened, loop) << JsonQuote(path);
    ++subjects;
  }
  EXPECT_GT(subjects, 20u);
  // The screen rules out the rest: an embedding path reaches only the literal-free rules, `*` and
  // the rules naming it.
  index.Candidates("model.embed_tokens", &candidates);
  EXPECT_EQ(candidates, (std::vector<uint32_t>{4, 8, 9, 10, 11, 12}));
  index.Candidates("language_model.lm_head", &candidates);
  EXPECT_EQ(candidates, (std::vector<uint32_t>{4, 8, 9, 12}));
  index.Candidates("model.embed_tokens.weight", &candidates);
  EXPECT_EQ(candidates, (std::vector<uint32_t>{4, 8, 9}));
}

// An automaton too large for one row per state (thousands of long literals, as SGLang's per-layer
// rules make) walks its compact form; it finds what the edge walk finds, and every rule whose
// literal a path holds.
TEST(RuleIndex, CompactAutomatonFindsWhatTheEdgeWalkFinds) {
  std::vector<Rule> rules;
  for (int layer = 0; layer < 80; ++layer) {
    for (const char* name : {"self_attn.q_a_proj", "self_attn.kv_b_proj", "mlp.shared_experts.up",
                             "mlp.gate_proj", "self_attn.kv_a_proj_with_mqa", "mlp.down_proj",
                             "input_layernorm", "post_attention_layernorm"}) {
      rules.push_back(
          MakeRule(MatchKind::kSubstring, "model.layers." + std::to_string(layer) + "." + name));
    }
  }
  const RuleIndex compact(rules);
  const RuleIndex untabled(rules, /*max_table_entries=*/0);
  std::vector<uint32_t> got;
  std::vector<uint32_t> want;
  size_t hits = 0;
  for (int layer = 0; layer < 100; layer += 3) {
    for (const char* tail : {"self_attn.q_a_proj", "self_attn.kv_b_proj.weight", "mlp.gate_proj",
                             "mlp.gate_up_proj", "mlp.shared_experts.up_proj", "x.mlp.down_proj"}) {
      const std::string path = "model.layers." + std::to_string(layer) + "." + tail;
      compact.Candidates(path, &got);
      untabled.Candidates(path, &want);
      EXPECT_EQ(got, want) << path;
      for (size_t r = 0; r < rules.size(); ++r) {
        if (path.find(rules[r].matcher.pattern()) == std::string::npos) continue;
        EXPECT_TRUE(std::find(got.begin(), got.end(), r) != got.end()) << path;
        ++hits;
      }
    }
  }
  EXPECT_GT(hits, 100u);
}

// A path resumes the walk over the one before where they share a prefix: what the prefix held
// stays, what only the previous path held does not, and a non-ASCII byte after the prefix makes
// every rule a candidate.
TEST(RuleIndex, ConsecutivePathsSharingAPrefix) {
  const std::vector<Rule> rules = {
      MakeRule(MatchKind::kSubstring, "layers.1."),
      MakeRule(MatchKind::kDottedSuffix, "q_proj"),
      MakeRule(MatchKind::kExact, "model.layers.1.self_attn.k_proj"),
      MakeRule(MatchKind::kSubstring, "mlp"),
  };
  const RuleIndex index(rules);
  std::vector<uint32_t> candidates;
  index.Candidates("model.layers.1.self_attn.q_proj", &candidates);
  EXPECT_EQ(candidates, (std::vector<uint32_t>{0, 1}));
  index.Candidates("model.layers.1.self_attn.k_proj", &candidates);
  EXPECT_EQ(candidates, (std::vector<uint32_t>{0, 2}));
  index.Candidates("model.layers.1.self_attn.\xc3\xa9", &candidates);
  EXPECT_EQ(candidates, (std::vector<uint32_t>{0, 1, 2, 3}));
  index.Candidates("model.layers.1.mlp", &candidates);
  EXPECT_EQ(candidates, (std::vector<uint32_t>{0, 3}));
  index.Candidates("model.layers.1", &candidates);
  EXPECT_TRUE(candidates.empty());
  index.Candidates("model.layers.1.mlp", &candidates);
  EXPECT_EQ(candidates, (std::vector<uint32_t>{0, 3}));
}

// A rule repeating an earlier one in matcher and kinds is no candidate; one differing in the
// regex flavour or the kinds is.
TEST(RuleIndex, RepeatedRulesAreNoCandidates) {
  std::vector<Rule> rules = {
      MakeRule(MatchKind::kRegexFullMatch, R"((?:.*\.)?[^.]*kv_b_proj[^.]*)"),
      MakeRule(MatchKind::kRegexFullMatch, R"((?:.*\.)?[^.]*kv_b_proj[^.]*)"),
      MakeRule(MatchKind::kRegexFullMatch, R"((?:.*\.)?[^.]*kv_b_proj[^.]*)"),
      MakeRule(MatchKind::kExact, "model.layers.0.self_attn.kv_b_proj"),
      MakeRule(MatchKind::kExact, "model.layers.0.self_attn.kv_b_proj"),
  };
  rules[1].matcher = Make(MatchKind::kRegexFullMatch, R"((?:.*\.)?[^.]*kv_b_proj[^.]*)",
                          RegexFlavor::kPythonRegexModule);
  rules[4].kinds = KindBit(SiteKind::kLinear);
  const RuleIndex index(rules);
  std::vector<uint32_t> candidates;
  index.Candidates("model.layers.0.self_attn.kv_b_proj", &candidates);
  EXPECT_EQ(candidates, (std::vector<uint32_t>{0, 1, 3, 4}));
}

// An index of whole-path rules alone looks any subject up, ASCII or not.
TEST(RuleIndex, WholePathLookupsOnAnyBytes) {
  const std::vector<Rule> rules = {MakeRule(MatchKind::kExact, "model.caf\xc3\xa9"),
                                   MakeRule(MatchKind::kGlob, "lm_head"),
                                   MakeRule(MatchKind::kExact, "lm_head")};
  const RuleIndex index(rules);
  std::vector<uint32_t> candidates;
  index.Candidates("model.caf\xc3\xa9", &candidates);
  EXPECT_EQ(candidates, std::vector<uint32_t>{0});
  index.Candidates("model.cafe", &candidates);
  EXPECT_TRUE(candidates.empty());
  index.Candidates("lm_head", &candidates);
  EXPECT_EQ(candidates, (std::vector<uint32_t>{1, 2}));
  index.Candidates("lm_head.x\xc3\xa9", &candidates);
  EXPECT_TRUE(candidates.empty());
}

// Copies start without an index, so a copy's edited rules are indexed afresh.
TEST(RuleIndex, CopiedGroupIndexesItsOwnRules) {
  RuleGroup group;
  group.rules.push_back(MakeRule(MatchKind::kExact, "lm_head"));
  std::vector<uint32_t> candidates;
  IndexOf(group).Candidates("lm_head", &candidates);
  EXPECT_EQ(candidates, std::vector<uint32_t>{0});
  RuleGroup copy = group;
  copy.rules[0] = MakeRule(MatchKind::kExact, "model.embed_tokens");
  IndexOf(copy).Candidates("lm_head", &candidates);
  EXPECT_TRUE(candidates.empty());
}

}  // namespace
}  // namespace quantpath
