// One layer's Forward against the double-precision reference (docs/json/run.md).
#include <cmath>

#include "fmt/format.h"
#include "quantpath/report.h"
#include "src/report/json_fields.h"

namespace quantpath {
namespace {

Json Number(double v) { return std::isfinite(v) ? Json::Double(v) : Json::Null(); }

}  // namespace

Json RunToJson(const LoadedLayer& layer, const LayerRun& run, uint64_t seed) {
  return Json::Object({{"layer", Json::String(layer.resolved.site->path)},
                       {"resolved", NonEmptyOrNull(layer.resolved.note)},
                       {"spec_id", Json::String(layer.key.ToId())},
                       {"activation", Json::String(layer.activation.ToString())},
                       {"kernel", Json::String(run.kernel)},
                       {"m", Json::Int(run.m)},
                       {"seed", Json::Int(static_cast<int64_t>(seed))},
                       {"max_abs", Number(run.max_abs)},
                       {"mean_abs", Number(run.mean_abs)},
                       {"rel", Number(run.rel)},
                       {"tol", Number(run.tol)},
                       {"time_ms", Number(run.time_ms)},
                       {"pass", Json::Bool(run.pass())}});
}

std::string RunToText(const LoadedLayer& layer, const LayerRun& run) {
  std::string out;
  if (!layer.resolved.note.empty()) out += "note: " + layer.resolved.note + "\n";
  out += fmt::format("layer    {}\nspec_id  {}\nkernel   {}\nact      {}\nm        {}\n",
                     layer.resolved.site->path, layer.key.ToId(), run.kernel,
                     layer.activation.ToString(), run.m);
  out += fmt::format("{:<12} {:<12} {:<12} {:<12} {:<12}\n", "max_abs", "mean_abs", "rel", "tol",
                     "time_ms");
  out += fmt::format("{:<12.3e} {:<12.3e} {:<12.3e} {:<12.1e} {:<12.3f}\n", run.max_abs,
                     run.mean_abs, run.rel, run.tol, run.time_ms);
  out += run.pass() ? "ok\n" : "above tolerance\n";
  return out;
}

}  // namespace quantpath
