// Exclusion and target entries that match no module of the model (lint.h).
#include "quantpath/pipeline/lint.h"

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "fmt/format.h"
#include "src/base/nearest_names.h"
#include "src/base/pyregex.h"
#include "src/importers/name_mapping.h"

namespace quantpath {
namespace {

// A top-level key naming a weight (`/model.layers.0.self_attn.q_proj.weight`): ModelSlim's
// description, a key per tensor.
bool IsWeightKey(std::string_view pointer) {
  const size_t slash = pointer.rfind('/');
  return slash == 0 && pointer.ends_with(".weight");
}

// A rule written from one entry of a list (`…/ignore/3`), one key of GPTQ's `dynamic`, or one
// weight key of a ModelSlim description: the entries a user writes to name modules. Rules an
// importer makes for a whole kind point at the description itself.
bool IsEntry(const Provenance& source) {
  const size_t slash = source.pointer.rfind('/');
  if (slash == std::string::npos || slash + 1 == source.pointer.size()) return false;
  const std::string_view last = std::string_view(source.pointer).substr(slash + 1);
  if (std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return true;
  }
  const std::string_view parent = std::string_view(source.pointer).substr(0, slash);
  return parent.ends_with("/dynamic") || IsWeightKey(source.pointer);
}

// Every module name of the model under its dialect, with each module's parents: the sites, their
// legs and checkpoint paths, the modules it builds without a quantization config or skips, and
// the modules of the checkpoint's tensors (experts, norms: a tensor name less its last part).
struct Modules {
  std::vector<std::string> names;
  std::vector<std::string> classes;  // each name's engine class where it is a site ("" else)
  std::vector<bool> parents;         // a parent module, not itself a module listed above
  std::vector<std::string> skipped;  // modules the engine does not build (MTP)
};

Modules ModulesOf(const Model& model) {
  Modules out;
  std::set<std::string> seen;
  const std::optional<NameMapper> mapper = FindNameMapper(model.sources, model.plan.dialect);
  // `name`, each of its parent modules, and (checkpoint names) its engine name under the mapper
  // the dialect applies to config lists.
  const auto add = [&](const std::string& name, const std::string& module_class, bool checkpoint) {
    std::vector<std::string> names = {name};
    if (checkpoint && mapper) names.push_back(MapName(*mapper, name));
    for (const std::string& n : names) {
      for (size_t end = n.size(); end != 0 && end != std::string::npos;
           end = n.rfind('.', end - 1)) {
        const std::string module = n.substr(0, end);
        if (!module.empty() && seen.insert(module).second) {
          out.names.push_back(module);
          out.classes.push_back(end == n.size() ? module_class : "");
          out.parents.push_back(end != n.size());
        }
        if (end == 0) break;
      }
    }
  };
  for (const LayerSite& site : model.sites.sites) {
    add(site.path, site.module_class, false);
    add(site.checkpoint_path, site.module_class, true);
    for (size_t i = 0; i < site.legs.size(); ++i) add(site.LegPath(i), site.module_class, false);
  }
  const auto module_of = [](const std::string& tensor) {
    const size_t dot = tensor.rfind('.');
    return dot == std::string::npos ? std::string() : tensor.substr(0, dot);
  };
  for (const CheckpointTensor& t : model.sources.checkpoint().tensors) {
    add(module_of(t.name), "", true);
  }
  for (const OtherTensor& t : model.sites.other_tensors) add(module_of(t.name), "", true);
  // Modules the engine builds without asking the quantization config, or not at all (MTP without
  // --speculative): an entry naming one is moot there, not stale.
  for (const std::string& m : model.sites.unlisted_modules) add(m, "", true);
  for (const std::string& m : model.sites.skipped_modules) add(m, "", true);
  out.skipped = model.sites.skipped_modules;
  return out;
}

Result<bool> MatchesAny(const Rule& rule, const Modules& modules) {
  // "path in pattern" asks about the layers themselves: a parent's name is in every child's entry.
  const bool layers_only = rule.matcher.kind() == MatchKind::kReverseSubstring;
  for (size_t i = 0; i < modules.names.size(); ++i) {
    if (layers_only && modules.parents[i]) continue;
    QP_ASSIGN_OR_RETURN(const bool hit, rule.matcher.Matches(modules.names[i], modules.classes[i]));
    if (hit) return true;
  }
  return false;
}

// The value at `pointer` (RFC 6901) of `root`, or nullptr.
const Json* AtPointer(const Json& root, std::string_view pointer) {
  const Json* at = &root;
  while (!pointer.empty() && at != nullptr) {
    pointer.remove_prefix(1);  // the '/'
    const size_t end = std::min(pointer.find('/'), pointer.size());
    std::string token;
    for (size_t i = 0; i < end; ++i) {
      if (pointer[i] == '~' && i + 1 < end) {
        token += pointer[i + 1] == '1' ? '/' : '~';
        ++i;
      } else {
        token += pointer[i];
      }
    }
    pointer.remove_prefix(end);
    if (at->is_object()) {
      at = at->Find(token);
    } else if (at->is_array() && !token.empty() &&
               std::all_of(token.begin(), token.end(),
                           [](char c) { return c >= '0' && c <= '9'; }) &&
               token.size() < 10 && std::stoul(token) < at->items().size()) {
      at = &at->items()[std::stoul(token)];
    } else {
      at = nullptr;
    }
  }
  return at;
}

// The entry as the description writes it: a list entry's string, a `dynamic` key, or a weight
// key (RFC 6901's escapes undone).
std::string EntryText(const ConfigSources& sources, const Rule& rule) {
  if (IsWeightKey(rule.source.pointer)) {
    std::string key;
    for (size_t i = 1; i < rule.source.pointer.size(); ++i) {
      const char c = rule.source.pointer[i];
      if (c == '~' && i + 1 < rule.source.pointer.size()) {
        key += rule.source.pointer[++i] == '1' ? '/' : '~';
      } else {
        key += c;
      }
    }
    return key;
  }
  const SourceFile* file = sources.File(rule.source.file);
  if (file != nullptr) {
    if (const Json* value = AtPointer(file->root, rule.source.pointer);
        value != nullptr && value->is_string()) {
      return value->string_value();
    }
    const size_t slash = rule.source.pointer.rfind('/');
    if (rule.source.pointer.substr(0, slash).ends_with("/dynamic")) {
      return rule.source.pointer.substr(slash + 1);
    }
  }
  return rule.matcher.pattern();
}

std::vector<Dialect> LintDialects() {
  std::vector<Dialect> out;
  for (std::string_view name : {"native", "vllm", "sglang"}) {
    if (std::optional<Dialect> d = ParseDialect(name)) out.push_back(*d);
  }
  return out;
}

}  // namespace

Result<std::vector<UnmatchedEntry>> UnmatchedEntries(const std::string& dir,
                                                     const OpenOptions& options) {
  std::vector<UnmatchedEntry> entries;  // description order, first dialect's first
  std::vector<std::string> all_names;
  for (const Dialect& dialect : LintDialects()) {
    OpenOptions under = options;
    under.dialect = dialect;
    Result<Model> model = OpenModel(dir, under);
    if (!model.ok()) continue;
    // The plan's regex budget bounds the lint too: a description whose patterns backtrack is the
    // plan's error to report, and the lint stops judging its entries.
    QP_ASSIGN_OR_RETURN(InputLimits limits, CurrentLimits());
    RegexStepBudget budget(limits.regex_plan_steps);
    const Modules modules = ModulesOf(*model);
    if (all_names.empty()) all_names = modules.names;
    // An entry may make several rules (by name, by class, per kind): it matches when one does.
    std::vector<std::pair<Provenance, std::vector<const Rule*>>> by_entry;
    for (const RuleGroup& group : model->plan.groups) {
      for (const Rule& rule : group.rules) {
        if (!IsEntry(rule.source)) continue;
        auto it = std::find_if(by_entry.begin(), by_entry.end(), [&](const auto& e) {
          return e.first.file == rule.source.file && e.first.pointer == rule.source.pointer;
        });
        if (it == by_entry.end()) {
          by_entry.push_back({rule.source, {}});
          it = by_entry.end() - 1;
        }
        it->second.push_back(&rule);
      }
    }
    for (const auto& [where, rules] : by_entry) {
      if (budget.limit_error() != nullptr) break;
      // An entry inside a module the engine does not build (MTP without --speculative) is moot.
      const std::string text = EntryText(model->sources, *rules.front());
      if (std::any_of(modules.skipped.begin(), modules.skipped.end(), [&](const std::string& m) {
            return text == m || text.starts_with(m + ".");
          })) {
        continue;
      }
      bool hit = false;
      for (const Rule* rule : rules) {
        // A regex over its match limit is the plan's error to report (naming its file and key):
        // the lint does not judge that entry.
        Result<bool> matched = MatchesAny(*rule, modules);
        hit = !matched.ok() || *matched || budget.limit_error() != nullptr;
        if (hit) break;
      }
      if (hit) continue;
      auto it = std::find_if(entries.begin(), entries.end(), [&](const UnmatchedEntry& e) {
        return e.where.file == where.file && e.where.pointer == where.pointer;
      });
      if (it == entries.end()) {
        entries.push_back({text, where, {}, {}});
        it = entries.end() - 1;
      }
      it->dialects.emplace_back(dialect.name);
    }
  }
  // Description order: by file, then list, then index within the list.
  const auto order = [](const Provenance& p) {
    const size_t slash = p.pointer.rfind('/');
    const std::string last = p.pointer.substr(slash + 1);
    const bool index =
        !last.empty() && last.size() < 10 &&
        std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; });
    return std::make_tuple(p.file, p.pointer.substr(0, slash), index ? std::stoul(last) : 0ul,
                           last);
  };
  std::stable_sort(entries.begin(), entries.end(),
                   [&](const UnmatchedEntry& a, const UnmatchedEntry& b) {
                     return order(a.where) < order(b.where);
                   });
  for (UnmatchedEntry& e : entries) {
    // A weight key is held to the modules as a module, and answered with weight keys.
    const bool weight_key = IsWeightKey(e.where.pointer);
    const std::string_view module = weight_key
                                        ? std::string_view(e.entry).substr(0, e.entry.size() - 7)
                                        : std::string_view(e.entry);
    e.suggestions = NearestNames(module, all_names);
    if (weight_key) {
      for (std::string& suggestion : e.suggestions) suggestion += ".weight";
    }
  }
  return entries;
}

std::string UnmatchedEntryText(const UnmatchedEntry& entry) {
  return fmt::format(
      "{}: {} matches no module under {}{}", entry.where.ToString(), JsonQuote(entry.entry),
      Join(entry.dialects, ", "),
      entry.suggestions.empty() ? std::string() : "; nearest: " + Join(entry.suggestions, ", "));
}

}  // namespace quantpath
