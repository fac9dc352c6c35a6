// RuleIndex: see rule_index.h. The literal extraction reads Python regex syntax conservatively:
// whatever it does not fully understand ends the current run of literal characters (losing
// selectivity, never a match), and anything that could change what a plain character means
// (alternation at the top, inline flags such as (?i) or (?x)) gives no literal at all.
#include "src/ir/rule_index.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

namespace quantpath {
namespace {

std::string Longest(std::vector<std::string> runs) {
  std::string best;
  for (std::string& run : runs) {
    if (run.size() > best.size()) best = std::move(run);
  }
  return best;
}

// fnmatch: the characters between `*` and `?`, up to the first `[` (a set, or a literal '[').
std::string GlobLiteral(std::string_view pattern) {
  std::vector<std::string> runs(1);
  for (char c : pattern) {
    if (c == '[') break;
    if (c == '*' || c == '?') {
      runs.emplace_back();
    } else {
      runs.back() += c;
    }
  }
  return Longest(std::move(runs));
}

class RegexLiterals {
 public:
  explicit RegexLiterals(std::string_view pattern) : p_(pattern) {}

  std::string Longest() {
    if (HasTopLevelAlternation()) return "";
    Sequence(0, p_.size());
    Break();
    return ok_ ? quantpath::Longest(std::move(runs_)) : "";
  }

 private:
  static bool IsQuantifier(char c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

  void Break() {
    if (!run_.empty()) runs_.push_back(std::move(run_));
    run_.clear();
  }

  // Skips a quantifier at i_ (with a lazy or possessive suffix); whether there was one. A '{'
  // that Python would read literally is skipped too (only selectivity is lost).
  bool SkipQuantifier(size_t end) {
    if (i_ >= end || !IsQuantifier(p_[i_])) return false;
    if (p_[i_] == '{') {
      const size_t close = p_.find('}', i_);
      i_ = close == std::string_view::npos || close >= end ? end : close + 1;
    } else {
      ++i_;
    }
    if (i_ < end && (p_[i_] == '?' || p_[i_] == '+')) ++i_;
    return true;
  }

  // The end of the character class opening at `at` (one past its ']').
  size_t ClassEnd(size_t at) const {
    size_t j = at + 1;
    if (j < p_.size() && p_[j] == '^') ++j;
    if (j < p_.size() && p_[j] == ']') ++j;
    while (j < p_.size() && p_[j] != ']') j += p_[j] == '\\' ? 2 : 1;
    return std::min(j + 1, p_.size());
  }

  // The index of the ')' closing the group opening at `at`, and whether the group has an
  // alternation of its own.
  std::pair<size_t, bool> GroupEnd(size_t at) const {
    int depth = 0;
    bool alternation = false;
    size_t j = at;
    while (j < p_.size()) {
      const char c = p_[j];
      if (c == '\\') {
        j += 2;
        continue;
      }
      if (c == '[') {
        j = ClassEnd(j);
        continue;
      }
      if (c == '(') ++depth;
      if (c == ')' && --depth == 0) return {j, alternation};
      if (c == '|' && depth == 1) alternation = true;
      ++j;
    }
    return {p_.size(), true};
  }

  bool HasTopLevelAlternation() const {
    size_t j = 0;
    while (j < p_.size()) {
      const char c = p_[j];
      if (c == '\\') {
        j += 2;
      } else if (c == '[') {
        j = ClassEnd(j);
      } else if (c == '(') {
        j = GroupEnd(j).first + 1;
      } else if (c == '|') {
        return true;
      } else {
        ++j;
      }
    }
    return false;
  }

  void Group(size_t end) {
    const size_t open = i_;
    const auto [close, alternation] = GroupEnd(open);
    std::string_view head = p_.substr(open + 1);
    size_t content = open + 1;
    bool inline_content = true;
    if (head.starts_with("?:") || head.starts_with("?>")) {
      content = open + 3;
    } else if (head.starts_with("?P<") ||
               (head.starts_with("?<") && !head.starts_with("?<=") && !head.starts_with("?<!"))) {
      const size_t gt = p_.find('>', open);
      content = gt == std::string_view::npos ? close : gt + 1;
    } else if (head.starts_with("?=") || head.starts_with("?!") || head.starts_with("?<") ||
               head.starts_with("?P") || head.starts_with("?(")) {
      inline_content = false;  // look-around, reference, conditional
    } else if (head.starts_with("?")) {
      // Inline flags (plain characters may not mean themselves), or a comment, which a quantifier
      // after it skips over ("a(?#x)*" repeats the a).
      ok_ = false;
    }
    i_ = std::min(close + 1, end);
    if (SkipQuantifier(end) || alternation || !inline_content || close >= end) {
      Break();
      return;
    }
    const size_t after = i_;
    i_ = content;
    Sequence(content, close);
    i_ = after;
  }

  void Sequence(size_t begin, size_t end) {
    i_ = begin;
    while (i_ < end && ok_) {
      const char c = p_[i_];
      const auto byte = static_cast<unsigned char>(c);
      if (c == '(') {
        Group(end);
      } else if (c == '[') {
        Break();
        i_ = std::min(ClassEnd(i_), end);
        SkipQuantifier(end);
      } else if (c == '\\') {
        const char d = i_ + 1 < end ? p_[i_ + 1] : '\0';
        i_ += 2;
        if (d != '\0' && static_cast<unsigned char>(d) < 0x80 &&
            std::isalnum(static_cast<unsigned char>(d)) == 0) {
          if (SkipQuantifier(end)) {
            Break();
          } else {
            run_ += d;
          }
          continue;
        }
        // A class, anchor, reference or code escape (\x41, \u00e9, \N{…}, \g<1>): its arguments
        // are skipped with it.
        Break();
        while (i_ < end && static_cast<unsigned char>(p_[i_]) < 0x80 &&
               std::isalnum(static_cast<unsigned char>(p_[i_])) != 0) {
          ++i_;
        }
        if (i_ < end && (p_[i_] == '{' || p_[i_] == '<')) {
          const size_t close = p_.find(p_[i_] == '{' ? '}' : '>', i_);
          i_ = close == std::string_view::npos || close >= end ? end : close + 1;
        }
        SkipQuantifier(end);
      } else if (c == '.' || c == '^' || c == '$' || c == ')' || c == '|' || IsQuantifier(c) ||
                 byte >= 0x80) {
        Break();
        ++i_;
        while (i_ < end && (static_cast<unsigned char>(p_[i_]) & 0xC0) == 0x80) ++i_;
        SkipQuantifier(end);
      } else {
        ++i_;
        if (SkipQuantifier(end)) {
          Break();
        } else {
          run_ += c;
        }
      }
    }
  }

  std::string_view p_;
  size_t i_ = 0;
  bool ok_ = true;
  std::string run_;
  std::vector<std::string> runs_;
};

}  // namespace

std::vector<std::string> FullMatchNames(std::string_view p) {
  constexpr size_t kMaxNames = 16;
  std::vector<std::string> names(1);
  size_t i = 0;
  // Appends the literal character at p[i] (plain, or punctuation escaped) to `out`; false when
  // p[i] means something else.
  const auto literal = [&](std::string* out) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (std::isalnum(c) != 0 || c == '_' || c == '-' || c == '/' || c == ':') {
      *out += p[i++];
      return true;
    }
    if (c != '\\' || i + 1 == p.size()) return false;
    const auto escaped = static_cast<unsigned char>(p[i + 1]);
    if (escaped >= 0x80 || std::ispunct(escaped) == 0) return false;
    *out += p[i + 1];
    i += 2;
    return true;
  };
  while (i < p.size()) {
    std::vector<std::string> choices(1);
    if (p[i] != '(') {
      if (!literal(&choices[0])) return {};
    } else {
      if (p.substr(i, 3) != "(?:") return {};
      for (i += 3; i < p.size() && p[i] != ')';) {
        if (p[i] == '|') {
          choices.emplace_back();
          ++i;
        } else if (!literal(&choices.back())) {
          return {};
        }
      }
      if (i == p.size()) return {};
      ++i;
      if (i < p.size() && p[i] == '?') {
        choices.emplace_back();
        ++i;
      }
    }
    if (names.size() * choices.size() > kMaxNames) return {};
    std::vector<std::string> product;
    for (const std::string& name : names) {
      for (const std::string& choice : choices) product.push_back(name + choice);
    }
    names = std::move(product);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

bool MatchesOnlyItsPattern(const Matcher& matcher) {
  switch (matcher.kind()) {
    case MatchKind::kExact:
      return true;
    case MatchKind::kGlob:  // a glob without wildcards or sets is the name itself
      return matcher.pattern().find_first_of("*?[") == std::string::npos;
    default:
      return false;
  }
}

std::string RequiredLiteral(const Matcher& matcher) {
  const std::string& p = matcher.pattern();
  switch (matcher.kind()) {
    case MatchKind::kExact:
    case MatchKind::kLeadingPath:
    case MatchKind::kDottedSuffix:
    case MatchKind::kSubstring:
      return p;
    case MatchKind::kGlob:
      return GlobLiteral(p);
    case MatchKind::kRegexMatch:
    case MatchKind::kRegexFullMatch:
      return RegexLiterals(p).Longest();
    case MatchKind::kReverseSubstring:
    case MatchKind::kSubstringIgnoreCase:
    case MatchKind::kGlobAnySegment:
    case MatchKind::kClassName:
      return "";
  }
  return "";
}

// The walk over this thread's last subject for one index: the automaton's position after each
// byte and the rules whose literals ended there. Paths that follow each other share long prefixes
// ("model.layers.3.self_attn."), so the next subject resumes after the common prefix instead of
// starting over.
struct RuleIndex::Scan {
  uint64_t index_id = 0;
  std::string subject;
  std::vector<uint32_t> cursors;  // cursors[i]: the position after i bytes (cursors[0] = start)
  std::vector<std::pair<uint32_t, uint32_t>> hits;  // (bytes read when its literal ended, rule)
  size_t first_non_ascii = std::string::npos;
};

namespace {

std::atomic<uint64_t> next_index_id{1};

// Renumbers the trie in depth-first order, so that the states a path walks through one after
// another (a literal's run of single-child states) have neighbouring rows in the table: a
// walk reads memory forwards instead of all over it.
void NumberDepthFirst(std::vector<std::map<unsigned char, uint32_t>>* children,
                      std::vector<std::vector<uint32_t>>* ends) {
  const size_t n = children->size();
  std::vector<uint32_t> order;
  order.reserve(n);
  std::vector<uint32_t> stack = {0};
  while (!stack.empty()) {
    const uint32_t u = stack.back();
    stack.pop_back();
    order.push_back(u);
    const auto& kids = (*children)[u];
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(it->second);
  }
  std::vector<uint32_t> id(n);
  for (size_t i = 0; i < n; ++i) id[order[i]] = static_cast<uint32_t>(i);
  std::vector<std::map<unsigned char, uint32_t>> renumbered(n);
  std::vector<std::vector<uint32_t>> renumbered_ends(n);
  for (size_t u = 0; u < n; ++u) {
    for (const auto& [byte, to] : (*children)[u]) renumbered[id[u]].emplace(byte, id[to]);
    renumbered_ends[id[u]] = std::move((*ends)[u]);
  }
  *children = std::move(renumbered);
  *ends = std::move(renumbered_ends);
}

}  // namespace

RuleIndex::RuleIndex(const std::vector<Rule>& rules, size_t max_table_entries)
    : id_(next_index_id.fetch_add(1, std::memory_order_relaxed)), rule_total_(rules.size()) {
  // The trie, then the failure links breadth first (Aho–Corasick).
  std::vector<std::map<unsigned char, uint32_t>> children(1);
  std::vector<std::vector<uint32_t>> ends(1);
  std::vector<std::pair<std::string, uint32_t>> whole;
  // A rule the same as an earlier one (matcher and kinds) is never the first hit, since the
  // earlier one hits wherever it does: it is left out (SGLang's per-layer entries repeat one
  // last-segment regex per layer).
  std::set<std::tuple<MatchKind, RegexFlavor, SiteKindSet, std::string_view>> seen;
  for (uint32_t r = 0; r < rules.size(); ++r) {
    const Matcher& m = rules[r].matcher;
    if (!seen.emplace(m.kind(), m.flavor(), rules[r].kinds, m.pattern()).second) continue;
    if (MatchesOnlyItsPattern(rules[r].matcher)) {
      whole.emplace_back(rules[r].matcher.pattern(), r);
      continue;
    }
    if (m.kind() == MatchKind::kRegexFullMatch) {
      const std::vector<std::string> names = FullMatchNames(m.pattern());
      for (const std::string& name : names) whole.emplace_back(name, r);
      if (!names.empty()) continue;
    }
    const std::string literal = RequiredLiteral(rules[r].matcher);
    if (literal.empty()) {
      always_.push_back(r);
      continue;
    }
    uint32_t s = 0;
    for (char c : literal) {
      const auto byte = static_cast<unsigned char>(c);
      auto it = children[s].find(byte);
      if (it == children[s].end()) {
        it = children[s].emplace(byte, static_cast<uint32_t>(children.size())).first;
        children.emplace_back();
        ends.emplace_back();
      }
      s = it->second;
    }
    ends[s].push_back(r);
  }
  NumberDepthFirst(&children, &ends);
  states_.resize(children.size());
  for (size_t s = 0; s < children.size(); ++s) {
    states_[s].first_edge = static_cast<uint32_t>(edges_.size());
    states_[s].edge_count = static_cast<uint32_t>(children[s].size());
    for (const auto& [byte, to] : children[s]) edges_.push_back({byte, to});
    states_[s].first_rule = static_cast<uint32_t>(rules_.size());
    states_[s].rule_count = static_cast<uint32_t>(ends[s].size());
    rules_.insert(rules_.end(), ends[s].begin(), ends[s].end());
  }
  std::vector<uint32_t> queue;
  for (const auto& [byte, to] : children[0]) queue.push_back(to);
  for (size_t q = 0; q < queue.size(); ++q) {
    const uint32_t u = queue[q];
    State& state = states_[u];
    state.output = state.rule_count > 0 ? u : states_[state.fail].output;
    for (const auto& [byte, v] : children[u]) {
      states_[v].fail = Next(state.fail, byte);
      queue.push_back(v);
    }
  }
  BuildTable(max_table_entries);
  BuildWhole(std::move(whole));
}

void RuleIndex::BuildWhole(std::vector<std::pair<std::string, uint32_t>> whole) {
  if (whole.empty()) return;
  std::stable_sort(whole.begin(), whole.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t slots = 2;
  while (slots < 2 * whole.size()) slots *= 2;
  whole_slots_.assign(slots, WholeSlot{});
  for (size_t i = 0; i < whole.size();) {
    size_t j = i;
    while (j < whole.size() && whole[j].first == whole[i].first) {
      whole_rules_.push_back(whole[j++].second);
    }
    const size_t hash = std::hash<std::string_view>{}(whole[i].first);
    size_t at = hash & (slots - 1);
    while (whole_slots_[at].count != 0) at = (at + 1) & (slots - 1);
    whole_slots_[at] = {hash, static_cast<uint32_t>(whole_text_.size()),
                        static_cast<uint32_t>(whole[i].first.size()),
                        static_cast<uint32_t>(whole_rules_.size() - (j - i)),
                        static_cast<uint32_t>(j - i)};
    whole_text_ += whole[i].first;
    i = j;
  }
}

void RuleIndex::AppendWhole(std::string_view subject, std::vector<uint32_t>* out) const {
  if (whole_slots_.empty()) return;
  const size_t hash = std::hash<std::string_view>{}(subject);
  const size_t mask = whole_slots_.size() - 1;
  for (size_t at = hash & mask; whole_slots_[at].count != 0; at = (at + 1) & mask) {
    const WholeSlot& slot = whole_slots_[at];
    if (slot.hash != hash ||
        std::string_view(whole_text_).substr(slot.offset, slot.size) != subject) {
      continue;
    }
    out->insert(out->end(), whole_rules_.begin() + slot.first_rule,
                whole_rules_.begin() + slot.first_rule + slot.count);
    return;
  }
}

void RuleIndex::BuildTable(size_t max_entries) {
  std::vector<unsigned char> class_byte(1);  // a byte of each class
  for (const Edge& e : edges_) {
    if (byte_class_[e.byte] == 0) {
      byte_class_[e.byte] = static_cast<uint16_t>(classes_++);
      class_byte.push_back(e.byte);
    }
  }
  every_row_ = states_.size() * classes_ <= std::min(kEveryRowEntries, max_entries);
  size_t with_rows = 0;
  for (size_t s = 0; s < states_.size(); ++s) {
    with_rows += every_row_ || s == 0 || states_[s].edge_count > 1;
  }
  // Cursors and row offsets must leave kHasOutput's bit free.
  if (with_rows > max_entries / classes_ || states_.size() * classes_ >= kHasOutput) {
    every_row_ = false;
    return;
  }
  if (!every_row_) steps_.resize(states_.size());
  rows_.reserve(with_rows * classes_);
  for (uint32_t s = 0; s < states_.size(); ++s) {
    const State& state = states_[s];
    if (!every_row_) {
      Step& step = steps_[s];
      step.output = state.output != 0;
      if (s != 0 && state.edge_count <= 1) {
        step.kind = state.edge_count == 1 ? kChain : kLeaf;
        step.link = state.fail;
        if (state.edge_count == 1) step.byte = edges_[state.first_edge].byte;
        continue;
      }
      step.kind = kRow;
      step.link = static_cast<uint32_t>(rows_.size());
    }
    for (size_t c = 0; c < classes_; ++c) {
      // Column 0 stands for every byte no literal holds: the walk returns to the root.
      const uint32_t to = c == 0 ? 0 : Next(s, class_byte[c]);
      const uint32_t cursor = every_row_ ? static_cast<uint32_t>(to * classes_) : to;
      rows_.push_back(cursor | (states_[to].output != 0 ? kHasOutput : 0));
    }
  }
}

uint32_t RuleIndex::Next(uint32_t state, unsigned char byte) const {
  while (true) {
    const State& s = states_[state];
    const Edge* begin = edges_.data() + s.first_edge;
    const Edge* end = begin + s.edge_count;
    const Edge* it = std::lower_bound(begin, end, byte,
                                      [](const Edge& e, unsigned char b) { return e.byte < b; });
    if (it != end && it->byte == byte) return it->to;
    if (state == 0) return 0;
    state = s.fail;
  }
}

void RuleIndex::Continue(std::string_view subject, size_t from, Scan* scan) const {
  const auto emit = [&](uint32_t s, size_t read) {
    for (uint32_t o = states_[s].output; o != 0; o = states_[states_[o].fail].output) {
      const State& hit = states_[o];
      for (uint32_t r = hit.first_rule; r < hit.first_rule + hit.rule_count; ++r) {
        scan->hits.emplace_back(static_cast<uint32_t>(read), rules_[r]);
      }
    }
  };
  uint32_t cursor = scan->cursors[from];
  scan->cursors.resize(subject.size() + 1);
  uint32_t* cursors = scan->cursors.data();
  // Locals, so that the compiler need not reload them after every store into the scan.
  const Step* steps = steps_.data();
  const uint32_t* rows = rows_.data();
  const uint16_t* byte_class = byte_class_.data();
  for (size_t i = from; i < subject.size(); ++i) {
    const auto byte = static_cast<unsigned char>(subject[i]);
    if (byte >= 0x80 && scan->first_non_ascii == std::string::npos) scan->first_non_ascii = i;
    if (every_row_) {
      const uint32_t entry = rows[cursor + byte_class[byte]];
      cursor = entry & ~kHasOutput;
      if ((entry & kHasOutput) != 0) emit(static_cast<uint32_t>(cursor / classes_), i + 1);
    } else if (!steps_.empty()) {
      while (true) {
        const Step& step = steps[cursor];
        if (step.kind == kRow) {
          const uint32_t entry = rows[step.link + byte_class[byte]];
          cursor = entry & ~kHasOutput;
          if ((entry & kHasOutput) != 0) emit(cursor, i + 1);
          break;
        }
        if (step.kind == kChain && step.byte == byte) {
          ++cursor;  // the only child, numbered next
          if (steps[cursor].output) emit(cursor, i + 1);
          break;
        }
        cursor = step.link;
      }
    } else {
      cursor = Next(cursor, byte);
      emit(cursor, i + 1);
    }
    cursors[i + 1] = cursor;
  }
}

void RuleIndex::Candidates(std::string_view subject, std::vector<uint32_t>* out) const {
  out->clear();
  const auto every_rule = [&] {
    out->clear();
    for (uint32_t r = 0; r < rule_total_; ++r) out->push_back(r);
  };
  if (states_.size() <= 1) {     // no literals to scan for
    if (whole_slots_.empty()) {  // every rule is literal-free
      out->assign(always_.begin(), always_.end());
      return;
    }
    AppendWhole(subject, out);  // exact on any bytes: ASCII or not
  } else {
    // One slot per index id, a few per thread: a plan's groups get consecutive ids.
    thread_local std::array<Scan, 8> scans;
    Scan& scan = scans[id_ % scans.size()];
    size_t common = 0;
    if (scan.index_id == id_) {
      const size_t limit = std::min(subject.size(), scan.subject.size());
      while (common < limit && subject[common] == scan.subject[common]) ++common;
      scan.cursors.resize(common + 1);
      while (!scan.hits.empty() && scan.hits.back().first > common) scan.hits.pop_back();
      if (scan.first_non_ascii >= common) scan.first_non_ascii = std::string::npos;
    } else {
      scan.index_id = id_;
      scan.cursors.assign(1, 0);
      scan.hits.clear();
      scan.first_non_ascii = std::string::npos;
    }
    scan.subject.assign(subject);
    Continue(subject, common, &scan);
    if (scan.first_non_ascii != std::string::npos) return every_rule();
    for (const auto& hit : scan.hits) out->push_back(hit.second);
    AppendWhole(subject, out);
  }
  if (out->empty()) {  // no literal occurs: the literal-free rules, already in order
    out->assign(always_.begin(), always_.end());
    return;
  }
  out->insert(out->end(), always_.begin(), always_.end());
  // `out` is a few ascending runs (each literal's rules, the whole-path rules, the literal-free
  // ones): merged rather than sorted when there are two, left as is when there is one.
  const auto descent = std::adjacent_find(out->begin(), out->end(), std::greater<uint32_t>());
  if (descent != out->end()) {
    const auto second = descent + 1;
    if (std::is_sorted(second, out->end())) {
      thread_local std::vector<uint32_t> merged;
      merged.resize(out->size());
      std::merge(out->begin(), second, second, out->end(), merged.begin());
      out->swap(merged);
    } else {
      std::sort(out->begin(), out->end());
    }
  }
  out->erase(std::unique(out->begin(), out->end()), out->end());
}

const RuleIndex& IndexOf(const RuleGroup& group) {
  return group.index.Get([&] { return std::make_unique<const RuleIndex>(group.rules); });
}

}  // namespace quantpath
