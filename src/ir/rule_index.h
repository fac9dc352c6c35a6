// RuleIndex: the rules of one group screened at once, so that a path is tested only against the
// rules that can match it.
//
// Each rule gets a literal that every path it matches must contain (the whole pattern for exact,
// suffix, leading-path and substring rules; the longest run of plain characters a glob or a Python
// regex cannot match without). One Aho–Corasick automaton over those literals finds, in one pass
// over a path, every rule whose literal occurs; rules with no such literal (reverse substring,
// case-insensitive kinds, class names, regexes with alternation or flags) are always candidates.
// The candidates come out in rule order, and the caller runs each one's own matcher, so the first
// hit is the per-pattern loop's first hit. A screened-out regex cannot match the path, so it also
// cannot reach its match limit on it: the answer is Python's, without the backtracking.
// A rule repeating an earlier one (same matcher, same kinds) is never a candidate: it cannot be
// the first hit. Rules that hit only their own pattern (exact names, globs without wildcards), and
// full-match regexes that hit only a few names (FullMatchNames), are looked up by the whole path
// in a hash table instead. The automaton is laid out to stay in cache
// (see rows_ below), and each thread remembers its walk over the last
// path per index, so a path sharing a prefix with the one before ("model.layers.3.self_attn.")
// resumes after it. Non-goals: the trace (`explain` runs the per-pattern loop), kind filters (the
// caller's).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/ir.h"

namespace quantpath {

// Whether `matcher` hits exactly one path, its pattern (exact names, globs without wildcards):
// the index looks such rules up by the whole path instead of scanning for them.
bool MatchesOnlyItsPattern(const Matcher& matcher);
// The literal every path `matcher` hits must contain; empty when there is none to rely on.
std::string RequiredLiteral(const Matcher& matcher);
// The names a Python re.fullmatch of `pattern` hits, when they are a few: plain characters,
// escaped punctuation and unnested groups `(?:a|b)`, each optionally `?`
// ("(?:language_model\.)?(?:model\.norm)", as SGLang's skip rules read). Empty otherwise (a
// quantifier on anything else, `a?` or `(?:a)??`, a class, an anchor, nested groups, many names).
std::vector<std::string> FullMatchNames(std::string_view pattern);

class RuleIndex {
 public:
  // Transition-table entries (branching states × byte classes) the index may hold; past it
  // (hundreds of thousands of literals) it keeps only the trie's edges, which are slower to walk.
  static constexpr size_t kMaxTableEntries = size_t{1} << 22;

  explicit RuleIndex(const std::vector<Rule>& rules, size_t max_table_entries = kMaxTableEntries);
  // The indices of the rules that can match `subject`, ascending, into `out` (cleared first).
  // A subject that is not ASCII is not screened by literals: every rule is then a candidate
  // (unless the index has no literal to scan for; its whole-path lookups are exact on any bytes).
  void Candidates(std::string_view subject, std::vector<uint32_t>* out) const;

 private:
  struct State {
    uint32_t first_edge = 0;  // edges_[first_edge, first_edge + edge_count), sorted by byte
    uint32_t edge_count = 0;
    uint32_t fail = 0;
    uint32_t output = 0;  // the nearest state (this one or along `fail`) ending a literal; 0 none
    uint32_t first_rule = 0;  // rules_[first_rule, first_rule + rule_count) end at this state
    uint32_t rule_count = 0;
  };
  struct Edge {
    unsigned char byte;
    uint32_t to;
  };
  struct Scan;
  // The automaton's move from `state` on `byte`, through the failure links.
  uint32_t Next(uint32_t state, unsigned char byte) const;
  void BuildTable(size_t max_entries);
  // Scans `subject` from byte `from` on, `scan` holding the walk over the bytes before it.
  void Continue(std::string_view subject, size_t from, Scan* scan) const;
  // The rules whose pattern is the whole subject (MatchesOnlyItsPattern), into `out`.
  void BuildWhole(std::vector<std::pair<std::string, uint32_t>> whole);
  void AppendWhole(std::string_view subject, std::vector<uint32_t>* out) const;

  // Names this index to the thread's scan of the last subject it was asked about (an address
  // could be reused by another index).
  uint64_t id_ = 0;
  size_t rule_total_ = 0;
  // The automaton as transition-table rows: byte_class_[b] is 0 for a byte no literal holds, else
  // its column (classes_ columns per row), and an entry is the next cursor, with kHasOutput set
  // when a literal ends there (its `output` is not 0). An automaton of at most kEveryRowEntries
  // entries (1 MB; measured on 2-core machines with 512 KB L2: up to this size one load per byte
  // is faster than the compact form, past it slower) gives every state a row, and the cursor is
  // the row's offset. A larger one is kept compact: literals are mostly runs of single-child
  // states, numbered depth first so that a state's only child is the next state, and such a state
  // keeps only its byte and failure link (8 bytes); the walk follows the link when the byte
  // differs. Only the root and the states with several children have rows, and the cursor is the
  // state. No rows at all past the entry limit.
  static constexpr size_t kEveryRowEntries = size_t{1} << 18;
  static constexpr uint32_t kHasOutput = uint32_t{1} << 31;
  struct Step {
    uint32_t link = 0;  // kRow: where its row starts in rows_; kChain, kLeaf: the failure state
    unsigned char byte = 0;  // kChain: the byte leading to the next state
    uint8_t kind = 0;        // kRow, kChain or kLeaf
    bool output = false;     // a literal ends here (`output` is not 0)
  };
  enum : uint8_t { kRow, kChain, kLeaf };
  std::array<uint16_t, 256> byte_class_{};
  size_t classes_ = 1;
  bool every_row_ = false;      // every state has a row, rows_[state · classes_ …]
  std::vector<Step> steps_;     // compact automata: per state
  std::vector<uint32_t> rows_;  // the rows, in state order
  std::vector<State> states_;
  std::vector<Edge> edges_;
  std::vector<uint32_t> rules_;   // per state, the rules whose literal ends there
  std::vector<uint32_t> always_;  // rules with no literal, ascending
  // Rules matching only their pattern, by pattern: an open-addressing hash table of distinct
  // patterns (a power of two, at most half full; count 0 = empty), each naming its rules,
  // ascending.
  struct WholeSlot {
    size_t hash = 0;
    uint32_t offset = 0;  // the pattern: whole_text_[offset, offset + size)
    uint32_t size = 0;
    uint32_t first_rule = 0;
    uint32_t count = 0;
  };
  std::vector<WholeSlot> whole_slots_;
  std::string whole_text_;  // the distinct patterns, one after another
  std::vector<uint32_t> whole_rules_;
};

// The group's index, built on its first use (RuleGroup::index).
const RuleIndex& IndexOf(const RuleGroup& group);

}  // namespace quantpath
