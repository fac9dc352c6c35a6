// CompiledRegex: translated Python patterns compiled and run by PCRE2 (JIT where available), with
// match limits that turn runaway backtracking into an error, and a process-wide compile cache.
// Layer-path shapes (pyregex_shape.h) are answered without PCRE2 on ASCII subjects.
#include "src/base/pyregex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "src/base/pyregex_shape.h"
#include "src/base/pyregex_translate.h"

namespace quantpath {
namespace {

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof(buffer)) < 0) {
    return "PCRE2 error " + std::to_string(code);
  }
  return reinterpret_cast<const char*>(buffer);
}

std::string Quoted(std::string_view s, size_t max_bytes = 200) {
  if (s.size() <= max_bytes) return JsonQuote(s);
  // Cut at a character boundary so the quote stays valid UTF-8.
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return JsonQuote(s.substr(0, cut)) + "…";
}

// Per-thread match state: a JIT stack may only be used by one thread at a time, and reusing the
// context and match data avoids allocations per match.
struct ThreadMatchState {
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  pcre2_match_data* data = nullptr;

  ThreadMatchState() {
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, kPyRegexJitStackBytes, nullptr);
    // Only whether a match exists is needed, so one ovector pair is enough.
    data = pcre2_match_data_create(1, nullptr);
    if (context == nullptr) return;
    pcre2_set_depth_limit(context, kPyRegexDepthLimit);
    pcre2_set_heap_limit(context, kPyRegexHeapLimitKiB);
    if (jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    pcre2_match_data_free(data);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;
  bool ok() const { return context != nullptr && jit_stack != nullptr && data != nullptr; }
};

ThreadMatchState& LocalMatchState() {
  thread_local ThreadMatchState state;
  return state;
}

struct Cache {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<const CompiledRegex>> entries;
};

Cache& GlobalCache() {
  static Cache* cache = new Cache();  // never destroyed: matches may run during static teardown
  return *cache;
}

std::string CacheKey(std::string_view pattern, PyRegexFlavor flavor) {
  std::string key(1, flavor == PyRegexFlavor::kRe ? 'r' : 'R');
  key += pattern;
  return key;
}

}  // namespace

struct CompiledRegex::Impl {
  pcre2_code* match_code = nullptr;  // (?:P), anchored: re.match
  pcre2_code* full_code = nullptr;   // (?:P)\z, anchored: re.fullmatch
  std::optional<pyregex_internal::DottedShape> shape;
  ~Impl() {
    pcre2_code_free(match_code);
    pcre2_code_free(full_code);
  }
};

CompiledRegex::~CompiledRegex() = default;

namespace {

Result<pcre2_code*> CompilePcre2(const std::string& pcre2_pattern, bool ascii,
                                 std::string_view original) {
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  if (context == nullptr) return InternalError("out of memory creating a PCRE2 compile context");
  // Python's newline is "\n" only, for `$`, `.` and (?m).
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);
  // Wrapping groups add a few levels over the parser's own nesting limit.
  pcre2_set_parens_nest_limit(context, 2 * pyregex_internal::kMaxNesting + 16);
  uint32_t options = PCRE2_UTF | PCRE2_ANCHORED | PCRE2_NEVER_BACKSLASH_C;
  // Python's (?m) `^` also matches after a newline that ends the subject.
  options |= PCRE2_ALT_CIRCUMFLEX;
  // PCRE2 10.42 auto-possessifies `a*` before an atomic group holding a repeated group, e.g.
  // a*(?>(?:b)*)a never matches "a"; Python backtracks into `a*`. Correct answers come first.
  options |= PCRE2_NO_AUTO_POSSESS;
  if (!ascii) options |= PCRE2_UCP;
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pcre2_pattern.data()),
                                   pcre2_pattern.size(), options, &error, &offset, context);
  pcre2_compile_context_free(context);
  if (code == nullptr) {
    // The translator accepted it, so Python does; PCRE2 has no way to say it.
    return Unsupported("regex " + Quoted(original) + ": PCRE2 cannot compile its translation " +
                       Quoted(pcre2_pattern) + ": " + Pcre2Message(error) + " at offset " +
                       std::to_string(offset));
  }
  // Without JIT (or if it fails) pcre2_match falls back to the interpreter, under the same limits.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return code;
}

}  // namespace

Result<std::shared_ptr<const CompiledRegex>> CompiledRegex::Compile(std::string_view pattern,
                                                                    PyRegexFlavor flavor) {
  const std::string key = CacheKey(pattern, flavor);
  Cache& cache = GlobalCache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) return it->second;
  }

  auto translated = pyregex_internal::TranslatePyRegex(pattern, flavor);
  if (!translated.ok()) return translated.status().WithContext("regex " + Quoted(pattern));

  std::shared_ptr<CompiledRegex> compiled(new CompiledRegex());
  compiled->pattern_ = std::string(pattern);
  compiled->flavor_ = flavor;
  compiled->pcre2_pattern_ = translated->pcre2;
  compiled->impl_ = std::make_unique<Impl>();
  // The translation holds no global option settings and no top-level '|' outside the wrapper,
  // so "(?:P)\z" requires the whole of P's match to end at the end of the subject.
  QP_ASSIGN_OR_RETURN(compiled->impl_->match_code,
                      CompilePcre2("(?:" + translated->pcre2 + ")", translated->ascii, pattern));
  QP_ASSIGN_OR_RETURN(compiled->impl_->full_code,
                      CompilePcre2("(?:" + translated->pcre2 + ")\\z", translated->ascii, pattern));
  compiled->impl_->shape = pyregex_internal::DottedShape::Parse(pattern);

  std::lock_guard<std::mutex> lock(cache.mu);
  if (cache.entries.size() >= kPyRegexCacheCapacity) cache.entries.clear();
  auto [it, inserted] = cache.entries.emplace(key, std::move(compiled));
  return it->second;  // another thread may have won the race; either compilation is the same
}

size_t CompiledRegex::CacheSize() {
  Cache& cache = GlobalCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  return cache.entries.size();
}

namespace {

thread_local RegexStepBudget* current_budget = nullptr;

constexpr int64_t kFirstTierSteps = 32;
constexpr int64_t kTierGrowth = 16;

}  // namespace

RegexStepBudget::RegexStepBudget(int64_t steps) : steps_(steps), outer_(current_budget) {
  current_budget = this;
}

RegexStepBudget::~RegexStepBudget() { current_budget = outer_; }

int CompiledRegex::Run(std::string_view subject, bool full, uint32_t steps) const {
  ThreadMatchState& state = LocalMatchState();
  pcre2_set_match_limit(state.context, steps);
  static const char kEmpty[] = "";
  const char* data = subject.data() != nullptr ? subject.data() : kEmpty;
  return pcre2_match(full ? impl_->full_code : impl_->match_code,
                     reinterpret_cast<PCRE2_SPTR>(data), subject.size(), 0, 0, state.data,
                     state.context);
}

Result<bool> CompiledRegex::Match(std::string_view subject, bool full) const {
  const Result<InputLimits>& limits = CurrentLimits();
  if (!limits.ok()) return limits.status();
  RegexStepBudget* budget = current_budget;
  // A shape is charged one first-tier run, as an ordinary PCRE2 match; a budget too low for that
  // takes the PCRE2 path, which reports it.
  if (impl_->shape && (budget == nullptr || budget->steps_ - budget->spent_ >= kFirstTierSteps)) {
    if (const std::optional<bool> hit = impl_->shape->Match(subject, full)) {
      if (budget != nullptr) budget->spent_ += kFirstTierSteps;
      return *hit;
    }
  }
  if (!LocalMatchState().ok()) return InternalError("out of memory creating PCRE2 match state");
  const int64_t per_match = limits->regex_match_steps;
  int rc = 0;
  bool budget_spent = false;
  if (budget == nullptr) {
    rc = Run(subject, full, static_cast<uint32_t>(per_match));
  } else {
    for (int64_t tier = kFirstTierSteps;; tier *= kTierGrowth) {
      const int64_t left = budget->steps_ - budget->spent_;
      const int64_t steps = std::min({tier, per_match, left});
      if (steps <= 0) {
        budget_spent = true;
        break;
      }
      rc = Run(subject, full, static_cast<uint32_t>(steps));
      budget->spent_ += steps;
      if (rc != PCRE2_ERROR_MATCHLIMIT || steps == per_match) break;
      if (steps == left) {
        budget_spent = true;
        break;
      }
    }
  }
  if (rc >= 0 && !budget_spent) return true;  // 0: matched, ovector too small for the groups
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  std::string what;
  if (budget_spent) {
    what = "regex step budget of one plan (" + std::to_string(budget->steps_) +
           " steps, QUANTPATH_MAX_REGEX_PLAN_STEPS)";
  } else {
    switch (rc) {
      case PCRE2_ERROR_MATCHLIMIT:
        what = "match limit (" + std::to_string(per_match) +
               " steps, QUANTPATH_MAX_REGEX_MATCH_STEPS)";
        break;
      case PCRE2_ERROR_DEPTHLIMIT:
        what = "depth limit (" + std::to_string(kPyRegexDepthLimit) + ")";
        break;
      case PCRE2_ERROR_HEAPLIMIT:
        what = "heap limit (" + std::to_string(kPyRegexHeapLimitKiB) + " KiB)";
        break;
      case PCRE2_ERROR_JIT_STACKLIMIT:
        what = "JIT stack limit (" + std::to_string(kPyRegexJitStackBytes) + " bytes)";
        break;
      default:
        break;
    }
  }
  if (!what.empty()) {
    Status error =
        LimitError("regex " + Quoted(pattern_) + " on " + Quoted(subject) + ": hit the " + what +
                   (budget_spent ? "; the rules together backtrack too much to decide"
                                 : "; the pattern backtracks too much to decide"));
    if (budget != nullptr && budget->limit_error_.ok()) budget->limit_error_ = error;
    return error;
  }
  if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21) {
    return InvalidInput("regex " + Quoted(pattern_) + ": subject " + Quoted(subject) +
                        " is not valid UTF-8: " + Pcre2Message(rc));
  }
  return InternalError("regex " + Quoted(pattern_) + " on " + Quoted(subject) + ": " +
                       Pcre2Message(rc));
}

}  // namespace quantpath
