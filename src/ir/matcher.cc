// Matcher: the string tests engines apply to module paths, each with its reference semantics.
//
// Python references, per kind: exact `path == p`; leading path = vLLM/SGLang
// `is_layer_skipped_bnb` (p is one dot-separated component of the path, or equals the path cut
// after some component: `p in path.split(".")` or `p in {".".join(parts[:i+1])}`); dotted suffix
// `path == p or path.endswith("." + p)`; substring `p in path`; reverse substring `path in p`;
// case-insensitive substring `p.lower() in path.lower()`; regex `re.match` / `re.fullmatch` (or the
// `regex` module's); glob `fnmatch.fnmatch` on POSIX; any-segment glob `any(fnmatch(s, p) for s
// in path.split("."))`; class name `p.lower() in module_class.lower()`. Case folding is ASCII
// (module paths and class names are ASCII identifiers).
#include <array>
#include <memory>
#include <string>
#include <utility>

#include "quantpath/ir.h"
#include "src/base/pyregex.h"
#include "src/ir/glob.h"

namespace quantpath {
namespace {

struct MatchKindInfo {
  MatchKind kind;
  std::string_view name;
  bool regex;
};

constexpr std::array<MatchKindInfo, 11> kMatchKinds = {{
    {MatchKind::kExact, "exact", false},
    {MatchKind::kLeadingPath, "leading_path", false},
    {MatchKind::kDottedSuffix, "dotted_suffix", false},
    {MatchKind::kSubstring, "substring", false},
    {MatchKind::kReverseSubstring, "reverse_substring", false},
    {MatchKind::kSubstringIgnoreCase, "substring_ignore_case", false},
    {MatchKind::kRegexMatch, "regex_match", true},
    {MatchKind::kRegexFullMatch, "regex_fullmatch", true},
    {MatchKind::kGlob, "glob", false},
    {MatchKind::kGlobAnySegment, "glob_any_segment", false},
    {MatchKind::kClassName, "class_name", false},
}};
static_assert(static_cast<size_t>(MatchKind::kClassName) + 1 == kMatchKinds.size());

const MatchKindInfo& KindInfo(MatchKind kind) { return kMatchKinds[static_cast<size_t>(kind)]; }

// vLLM's is_layer_skipped_bnb for one entry.
bool LeadingPathMatches(std::string_view path, std::string_view pattern) {
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const size_t end = dot == std::string_view::npos ? path.size() : dot;
    // A component equal to the entry, or the prefix ending with this component.
    if (path.substr(start, end - start) == pattern || path.substr(0, end) == pattern) return true;
    if (dot == std::string_view::npos) return false;
    start = dot + 1;
  }
}

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace

std::string_view MatchKindName(MatchKind kind) {
  const size_t index = static_cast<size_t>(kind);
  return index < kMatchKinds.size() ? kMatchKinds[index].name : "unknown";
}

Result<Matcher> Matcher::Create(MatchKind kind, std::string pattern, RegexFlavor flavor) {
  if (static_cast<size_t>(kind) >= kMatchKinds.size()) {
    return InternalError("unknown match kind " + std::to_string(static_cast<int>(kind)));
  }
  Matcher matcher;
  matcher.kind_ = kind;
  matcher.flavor_ = flavor;
  if (KindInfo(kind).regex) {
    const PyRegexFlavor py = flavor == RegexFlavor::kPythonRegexModule ? PyRegexFlavor::kRegexModule
                                                                       : PyRegexFlavor::kRe;
    QP_ASSIGN_OR_RETURN(matcher.regex_, CompiledRegex::Compile(pattern, py));
  }
  if (kind == MatchKind::kGlob || kind == MatchKind::kGlobAnySegment) {
    matcher.glob_ = std::make_shared<const Glob>(pattern);
  }
  if (kind == MatchKind::kSubstringIgnoreCase || kind == MatchKind::kClassName) {
    matcher.folded_pattern_ = ToLower(pattern);
  }
  matcher.pattern_ = std::move(pattern);
  return matcher;
}

Result<bool> Matcher::Matches(std::string_view path, std::string_view module_class) const {
  const std::string_view p = pattern_;
  switch (kind_) {
    case MatchKind::kExact:
      return path == p;
    case MatchKind::kLeadingPath:
      return LeadingPathMatches(path, p);
    case MatchKind::kDottedSuffix:
      return path == p || (path.size() > p.size() && path.ends_with(p) &&
                           path[path.size() - p.size() - 1] == '.');
    case MatchKind::kSubstring:
      return Contains(path, p);
    case MatchKind::kReverseSubstring:
      return Contains(p, path);
    case MatchKind::kSubstringIgnoreCase:
      return Contains(ToLower(path), folded_pattern_);
    case MatchKind::kRegexMatch:
    case MatchKind::kRegexFullMatch:
      if (regex_ == nullptr) return InternalError("matcher for " + JsonQuote(p) + " has no regex");
      return regex_->Match(path, kind_ == MatchKind::kRegexFullMatch);
    case MatchKind::kGlob:
    case MatchKind::kGlobAnySegment:
      if (glob_ == nullptr) return InternalError("matcher for " + JsonQuote(p) + " has no glob");
      return kind_ == MatchKind::kGlob ? glob_->Matches(path) : glob_->MatchesAnySegment(path);
    case MatchKind::kClassName:
      return Contains(ToLower(module_class), folded_pattern_);
  }
  return InternalError("unknown match kind " + std::to_string(static_cast<int>(kind_)));
}

}  // namespace quantpath
