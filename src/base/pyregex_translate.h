// Python regular-expression syntax → PCRE2 syntax: the half of pyregex that decides what a
// pattern means, without running PCRE2.
//
// Goals: a parser that follows CPython 3.11's `re._parser` token by token, so that it accepts
// exactly the patterns `re.compile` accepts (same "nothing to repeat", "bad escape", fixed-width
// look-behind and group-reference rules), and emits PCRE2 syntax with the same meaning: every
// literal as
// `\x{…}`, back-references by number, `\Z` as `\z`, Python's `\s` and empty-string `\B` spelled
// out. Non-goals: the `regex` module's extensions beyond the few listed in pyregex.h (the rest are
// kUnsupported errors, never a different meaning), error messages worded like CPython's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "src/base/pyregex.h"

namespace quantpath::pyregex_internal {

// The parts of _sre that bound what a pattern may say.
inline constexpr uint64_t kPyMaxRepeat = 4294967295u;  // _sre.MAXREPEAT: "unbounded"
inline constexpr uint64_t kPyMaxGroups = 1073741823u;  // _sre.MAXGROUPS
// PCRE2 refuses larger counts in {m,n}; Python accepts them, so they are kUnsupported.
inline constexpr uint64_t kPcre2MaxRepeat = 65535;
// Untrusted input must not exhaust the stack of the recursive parser.
inline constexpr int kMaxNesting = 200;

struct Translation {
  std::string pcre2;   // PCRE2 syntax, plain ASCII; the caller wraps it for match / fullmatch
  bool ascii = false;  // a leading (?a): compile without PCRE2_UCP
};

// Errors: kInvalidInput when the flavour's Python module rejects `pattern` (the message ends with
// "at position N", N counted in code points); kUnsupported when Python accepts it but it has no
// PCRE2 spelling with the same meaning; kLimit when it is too long or nested too deeply.
Result<Translation> TranslatePyRegex(std::string_view pattern, PyRegexFlavor flavor);

// Whether `name` is a Python identifier (str.isidentifier: XID_Start or '_', then XID_Continue).
bool IsPyIdentifier(std::u32string_view name);

// ---------------------------------------------------------------------------------------------
// Internal details, shared by pyregex_translate.cc (structure) and pyregex_escape.cc (escapes,
// character sets, literals).

// One token of CPython's re Tokenizer: a character, or a backslash and the character after it.
struct Token {
  char32_t ch = 0;
  bool escape = false;
  size_t pos = 0;  // code-point offset of the token, for messages
  bool Is(char32_t c) const { return !escape && ch == c; }
};

// (min, max) characters a piece can consume, as SubPattern.getwidth computes it.
struct Width {
  uint64_t lo = 0;
  uint64_t hi = 0;
};

enum class ItemKind : uint8_t {
  kUnit,    // consumes exactly one character: literal, set, '.', \d …
  kAnchor,  // ^ $ \A \Z \b \B: Python refuses to repeat them ("nothing to repeat")
  kRepeat,  // an item with a quantifier: Python refuses a second one ("multiple repeat")
  kFlags,   // an inline flag setting; for Python it is no item at all
  kOther,   // groups, look-around, conditionals, back-references
};

struct Item {
  std::string text;  // PCRE2 syntax
  Width width;
  ItemKind kind = ItemKind::kOther;
  bool atom = true;       // `text` can take a quantifier without a wrapping (?:…)
  bool captures = false;  // holds a capturing group
};

// One member of a character set: a range (a single character is lo == hi) or a class escape.
struct SetMember {
  char32_t lo = 0;
  char32_t hi = 0;
  char category = 0;  // 'd', 'D', 's', 'S', 'w', 'W', or 0 for a range
};

class Translator {
 public:
  explicit Translator(PyRegexFlavor flavor) : flavor_(flavor) {}
  Result<Translation> Run(std::string_view pattern);

 private:
  // Structure (pyregex_translate.cc), mirroring _parse_sub / _parse / _parse_flags.
  Status ParseAlternation(int nested, std::string* out, Width* width);
  Status ParseSequence(int nested, bool first, std::string* out, Width* width);
  Status ParseRepeat(const Token& token, std::vector<Item>* items);
  Status ParseGroup(const Token& open, int nested, bool first, std::vector<Item>* items);
  Status ParseLookaround(const Token& open, char32_t kind, int nested, Item* item);
  Status ParseConditional(const Token& open, int nested, Item* item);
  Status ParseFlags(const Token& first, uint32_t* add, uint32_t* del, bool* global);
  Status ApplyFlags(const Token& open, uint32_t add, uint32_t del, bool first,
                    std::vector<Item>* items);

  // Escapes, sets and group references (pyregex_escape.cc), mirroring _escape / _class_escape.
  Status ParseEscape(const Token& token, Item* item);
  Status ParseClassEscape(const Token& token, SetMember* member);
  Status ParseCommonEscape(const Token& token, std::optional<char32_t>* literal);
  Status ParseSet(const Token& open, Item* item);
  Status ParseNumericEscape(const Token& token, Item* item);
  Status GroupReference(uint64_t gid, const Token& at, bool checked_now, Item* item);
  Status CheckLookbehindGroup(uint64_t gid, const Token& at, bool condition);
  // A reference `re` refuses: an error there; the regex module accepts more of them (a
  // look-behind referring to its own groups, a condition on an open group), which is
  // kUnsupported here.
  Status ReferenceProblem(std::string message, size_t pos);
  Status NamedReference(const std::u32string& name, const Token& at, Item* item);
  Item LiteralItem(char32_t c) const;
  Item SetItem(bool negate, const std::vector<SetMember>& members) const;
  // SetItem without the case-folding corrections.
  Item PlainSetItem(bool negate, const std::vector<SetMember>& members) const;
  // The PCRE2 set members spelling the flavour's class escape 'd', 's' or 'w', or "" when PCRE2's
  // own escape has the same meaning.
  std::string_view ClassMembers(char lower) const;

  // Tokens, as CPython's Tokenizer hands them out.
  const Token* Peek() const { return next_ < tokens_.size() ? &tokens_[next_] : nullptr; }
  const Token* Get() { return next_ < tokens_.size() ? &tokens_[next_++] : nullptr; }
  bool Match(char32_t c);
  bool PeekIs(char32_t c) const { return Peek() != nullptr && Peek()->Is(c); }
  // Up to `n` plain tokens whose character is in `chars`.
  std::u32string GetWhile(size_t n, std::u32string_view chars);
  // Tokens up to `terminator`, as text (an escape keeps its backslash); the terminator is consumed.
  Status GetUntil(char32_t terminator, std::string_view what, std::u32string* out);
  size_t Position() const;  // offset of the next token, or the pattern length at the end

  Status Error(std::string message, size_t pos) const;        // kInvalidInput
  Status Unsupported(std::string message, size_t pos) const;  // kUnsupported
  // Records a kUnsupported finding and lets parsing go on, so that a pattern Python rejects for
  // another reason later on still reports kInvalidInput.
  void NoteUnsupported(std::string message, size_t pos);
  bool regex_module() const { return flavor_ == PyRegexFlavor::kRegexModule; }
  size_t GroupCount() const { return groups_.size(); }  // state.groups: groups opened so far + 1
  bool GroupClosed(uint64_t gid) const { return gid < groups_.size() && groups_[gid].has_value(); }

  PyRegexFlavor flavor_;
  std::vector<Token> tokens_;
  size_t next_ = 0;
  size_t length_ = 0;  // code points in the pattern
  bool ascii_ = false;
  // The flags in force where the parser is. Python scopes them lexically: a group restores the
  // outer mode when it closes; (?x) is applied by the parser, (?i) also changes how a literal or
  // set is spelled where Python's case folding differs from PCRE2's.
  struct Mode {
    bool verbose = false;
    bool caseless = false;
  };
  Mode mode_;
  std::vector<std::optional<Width>> groups_;  // [gid] = width once closed; [0] is the whole match
  std::vector<std::pair<std::u32string, uint64_t>> names_;
  std::optional<size_t> lookbehind_groups_;  // state.lookbehindgroups
  // References that may name a group defined later, checked when parsing ends.
  struct LateReference {
    uint64_t gid = 0;
    size_t pos = 0;
    bool conditional = false;  // (?(N)…) rather than a back-reference
    bool lenient = false;      // a regex-module condition it accepts even for a missing group
  };
  std::vector<LateReference> late_references_;
  std::vector<std::pair<std::u32string, size_t>> late_names_;  // regex module: (?P=later)
  uint32_t global_type_flags_ = 0;
  // Python and PCRE2 differ on when a loop whose body matched the empty string iterates again
  // (e.g. b(?(1)a?..|(b?)){,2} on "baab"). Only captures read back by a reference or condition
  // can tell the difference, so that combination is kUnsupported.
  bool empty_repeat_of_captures_ = false;
  bool reads_groups_ = false;  // a / u seen in global flag groups, which must not mix
  std::optional<Status> unsupported_;
};

std::string Utf8(std::u32string_view text);
// `text` as a JSON string literal, so that names and characters in messages stay on one line.
std::string Quote(std::u32string_view text);

}  // namespace quantpath::pyregex_internal
