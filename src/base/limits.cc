// Input limits from the environment.
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "quantpath/base.h"

namespace quantpath {
namespace {

Status FromEnv(const char* name, int64_t max, int64_t* value) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return {};
  char* end = nullptr;
  errno = 0;
  const long long parsed = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || parsed < 1 || parsed > max) {
    return InvalidInput(
        fmt::format("{}: expected an integer in [1, {}], got \"{}\"", name, max, text));
  }
  *value = parsed;
  return {};
}

}  // namespace

Result<InputLimits> ReadInputLimits() {
  constexpr int64_t kHuge = int64_t{1} << 40;
  InputLimits l;
  QP_RETURN_IF_ERROR(FromEnv("QUANTPATH_MAX_JSON_BYTES", kHuge, &l.json.max_bytes));
  QP_RETURN_IF_ERROR(FromEnv("QUANTPATH_MAX_JSON_VALUES", kHuge, &l.json.max_values));
  int64_t depth = l.json.max_depth;
  // Deeper nesting would exhaust the stack of the recursive tree walks.
  QP_RETURN_IF_ERROR(FromEnv("QUANTPATH_MAX_JSON_DEPTH", 1024, &depth));
  l.json.max_depth = static_cast<int>(depth);
  QP_RETURN_IF_ERROR(FromEnv("QUANTPATH_MAX_HEADER_BYTES", kHuge, &l.header_bytes));
  QP_RETURN_IF_ERROR(FromEnv("QUANTPATH_MAX_TENSORS", kHuge, &l.tensors));
  QP_RETURN_IF_ERROR(FromEnv("QUANTPATH_MAX_SHARDS", kHuge, &l.shards));
  QP_RETURN_IF_ERROR(FromEnv("QUANTPATH_MAX_REGEX_CHARS", int64_t{1} << 24, &l.regex_chars));
  // PCRE2 holds its match limit in 32 bits.
  QP_RETURN_IF_ERROR(FromEnv("QUANTPATH_MAX_REGEX_MATCH_STEPS", UINT32_MAX, &l.regex_match_steps));
  QP_RETURN_IF_ERROR(FromEnv("QUANTPATH_MAX_REGEX_PLAN_STEPS", kHuge, &l.regex_plan_steps));
  return l;
}

const Result<InputLimits>& CurrentLimits() {
  static const Result<InputLimits> limits = ReadInputLimits();
  return limits;
}

}  // namespace quantpath
