// Shell-style globs with the semantics of Python's fnmatch on POSIX, for exclusion lists such as
// ModelOpt's `exclude_modules` ("model.layers.*.self_attn*").
//
// Goals: exactly fnmatch.fnmatchcase (os.path.normcase is the identity on POSIX): `*` matches any
// run of characters, dots and newlines included; `?` one character; `[seq]` / `[!seq]` a set, with
// CPython 3.11's reading of ranges (an empty range such as z-a is dropped) and a '[' without a
// closing ']' taken literally. Characters are Unicode code points of the UTF-8 text. Non-goals:
// escaping (fnmatch has none), case folding, path-separator rules (that is glob.glob, not fnmatch).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace quantpath {

// A bracket expression after CPython's reading: a union of ranges (a character is lo == hi),
// possibly negated; `never` and `any` are translate()'s "(?!)" and "." special cases.
struct GlobSet {
  bool negate = false;
  bool never = false;
  bool any = false;
  std::vector<std::pair<char32_t, char32_t>> ranges;

  bool Contains(char32_t c) const;
};

struct GlobToken {
  enum Kind { kLiteral, kAny, kStar, kSet } kind = kLiteral;
  char32_t ch = 0;
  size_t set = 0;
};

// A pattern read once, matched many times.
class Glob {
 public:
  explicit Glob(std::string_view pattern);
  // fnmatch.fnmatchcase(name, pattern). Linear in the product of the lengths at worst (no
  // backtracking blow-up).
  bool Matches(std::string_view name) const;
  // Whether the pattern fnmatches any one dotted segment of `path` ("a.b.c" → "a", "b", "c").
  bool MatchesAnySegment(std::string_view path) const;

 private:
  template <typename Text>
  bool MatchesText(const Text& text) const;

  std::string pattern_;
  bool literal_ = true;  // no wildcard or set: fnmatch is then byte equality
  std::vector<GlobToken> tokens_;
  std::vector<GlobSet> sets_;
};

}  // namespace quantpath
