// `quantpath diff` as text and as JSON (docs/json/diff.md). JSON field order is part of the
// contract.
#include <algorithm>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>

#include "fmt/format.h"
#include "quantpath/report.h"

namespace quantpath {
namespace {

std::string DecisionText(const DialectDecision& mine) {
  std::string text(DecisionKindName(mine.decision->kind));
  if (mine.decision->scheme) text += " " + mine.decision->scheme->CanonicalName();
  if (mine.kv_method_only) text += " (KV-cache method, no scheme)";
  return text;
}

// The steps that decided; `explain` lists every miss.
std::vector<TraceStep> Hits(const Decision& d) {
  std::vector<TraceStep> hits;
  std::copy_if(d.trace.begin(), d.trace.end(), std::back_inserter(hits),
               [](const TraceStep& step) { return step.hit; });
  return hits;
}

void AppendLayer(const ModelDiff& diff, const LayerDiff& layer, size_t width, std::string* out) {
  *out += layer.key + "\n";
  const std::string indent(width + 3, ' ');
  for (size_t d = 0; d < diff.dialects.size(); ++d) {
    const DialectDecision& mine = layer.dialects[d];
    if (!mine.decision) {
      const std::string why = mine.paths.empty() ? "(no such site)" : "(not planned)";
      *out += fmt::format("  {:<{}} {}\n", diff.dialects[d], width, why);
      continue;
    }
    // An engine that passes no prefix builds the layer as "" (the key names it).
    std::vector<std::string> paths;
    for (const std::string& p : mine.paths) paths.push_back(p.empty() ? "\"\"" : p);
    *out += fmt::format("  {:<{}} {:<40} {}\n", diff.dialects[d], width, DecisionText(mine),
                        Join(paths, " + "));
    *out += fmt::format("{}rule: {}\n", indent, mine.decision->rule);
    if (mine.decision->kind == DecisionKind::kError) {
      *out += fmt::format("{}error: {}\n", indent, mine.decision->detail);
    }
    for (const TraceStep& step : Hits(*mine.decision)) {
      *out +=
          fmt::format("{}hit [{}] {} \"{}\" ({}) on {}\n", indent, step.group,
                      MatchKindName(step.kind), step.pattern, step.source.ToString(), step.subject);
    }
  }
}

// The decoder block of `key` (".layers.<n>." in it), or nullopt.
std::optional<std::pair<size_t, int64_t>> BlockOf(std::string_view key) {
  for (size_t at = key.find(".layers."); at != std::string_view::npos;
       at = key.find(".layers.", at + 1)) {
    const size_t first = at + 8;
    size_t last = first;
    while (last < key.size() && key[last] >= '0' && key[last] <= '9') ++last;
    if (last > first && last - first < 10 && last < key.size() && key[last] == '.') {
      return std::pair{first, std::stoll(std::string(key.substr(first, last - first)))};
    }
  }
  return std::nullopt;
}

// "0–63", "0–2, 5, 7–9".
std::string Ranges(const std::vector<int64_t>& sorted) {
  std::string text;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    text += fmt::format("{}{}", text.empty() ? "" : ", ", sorted[i]);
    if (j > i) text += fmt::format("\u2013{}", sorted[j]);
    i = j + 1;
  }
  return text;
}

// A layer's text with its block's number as N and the array indices of JSON pointers as * (each
// layer's own entry of one list is one rule over many layers).
std::string Normalized(std::string text, int64_t block) {
  const std::string from = ".layers." + std::to_string(block) + ".";
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + 10)) {
    text.replace(at, from.size(), ".layers.N.");
  }
  for (size_t at = text.find(".json#/"); at != std::string::npos; at = text.find(".json#/", at)) {
    at += 6;
    while (at < text.size() && text[at] != ')' && text[at] != ' ' && text[at] != ':') {
      const size_t digits = at + 1;
      size_t end = digits;
      while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
      if (text[at] == '/' && end > digits) text.replace(digits, end - digits, "*");
      ++at;
    }
  }
  return text;
}

// As AppendLayer, but the layers whose text differs only in their decoder block (Normalized)
// printed once, under "layers 0–63 (64 layers):" (the terminal's view; --wide and pipes keep
// each).
void AppendGrouped(const ModelDiff& diff, size_t width, std::string* out) {
  struct Group {
    std::string text;  // the first layer's own
    std::string normalized;
    std::vector<int64_t> blocks;
  };
  std::vector<Group> groups;
  for (const LayerDiff& layer : diff.layers) {
    std::string text;
    AppendLayer(diff, layer, width, &text);
    const std::optional<std::pair<size_t, int64_t>> block = BlockOf(layer.key);
    if (!block) {
      groups.push_back({std::move(text), "", {}});
      continue;
    }
    std::string normalized = Normalized(text, block->second);
    auto same = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return !g.blocks.empty() && g.normalized == normalized;
    });
    if (same == groups.end()) {
      groups.push_back({std::move(text), std::move(normalized), {block->second}});
    } else {
      same->blocks.push_back(block->second);
    }
  }
  for (Group& g : groups) {
    if (g.blocks.size() < 2) {
      *out += g.text;
      continue;
    }
    std::sort(g.blocks.begin(), g.blocks.end());
    *out +=
        fmt::format("layers {} ({} layers):\n{}", Ranges(g.blocks), g.blocks.size(), g.normalized);
  }
}

Json DecisionToJson(const std::string& dialect, const DialectDecision& mine) {
  std::vector<Json> paths;
  for (const std::string& p : mine.paths) paths.push_back(Json::String(p));
  const Decision* d = mine.decision ? &*mine.decision : nullptr;
  auto text = [&](const std::string& s) { return d ? Json::String(s) : Json::Null(); };
  return Json::Object({
      {"dialect", Json::String(dialect)},
      {"paths", Json::Array(std::move(paths))},
      {"decision", d ? Json::String(std::string(DecisionKindName(d->kind))) : Json::Null()},
      {"scheme", d && d->scheme ? SchemeToJson(*d->scheme) : Json::Null()},
      {"kv_method_only", Json::Bool(mine.kv_method_only)},
      {"rule", text(d ? d->rule : "")},
      {"detail", text(d ? d->detail : "")},
      {"hits", d ? TraceToJson(Hits(*d)) : Json::Array()},
      {"differs", Json::Bool(mine.differs)},
  });
}

Json SummaryToJson(const EngineSummary& s) {
  Json first_error = Json::Null();
  if (!s.first_error_layer.empty()) {
    first_error = Json::Object(
        {{"layer", Json::String(s.first_error_layer)}, {"message", Json::String(s.first_error)}});
  }
  return Json::Object({
      {"dialect", Json::String(s.dialect)},
      {"loads", Json::Bool(s.loads)},
      {"line", Json::String(s.line)},
      {"config_error", s.config_error.empty() ? Json::Null() : Json::String(s.config_error)},
      {"first_error", std::move(first_error)},
      {"quantized", Json::Int(s.quantized)},
      {"unquantized", Json::Int(s.unquantized)},
      {"errors", Json::Int(s.errors)},
      {"unquantized_meant", Json::Int(s.unquantized_meant)},
  });
}

}  // namespace

std::string DiffToText(const ModelDiff& diff, bool group_layers) {
  size_t width = 0;
  for (const std::string& name : diff.dialects) width = std::max(width, name.size());
  std::string out;
  if (group_layers) {
    AppendGrouped(diff, width, &out);
  } else {
    for (const LayerDiff& layer : diff.layers) AppendLayer(diff, layer, width, &out);
  }
  out += fmt::format("{} layers decided differently\n", diff.layers.size());
  if (diff.Differences() > static_cast<int64_t>(diff.layers.size())) {
    std::vector<std::string> failing;
    for (const EngineSummary& s : diff.summaries) {
      if (!s.config_error.empty()) failing.push_back(s.dialect);
    }
    out += fmt::format("the quantization config does not import under {}\n", Join(failing, ", "));
  }
  for (const DiffNote& note : diff.notes)
    out += fmt::format("note: {} {}\n", note.dialect, note.text);
  for (const EngineSummary& s : diff.summaries) out += fmt::format("{}: {}\n", s.dialect, s.line);
  return out;
}

Json DiffToJson(const ModelDiff& diff) {
  std::vector<Json> dialects, differences, notes, summaries;
  for (const std::string& name : diff.dialects) dialects.push_back(Json::String(name));
  for (const LayerDiff& layer : diff.layers) {
    std::vector<Json> decisions;
    for (size_t d = 0; d < diff.dialects.size(); ++d) {
      decisions.push_back(DecisionToJson(diff.dialects[d], layer.dialects[d]));
    }
    differences.push_back(
        Json::Object({{"key", Json::String(layer.key)},
                      {"kind", Json::String(std::string(SiteKindName(layer.kind)))},
                      {"reference", Json::String(diff.dialects[layer.reference])},
                      {"decisions", Json::Array(std::move(decisions))}}));
  }
  for (const DiffNote& note : diff.notes) {
    notes.push_back(Json::Object({{"dialect", Json::String(note.dialect)},
                                  {"kind", Json::String(note.kind)},
                                  {"count", Json::Int(note.count)},
                                  {"text", Json::String(note.text)}}));
  }
  for (const EngineSummary& s : diff.summaries) summaries.push_back(SummaryToJson(s));
  return Json::Object({
      {"model", Json::String(diff.model)},
      {"architecture", Json::String(diff.architecture)},
      {"dialects", Json::Array(std::move(dialects))},
      {"difference_count", Json::Int(diff.Differences())},
      {"differences", Json::Array(std::move(differences))},
      {"notes", Json::Array(std::move(notes))},
      {"summaries", Json::Array(std::move(summaries))},
  });
}

}  // namespace quantpath
