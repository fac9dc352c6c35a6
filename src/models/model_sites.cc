// Accessors of LayerSite and ModelSites: leg paths, checkpoint keys and parameter sums; the
// experts' activation; the tensor-parallel style of an engine class.
#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "quantpath/models.h"
#include "quantpath/numeric.h"

namespace quantpath {

TpStyle TpStyleOf(std::string_view module_class) {
  // By substring, so that the engines' subclasses and variants of a class split as it does.
  auto has = [&](std::string_view part) {
    return module_class.find(part) != std::string_view::npos;
  };
  TpStyle style;
  if (has("RowParallel")) {
    style.parallel = Parallel::kRow;
  } else if (has("ColumnParallel") || has("QKVParallel")) {
    style.parallel = Parallel::kColumn;
  } else if (has("Replicated")) {
    style.parallel = Parallel::kReplicated;
  }
  style.qkv = has("QKV");
  style.merged = style.qkv || has("Merged");
  return style;
}

std::string LayerSite::LegPath(size_t leg) const {
  if (leg >= legs.size()) return {};
  // An moe site's legs are per expert, under the experts module itself.
  if (kind == SiteKind::kMoe) return fmt::format("{}.{}", path, legs[leg].name);
  // An engine that passes an empty prefix never looks at the legs: every shard of it is "".
  if (path.empty()) return {};
  // A fused site replaces the last segment: model.layers.0.self_attn.{qkv_proj → q_proj}.
  std::string_view parent = ParentPath(path);
  if (parent.empty()) return legs[leg].name;
  return fmt::format("{}.{}", parent, legs[leg].name);
}

std::string LayerSite::ExpertLegPath(int64_t expert, size_t leg) const {
  if (kind != SiteKind::kMoe || expert < 0 || expert >= experts || leg >= legs.size()) return {};
  if (stacked_experts) return LegPath(leg);
  return fmt::format("{}.{}.{}", path, expert, legs[leg].name);
}

double ExpertActivation::Apply(double gate, double up) const {
  switch (kind) {
    case Kind::kSiluAndMul:
      return gate / (1.0 + std::exp(-gate)) * up;
    case Kind::kSwigluOai: {
      const double g = std::min(gate, limit);
      const double u = std::clamp(up, -limit, limit);
      return (u + 1.0) * g / (1.0 + std::exp(-alpha * g));
    }
  }
  return 0.0;
}

uint16_t ExpertActivation::ApplyBf16(double gate, double up) const {
  return FloatToBf16(static_cast<float>(Apply(gate, up)));
}

std::string LayerSite::CheckpointKey() const {
  const std::string_view checkpoint = checkpoint_path.empty() ? path : checkpoint_path;
  if (kind == SiteKind::kAttention) return fmt::format("{}.<attention>", ParentPath(checkpoint));
  // An moe site's path is already the experts' common prefix (ExpertLegPath).
  if (legs.empty() || kind == SiteKind::kMoe) return std::string(checkpoint);
  std::vector<std::string> names;
  for (const Leg& leg : legs) names.push_back(leg.name);
  return fmt::format("{}.{{{}}}", ParentPath(checkpoint), Join(names, "+"));
}

int64_t ModelSites::SiteParams() const {
  // Builders check that the total fits in 64 bits.
  int64_t total = 0;
  for (const LayerSite& site : sites) total += site.params;
  return total;
}

const LayerSite* ModelSites::Find(std::string_view path) const {
  if (path.empty()) return nullptr;
  for (const LayerSite& site : sites) {
    if (site.path == path) return &site;
  }
  return nullptr;
}

const LayerSite* ModelSites::FindCheckpoint(std::string_view path) const {
  for (const LayerSite& site : sites) {
    if (site.checkpoint_path == path) return &site;
  }
  return nullptr;
}

}  // namespace quantpath
