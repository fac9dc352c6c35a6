// The human-readable plan: one row per site, then a summary.
#include <algorithm>
#include <functional>

#include "fmt/format.h"
#include "quantpath/report.h"
#include "src/report/json_fields.h"

namespace quantpath {
namespace {

// The JSON's spelling: [N, K], and [E, N, K] for experts.
std::string ShapeText(const LayerSite& site) {
  if (!site.shape) return "-";
  if (site.kind == SiteKind::kMoe) {
    return fmt::format("[{}, {}, {}]", site.experts, (*site.shape)[0], (*site.shape)[1]);
  }
  return fmt::format("[{}, {}]", (*site.shape)[0], (*site.shape)[1]);
}

// An engine path may be empty (the engine passed no prefix): shown as "".
std::string PathText(const std::string& path) { return path.empty() ? "\"\"" : path; }

std::string HumanCount(double v) {
  const char* units[] = {"", "K", "M", "B", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f}", v) : fmt::format("{:.2f}{}", v, units[u]);
}

}  // namespace

std::string HumanBytes(double v) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.2f} {}", v, units[u]);
}

std::string SchemeText(const LayerDecision& l) {
  if (l.kv) return "kv " + KvCacheText(*l.kv);
  return l.decision.scheme ? l.decision.scheme->CanonicalName() : "-";
}

std::string KvCacheText(const KvCache& kv) {
  std::string text(QDTypeName(kv.dtype));
  if (!kv.scheme) text += " (auto)";
  if (kv.engine_method) text += ", " + kv.engine_method_name;
  return text;
}

namespace {

// ANSI styles, applied after padding so that they never count towards a column's width.
constexpr std::string_view kBold = "\x1b[1m";
constexpr std::string_view kRed = "\x1b[31m";
constexpr std::string_view kYellow = "\x1b[33m";
constexpr std::string_view kReset = "\x1b[0m";

std::string Styled(std::string text, std::string_view style, const TableStyle& table) {
  return table.colour ? fmt::format("{}{}{}", style, text, kReset) : text;
}

// The text's width in terminal columns: UTF-8 continuation bytes take none.
size_t Width(std::string_view text) {
  size_t width = 0;
  for (char c : text) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return width;
}

// `text` (ASCII, as layer names are) cut to `width` columns in the middle, keeping both the block
// and the projection: "model.layers.61.mlp.sh…perts.gate_up_proj".
std::string ElidedMiddle(const std::string& text, size_t width) {
  if (text.size() <= width || width < 3) return text;
  const size_t tail = (width - 1) / 2;
  const size_t head = width - 1 - tail;
  return text.substr(0, head) + "…" + text.substr(text.size() - tail);
}

// What a row of the roll-up counts under: the scheme, "unquantized <stored dtype>", the KV cache,
// "error".
std::string RollUpKey(const LayerDecision& l) {
  if (l.decision.kind == DecisionKind::kError) return "error";
  if (l.kv) return "kv " + KvCacheText(*l.kv);
  if (l.decision.scheme && l.decision.kind == DecisionKind::kQuantized) {
    return l.decision.scheme->CanonicalName();
  }
  if (l.dtype) return "unquantized " + std::string(QDTypeName(*l.dtype));
  return l.spec ? "unquantized " + l.spec->ToId() : "unquantized";
}

// `line` broken at spaces into lines of at most `width` columns (a longer word stays whole), the
// later ones indented by four; unchanged when the width is unknown or --wide.
std::string Wrapped(const std::string& line, const TableStyle& style) {
  if (style.wide || style.width <= 0 || Width(line) <= static_cast<size_t>(style.width)) {
    return line + "\n";
  }
  const size_t width = static_cast<size_t>(style.width);
  std::string out, current;
  for (const std::string& word : Split(line, ' ')) {
    if (!current.empty() && Width(current) + 1 + Width(word) > width) {
      out += current + "\n";
      current = "   ";
    }
    current += (current.empty() ? "" : " ") + word;
  }
  return out + current + "\n";
}

struct Column {
  std::string_view header;
  bool right_aligned = false;
  std::function<std::string(const LayerDecision&)> cell;
};

enum ColumnId : size_t { kLayer, kCheckpoint, kKind, kShape, kDecision, kScheme, kSpec, kBytes };

// Every column, in display order (ColumnId).
std::vector<Column> Columns() {
  return {
      {"layer", false, [](const LayerDecision& l) { return PathText(l.site->path); }},
      {"checkpoint_path", false, [](const LayerDecision& l) { return l.site->checkpoint_path; }},
      {"kind", false,
       [](const LayerDecision& l) { return std::string(SiteKindName(l.site->kind)); }},
      {"shape", false, [](const LayerDecision& l) { return ShapeText(*l.site); }},
      {"decision", false,
       [](const LayerDecision& l) { return std::string(DecisionKindName(l.decision.kind)); }},
      {"scheme", false, [](const LayerDecision& l) { return RollUpKey(l); }},
      {"spec_id", false,
       [](const LayerDecision& l) {
         std::string spec = l.spec ? l.spec->ToId() : "-";
         if (l.kernel_available == false) spec += " (no kernel)";
         return spec;
       }},
      {"bytes", true,
       [](const LayerDecision& l) { return l.bytes ? HumanBytes(double(*l.bytes)) : "-"; }},
  };
}

// Layer names are cut (in the middle) to no fewer than this many columns before a column is left
// out for them, and to no fewer than kMinLayerWidth after.
constexpr size_t kCutLayerWidth = 40;
constexpr size_t kMinLayerWidth = 24;

// Which columns a table of `width` terminal columns shows: all of them when the width is unknown
// or --wide; else the least needed go first until the rows fit with layer names cut to
// kCutLayerWidth (layer, scheme and bytes stay).
std::vector<ColumnId> Shown(const std::vector<size_t>& widths, const TableStyle& style) {
  std::vector<ColumnId> shown = {kLayer,    kCheckpoint, kKind, kShape,
                                 kDecision, kScheme,     kSpec, kBytes};
  if (style.wide || style.width <= 0) return shown;
  auto total = [&] {
    size_t sum = 0;
    for (ColumnId id : shown) {
      sum += (id == kLayer ? std::min(widths[id], kCutLayerWidth) : widths[id]) + 2;
    }
    return sum - 2;
  };
  for (ColumnId drop : {kCheckpoint, kDecision, kKind, kSpec, kShape}) {
    if (total() <= static_cast<size_t>(style.width)) break;
    shown.erase(std::find(shown.begin(), shown.end(), drop));
  }
  return shown;
}

std::string RollUp(const std::vector<LayerDecision>& layers, const TableStyle& style) {
  struct Sum {
    int64_t layers = 0, params = 0, bytes = 0;
  };
  std::vector<std::pair<std::string, Sum>> sums;  // in order of first appearance
  for (const LayerDecision& l : layers) {
    const std::string key = RollUpKey(l);
    auto it = std::find_if(sums.begin(), sums.end(), [&](const auto& s) { return s.first == key; });
    if (it == sums.end()) it = sums.insert(sums.end(), {key, Sum{}});
    it->second.layers += 1;
    it->second.params += l.site->params;
    it->second.bytes += l.bytes.value_or(0);
  }
  size_t key_width = 9;
  for (const auto& [key, sum] : sums) key_width = std::max(key_width, Width(key));
  std::string out = Styled(fmt::format("{:<{}}  {:>6}  {:>9}  {:>10}", "by scheme", key_width,
                                       "layers", "params", "bytes"),
                           kBold, style) +
                    "\n";
  for (const auto& [key, sum] : sums) {
    std::string line = fmt::format("{:<{}}  {:>6}  {:>9}  {:>10}", key, key_width, sum.layers,
                                   HumanCount(double(sum.params)), HumanBytes(double(sum.bytes)));
    out += (key == "error" ? Styled(line, kRed, style) : line) + "\n";
  }
  return out;
}

}  // namespace

std::string PlanToTable(const Model& model, const std::vector<LayerDecision>& layers,
                        const TableStyle& style) {
  const std::vector<Column> columns = Columns();
  std::vector<size_t> widths;
  for (const Column& c : columns) widths.push_back(Width(c.header));
  for (const LayerDecision& l : layers) {
    for (size_t i = 0; i < columns.size(); ++i)
      widths[i] = std::max(widths[i], Width(columns[i].cell(l)));
  }
  const std::vector<ColumnId> shown = Shown(widths, style);
  if (!style.wide && style.width > 0) {
    // The layer column takes what the others leave, down to kMinLayerWidth.
    size_t others = 0;
    for (ColumnId id : shown) others += id == kLayer ? 0 : widths[id] + 2;
    const size_t room = static_cast<size_t>(style.width) > others ? style.width - others : 0;
    widths[kLayer] = std::min(widths[kLayer], std::max(room, kMinLayerWidth));
  }
  auto row = [&](auto&& text_of) {
    std::string line;
    for (ColumnId id : shown) {
      std::string text = text_of(id);
      if (id == kLayer) text = ElidedMiddle(text, widths[id]);
      const size_t pad = widths[id] > Width(text) ? widths[id] - Width(text) : 0;
      if (!line.empty()) line += "  ";
      line +=
          columns[id].right_aligned ? std::string(pad, ' ') + text : text + std::string(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line;
  };

  std::string out = fmt::format("model {}\n", model.dir);
  out += fmt::format("architecture {}  quant_method {}  engine {}  device {}\n",
                     model.sites.architecture, model.plan.quant_method, model.plan.dialect.name,
                     model.device.name);
  for (const Provenance& p : model.plan.sources) out += fmt::format("source {}\n", p.ToString());
  out += Styled(row([&](ColumnId id) { return std::string(columns[id].header); }), kBold, style) +
         "\n";
  for (const LayerDecision& l : layers) {
    const std::string line = row([&](ColumnId id) { return columns[id].cell(l); });
    if (l.decision.kind == DecisionKind::kError) {
      out += Styled(line, kRed, style) + "\n" +
             Styled(Wrapped("    error: " + l.decision.detail.str(), style), kRed, style);
    } else {
      out += (l.kernel_available == false ? Styled(line, kYellow, style) : line) + "\n";
    }
  }
  out += RollUp(layers, style);
  const PlanTotals t = SumLayers(model, layers);
  out += fmt::format(
      "summary: {} layers, {} quantized, {} unquantized, {} errors\n"
      "params:  {} in layers + {} other = {}\nbytes:   {} in layers{} + {} other = {}\n",
      layers.size(), t.quantized, t.unquantized, t.errors, HumanCount(double(t.params)),
      HumanCount(double(t.other_params)), HumanCount(double(t.params + t.other_params)),
      HumanBytes(double(t.bytes)),
      t.errors > 0 ? fmt::format(" ({} error layers left out)", t.errors) : std::string(),
      HumanBytes(double(t.other_bytes)), HumanBytes(double(t.bytes + t.other_bytes)));
  if (const std::optional<int64_t> total = model.sources.checkpoint().index_total_size) {
    const int64_t planned = t.bytes + t.other_bytes;
    out += fmt::format("index:   total_size {}; planned {} ({:+.2f}%)\n",
                       HumanBytes(double(*total)), HumanBytes(double(planned)),
                       *total > 0 ? 100.0 * double(planned - *total) / double(*total) : 0.0);
  }
  for (const ModelFinding& f : model.plan.errors) {
    out += Styled(Wrapped("error: " + f.message, style), kRed, style);
  }
  for (const std::string& n : model.plan.notes) out += Wrapped("note: " + n, style);
  for (const std::string& n : model.sites.warnings) {
    out += Styled(Wrapped("warning: " + n, style), kYellow, style);
  }
  return out;
}

}  // namespace quantpath
