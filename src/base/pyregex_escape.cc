// Python regex leaves → PCRE2: the entry point and tokenizer, escapes, character sets, literals
// and group references, following CPython 3.11's re._parser (Tokenizer, _escape, _class_escape and
// the '[' branch of _parse).
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "src/base/pyregex_translate.h"

namespace quantpath::pyregex_internal {
namespace {

constexpr std::u32string_view kOctDigits = U"01234567";
constexpr std::u32string_view kHexDigits = U"0123456789abcdefABCDEF";

// Python's `\s` on str patterns is str.isspace(): Unicode White_Space plus U+001C..U+001F. PCRE2's
// UCP `\s` lacks U+001C..U+001F and adds U+180E, so the set is spelled out.
constexpr std::string_view kPySpaceMembers =
    "\\t-\\r\\x{1c}-\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}"
    "\\x{202f}\\x{205f}\\x{3000}";

// The regex module's \s is the Unicode White_Space property (no U+001C..U+001F), and its \w is
// Unicode's word class (UTS #18), not PCRE2's letters, numbers and '_': it adds marks and leaves
// out numbers that are not decimal digits, such as '²'.
constexpr std::string_view kRegexSpaceMembers =
    "\\t-\\r\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}"
    "\\x{205f}\\x{3000}";
constexpr std::string_view kRegexWordMembers =
    "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}";

bool IsSurrogate(char32_t c) { return c >= 0xD800 && c <= 0xDFFF; }
bool IsAsciiAlpha(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiAlnum(char32_t c) { return IsAsciiAlpha(c) || (c >= '0' && c <= '9'); }

// Every literal but [A-Za-z0-9_] becomes \x{…}, so no character of the pattern can take on a
// PCRE2 meaning (metacharacters, (*VERB)s, POSIX classes inside sets).
std::string EscapeChar(char32_t c) {
  if (IsAsciiAlnum(c) || c == '_') return std::string(1, static_cast<char>(c));
  char buf[16];
  std::snprintf(buf, sizeof(buf), "\\x{%x}", static_cast<unsigned>(c));
  return buf;
}

uint64_t Radix(std::u32string_view digits, int base) {
  uint64_t v = 0;
  for (char32_t c : digits) {
    const int d = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    v = std::min<uint64_t>(v * base + d, uint64_t{1} << 40);
  }
  return v;
}

// Strict UTF-8: no overlong forms, surrogates or values above U+10FFFF.
bool DecodeUtf8(std::string_view in, std::u32string* out, size_t* bad_offset) {
  for (size_t i = 0; i < in.size();) {
    const auto b0 = static_cast<unsigned char>(in[i]);
    int extra = 0;
    char32_t c = 0;
    char32_t min = 0;
    if (b0 < 0x80) {
      c = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
      extra = 1, c = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
      extra = 2, c = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
      extra = 3, c = b0 & 0x07, min = 0x10000;
    } else {
      *bad_offset = i;
      return false;
    }
    if (extra > 0 && i + extra >= in.size()) {
      *bad_offset = i;
      return false;
    }
    for (int k = 1; k <= extra; ++k) {
      const auto b = static_cast<unsigned char>(in[i + k]);
      if ((b & 0xC0) != 0x80) {
        *bad_offset = i;
        return false;
      }
      c = (c << 6) | (b & 0x3F);
    }
    if (c < min || c > 0x10FFFF || IsSurrogate(c)) {
      *bad_offset = i;
      return false;
    }
    out->push_back(c);
    i += 1 + extra;
  }
  return true;
}

}  // namespace

std::string Utf8(std::u32string_view text) {
  std::string out;
  for (char32_t c : text) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

std::string Quote(std::u32string_view text) { return JsonQuote(Utf8(text)); }

bool IsPyIdentifier(std::u32string_view name) {
  if (name.empty()) return false;
  const bool ascii = std::all_of(name.begin(), name.end(), [](char32_t c) { return c < 0x80; });
  if (ascii) {
    if (!(IsAsciiAlpha(name[0]) || name[0] == '_')) return false;
    return std::all_of(name.begin(), name.end(),
                       [](char32_t c) { return IsAsciiAlnum(c) || c == '_'; });
  }
  // PCRE2 carries the same Unicode version's XID tables as CPython 3.11 (Unicode 14).
  static pcre2_code* const kIdentifier = [] {
    int error = 0;
    PCRE2_SIZE offset = 0;
    const char* kPattern = "\\A[_\\p{XID_Start}]\\p{XID_Continue}*\\z";
    return pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF,
                         &error, &offset, nullptr);
  }();
  if (kIdentifier == nullptr) return false;
  const std::string utf8 = Utf8(name);
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  if (data == nullptr) return false;
  const int rc = pcre2_match(kIdentifier, reinterpret_cast<PCRE2_SPTR>(utf8.data()), utf8.size(), 0,
                             0, data, nullptr);
  pcre2_match_data_free(data);
  return rc >= 0;
}

Result<Translation> TranslatePyRegex(std::string_view pattern, PyRegexFlavor flavor) {
  return Translator(flavor).Run(pattern);
}

Result<Translation> Translator::Run(std::string_view pattern) {
  std::u32string chars;
  size_t bad = 0;
  if (!DecodeUtf8(pattern, &chars, &bad)) {
    return InvalidInput("pattern is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  }
  QP_ASSIGN_OR_RETURN(InputLimits limits, CurrentLimits());
  if (static_cast<int64_t>(chars.size()) > limits.regex_chars) {
    return LimitError("pattern is longer than " + std::to_string(limits.regex_chars) +
                      " characters (QUANTPATH_MAX_REGEX_CHARS)");
  }
  length_ = chars.size();
  for (size_t i = 0; i < chars.size(); ++i) {
    if (chars[i] != '\\') {
      tokens_.push_back({chars[i], false, i});
      continue;
    }
    if (i + 1 == chars.size()) return Error("bad escape (end of pattern)", i);
    tokens_.push_back({chars[i + 1], true, i});
    ++i;
  }
  groups_.assign(1, std::nullopt);  // group 0, the whole match, is never "closed"

  std::string out;
  Width width;
  QP_RETURN_IF_ERROR(ParseAlternation(0, &out, &width));
  if (Peek() != nullptr) return Error("unbalanced parenthesis", Peek()->pos);
  for (const auto& [name, pos] : late_names_) {
    const bool known = std::any_of(names_.begin(), names_.end(),
                                   [&](const auto& entry) { return entry.first == name; });
    if (!known) return Error("unknown group name " + Quote(name), pos);
  }
  for (const LateReference& ref : late_references_) {
    if (ref.gid < groups_.size()) continue;
    if (ref.lenient) {
      NoteUnsupported("a condition on a group that does not exist", ref.pos);
      continue;
    }
    return Error("invalid group reference " + std::to_string(ref.gid), ref.pos);
  }
  if (empty_repeat_of_captures_ && reads_groups_) {
    NoteUnsupported(
        "a repeated group that can match the empty string, with captures that a "
        "reference or condition reads (Python and PCRE2 stop such loops differently)",
        0);
  }
  if (unsupported_) return *unsupported_;
  return Translation{std::move(out), ascii_};
}

// ---------------------------------------------------------------------------------------------
// Tokens and messages

bool Translator::Match(char32_t c) {
  if (!PeekIs(c)) return false;
  ++next_;
  return true;
}

std::u32string Translator::GetWhile(size_t n, std::u32string_view chars) {
  std::u32string out;
  while (out.size() < n) {
    const Token* t = Peek();
    if (t == nullptr || t->escape || chars.find(t->ch) == std::u32string_view::npos) break;
    out += t->ch;
    ++next_;
  }
  return out;
}

Status Translator::GetUntil(char32_t terminator, std::string_view what, std::u32string* out) {
  out->clear();
  while (true) {
    const Token* t = Get();
    if (t == nullptr) {
      if (out->empty()) return Error("missing " + std::string(what), Position());
      return Error("missing " + Utf8(std::u32string(1, terminator)) + ", unterminated name",
                   Position());
    }
    if (t->Is(terminator)) {
      if (out->empty()) return Error("missing " + std::string(what), t->pos);
      return Status();
    }
    if (t->escape) out->push_back('\\');
    out->push_back(t->ch);
  }
}

size_t Translator::Position() const { return Peek() != nullptr ? Peek()->pos : length_; }

Status Translator::Error(std::string message, size_t pos) const {
  return InvalidInput(std::move(message) + " at position " + std::to_string(pos));
}

Status Translator::Unsupported(std::string message, size_t pos) const {
  return ::quantpath::Unsupported(std::move(message) + " at position " + std::to_string(pos) +
                                  " is valid Python but has no PCRE2 equivalent here");
}

void Translator::NoteUnsupported(std::string message, size_t pos) {
  if (!unsupported_) unsupported_ = Unsupported(std::move(message), pos);
}

// ---------------------------------------------------------------------------------------------
// Escapes

Status Translator::ParseCommonEscape(const Token& token, std::optional<char32_t>* literal) {
  size_t digits = 0;
  switch (token.ch) {
    case 'x':
      digits = 2;
      break;
    case 'u':
      digits = 4;
      break;
    case 'U':
      digits = 8;
      break;
    case 'N': {
      if (!Match('{')) return Error("missing {", Position());
      std::u32string name;
      QP_RETURN_IF_ERROR(GetUntil('}', "character name", &name));
      return Unsupported("a named character \\N{…} " + Quote(name), token.pos);
    }
    default:
      return Status();
  }
  const std::u32string hex = GetWhile(digits, kHexDigits);
  const std::string spelled = "\\" + Utf8(std::u32string(1, token.ch) + hex);
  if (hex.size() != digits) return Error("incomplete escape " + spelled, token.pos);
  const uint64_t value = Radix(hex, 16);
  if (value > 0x10FFFF) return Error("bad escape " + spelled, token.pos);
  *literal = static_cast<char32_t>(value);
  return Status();
}

Status Translator::ParseEscape(const Token& token, Item* item) {
  const char32_t c = token.ch;
  switch (c) {
    case 'A':
      *item = {"\\A", {0, 0}, ItemKind::kAnchor, true};
      return Status();
    case 'Z':
      *item = {"\\z", {0, 0}, ItemKind::kAnchor, true};
      return Status();
    case 'b':
    case 'B': {
      const std::string_view word = ClassMembers('w');
      if (!word.empty()) {
        // A boundary of the regex module's own \w.
        const std::string w = "[" + std::string(word) + "]";
        *item = {c == 'b' ? "(?:(?<=" + w + ")(?!" + w + ")|(?<!" + w + ")(?=" + w + "))"
                          : "(?:(?<=" + w + ")(?=" + w + ")|(?<!" + w + ")(?!" + w + "))",
                 {0, 0},
                 ItemKind::kAnchor,
                 true};
      } else if (c == 'b' || regex_module()) {
        *item = {c == 'b' ? "\\b" : "\\B", {0, 0}, ItemKind::kAnchor, true};
      } else {
        // CPython 3.11's \B never matches the empty string; PCRE2's (and the regex module's) does.
        *item = {"(?:(?!\\A\\z)\\B)", {0, 0}, ItemKind::kAnchor, true};
      }
      return Status();
    }

    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 's':
    case 'S':
      *item = SetItem(false, {SetMember{0, 0, static_cast<char>(c)}});
      return Status();
    case 'a':
      *item = LiteralItem('\a');
      return Status();
    case 'f':
      *item = LiteralItem('\f');
      return Status();
    case 'n':
      *item = LiteralItem('\n');
      return Status();
    case 'r':
      *item = LiteralItem('\r');
      return Status();
    case 't':
      *item = LiteralItem('\t');
      return Status();
    case 'v':
      *item = LiteralItem('\v');
      return Status();
    default:
      break;
  }
  std::optional<char32_t> literal;
  QP_RETURN_IF_ERROR(ParseCommonEscape(token, &literal));
  if (literal) {
    *item = LiteralItem(*literal);
    return Status();
  }
  if (c == '0') {
    *item = LiteralItem(static_cast<char32_t>(Radix(U"0" + GetWhile(2, kOctDigits), 8)));
    return Status();
  }
  if (c >= '1' && c <= '9') return ParseNumericEscape(token, item);
  if (IsAsciiAlpha(c)) {
    if (regex_module()) {
      if (c == 'z') {
        *item = {"\\z", {0, 0}, ItemKind::kAnchor, true};
        return Status();
      }
      if (c == 'g') {
        if (!Match('<')) return Unsupported("\\g without <name>", token.pos);
        std::u32string name;
        QP_RETURN_IF_ERROR(GetUntil('>', "group name", &name));
        if (IsPyIdentifier(name)) return NamedReference(name, token, item);
        if (std::all_of(name.begin(), name.end(),
                        [](char32_t d) { return d >= '0' && d <= '9'; })) {
          return GroupReference(Radix(name, 10), token, false, item);
        }
        return Error("bad character in group name " + Quote(name), token.pos);
      }
      if (std::u32string_view(U"hmpGKLMPRX").find(c) != std::u32string_view::npos) {
        return Unsupported("the regex-module escape \\" + Utf8(std::u32string(1, c)), token.pos);
      }
    }
    return Error("bad escape \\" + Utf8(std::u32string(1, c)), token.pos);
  }
  *item = LiteralItem(c);
  return Status();
}

Status Translator::ParseNumericEscape(const Token& token, Item* item) {
  // An octal escape or a decimal group reference (CPython: "sigh").
  std::u32string digits(1, token.ch);
  if (Peek() != nullptr && !Peek()->escape && Peek()->ch >= '0' && Peek()->ch <= '9') {
    digits += Get()->ch;
    const auto is_oct = [](char32_t d) { return d >= '0' && d <= '7'; };
    if (is_oct(digits[0]) && is_oct(digits[1]) && Peek() != nullptr && !Peek()->escape &&
        is_oct(Peek()->ch)) {
      digits += Get()->ch;
      const uint64_t value = Radix(digits, 8);
      if (value > 0377 && !regex_module()) {
        return Error("octal escape value \\" + Utf8(digits) + " outside of range 0-0o377",
                     token.pos);
      }
      *item = LiteralItem(static_cast<char32_t>(value));
      return Status();
    }
  }
  return GroupReference(Radix(digits, 10), token, false, item);
}

Status Translator::GroupReference(uint64_t gid, const Token& at, bool checked_now, Item* item) {
  reads_groups_ = true;
  if (gid < GroupCount()) {
    if (!GroupClosed(gid)) return Error("cannot refer to an open group", at.pos);
    QP_RETURN_IF_ERROR(CheckLookbehindGroup(gid, at, false));
    const Width width = groups_[gid] ? *groups_[gid] : Width{0, kPyMaxRepeat};
    *item = {"\\g{" + std::to_string(gid) + "}", width, ItemKind::kOther, true};
    return Status();
  }
  if (!regex_module() || checked_now) {
    return Error("invalid group reference " + std::to_string(gid), at.pos);
  }
  // The regex module accepts a reference to a group defined later (it fails until that group
  // has matched, as in PCRE2); it must exist by the end of the pattern.
  if (lookbehind_groups_) NoteUnsupported("a forward reference inside a look-behind", at.pos);
  late_references_.push_back({gid, at.pos, false});
  *item = {"\\g{" + std::to_string(gid) + "}", {0, kPyMaxRepeat}, ItemKind::kOther, true};
  return Status();
}

Status Translator::CheckLookbehindGroup(uint64_t gid, const Token& at, bool condition) {
  if (!lookbehind_groups_) return Status();
  if (!GroupClosed(gid)) {
    // The regex module refuses a back-reference to an open group but allows a condition on one.
    if (!condition) return Error("cannot refer to an open group", at.pos);
    return ReferenceProblem("cannot refer to an open group", at.pos);
  }
  if (gid >= *lookbehind_groups_) {
    return ReferenceProblem("cannot refer to group defined in the same lookbehind subpattern",
                            at.pos);
  }
  return Status();
}

Status Translator::ReferenceProblem(std::string message, size_t pos) {
  if (!regex_module()) return Error(std::move(message), pos);
  NoteUnsupported("a group reference only the regex module allows (" + message + ")", pos);
  return Status();
}

Status Translator::NamedReference(const std::u32string& name, const Token& at, Item* item) {
  auto it = std::find_if(names_.begin(), names_.end(),
                         [&](const auto& entry) { return entry.first == name; });
  if (it != names_.end()) return GroupReference(it->second, at, true, item);
  if (!regex_module()) return Error("unknown group name " + Quote(name), at.pos);
  // The regex module resolves names after parsing; an unknown one is still an error then.
  late_names_.emplace_back(name, at.pos);
  NoteUnsupported("a reference to a group named later", at.pos);
  *item = {"(?!)", {0, kPyMaxRepeat}, ItemKind::kOther, false};
  return Status();
}

Item Translator::LiteralItem(char32_t c) const {
  // A lone surrogate (\ud800) is a valid Python literal that no UTF-8 subject can contain.
  if (IsSurrogate(c)) return {"(?!)", {1, 1}, ItemKind::kUnit, false};
  if (mode_.caseless) return SetItem(false, {SetMember{c, c, 0}});
  return {EscapeChar(c), {1, 1}, ItemKind::kUnit, true};
}

// ---------------------------------------------------------------------------------------------
// Character sets

Status Translator::ParseClassEscape(const Token& token, SetMember* member) {
  const char32_t c = token.ch;
  const auto literal = [&](char32_t v) { *member = {v, v, 0}; };
  switch (c) {
    case 'a':
      literal('\a');
      return Status();
    case 'b':
      literal('\b');
      return Status();  // backspace inside a set
    case 'f':
      literal('\f');
      return Status();
    case 'n':
      literal('\n');
      return Status();
    case 'r':
      literal('\r');
      return Status();
    case 't':
      literal('\t');
      return Status();
    case 'v':
      literal('\v');
      return Status();
    case 'd':
    case 'D':
    case 's':
    case 'S':
    case 'w':
    case 'W':
      *member = {0, 0, static_cast<char>(c)};
      return Status();
    default:
      break;
  }
  std::optional<char32_t> value;
  QP_RETURN_IF_ERROR(ParseCommonEscape(token, &value));
  if (value) {
    literal(*value);
    return Status();
  }
  if (c >= '0' && c <= '7') {
    const std::u32string digits = std::u32string(1, c) + GetWhile(2, kOctDigits);
    const uint64_t v = Radix(digits, 8);
    if (v > 0377 && !regex_module()) {
      return Error("octal escape value \\" + Utf8(digits) + " outside of range 0-0o377", token.pos);
    }
    literal(static_cast<char32_t>(v));
    return Status();
  }
  if (c == '8' || c == '9') return Error("bad escape \\" + Utf8(std::u32string(1, c)), token.pos);
  if (IsAsciiAlpha(c)) {
    if (regex_module() && (c == 'p' || c == 'P' || c == 'h')) {
      return Unsupported("the regex-module escape \\" + Utf8(std::u32string(1, c)), token.pos);
    }
    return Error("bad escape \\" + Utf8(std::u32string(1, c)), token.pos);
  }
  literal(c);
  return Status();
}

Status Translator::ParseSet(const Token& open, Item* item) {
  const bool negate = Match('^');
  std::vector<SetMember> members;
  while (true) {
    const Token* next = Get();
    if (next == nullptr) return Error("unterminated character set", open.pos);
    const Token token = *next;
    if (token.Is(']') && !members.empty()) break;  // a ']' first is a literal
    SetMember first;
    if (token.escape) {
      QP_RETURN_IF_ERROR(ParseClassEscape(token, &first));
    } else {
      // The regex module reads [:alpha:] inside a set as a POSIX class; `re` as characters.
      if (regex_module() && token.ch == '[' && PeekIs(':')) {
        size_t i = next_ + 1;
        if (i < tokens_.size() && tokens_[i].Is('^')) ++i;
        const size_t name_start = i;
        while (i < tokens_.size() && !tokens_[i].escape && IsAsciiAlpha(tokens_[i].ch)) ++i;
        if (i > name_start && i + 1 < tokens_.size() && tokens_[i].Is(':') &&
            tokens_[i + 1].Is(']')) {
          return Unsupported("a POSIX class [:name:] of the regex module", token.pos);
        }
      }
      first = {token.ch, token.ch, 0};
    }
    if (!Match('-')) {
      members.push_back(first);
      continue;
    }
    const Token* after = Get();
    if (after == nullptr) return Error("unterminated character set", open.pos);
    if (after->Is(']')) {
      members.push_back(first);
      members.push_back({'-', '-', 0});
      break;
    }
    SetMember last;
    if (after->escape) {
      QP_RETURN_IF_ERROR(ParseClassEscape(*after, &last));
    } else {
      last = {after->ch, after->ch, 0};
    }
    if (first.category != 0 || last.category != 0) {
      if (regex_module()) return Unsupported("a range with a class escape as an end", token.pos);
      return Error("bad character range", token.pos);
    }
    if (last.lo < first.lo) return Error("bad character range", token.pos);
    members.push_back({first.lo, last.lo, 0});
  }
  if (negate && regex_module()) {
    // The regex module matches everything with a negated set holding a class and its complement
    // ([^\w\W]); `re` and PCRE2 match nothing.
    for (const char* pair : {"dD", "sS", "wW"}) {
      const auto has = [&](char c) {
        return std::any_of(members.begin(), members.end(),
                           [c](const SetMember& m) { return m.category == c; });
      };
      if (has(pair[0]) && has(pair[1])) {
        NoteUnsupported("a negated set holding a class and its complement", open.pos);
      }
    }
  }
  *item = SetItem(negate, members);
  return Status();
}

Item Translator::SetItem(bool negate, const std::vector<SetMember>& members) const {
  if (!mode_.caseless) return PlainSetItem(negate, members);
  if (ascii_) {
    // Under (?a) Python folds only A-Z with a-z; PCRE2 would also fold é/É or k/U+212A. Add the
    // ASCII partners and match case-sensitively.
    std::vector<SetMember> folded = members;
    for (const SetMember& m : members) {
      if (m.category != 0) continue;
      for (const auto& [from, to] : {std::pair<char32_t, char32_t>{'A', 'a'}, {'a', 'A'}}) {
        const char32_t lo = std::max<char32_t>(m.lo, from);
        const char32_t hi = std::min<char32_t>(m.hi, from + 25);
        if (lo <= hi) folded.push_back({lo - from + to, hi - from + to, 0});
      }
    }
    Item item = PlainSetItem(negate, folded);
    item.text = "(?-i:" + item.text + ")";
    item.atom = true;
    return item;
  }
  // Where Python's case folding differs from PCRE2's (checked over every cased code point), the
  // answer for those characters is decided case-sensitively. PCRE2 folds only I with i among
  // them; CPython's re folds I, i, U+0130 and U+0131 together, the regex module folds I-i,
  // I-U+0131 and i-U+0130; both also pair U+0390/U+1FD3, U+03B0/U+1FE3 and U+FB05/U+FB06.
  constexpr char32_t kSpecial[10] = {'I',    'i',   0x130,  0x131,  0x390,
                                     0x1FD3, 0x3B0, 0x1FE3, 0xFB05, 0xFB06};
  const auto in_set = [&](char32_t x) {
    return std::any_of(members.begin(), members.end(), [x](const SetMember& m) {
      switch (m.category) {
        case 0:
          return m.lo <= x && x <= m.hi;
        case 'w':
        case 'D':
        case 'S':
          return true;  // all ten are letters
        default:
          return false;
      }
    });
  };
  const auto edge = [](char32_t a, char32_t b, char32_t x, char32_t y) {
    return (a == x && b == y) || (a == y && b == x);
  };
  const auto python_folds = [&](char32_t a, char32_t b) {
    if (a == b || edge(a, b, 0x390, 0x1FD3) || edge(a, b, 0x3B0, 0x1FE3) ||
        edge(a, b, 0xFB05, 0xFB06)) {
      return true;
    }
    const auto turkish = [](char32_t c) {
      return c == 'I' || c == 'i' || c == 0x130 || c == 0x131;
    };
    if (!regex_module()) return turkish(a) && turkish(b);
    return edge(a, b, 'I', 'i') || edge(a, b, 'I', 0x131) || edge(a, b, 'i', 0x130);
  };
  const auto pcre_folds = [&](char32_t a, char32_t b) { return a == b || edge(a, b, 'I', 'i'); };
  std::string exact;
  bool differs = false;
  for (char32_t c : kSpecial) {
    bool python = false;
    bool pcre = false;
    for (char32_t x : kSpecial) {
      python = python || (python_folds(c, x) && in_set(x));
      pcre = pcre || (pcre_folds(c, x) && in_set(x));
    }
    if (python != pcre) differs = true;
    if (python != negate) exact += EscapeChar(c);
  }
  Item item = PlainSetItem(negate, members);
  if (!differs) return item;
  std::string special;
  for (char32_t c : kSpecial) special += EscapeChar(c);
  item.text = "(?:(?!(?-i:[" + special + "]))" + item.text +
              (exact.empty() ? "" : "|(?-i:[" + exact + "])") + ")";
  item.atom = true;
  return item;
}

Item Translator::PlainSetItem(bool negate, const std::vector<SetMember>& members) const {
  std::string body;
  // Class escapes whose Python meaning PCRE2 has no escape for are spelled as member lists; their
  // complements (\S, and \W of the regex module) cannot sit inside a PCRE2 set, so they are kept
  // apart and joined as alternatives.
  std::vector<std::string> complements;
  for (const SetMember& m : members) {
    if (m.category == 0) {
      // Ranges skip the surrogate block: UTF-8 subjects cannot contain it and PCRE2 refuses it.
      const auto piece = [&](char32_t lo, char32_t hi) {
        body += EscapeChar(lo);
        if (hi != lo) body += "-" + EscapeChar(hi);
      };
      if (m.lo < 0xD800) piece(m.lo, std::min<char32_t>(m.hi, 0xD7FF));
      if (m.hi > 0xDFFF) piece(std::max<char32_t>(m.lo, 0xE000), m.hi);
      continue;
    }
    const char lower = static_cast<char>(m.category | 0x20);
    const std::string_view spelled = ClassMembers(lower);
    if (spelled.empty()) {
      body += '\\';
      body += m.category;  // PCRE2's own escape means the same
    } else if (lower == m.category) {
      body += spelled;
    } else {
      complements.emplace_back(spelled);
    }
  }
  if (!complements.empty()) {
    if (!negate) {
      // body ∪ ¬c1 ∪ ¬c2 …
      std::string text = "(?:";
      if (!body.empty()) text += "[" + body + "]|";
      for (size_t i = 0; i < complements.size(); ++i) {
        text += (i ? "|[^" : "[^") + complements[i] + "]";
      }
      return {text + ")", {1, 1}, ItemKind::kUnit, true};
    }
    // ¬(body ∪ ¬c1 ∪ ¬c2 …) = (c1 ∩ c2 …) ∖ body
    std::string text = body.empty() ? "" : "(?![" + body + "])";
    for (size_t i = 0; i + 1 < complements.size(); ++i) text += "(?=[" + complements[i] + "])";
    text += "[" + complements.back() + "]";
    const bool atom = body.empty() && complements.size() == 1;
    return {text, {1, 1}, ItemKind::kUnit, atom};
  }
  if (body.empty()) {  // only surrogates
    if (negate) return {"(?s:.)", {1, 1}, ItemKind::kUnit, true};
    return {"(?!)", {1, 1}, ItemKind::kUnit, false};
  }
  return {std::string("[") + (negate ? "^" : "") + body + "]", {1, 1}, ItemKind::kUnit, true};
}

std::string_view Translator::ClassMembers(char lower) const {
  if (ascii_) return {};  // PCRE2 without UCP: \d \s \w are ASCII, as under Python's (?a)
  switch (lower) {
    case 's':
      return regex_module() ? kRegexSpaceMembers : kPySpaceMembers;
    case 'w':
      return regex_module() ? kRegexWordMembers : std::string_view();
    default:
      return {};
  }
}

}  // namespace quantpath::pyregex_internal
