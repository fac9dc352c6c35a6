// Python-compatible regular expressions on PCRE2, for patterns read from untrusted config files.
//
// Goals: the answers Python's `re.match` / `re.fullmatch` (or the third-party `regex` module, which
// vLLM uses) give, including look-around; Python-only syntax mapped explicitly (`\Z`,
// `(?P<name>…)`, `(?P=name)`, `{,n}`); a match limit and a bounded JIT stack, where hitting a
// limit is an error naming the pattern; a pattern Python would reject is an error.
// Non-goals: substitution, captures beyond what matching needs, std::regex.
//
// Semantics, decided against CPython 3.11 (what the engines run) and checked by differential
// tests against it (tests/data/patterns):
//  * Syntax is parsed the way re._parser does it, so the same patterns are rejected: bad escapes
//    (`\z`, `\p`, `\e` …), "nothing to repeat" (also after an anchor), "multiple repeat",
//    unbalanced parentheses, bad ranges, references to undefined or still-open groups, look-behind
//    that is not fixed-width, global flags after the start. Possessive quantifiers and atomic
//    groups are valid (3.11 added them; 3.10 rejects them).
//  * `$` matches at the end or before a final "\n"; `\Z` only at the very end; `.` excludes "\n"
//    unless (?s); (?m) `^` also matches after a final "\n"; `\B` never matches the empty string;
//    X*+ resets the captures made inside it when a later failure backtracks past it.
//  * str-pattern classes: `\d` = Nd, `\w` = str.isalnum() or '_', `\s` = str.isspace(), identical
//    to Python on every code point; a leading (?a) makes them ASCII. (?i) agrees with Python on
//    every cased code point (the Turkish I's, U+0390/U+1FD3, U+03B0/U+1FE3 and U+FB05/U+FB06 are
//    spelled out); under (?a)(?i) only A-Z and a-z fold, as in Python.
//  * kRegexModule (the `regex` package, VERSION0) reads the same syntax plus: `\z`;
//    `(?<name>…)`; `\g<name>` / `\g<N>`; inline flags (i, m, s, u) anywhere, on or off (`(?-i)`),
//    for the rest of the enclosing group; quantified anchors; references to groups defined later;
//    octal escapes up to \777. Its `\s` is White_Space, its `\w` Unicode's word class (letters,
//    marks, decimal digits, connectors), and `\B` matches the empty string. Its other extensions
//    (variable-width look-behind, `\p{…}`, POSIX classes, fuzzy `{e<=1}`, verbose (?x),
//    duplicate group names, recursion, branch reset, `\m` `\G` `\K` `\X` …) are kUnsupported
//    errors, never a different meaning.
//  * Where PCRE2 and Python walk a loop differently (a group that can match empty, repeated, whose
//    captures a reference or condition reads later), the pattern is kUnsupported.
//  * Known remaining differences: `\N{name}` and repeat counts above 65535 are kUnsupported;
//    (?i) back-references use PCRE2's folding; CPython 3.11 misses astral-plane cased letters in
//    (?i) sets with other members (a CPython bug, not reproduced); the regex module's Unicode
//    tables are newer than PCRE2's (characters assigned after Unicode 14 are not in its `\w`).
//
// Errors: kInvalidInput (Python rejects the pattern, or it is not UTF-8), kUnsupported (Python
// accepts it but it has no PCRE2 spelling with the same meaning), kLimit (pattern too long or
// nested too deeply; a match exceeding the match, depth, heap or JIT-stack limit). Messages start
// with `regex "<pattern>"`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "quantpath/base.h"

namespace quantpath {

enum class PyRegexFlavor { kRe, kRegexModule };

// Match-time limits besides the step counts of InputLimits (regex_match_steps per match,
// regex_plan_steps under a RegexStepBudget).
inline constexpr uint32_t kPyRegexDepthLimit = 10'000;  // pcre2_set_depth_limit (interpreter)
inline constexpr uint32_t kPyRegexHeapLimitKiB = 64 * 1024;
inline constexpr size_t kPyRegexJitStackBytes = 1 << 20;
// Compile() keeps this many compiled patterns; the cache is emptied when it is full.
inline constexpr size_t kPyRegexCacheCapacity = 4096;

// Steps for every CompiledRegex::Match made on this thread while it lives: one plan opens one
// (the pipeline does, per plan, explained layer, diff run and match case), so that many rules that
// each backtrack just under the per-match limit stop with a limit error instead of multiplying
// into minutes over a large model. Steps are PCRE2's own count, so the verdict does not depend on
// the machine: a match runs under limits of 32, 512, 8192, … steps (×16, up to the per-match
// limit) until one suffices, and is charged the limits of the runs it took: an ordinary match (a
// few steps) costs one run and 32 steps, a backtracking one at most 17 times the steps it needed
// and 1.07 times the time of its last run; a layer-path shape answered without PCRE2
// (pyregex_shape.h) costs 32 steps too. Budgets nest; the innermost is charged.
class RegexStepBudget {
 public:
  explicit RegexStepBudget(int64_t steps);
  ~RegexStepBudget();
  RegexStepBudget(const RegexStepBudget&) = delete;
  RegexStepBudget& operator=(const RegexStepBudget&) = delete;

  int64_t steps() const { return steps_; }
  int64_t spent() const { return spent_; }
  // The first limit error a match under this budget returned (the per-match limit, or the budget
  // spent), or null.
  const Status* limit_error() const { return limit_error_.ok() ? nullptr : &limit_error_; }

 private:
  friend class CompiledRegex;
  int64_t steps_;
  int64_t spent_ = 0;
  Status limit_error_;
  RegexStepBudget* outer_;
};

class CompiledRegex {
 public:
  // Compiles `pattern` with the syntax and meaning of `flavor`, or returns a cached compilation of
  // the same (pattern, flavor). Thread-safe; the result may be shared across threads.
  static Result<std::shared_ptr<const CompiledRegex>> Compile(std::string_view pattern,
                                                              PyRegexFlavor flavor);
  ~CompiledRegex();
  CompiledRegex(const CompiledRegex&) = delete;
  CompiledRegex& operator=(const CompiledRegex&) = delete;

  // re.match (anchored at the start) when !full, re.fullmatch when full. Thread-safe. A subject
  // that is not UTF-8 is kInvalidInput; exceeding a match limit or the thread's RegexStepBudget is
  // kLimit naming the pattern, the subject and the setting that changes the limit.
  Result<bool> Match(std::string_view subject, bool full) const;
  const std::string& pattern() const { return pattern_; }
  PyRegexFlavor flavor() const { return flavor_; }
  // The PCRE2 pattern the Python pattern was translated to (for messages and tests).
  const std::string& pcre2_pattern() const { return pcre2_pattern_; }

  // Number of patterns in the Compile() cache.
  static size_t CacheSize();

 private:
  CompiledRegex() = default;
  struct Impl;
  std::string pattern_;
  PyRegexFlavor flavor_ = PyRegexFlavor::kRe;
  std::string pcre2_pattern_;
  std::unique_ptr<Impl> impl_;

  // pcre2_match's return code under a match limit of `steps`.
  int Run(std::string_view subject, bool full, uint32_t steps) const;
};

}  // namespace quantpath
