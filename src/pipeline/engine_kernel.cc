#include "src/pipeline/engine_kernel.h"

#include <algorithm>
#include <optional>
#include <string>

#include "fmt/format.h"
#include "quantpath/importers.h"

namespace quantpath {

void ApplyEngineKernel(const QuantPlan& plan, Platform platform, const LayerSite& site,
                       Decision* decision) {
  if (site.kind != SiteKind::kLinear || decision->kind != DecisionKind::kQuantized ||
      !decision->scheme) {
    return;
  }
  std::optional<EngineKernel> kernel = LinearKernelFor(plan, platform, *decision->scheme);
  if (!kernel) return;
  if (!kernel->error.empty()) {
    decision->kind = DecisionKind::kError;
    decision->rule = fmt::format("{}; no {} kernel implements it on {}", decision->rule.str(),
                                 plan.dialect.name, PlatformName(platform));
    decision->detail = kernel->error;
    decision->scheme.reset();
    return;
  }
  // "Method[target=… kernel=K]": among the settings the engine's detail gives the method class.
  std::string detail = decision->detail.str();
  const size_t after_class = std::min(detail.find_first_of("[ "), detail.size());
  if (after_class < detail.size() && detail[after_class] == '[') {
    detail.insert(std::min(detail.find(']', after_class), detail.size()),
                  " kernel=" + kernel->name);
  } else {
    detail.insert(after_class, "[kernel=" + kernel->name + "]");
  }
  decision->detail = std::move(detail);
}

}  // namespace quantpath
