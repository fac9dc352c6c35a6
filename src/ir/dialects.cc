// The dialect table's lookups (the table itself is ir.h's kDialectTable).
//
// vLLM compiles config regexes with the third-party `regex` module, SGLang with `re`.
#include <cstdio>
#include <cstdlib>

#include "quantpath/ir.h"

namespace quantpath {

static_assert([] {
  for (size_t i = 0; i < kDialectCount; ++i) {
    if (kDialectTable[i].index() != i) return false;
  }
  return true;
}());
// Releases of one engine are ranked 1, 2, … in table order, so "since" reads as release order.
static_assert([] {
  for (size_t i = 0; i < kDialectCount; ++i) {
    const Dialect& d = kDialectTable[i];
    uint8_t before = 0;
    for (size_t j = 0; j < i; ++j) {
      if (kDialectTable[j].engine == d.engine && kDialectTable[j].is_release()) ++before;
    }
    if (d.is_release() ? d.rank != before + 1 : d.rank != 0) return false;
  }
  return true;
}());

const Dialect& NewestRelease(Engine engine) {
  const Dialect* newest = &kDialectTable[0];
  for (const Dialect& d : kDialectTable) {
    if (d.engine == engine && d.is_release() && d.rank > newest->rank) newest = &d;
  }
  return *newest;
}

std::optional<Dialect> ParseDialect(std::string_view name) {
  for (const Dialect& d : kDialectTable) {
    if (d.name == name) return d;
  }
  for (const Engine engine : {Engine::kVllm, Engine::kSglang}) {
    const Dialect& newest = NewestRelease(engine);
    const std::string_view engine_name = newest.name.substr(0, newest.name.find('@'));
    if (name == engine_name) return newest;
    if (name.starts_with(engine_name) && name.substr(engine_name.size()).starts_with('@')) {
      return ReleaseDialect(engine, name.substr(engine_name.size() + 1));
    }
  }
  return std::nullopt;
}

std::optional<Dialect> ReleaseDialect(Engine engine, std::string_view version) {
  for (const Dialect& d : kDialectTable) {
    if (d.engine != engine || !d.is_release() || !version.starts_with(d.version)) continue;
    const std::string_view rest = version.substr(d.version.size());
    if (rest.empty() || rest.front() == '.') return d;
  }
  return std::nullopt;
}

std::vector<std::string_view> DialectNames() {
  std::vector<std::string_view> names;
  for (const Dialect& d : kDialectTable) names.push_back(d.name);
  return names;
}

std::vector<std::string_view> DialectChoices() {
  std::vector<std::string_view> names = {"native", "vllm", "sglang"};
  for (const Dialect& d : kDialectTable) {
    if (d.engine != Engine::kNative) names.push_back(d.name);
  }
  return names;
}

void DialectRowMissing(const Dialect& dialect) {
  std::fprintf(stderr, "quantpath: internal error: a per-dialect table has no row for %.*s\n",
               static_cast<int>(dialect.name.size()), dialect.name.data());
  std::abort();
}

}  // namespace quantpath
