// Shell-style globs with the semantics of Python's fnmatch on POSIX, for exclusion lists such as
// ModelOpt's `exclude_modules` ("model.layers.*.self_attn*").
//
// Goals: exactly fnmatch.fnmatchcase (os.path.normcase is the identity on POSIX): `*` matches any
// run of characters, dots and newlines included; `?` one character; `[seq]` / `[!seq]` a set, with
// CPython 3.11's reading of ranges (an empty range such as z-a is dropped) and a '[' without a
// closing ']' taken literally. Characters are Unicode code points of the UTF-8 text. Non-goals:
// escaping (fnmatch has none), case folding, path-separator rules (that is glob.glob, not fnmatch).
#pragma once

#include <string_view>

namespace quantpath {

// fnmatch.fnmatchcase(name, pattern). Matching is linear in the product of the lengths at worst
// (no backtracking blow-up).
bool FnMatch(std::string_view name, std::string_view pattern);

// Whether `pattern` fnmatches any one dotted segment of `path` ("a.b.c" → "a", "b", "c").
bool FnMatchAnySegment(std::string_view path, std::string_view pattern);

}  // namespace quantpath
