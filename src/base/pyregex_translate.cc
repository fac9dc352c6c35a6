// Python regex structure → PCRE2: alternation, sequences, quantifiers, groups, look-around,
// conditionals and inline flags, in the order CPython 3.11's re._parser checks them.
#include "src/base/pyregex_translate.h"

#include <algorithm>
#include <string>

namespace quantpath::pyregex_internal {
namespace {

// Inline flag bits. The `regex` module knows more letters (b e f p r w V); they parse, then report
// kUnsupported.
constexpr uint32_t kFlagI = 1u << 0;
constexpr uint32_t kFlagL = 1u << 1;
constexpr uint32_t kFlagM = 1u << 2;
constexpr uint32_t kFlagS = 1u << 3;
constexpr uint32_t kFlagX = 1u << 4;
constexpr uint32_t kFlagA = 1u << 5;
constexpr uint32_t kFlagT = 1u << 6;  // re.TEMPLATE, deprecated; only `re` knows it
constexpr uint32_t kFlagU = 1u << 7;
constexpr uint32_t kFlagRegexOnly = 1u << 8;
constexpr uint32_t kTypeFlags = kFlagA | kFlagL | kFlagU;
constexpr uint32_t kGlobalFlags = kFlagT;

// Saturating arithmetic for widths: SubPattern.getwidth uses unbounded Python ints and caps the
// result of each subpattern.
constexpr uint64_t kWidthCeiling = uint64_t{1} << 62;
uint64_t AddWidth(uint64_t a, uint64_t b) { return std::min(a + b, kWidthCeiling); }
uint64_t MulWidth(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kWidthCeiling / b ? kWidthCeiling : std::min(a * b, kWidthCeiling);
}
Width CapWidth(Width w) { return {std::min(w.lo, kPyMaxRepeat - 1), std::min(w.hi, kPyMaxRepeat)}; }

bool IsPyWhitespace(char32_t c) {  // re._parser.WHITESPACE, used by verbose mode
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool IsAsciiDigit(char32_t c) { return c >= '0' && c <= '9'; }
bool IsAsciiAlpha(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

uint32_t FlagBit(char32_t c, bool regex_module) {
  switch (c) {
    case 'i':
      return kFlagI;
    case 'L':
      return kFlagL;
    case 'm':
      return kFlagM;
    case 's':
      return kFlagS;
    case 'x':
      return kFlagX;
    case 'a':
      return kFlagA;
    case 'u':
      return kFlagU;
    case 't':
      return regex_module ? 0 : kFlagT;
    case 'b':
    case 'e':
    case 'f':
    case 'p':
    case 'r':
    case 'w':
    case 'V':
      return regex_module ? kFlagRegexOnly : 0;
    default:
      return 0;
  }
}

// The flags PCRE2 applies itself; x is handled by the parser, a/u/L by compile options.
std::string PcreFlagLetters(uint32_t flags) {
  std::string out;
  if (flags & kFlagI) out += 'i';
  if (flags & kFlagM) out += 'm';
  if (flags & kFlagS) out += 's';
  return out;
}

// Python's int() also accepts " 1", "+1", "1_0" and non-ASCII digits as a group number; those
// spellings are rare enough to refuse rather than reimplement.
bool LooksLikeExoticInt(std::u32string_view s) {
  bool digit = false;
  for (char32_t c : s) {
    if (IsAsciiDigit(c)) {
      digit = true;
    } else if (!(c >= 0x80 || IsPyWhitespace(c) || c == '_' || c == '+')) {
      return false;
    }
  }
  return digit;
}

bool AllAsciiDigits(std::u32string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsAsciiDigit);
}

// Decimal value of ASCII digits, saturating well above any limit it is compared with.
uint64_t DecimalValue(std::u32string_view digits) {
  uint64_t v = 0;
  for (char32_t c : digits) v = std::min<uint64_t>(v * 10 + (c - '0'), kWidthCeiling);
  return v;
}

}  // namespace

Status Translator::ParseAlternation(int nested, std::string* out, Width* width) {
  if (nested > 2 * kMaxNesting) {
    return LimitError("groups nest deeper than " + std::to_string(kMaxNesting) + " levels");
  }
  // One mode for all alternatives: a `regex`-module inline flag reaches the following
  // alternatives of its group (`re` only allows flags before the first one); it ends with the
  // group.
  const Mode outer = mode_;
  Width total{kPyMaxRepeat - 1, 0};
  bool first_alternative = true;
  while (true) {
    std::string text;
    Width w;
    QP_RETURN_IF_ERROR(ParseSequence(nested + 1, nested == 0 && first_alternative, &text, &w));
    *out += text;
    total.lo = std::min(total.lo, w.lo);
    total.hi = std::max(total.hi, w.hi);
    if (!Match('|')) break;
    *out += '|';
    first_alternative = false;
  }
  *width = CapWidth(total);
  mode_ = outer;
  return Status();
}

Status Translator::ParseSequence(int nested, bool first, std::string* out, Width* width) {
  std::vector<Item> items;
  while (true) {
    const Token* peek = Peek();
    if (peek == nullptr || peek->Is('|') || peek->Is(')')) break;
    const Token token = *Get();
    if (mode_.verbose && !token.escape) {
      if (IsPyWhitespace(token.ch)) continue;
      if (token.ch == '#') {
        while (const Token* t = Get()) {
          if (t->Is('\n')) break;
        }
        continue;
      }
    }
    if (token.escape) {
      Item item;
      QP_RETURN_IF_ERROR(ParseEscape(token, &item));
      items.push_back(std::move(item));
      continue;
    }
    switch (token.ch) {
      case '[': {
        Item item;
        QP_RETURN_IF_ERROR(ParseSet(token, &item));
        items.push_back(std::move(item));
        break;
      }
      case '*':
      case '+':
      case '?':
      case '{':
        QP_RETURN_IF_ERROR(ParseRepeat(token, &items));
        break;
      case '.':
        items.push_back({".", {1, 1}, ItemKind::kUnit, true});
        break;
      case '(':
        QP_RETURN_IF_ERROR(ParseGroup(token, nested, first, &items));
        break;
      case '^':
        items.push_back({"^", {0, 0}, ItemKind::kAnchor, true});
        break;
      case '$':
        // PCRE2's default `$` (no DOLLAR_ENDONLY, newline = LF) is Python's: at the end or before
        // a final "\n".
        items.push_back({"$", {0, 0}, ItemKind::kAnchor, true});
        break;
      default:
        items.push_back(LiteralItem(token.ch));
        break;
    }
  }
  Width total;
  for (const Item& item : items) {
    *out += item.text;
    total.lo = AddWidth(total.lo, item.width.lo);
    total.hi = AddWidth(total.hi, item.width.hi);
  }
  *width = CapWidth(total);
  return Status();
}

Status Translator::ParseRepeat(const Token& token, std::vector<Item>* items) {
  uint64_t min = 0;
  uint64_t max = kPyMaxRepeat;
  if (token.ch == '?') {
    max = 1;
  } else if (token.ch == '+') {
    min = 1;
  } else if (token.ch == '{') {
    const size_t here = next_;
    if (PeekIs('}')) {
      items->push_back(LiteralItem('{'));
      return Status();
    }
    std::u32string lo = GetWhile(SIZE_MAX, U"0123456789");
    std::u32string hi;
    if (Match(',')) {
      hi = GetWhile(SIZE_MAX, U"0123456789");
    } else {
      hi = lo;
    }
    if (!Match('}')) {
      // Not a quantifier: a literal '{', and parsing resumes right after it.
      next_ = here;
      if (regex_module()) {
        // The regex module reads "{e<=1}"-style text as fuzzy-matching constraints.
        for (size_t i = here; i < tokens_.size() && !tokens_[i].Is('}'); ++i) {
          const Token& t = tokens_[i];
          if (!t.escape && (t.ch == 'e' || t.ch == 'i' || t.ch == 'd' || t.ch == 's')) {
            return Unsupported("fuzzy-matching constraints {…} of the regex module", token.pos);
          }
        }
      }
      items->push_back(LiteralItem('{'));
      return Status();
    }
    if (!lo.empty()) {
      min = DecimalValue(lo);
      if (min >= kPyMaxRepeat) return Error("the repetition number is too large", token.pos);
    }
    if (!hi.empty()) {
      max = DecimalValue(hi);
      if (max >= kPyMaxRepeat) return Error("the repetition number is too large", token.pos);
      if (max < min) return Error("min repeat greater than max repeat", token.pos);
    }
  }

  // Figure out which item to repeat. Inline flags are no item for Python.
  Item* last = items->empty() ? nullptr : &items->back();
  if (last != nullptr && last->kind == ItemKind::kFlags) {
    const bool real_item = std::any_of(items->begin(), items->end(), [](const Item& item) {
      return item.kind != ItemKind::kFlags;
    });
    if (real_item) return Unsupported("a quantifier right after inline flags", token.pos);
    last = nullptr;
  }
  if (last == nullptr) return Error("nothing to repeat", token.pos);
  // The regex module repeats anchors too; like a repeated look-around, the anchor then holds
  // once or, with a minimum of 0, not at all.
  if (last->kind == ItemKind::kAnchor && !regex_module()) {
    return Error("nothing to repeat", token.pos);
  }
  if (last->kind == ItemKind::kRepeat) return Error("multiple repeat", token.pos);
  if (min > kPcre2MaxRepeat || (max != kPyMaxRepeat && max > kPcre2MaxRepeat)) {
    NoteUnsupported("a repeat count above " + std::to_string(kPcre2MaxRepeat), token.pos);
  }

  std::string quantifier;
  if (max == kPyMaxRepeat) {
    quantifier = min == 0 ? "*" : min == 1 ? "+" : "{" + std::to_string(min) + ",}";
  } else if (min == 0 && max == 1) {
    quantifier = "?";
  } else if (min == max) {
    quantifier = "{" + std::to_string(min) + "}";
  } else {
    quantifier = "{" + std::to_string(min) + "," + std::to_string(max) + "}";
  }
  const bool lazy = Match('?');
  const bool possessive = !lazy && Match('+');  // Python 3.11
  if (lazy) quantifier += '?';
  // A repeated group that can match empty: Python decides whether to iterate again after an
  // empty iteration by its own rule (and the regex module by another; it even skips backtracking
  // into ()?? when a condition reads it later). Only captures read back can tell the difference.
  if (last->captures && last->width.lo == 0 && (max > 1 || (regex_module() && min == 0))) {
    empty_repeat_of_captures_ = true;
  }
  if (lookbehind_groups_ && last->width.hi == 0 && !last->captures) {
    // PCRE2 refuses a repeated zero-width item inside look-behind, though its width is fixed.
    // Without captures, every iteration at the same position gives the same answer, so the
    // repeat is the item once, or optionally.
    std::string text = "(?:" + last->text + ")";
    if (max == 0) {
      text = "(?:)";
    } else if (min == 0) {
      text = lazy ? "(?:|" + last->text + ")" : (possessive ? "(?>" : "(?:") + last->text + "|)";
    }
    *last = {std::move(text), {0, 0}, ItemKind::kRepeat, true, false};
    return Status();
  }
  Item repeated;
  repeated.captures = last->captures;
  const bool wrap = !last->atom || last->kind == ItemKind::kAnchor;
  repeated.text = (wrap ? "(?:" + last->text + ")" : last->text) + quantifier;
  // Python defines X*+ as (?>X*). PCRE2's own X*+ keeps captures made inside X when a later
  // failure backtracks past the whole repeat, which Python resets; its atomic group does not.
  if (possessive) repeated.text = "(?>" + repeated.text + ")";
  repeated.width = {MulWidth(last->width.lo, min), MulWidth(last->width.hi, max)};
  repeated.kind = ItemKind::kRepeat;
  repeated.atom = false;
  *last = std::move(repeated);
  return Status();
}

Status Translator::ParseGroup(const Token& open, int nested, bool first, std::vector<Item>* items) {
  bool capture = true;
  std::optional<std::u32string> name;
  std::string prefix = "(";
  uint32_t add = 0;
  uint32_t del = 0;
  if (Match('?')) {
    const Token* next = Get();
    if (next == nullptr) return Error("unexpected end of pattern", Position());
    const Token c = *next;
    const bool regex_named =
        regex_module() && c.Is('<') && Peek() != nullptr && !PeekIs('=') && !PeekIs('!');
    if (c.Is('P')) {
      if (Match('<')) {
        name.emplace();
        QP_RETURN_IF_ERROR(GetUntil('>', "group name", &*name));
        if (!IsPyIdentifier(*name)) {
          return Error("bad character in group name " + Quote(*name), c.pos);
        }
      } else if (Match('=')) {
        std::u32string ref;
        QP_RETURN_IF_ERROR(GetUntil(')', "group name", &ref));
        if (!IsPyIdentifier(ref)) {
          return Error("bad character in group name " + Quote(ref), c.pos);
        }
        Item item;
        QP_RETURN_IF_ERROR(NamedReference(ref, c, &item));
        items->push_back(std::move(item));
        return Status();
      } else {
        const Token* after = Get();
        if (after == nullptr) return Error("unexpected end of pattern", Position());
        if (regex_module() && after->Is('>')) {
          return Unsupported("(?P>name) recursion of the regex module", c.pos);
        }
        return Error("unknown extension ?P" + Quote(std::u32string(1, after->ch)), c.pos);
      }
    } else if (regex_named) {
      // The regex module also spells a named group (?<name>…).
      name.emplace();
      QP_RETURN_IF_ERROR(GetUntil('>', "group name", &*name));
      if (!IsPyIdentifier(*name)) {
        return Error("bad character in group name " + Quote(*name), c.pos);
      }
    } else if (regex_module() && c.Is(')')) {
      return Status();  // the regex module reads "(?)" as an empty flag group
    } else if (c.Is(':')) {
      capture = false;
      prefix = "(?:";
    } else if (c.Is('#')) {
      // A comment adds no item: a quantifier after it repeats the item before it, as in Python.
      while (true) {
        if (Peek() == nullptr) return Error("missing ), unterminated comment", open.pos);
        if (Get()->Is(')')) break;
      }
      return Status();
    } else if (c.Is('=') || c.Is('!') || c.Is('<')) {
      Item item;
      QP_RETURN_IF_ERROR(ParseLookaround(open, c.ch, nested, &item));
      items->push_back(std::move(item));
      return Status();
    } else if (c.Is('(')) {
      Item item;
      QP_RETURN_IF_ERROR(ParseConditional(open, nested, &item));
      items->push_back(std::move(item));
      return Status();
    } else if (c.Is('>')) {
      capture = false;
      prefix = "(?>";  // atomic group (Python 3.11)
    } else if (!c.escape && (c.ch == '-' || FlagBit(c.ch, regex_module()) != 0)) {
      bool global = false;
      QP_RETURN_IF_ERROR(ParseFlags(c, &add, &del, &global));
      if (regex_module() && (add & kFlagX)) {
        // Its verbose mode also skips blanks inside quantifiers and leaves comments untokenized,
        // so the rest of the pattern cannot be read the way `re` reads it.
        return Unsupported("verbose mode (?x) of the regex module", open.pos);
      }
      if (global) return ApplyFlags(open, add, del, first, items);
      capture = false;
      if (add & kFlagA) NoteUnsupported("a scoped ASCII flag (?a:…)", open.pos);
      if ((add | del) & kFlagRegexOnly) NoteUnsupported("regex-module inline flags", open.pos);
      const std::string on = PcreFlagLetters(add);
      const std::string off = PcreFlagLetters(del);
      prefix = "(?" + on + (off.empty() ? "" : "-" + off) + ":";
    } else {
      if (regex_module() && !c.escape &&
          std::u32string_view(U"|R&+0123456789").find(c.ch) != std::u32string_view::npos) {
        return Unsupported("a regex-module group extension", c.pos);
      }
      return Error("unknown extension ?" + Quote(std::u32string(1, c.ch)), c.pos);
    }
  }

  const size_t groups_before = groups_.size();
  uint64_t gid = 0;
  if (capture) {
    gid = groups_.size();
    groups_.emplace_back();
    if (gid >= kPyMaxGroups) return Error("too many groups", open.pos);
    if (name) {
      const bool taken = std::any_of(names_.begin(), names_.end(),
                                     [&](const auto& entry) { return entry.first == *name; });
      if (taken && !regex_module()) {
        return Error("redefinition of group name " + Quote(*name), open.pos);
      }
      // The regex module allows it and gives both groups one number, so even the group numbers
      // after it differ from PCRE2's.
      if (taken) return Unsupported("a group name used twice", open.pos);
      names_.emplace_back(*name, gid);
    }
  }
  const Mode outer = mode_;
  mode_.verbose = (mode_.verbose || (add & kFlagX)) && !(del & kFlagX);
  mode_.caseless = (mode_.caseless || (add & kFlagI)) && !(del & kFlagI);
  std::string inner;
  Width width;
  QP_RETURN_IF_ERROR(ParseAlternation(nested + 1, &inner, &width));
  mode_ = outer;
  if (!Match(')')) return Error("missing ), unterminated subpattern", open.pos);
  if (capture) groups_[gid] = width;
  // Named groups become plain numbered groups: the numbers agree with Python's, and PCRE2's
  // limits on names (length, characters) never come into play.
  items->push_back(
      {prefix + inner + ")", width, ItemKind::kOther, true, groups_.size() > groups_before});
  return Status();
}

Status Translator::ParseLookaround(const Token& open, char32_t kind, int nested, Item* item) {
  bool behind = false;
  char32_t sense = kind;
  if (kind == '<') {
    const Token* next = Get();
    if (next == nullptr) return Error("unexpected end of pattern", Position());
    if (!next->Is('=') && !next->Is('!')) {
      return Error("unknown extension ?<" + Quote(std::u32string(1, next->ch)), open.pos);
    }
    behind = true;
    sense = next->ch;
  }
  const size_t groups_before = groups_.size();
  const std::optional<size_t> outer = lookbehind_groups_;
  if (behind && !outer) lookbehind_groups_ = groups_.size();
  std::string inner;
  Width width;
  QP_RETURN_IF_ERROR(ParseAlternation(nested + 1, &inner, &width));
  if (behind && !outer) lookbehind_groups_.reset();
  if (!Match(')')) return Error("missing ), unterminated subpattern", open.pos);
  if (behind && width.lo != width.hi) {
    if (!regex_module()) return Error("look-behind requires fixed-width pattern", open.pos);
    NoteUnsupported("a variable-width look-behind", open.pos);
  }
  std::string prefix = behind ? (sense == '=' ? "(?<=" : "(?<!") : (sense == '=' ? "(?=" : "(?!");
  // Python may repeat an assertion; PCRE2 does too, but only inside a group, so never bare.
  *item = {prefix + inner + ")", {0, 0}, ItemKind::kOther, false, groups_.size() > groups_before};
  return Status();
}

Status Translator::ParseConditional(const Token& open, int nested, Item* item) {
  const size_t at = Position();
  const size_t groups_before = groups_.size();
  reads_groups_ = true;
  std::u32string name;
  QP_RETURN_IF_ERROR(GetUntil(')', "group name", &name));
  uint64_t gid = 0;
  bool unresolved_name = false;
  const size_t late_index = late_references_.size();
  if (IsPyIdentifier(name)) {
    auto it = std::find_if(names_.begin(), names_.end(),
                           [&](const auto& entry) { return entry.first == name; });
    if (it != names_.end()) {
      gid = it->second;
    } else if (regex_module()) {
      // The regex module resolves names after parsing (see below); PCRE2 cannot say that.
      unresolved_name = true;
      gid = 1;
    } else {
      return Error("unknown group name " + Quote(name), at);
    }
  } else {
    if (!AllAsciiDigits(name)) {
      if (LooksLikeExoticInt(name)) {
        return Unsupported("a group number spelled " + Quote(name), at);
      }
      if (regex_module() && !name.empty() && name[0] == '?') {
        return Unsupported("a look-around condition of the regex module", at);
      }
      return Error("bad character in group name " + Quote(name), at);
    }
    gid = DecimalValue(name);
    if (gid == 0) return Error("bad group number", at);
    if (gid >= kPyMaxGroups) return Error("invalid group reference " + Quote(name), at);
    // The group may be defined later; parse() checks it exists once the whole pattern is read.
    late_references_.push_back({gid, at, true});
  }
  if (!unresolved_name && !(regex_module() && gid >= GroupCount())) {
    QP_RETURN_IF_ERROR(CheckLookbehindGroup(gid, open, true));
  }
  if (regex_module() && !unresolved_name && gid < GroupCount() && !GroupClosed(gid)) {
    // Inside its own group the regex module repeats past empty iterations where PCRE2 (and
    // `re`) stop, so the answers differ.
    NoteUnsupported("a condition on an enclosing group", at);
  }
  std::string yes;
  Width yes_width;
  // Each branch starts from the mode before the condition (CPython passes `verbose` by value).
  const Mode outer = mode_;
  QP_RETURN_IF_ERROR(ParseSequence(nested + 1, false, &yes, &yes_width));
  mode_ = outer;
  std::optional<std::string> no;
  Width no_width;
  if (Match('|')) {
    no.emplace();
    QP_RETURN_IF_ERROR(ParseSequence(nested + 1, false, &*no, &no_width));
    mode_ = outer;
    if (PeekIs('|')) {
      return Error("conditional backref with more than two branches", Position());
    }
  }
  if (!Match(')')) return Error("missing ), unterminated subpattern", open.pos);
  if (regex_module()) {
    // The regex module drops a condition whose branches match nothing, whatever it names, and
    // otherwise wants the group to exist somewhere in the pattern.
    const bool empty = yes_width.hi == 0 && (!no || no_width.hi == 0);
    if (late_index < late_references_.size()) late_references_[late_index].lenient = empty;
    if (unresolved_name) {
      if (!empty) late_names_.emplace_back(name, at);
      NoteUnsupported("a condition on a group named later", at);
    }
  }
  Width width{0, yes_width.hi};
  if (no) width = {std::min(yes_width.lo, no_width.lo), std::max(yes_width.hi, no_width.hi)};
  std::string text = "(?(" + std::to_string(gid) + ")" + yes;
  if (no) text += "|" + *no;
  text += ")";
  *item = {std::move(text), width, ItemKind::kOther, false, groups_.size() > groups_before};
  return Status();
}

Status Translator::ParseFlags(const Token& first, uint32_t* add, uint32_t* del, bool* global) {
  const bool regex = regex_module();
  Token token = first;
  if (!token.Is('-')) {
    while (true) {
      const uint32_t flag = FlagBit(token.ch, regex);
      if (flag == kFlagL) {
        if (!regex)
          return Error("bad inline flags: cannot use 'L' flag with a str pattern", token.pos);
        NoteUnsupported("the LOCALE flag", token.pos);
      }
      if (token.ch == 'V') return Unsupported("regex-module version flags (?V0)/(?V1)", token.pos);
      *add |= flag;
      if ((flag & kTypeFlags) && (*add & kTypeFlags) != flag) {
        return Error("bad inline flags: flags 'a', 'u' and 'L' are incompatible", token.pos);
      }
      const Token* next = Get();
      if (next == nullptr) return Error("missing -, : or )", Position());
      token = *next;
      if (token.Is(')') || token.Is('-') || token.Is(':')) break;
      if (token.escape || FlagBit(token.ch, regex) == 0) {
        return Error(IsAsciiAlpha(token.ch) ? "unknown flag" : "missing -, : or )", token.pos);
      }
    }
  }
  if (token.Is(')')) {
    *global = true;
    return Status();
  }
  if (*add & kGlobalFlags) return Error("bad inline flags: cannot turn on global flag", token.pos);
  if (token.Is('-')) {
    const Token* next = Get();
    if (next == nullptr) return Error("missing flag", Position());
    if (next->escape || FlagBit(next->ch, regex) == 0) {
      return Error(IsAsciiAlpha(next->ch) ? "unknown flag" : "missing flag", next->pos);
    }
    token = *next;
    while (true) {
      const uint32_t flag = FlagBit(token.ch, regex);
      if (flag & kTypeFlags) {
        return Error("bad inline flags: cannot turn off flags 'a', 'u' and 'L'", token.pos);
      }
      *del |= flag;
      next = Get();
      if (next == nullptr) return Error("missing :", Position());
      token = *next;
      if (token.Is(':')) break;
      // The regex module also turns flags off for the rest of the group: (?-i).
      if (regex && token.Is(')')) {
        *global = true;
        break;
      }
      if (token.escape || FlagBit(token.ch, regex) == 0) {
        return Error(IsAsciiAlpha(token.ch) ? "unknown flag" : "missing :", token.pos);
      }
    }
  }
  if (*del & kGlobalFlags) return Error("bad inline flags: cannot turn off global flag", token.pos);
  if (*add & *del) return Error("bad inline flags: flag turned on and off", token.pos);
  return Status();
}

Status Translator::ApplyFlags(const Token& open, uint32_t add, uint32_t del, bool first,
                              std::vector<Item>* items) {
  const bool at_start = first && std::all_of(items->begin(), items->end(), [](const Item& item) {
                          return item.kind == ItemKind::kFlags;
                        });
  if (!regex_module() && !at_start) {
    return Error("global flags not at the start of the expression", open.pos);
  }
  // `re`: global flags, only at the start, so "from here on" is the whole pattern. The regex
  // module: from here to the end of the enclosing group, which is also PCRE2's scope for (?i).
  // re.compile's fix_flags refuses ASCII together with UNICODE, from any global flag groups.
  global_type_flags_ |= add & (kFlagA | kFlagU);
  if ((global_type_flags_ & kFlagA) && (global_type_flags_ & kFlagU)) {
    return Error("ASCII and UNICODE flags are incompatible", open.pos);
  }
  if (add & kFlagT) NoteUnsupported("the deprecated TEMPLATE flag (?t)", open.pos);
  if (add & kFlagRegexOnly) NoteUnsupported("regex-module inline flags", open.pos);
  if (add & kFlagA) {
    if (at_start) {
      ascii_ = true;
    } else {
      NoteUnsupported("an ASCII flag (?a) after the start of the pattern", open.pos);
    }
  }
  if (add & kFlagX) mode_.verbose = true;
  if (del & kFlagX) mode_.verbose = false;
  if (add & kFlagI) mode_.caseless = true;
  if (del & kFlagI) mode_.caseless = false;
  const std::string on = PcreFlagLetters(add);
  const std::string off = PcreFlagLetters(del);
  if (!on.empty() || !off.empty()) {
    items->push_back(
        {"(?" + on + (off.empty() ? "" : "-" + off) + ")", {0, 0}, ItemKind::kFlags, false});
  }
  return Status();
}

}  // namespace quantpath::pyregex_internal
