// libFuzzer target: a Python regular expression and a subject (split at the first newline) →
// translation to PCRE2 under both flavours, then re.match and re.fullmatch.
// seeds: tests/fuzz/seeds/pyregex/*
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/pyregex.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\n');
  const std::string_view pattern = input.substr(0, split);
  const std::string_view subject =
      split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  for (quantpath::PyRegexFlavor flavor :
       {quantpath::PyRegexFlavor::kRe, quantpath::PyRegexFlavor::kRegexModule}) {
    auto regex = quantpath::CompiledRegex::Compile(pattern, flavor);
    if (!regex.ok()) continue;
    (void)(*regex)->Match(subject, false);
    (void)(*regex)->Match(subject, true);
  }
  return 0;
}
