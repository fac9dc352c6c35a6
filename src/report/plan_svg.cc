// The plan as a picture: one row per decoder block (sites outside the blocks one row each), one
// column per projection, each cell coloured by its scheme, errors outlined in red with a cross,
// unquantized cells hatched grey, an MoE layer's experts one cell with their count; a legend
// with each scheme's sites and bytes below. The HTML page wraps the same SVG and the plan table.
#include <algorithm>
#include <map>

#include "fmt/format.h"
#include "quantpath/report.h"
#include "src/report/json_fields.h"

namespace quantpath {
namespace {

constexpr int kMargin = 16;
constexpr int kTitleHeight = 40;
constexpr int kHeaderHeight = 22;
constexpr int kRowHeight = 24;
constexpr int kCellHeight = 20;
constexpr int kGap = 4;
constexpr double kCharWidth = 6.6;  // 11 px sans-serif, generously
constexpr int kLegendRow = 22;

// Qualitative colours that stay apart from the error red and the unquantized grey.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
                                    "#e377c2", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78",
                                    "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d"};
constexpr const char* kUnquantizedFill = "url(#unquantized)";
constexpr const char* kErrorStroke = "#d62728";

std::string Escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

int TextWidth(std::string_view text, double scale = 1) {
  return static_cast<int>(text.size() * kCharWidth * scale) + 12;
}

// White text on the palette's dark colours, black on the light ones and on the markings.
const char* TextColour(const std::string& fill) {
  if (fill.size() != 7 || fill[0] != '#') return "#000000";
  const auto channel = [&](size_t i) { return std::stoi(fill.substr(i, 2), nullptr, 16); };
  const double luma = 0.299 * channel(1) + 0.587 * channel(3) + 0.114 * channel(5);
  return luma < 140 ? "#ffffff" : "#000000";
}

// What a cell is coloured by: its scheme, or one of the two markings.
std::string ColourKey(const LayerDecision& l) {
  if (l.decision.kind == DecisionKind::kError) return "error";
  if (l.decision.kind == DecisionKind::kUnquantized && !l.kv) return "unquantized";
  return SchemeText(l);
}

// "model.layers.7" and "self_attn.o_proj" for a site inside a numbered block; the whole path and
// "" for one outside (the embedding, the LM head).
std::pair<std::string, std::string> RowAndColumn(const std::string& path) {
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('.', start);
    if (end == std::string::npos) end = path.size();
    const std::string_view segment(path.data() + start, end - start);
    const bool number = !segment.empty() && std::all_of(segment.begin(), segment.end(), [](char c) {
      return c >= '0' && c <= '9';
    });
    if (number && end < path.size()) return {path.substr(0, end), path.substr(end + 1)};
    start = end + 1;
  }
  return {path, ""};
}

struct Cell {
  const LayerDecision* layer;
  size_t column;
};

struct Row {
  std::string label;
  std::vector<Cell> cells;
};

struct LegendEntry {
  std::string fill;
  int64_t sites = 0;
  int64_t bytes = 0;
};

struct Grid {
  std::vector<Row> rows;
  std::vector<std::string> columns;  // "" for the column of sites outside the blocks
  std::vector<int> column_widths;
  std::vector<std::string> legend_order;
  std::map<std::string, LegendEntry> legend;
};

std::string CellLabel(const LayerDecision& l) {
  std::string label = ColourKey(l);
  if (l.site->kind == SiteKind::kMoe) label += fmt::format(" \u00d7{}", l.site->experts);
  return label;
}

Grid Arrange(const std::vector<LayerDecision>& layers) {
  Grid grid;
  std::map<std::string, size_t> row_index, column_index;
  size_t coloured = 0;  // schemes given a colour so far
  for (const LayerDecision& l : layers) {
    auto [row, column] = RowAndColumn(l.site->checkpoint_path);
    auto [r, new_row] = row_index.try_emplace(row, grid.rows.size());
    if (new_row) grid.rows.push_back({row, {}});
    auto [c, new_column] = column_index.try_emplace(column, grid.columns.size());
    if (new_column) {
      grid.columns.push_back(column);
      grid.column_widths.push_back(TextWidth(column));
    }
    grid.rows[r->second].cells.push_back({&l, c->second});
    grid.column_widths[c->second] =
        std::max(grid.column_widths[c->second], TextWidth(CellLabel(l)));
    const std::string key = ColourKey(l);
    auto [entry, new_key] = grid.legend.try_emplace(key);
    if (new_key) {
      grid.legend_order.push_back(key);
      if (key == "error") {
        entry->second.fill = "#ffffff";
      } else if (key == "unquantized") {
        entry->second.fill = kUnquantizedFill;
      } else {
        const size_t n = coloured++;
        entry->second.fill = n < std::size(kPalette)
                                 ? kPalette[n]
                                 : fmt::format("hsl({},55%,60%)", (n * 137) % 360);  // golden angle
      }
    }
    entry->second.sites += 1;
    entry->second.bytes += l.bytes.value_or(0);
  }
  return grid;
}

std::string CellSvg(const LayerDecision& l, const LegendEntry& colour, int x, int y, int width) {
  const Decision& d = l.decision;
  const bool error = d.kind == DecisionKind::kError;
  std::string title = fmt::format("{}: {}", l.site->checkpoint_path, CellLabel(l));
  if (l.spec) title += " — " + l.spec->ToId();
  if (l.bytes) title += fmt::format(", {} bytes", *l.bytes);
  if (error) title += " — " + std::string(d.detail);
  std::string out = fmt::format(
      "<g class=\"site\" data-site=\"{}\" data-decision=\"{}\" data-scheme=\"{}\"{}>"
      "<title>{}</title>",
      Escaped(l.site->checkpoint_path), DecisionKindName(d.kind), Escaped(ColourKey(l)),
      l.site->kind == SiteKind::kMoe ? fmt::format(" data-experts=\"{}\"", l.site->experts) : "",
      Escaped(title));
  out += fmt::format(
      "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"3\" fill=\"{}\" "
      "stroke=\"{}\" stroke-width=\"{}\"/>",
      x, y, width, kCellHeight, colour.fill, error ? kErrorStroke : "#555555", error ? 2 : 0.5);
  if (error) {
    out += fmt::format(
        "<path class=\"error-mark\" d=\"M{} {}l8 8m0 -8l-8 8\" stroke=\"{}\" stroke-width=\"2\"/>",
        x + 5, y + 6, kErrorStroke);
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text></g>\n", x + (error ? 17 : 6),
                     y + kCellHeight - 6, TextColour(colour.fill), Escaped(CellLabel(l)));
  return out;
}

}  // namespace

std::string PlanToSvg(const Model& model, const std::vector<LayerDecision>& layers) {
  const Grid grid = Arrange(layers);
  int label_width = TextWidth("layer");
  for (const Row& r : grid.rows) label_width = std::max(label_width, TextWidth(r.label));
  std::vector<int> column_x;
  int x = kMargin + label_width;
  for (int w : grid.column_widths) {
    column_x.push_back(x);
    x += w + kGap;
  }
  int legend_width = 0;
  std::vector<std::string> legend_text;
  for (const std::string& key : grid.legend_order) {
    const LegendEntry& e = grid.legend.at(key);
    legend_text.push_back(fmt::format("{} — {} site{}, {}", key, e.sites, e.sites == 1 ? "" : "s",
                                      HumanBytes(double(e.bytes))));
    legend_width = std::max(legend_width, 30 + TextWidth(legend_text.back()));
  }
  const std::string title =
      fmt::format("{} — {}, engine {}, device {}", model.dir, model.sites.architecture,
                  model.plan.dialect.name, model.device.name);
  const int width =
      std::max({x + kMargin, kMargin * 2 + legend_width, kMargin * 2 + TextWidth(title, 1.5)});
  const int grid_top = kTitleHeight + kHeaderHeight;
  const int legend_top = grid_top + static_cast<int>(grid.rows.size()) * kRowHeight + kMargin;
  const int height = legend_top + static_cast<int>(grid.legend_order.size()) * kLegendRow + kMargin;

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"11\">\n"
      "<defs><pattern id=\"unquantized\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#e6e6e6\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#bdbdbd\" stroke-width=\"2\"/>"
      "</pattern></defs>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      "<text class=\"title\" x=\"{2}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{3}</text>\n",
      width, height, kMargin, Escaped(title));
  for (size_t c = 0; c < grid.columns.size(); ++c) {
    if (grid.columns[c].empty()) continue;  // the sites outside the blocks: each row names its own
    out += fmt::format("<text class=\"column\" x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>\n",
                       column_x[c] + 2, kTitleHeight + 14, Escaped(grid.columns[c]));
  }
  for (size_t r = 0; r < grid.rows.size(); ++r) {
    const int y = grid_top + static_cast<int>(r) * kRowHeight;
    out += fmt::format("<g class=\"row\"><text class=\"layer\" x=\"{}\" y=\"{}\">{}</text>\n",
                       kMargin, y + kCellHeight - 6, Escaped(grid.rows[r].label));
    for (const Cell& cell : grid.rows[r].cells) {
      out += CellSvg(*cell.layer, grid.legend.at(ColourKey(*cell.layer)), column_x[cell.column], y,
                     grid.column_widths[cell.column]);
    }
    out += "</g>\n";
  }
  for (size_t i = 0; i < grid.legend_order.size(); ++i) {
    const std::string& key = grid.legend_order[i];
    const LegendEntry& e = grid.legend.at(key);
    const int y = legend_top + static_cast<int>(i) * kLegendRow;
    out += fmt::format(
        "<g class=\"legend-entry\" data-scheme=\"{}\" data-sites=\"{}\" data-bytes=\"{}\">"
        "<rect x=\"{}\" y=\"{}\" width=\"22\" height=\"14\" rx=\"2\" fill=\"{}\" stroke=\"{}\" "
        "stroke-width=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text></g>\n",
        Escaped(key), e.sites, e.bytes, kMargin, y, e.fill,
        key == "error" ? kErrorStroke : "#555555", key == "error" ? 2 : 0.5, kMargin + 30, y + 11,
        Escaped(legend_text[i]));
  }
  out += "</svg>\n";
  return out;
}

std::string PlanToHtml(const Model& model, const std::vector<LayerDecision>& layers) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>quantpath plan — {}</title>\n"
      "<style>body{{font-family:DejaVu Sans,Arial,sans-serif;margin:16px}}"
      "pre{{font-size:12px}} .site:hover rect{{stroke:#000;stroke-width:2}}</style>\n"
      "</head>\n<body>\n{}<details><summary>plan table</summary><pre>{}</pre></details>\n"
      "</body>\n</html>\n",
      Escaped(model.dir), PlanToSvg(model, layers), Escaped(PlanToTable(model, layers)));
}

}  // namespace quantpath
