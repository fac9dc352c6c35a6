// DottedShape: the Python regexes that name layers by their dotted path, matched without PCRE2.
//
// Importers and configs mostly write one shape: an optional guard on the last segment, an
// optional "any leading segments", a body of literal characters and `.`, and an optional tail:
//
//   [(?!(?:.*\.)?(?:A|B…)$)] [(?:.*\.)?] [(?:] [[^.]*] body [[^.]*] [)] [.* | (?:\..*)?]
//
// (GPTQ `dynamic` keys such as `model\.layers\.9\.self_attn\..*`, SGLang's whole-segment skip
// rules, MLA last-segment rules). For such a pattern whether Python's re.match / re.fullmatch hit
// is a question of where the body can start and end, answered by a few loops over the subject.
// In a plan each of hundreds of such rules is tried once or twice, so a PCRE2 call pays for its
// JIT code not being in cache (about 0.9 µs measured, against tens of ns here). Everything else
// is not a shape and goes to PCRE2, as do subjects that are not ASCII.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace quantpath::pyregex_internal {

class DottedShape {
 public:
  // The shape of `pattern` (already accepted by TranslatePyRegex), or nullopt.
  static std::optional<DottedShape> Parse(std::string_view pattern);

  // re.match when !full, re.fullmatch when full; nullopt when `subject` is not ASCII.
  std::optional<bool> Match(std::string_view subject, bool full) const;

 private:
  enum class Tail { kNone, kAnyRun, kDottedRun };  // nothing, `.*`, `(?:\..*)?`

  // Whether the body's characters match at `at` (the `.` items anything but "\n").
  bool BodyAt(std::string_view subject, size_t at) const;
  // Whether the tail (after an optional trailing `[^.]*`) can end the subject from `at`.
  bool EndsFrom(std::string_view subject, size_t at, bool full) const;

  std::vector<std::string> not_last_;  // the guard's names; empty without a guard
  bool any_leading_segments_ = false;  // (?:.*\.)?
  bool lead_non_dots_ = false;         // [^.]* before the body
  std::string body_;
  std::string any_char_;         // per body character: 1 for a `.` item (beside body_, in one read)
  bool trail_non_dots_ = false;  // [^.]* after the body
  Tail tail_ = Tail::kNone;
};

}  // namespace quantpath::pyregex_internal
