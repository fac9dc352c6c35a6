// Module names and layout renames shared by quantize and convert (layer_names.h).
#include "src/export/layer_names.h"

#include <algorithm>

#include "fmt/format.h"
#include "quantpath/materialize.h"
#include "quantpath/specs.h"

namespace quantpath::export_internal {

std::vector<std::string> ModuleNames(const LayerSite& site, bool every_expert) {
  if (site.kind != SiteKind::kMoe) return LegPrefixes(site);
  std::vector<std::string> names;
  const int64_t experts = every_expert ? site.experts : std::min<int64_t>(site.experts, 1);
  for (int64_t e = 0; e < experts; ++e) {
    for (size_t leg = 0; leg < site.legs.size(); ++leg) names.push_back(site.ExpertLegPath(e, leg));
  }
  return names;
}

std::vector<std::string> LayoutTensors(const Checkpoint& checkpoint, SourceLayout layout,
                                       const std::string& prefix) {
  std::vector<std::string> names;
  for (const SourceTensor& t : SourceTensors(layout)) {
    if (t.slot == Slot::kBias) continue;
    std::string name = prefix + std::string(t.suffix);
    if (checkpoint.Has(name) && std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(std::move(name));
    }
  }
  return names;
}

std::vector<TensorHeader> InLayoutOrder(const std::vector<TensorHeader>& headers,
                                        SourceLayout layout, const std::string& prefix) {
  std::vector<TensorHeader> ordered;
  for (const SourceTensor& t : SourceTensors(layout)) {
    if (t.slot == Slot::kBias) continue;
    const std::string name = prefix + std::string(t.suffix);
    for (const TensorHeader& h : headers) {
      if (h.name == name && std::none_of(ordered.begin(), ordered.end(),
                                         [&](const TensorHeader& o) { return o.name == name; })) {
        ordered.push_back(h);
      }
    }
  }
  return ordered;
}

Result<std::string> RelaidName(std::string_view name, const std::string& prefix, SourceLayout from,
                               SourceLayout to, std::string_view layer) {
  if (from == to) return std::string(name);
  const std::string_view suffix = name.substr(prefix.size());
  for (const SourceTensor& t : SourceTensors(from)) {
    if (t.suffix != suffix) continue;
    if (t.slot) {
      if (std::optional<std::string_view> theirs = SourceSuffix(to, *t.slot)) {
        return prefix + std::string(*theirs);
      }
    }
    break;
  }
  // convert keeps codes and scales bit for bit; a layout without a place for them needs the
  // weights written in high precision and quantized again.
  return Unsupported(fmt::format(
      "{}: tensor {} ({}) has no place in the {} layout, so convert cannot keep it exactly; write "
      "bf16 instead (`quantpath convert IN MID --to bf16`), then quantize that "
      "(`quantpath quantize MID OUT --format FORMAT --scheme SCHEME`)",
      layer, name, SourceLayoutName(from), SourceLayoutName(to)));
}

std::vector<std::string> IgnoreList(const std::vector<std::string>& patterns,
                                    const std::vector<std::string>& modules) {
  std::vector<std::string> list = patterns;
  for (const std::string& m : modules) {
    if (std::find(list.begin(), list.end(), m) == list.end()) list.push_back(m);
  }
  return list;
}

}  // namespace quantpath::export_internal
