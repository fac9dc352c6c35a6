// DottedShape: see pyregex_shape.h. Each piece keeps Python's meaning exactly: `.` and `.*` never
// cross "\n", `[^.]*` does, `$` holds at the end or before a final "\n".
#include "src/base/pyregex_shape.h"

#include <cctype>

namespace quantpath::pyregex_internal {
namespace {

bool IsQuantifier(char c) { return c == '*' || c == '+' || c == '?' || c == '{'; }
bool IsMeta(char c) {
  return std::string_view(".^$*+?{}[]\\|()").find(c) != std::string_view::npos;
}

class Reader {
 public:
  explicit Reader(std::string_view p) : p_(p) {}
  bool Take(std::string_view s) {
    if (!p_.substr(i_).starts_with(s)) return false;
    i_ += s.size();
    return true;
  }
  bool At(std::string_view s) const { return p_.substr(i_).starts_with(s); }
  bool Done() const { return i_ == p_.size(); }
  std::string_view Rest() const { return p_.substr(i_); }
  // One literal character (plain, or escaped punctuation) not followed by a quantifier.
  bool Literal(char* out) {
    if (Done()) return false;
    char c = p_[i_];
    size_t size = 1;
    if (c == '\\') {
      if (i_ + 1 >= p_.size()) return false;
      c = p_[i_ + 1];
      // Escaped letters and digits are classes, anchors, codes or references.
      if (static_cast<unsigned char>(c) >= 0x80 || std::isalnum(static_cast<unsigned char>(c))) {
        return false;
      }
      size = 2;
    } else if (static_cast<unsigned char>(c) >= 0x80 || IsMeta(c)) {
      return false;
    }
    if (i_ + size < p_.size() && IsQuantifier(p_[i_ + size])) return false;
    i_ += size;
    *out = c;
    return true;
  }

 private:
  std::string_view p_;
  size_t i_ = 0;
};

bool NoNewline(std::string_view s, size_t from) {
  return s.find('\n', from) == std::string_view::npos;
}

// The first '.' at or after `from`, or the end.
size_t NextDot(std::string_view s, size_t from) {
  const size_t dot = s.find('.', from);
  return dot == std::string_view::npos ? s.size() : dot;
}

// Where `(?:.*\.)?` can end: the start, and after every '.' that no "\n" precedes.
template <typename F>
bool AnyLeadingSegments(std::string_view s, bool any, F&& from) {
  if (from(0)) return true;
  if (!any) return false;
  for (size_t i = 0; i < s.size() && s[i] != '\n'; ++i) {
    if (s[i] == '.' && from(i + 1)) return true;
  }
  return false;
}

}  // namespace

std::optional<DottedShape> DottedShape::Parse(std::string_view pattern) {
  Reader r(pattern);
  DottedShape shape;
  if (r.Take(R"((?!(?:.*\.)?(?:)")) {
    shape.not_last_.emplace_back();
    while (!r.Take(")$)")) {
      char c = 0;
      if (r.Take("|")) {
        shape.not_last_.emplace_back();
      } else if (r.Literal(&c)) {
        shape.not_last_.back() += c;
      } else {
        return std::nullopt;
      }
    }
  }
  shape.any_leading_segments_ = r.Take(R"((?:.*\.)?)");
  const bool wrapped = r.Take("(?:");
  shape.lead_non_dots_ = r.Take("[^.]*");
  while (!r.Done()) {
    char c = 0;
    if (r.At("[^.]*")) {
      r.Take("[^.]*");
      shape.trail_non_dots_ = true;
      break;
    }
    if (r.At(".*") || r.At(")") || r.At("(")) break;  // the tail, or the wrap's end
    if (r.Take(".")) {
      if (!r.Done() && IsQuantifier(r.Rest()[0])) return std::nullopt;
      c = '.';
      shape.any_char_ += '\1';
    } else if (r.Literal(&c)) {
      shape.any_char_ += '\0';
    } else {
      return std::nullopt;
    }
    shape.body_ += c;
  }
  if (shape.body_.empty()) return std::nullopt;
  if (wrapped && !r.Take(")")) return std::nullopt;
  if (r.Rest() == ".*") {
    shape.tail_ = Tail::kAnyRun;
  } else if (r.Rest() == R"((?:\..*)?)") {
    shape.tail_ = Tail::kDottedRun;
  } else if (!r.Done()) {
    return std::nullopt;
  }
  return shape;
}

bool DottedShape::BodyAt(std::string_view s, size_t at) const {
  if (at + body_.size() > s.size()) return false;
  for (size_t k = 0; k < body_.size(); ++k) {
    const char c = s[at + k];
    if (any_char_[k] != 0 ? c == '\n' : c != body_[k]) return false;
  }
  return true;
}

bool DottedShape::EndsFrom(std::string_view s, size_t at, bool full) const {
  if (!full) return true;  // every tail can match nothing
  const auto ends = [&](size_t e) {
    switch (tail_) {
      case Tail::kNone:
        return e == s.size();
      case Tail::kAnyRun:
        return NoNewline(s, e);
      case Tail::kDottedRun:
        return e == s.size() || (s[e] == '.' && NoNewline(s, e + 1));
    }
    return false;
  };
  if (!trail_non_dots_) return ends(at);
  // [^.]* stops at the next dot at the latest; ending anywhere before it only shortens the match.
  const size_t last = NextDot(s, at);
  for (size_t e = at; e <= last; ++e) {
    if (ends(e)) return true;
  }
  return false;
}

std::optional<bool> DottedShape::Match(std::string_view s, bool full) const {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return std::nullopt;
  }
  if (!not_last_.empty()) {
    // The guard: no leading segments followed by one of the names and `$` (the end, or before a
    // final "\n"). Where a name would start is fixed by its length.
    const size_t lines = s.find('\n');
    for (const std::string& name : not_last_) {
      for (size_t end : {s.size(), s.size() - (!s.empty() && s.back() == '\n')}) {
        if (end < name.size()) continue;
        const size_t at = end - name.size();
        const bool leading =
            at == 0 || (s[at - 1] == '.' && (lines == std::string_view::npos || lines >= at));
        if (leading && s.compare(at, name.size(), name) == 0) return false;
      }
    }
  }
  return AnyLeadingSegments(s, any_leading_segments_, [&](size_t start) {
    const size_t last = lead_non_dots_ ? NextDot(s, start) : start;
    for (size_t b = start; b <= last; ++b) {
      if (BodyAt(s, b) && EndsFrom(s, b + body_.size(), full)) return true;
    }
    return false;
  });
}

}  // namespace quantpath::pyregex_internal
