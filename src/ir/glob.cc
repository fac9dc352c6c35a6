// fnmatch.fnmatchcase without a regex engine: the pattern is read into tokens the way CPython
// 3.11's fnmatch.translate reads it, then matched with the classic two-pointer wildcard algorithm.
#include "src/ir/glob.h"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace quantpath {
namespace {

// UTF-8 → code points. A byte that is not part of valid UTF-8 becomes U+DC80+byte, as Python's
// "surrogateescape" does, so it matches only itself.
std::u32string Decode(std::string_view s) {
  std::u32string out;
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      out.push_back(b0);
      ++i;
      continue;
    }
    size_t extra = 0;
    char32_t c = 0;
    char32_t min = 0;
    if ((b0 & 0xE0) == 0xC0) {
      extra = 1, c = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
      extra = 2, c = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
      extra = 3, c = b0 & 0x07, min = 0x10000;
    }
    bool ok = extra > 0 && i + extra < s.size();
    for (size_t k = 1; ok && k <= extra; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      ok = (b & 0xC0) == 0x80;
      c = (c << 6) | (b & 0x3F);
    }
    ok = ok && c >= min && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
    if (!ok) {
      out.push_back(0xDC00 + b0);
      ++i;
      continue;
    }
    out.push_back(c);
    i += 1 + extra;
  }
  return out;
}

// One character of translate()'s `stuff`, as the regex set parser will see it: only an unescaped
// '-' (a range operator translate() left in place) is special.
struct SetChar {
  char32_t ch = 0;
  bool range_dash = false;
};

GlobSet ReadSet(const std::u32string& pat, size_t i, size_t j) {
  // `stuff` = pat[i:j]. Without a '-' it is taken literally; with one, translate() splits it into
  // chunks at the '-' that form ranges, drops empty ranges (z-a) by merging neighbours, and
  // escapes every other '-'.
  std::vector<std::u32string> chunks;
  const std::u32string_view stuff(pat.data() + i, j - i);
  if (stuff.find(U'-') == std::u32string_view::npos) {
    chunks.emplace_back(stuff);
  } else {
    size_t k = pat[i] == '!' ? i + 2 : i + 1;
    while (true) {
      const size_t dash = k < j ? pat.find(U'-', k) : std::u32string::npos;
      if (dash == std::u32string::npos || dash >= j) break;
      chunks.push_back(pat.substr(i, dash - i));
      i = dash + 1;
      k = dash + 3;
    }
    if (i < j) {
      chunks.push_back(pat.substr(i, j - i));
    } else {
      chunks.back() += U'-';
    }
    for (size_t c = chunks.size() - 1; c > 0; --c) {
      if (chunks[c - 1].back() > chunks[c].front()) {
        chunks[c - 1] = chunks[c - 1].substr(0, chunks[c - 1].size() - 1) + chunks[c].substr(1);
        chunks.erase(chunks.begin() + static_cast<std::ptrdiff_t>(c));
      }
    }
  }
  std::vector<SetChar> text;
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (c > 0) text.push_back({U'-', true});
    for (char32_t ch : chunks[c]) text.push_back({ch, false});
  }

  GlobSet set;
  if (text.empty()) {
    set.never = true;  // "Empty range: never match."
    return set;
  }
  if (text.size() == 1 && text[0].ch == '!' && !text[0].range_dash) {
    set.any = true;  // "Negated empty range: match any character."
    return set;
  }
  size_t p = 0;
  if (text[0].ch == '!' && !text[0].range_dash) {
    set.negate = true;
    p = 1;
  }
  // The regex set parser: an element, then '-' and another element make a range; a '-' right
  // before the closing ']' is literal, as is one where an element is expected.
  while (p < text.size()) {
    const char32_t first = text[p++].ch;
    if (p < text.size() && text[p].range_dash) {
      if (p + 1 >= text.size()) {
        set.ranges.push_back({first, first});
        set.ranges.push_back({U'-', U'-'});
        break;
      }
      // Chunk merging leaves every range ascending, so Python never raises "bad range" here.
      set.ranges.push_back({first, text[p + 1].ch});
      p += 2;
      continue;
    }
    set.ranges.push_back({first, first});
  }
  return set;
}

void ParseGlob(const std::u32string& pat, std::vector<GlobToken>* tokens,
               std::vector<GlobSet>* sets) {
  const size_t n = pat.size();
  size_t i = 0;
  while (i < n) {
    const char32_t c = pat[i++];
    if (c == '*') {
      if (tokens->empty() || tokens->back().kind != GlobToken::kStar) {
        tokens->push_back({GlobToken::kStar});
      }
    } else if (c == '?') {
      tokens->push_back({GlobToken::kAny});
    } else if (c == '[') {
      size_t j = i;
      if (j < n && pat[j] == '!') ++j;
      if (j < n && pat[j] == ']') ++j;
      while (j < n && pat[j] != ']') ++j;
      if (j >= n) {
        tokens->push_back({GlobToken::kLiteral, U'['});  // no closing ']': a literal '['
        continue;
      }
      sets->push_back(ReadSet(pat, i, j));
      tokens->push_back({GlobToken::kSet, 0, sets->size() - 1});
      i = j + 1;
    } else {
      tokens->push_back({GlobToken::kLiteral, c});
    }
  }
}

char32_t CodePoint(char c) { return static_cast<unsigned char>(c); }
char32_t CodePoint(char32_t c) { return c; }

// Whether every byte is ASCII: such a text's bytes are its code points.
bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

bool GlobSet::Contains(char32_t c) const {
  if (never) return false;
  if (any) return true;
  bool in = false;
  for (const auto& [lo, hi] : ranges) in = in || (lo <= c && c <= hi);
  return in != negate;
}

Glob::Glob(std::string_view pattern) : pattern_(pattern) {
  ParseGlob(Decode(pattern), &tokens_, &sets_);
  for (const GlobToken& t : tokens_) literal_ = literal_ && t.kind == GlobToken::kLiteral;
}

// `text` holds code points: an ASCII name's bytes are its code points, so it is matched as is.
template <typename Text>
bool Glob::MatchesText(const Text& text) const {
  const auto one = [&](const GlobToken& t, char32_t c) {
    switch (t.kind) {
      case GlobToken::kLiteral:
        return t.ch == c;
      case GlobToken::kAny:
        return true;  // DOTALL: newlines too
      case GlobToken::kSet:
        return sets_[t.set].Contains(c);
      case GlobToken::kStar:
        return false;
    }
    return false;
  };
  // Each token but '*' consumes exactly one character, so on a mismatch it is enough to let the
  // most recent '*' absorb one more character and retry.
  size_t t = 0;
  size_t s = 0;
  size_t star = std::string::npos;
  size_t star_s = 0;
  while (s < text.size()) {
    if (t < tokens_.size() && tokens_[t].kind == GlobToken::kStar) {
      star = t++;
      star_s = s;
    } else if (t < tokens_.size() && one(tokens_[t], CodePoint(text[s]))) {
      ++t;
      ++s;
    } else if (star != std::string::npos) {
      t = star + 1;
      s = ++star_s;
    } else {
      return false;
    }
  }
  while (t < tokens_.size() && tokens_[t].kind == GlobToken::kStar) ++t;
  return t == tokens_.size();
}

bool Glob::Matches(std::string_view name) const {
  // Decoding is one-to-one (invalid bytes become lone surrogates, which valid UTF-8 never
  // yields), so equal code points are equal bytes.
  if (literal_) return name == pattern_;
  if (IsAscii(name)) return MatchesText(name);
  return MatchesText(Decode(name));
}

bool Glob::MatchesAnySegment(std::string_view path) const {
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string_view segment =
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (Matches(segment)) return true;
    if (dot == std::string_view::npos) return false;
    start = dot + 1;
  }
}

}  // namespace quantpath
