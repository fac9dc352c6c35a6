// Python-compatible regular expressions on PCRE2, for patterns read from untrusted config files.
//
// Goals: the answers Python's `re.match` / `re.fullmatch` (or the third-party `regex` module, which
// vLLM uses) give, including look-around; Python-only syntax mapped explicitly (`\Z`,
// `(?P<name>…)`, `(?P=name)`, `{,n}`); a match limit and a bounded JIT stack, where hitting a
// limit is an error naming the pattern; a pattern Python would reject is an error.
// Non-goals: substitution, captures beyond what matching needs, std::regex.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "quantpath/base.h"

namespace quantpath {

enum class PyRegexFlavor { kRe, kRegexModule };

class CompiledRegex {
 public:
  static Result<std::shared_ptr<const CompiledRegex>> Compile(std::string_view pattern,
                                                              PyRegexFlavor flavor);
  ~CompiledRegex();
  CompiledRegex(const CompiledRegex&) = delete;
  CompiledRegex& operator=(const CompiledRegex&) = delete;

  // re.match (anchored at the start) when !full, re.fullmatch when full.
  Result<bool> Match(std::string_view subject, bool full) const;
  const std::string& pattern() const { return pattern_; }

 private:
  CompiledRegex() = default;
  struct Impl;
  std::string pattern_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace quantpath
