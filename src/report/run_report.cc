// One layer's Forward against the double-precision reference (docs/json/run.md).
#include <cmath>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/report.h"
#include "src/report/json_fields.h"

namespace quantpath {
namespace {

Json Number(double v) { return std::isfinite(v) ? Json::Double(v) : Json::Null(); }

// The errors of a run, from max_abs to weight_error (docs/json/run.md).
void AddErrors(const LayerRun& run, std::vector<Json::Member>* members) {
  members->insert(members->end(),
                  {{"max_abs", Number(run.max_abs)},
                   {"mean_abs", Number(run.mean_abs)},
                   {"rel", Number(run.rel)},
                   {"tol", Number(run.tol)},
                   {"time_ms", Number(run.time_ms)},
                   {"pass", Json::Bool(run.pass())},
                   {"zero_reference", Json::Bool(run.zero_reference)},
                   {"weight_error", run.weight_error ? Number(*run.weight_error) : Json::Null()}});
}

// w13 or w2 of the experts that ran: legs [first, last) of one expert, their outputs side by
// side ([N, K] with N the legs' rows together).
Json ProjectionToJson(std::string_view name, const LoadedExpert& expert, size_t first, size_t last,
                      const LayerRun& run) {
  std::vector<Json> leg_names;
  int64_t n = 0;
  for (size_t leg = first; leg < last; ++leg) {
    leg_names.push_back(Json::String(expert.names[leg]));
    n += expert.projections[leg].out_features();
  }
  std::vector<Json::Member> members = {{"name", Json::String(std::string(name))},
                                       {"legs", Json::Array(std::move(leg_names))},
                                       {"n", Json::Int(n)},
                                       {"k", Json::Int(expert.projections[first].in_features())},
                                       {"kernel", Json::String(run.kernel)}};
  AddErrors(run, &members);
  return Json::Object(std::move(members));
}

std::string ErrorHeader() {
  return fmt::format("{:<12} {:<12} {:<12} {:<12} {:<12}", "max_abs", "mean_abs", "rel", "tol",
                     "time_ms");
}

std::string ErrorRow(const LayerRun& run) {
  const std::string tol = std::isfinite(run.tol) ? fmt::format("{:.1e}", run.tol) : "-";
  return fmt::format("{:<12.3e} {:<12.3e} {:<12.3e} {:<12} {:<12.3f}", run.max_abs, run.mean_abs,
                     run.rel, tol, run.time_ms);
}

// The verdict line: within tolerance or not, or for weights quantized at load what the errors
// measure (there is no tolerance).
std::string Verdict(bool zero_reference, bool quantized_at_load, std::optional<double> weight_error,
                    bool pass) {
  if (zero_reference) {
    return "the reference output is zero everywhere (rel is 0/0): the layer computes nothing; "
           "`check` reads its scales\n";
  }
  if (!quantized_at_load) return pass ? "ok\n" : "above tolerance\n";
  std::string out =
      "quantized at load: the errors are against the unquantized layer (X and W in high "
      "precision)";
  if (weight_error) out += fmt::format("; weights max |W' - W| / max |W| = {:.3e}", *weight_error);
  return out + (pass ? "\n" : "; not finite\n");
}

}  // namespace

Json RunToJson(const LoadedLayer& layer, const LayerRun& run, uint64_t seed) {
  std::vector<Json::Member> members = {{"layer", Json::String(layer.resolved.site->path)},
                                       {"resolved", NonEmptyOrNull(layer.resolved.note)},
                                       {"spec_id", Json::String(layer.key.ToId())},
                                       {"activation", Json::String(layer.activation.ToString())},
                                       {"kernel", Json::String(run.kernel)},
                                       {"m", Json::Int(run.m)},
                                       {"seed", Json::Int(static_cast<int64_t>(seed))}};
  AddErrors(run, &members);
  members.emplace_back("quantized_at_load", Json::Bool(run.quantized_at_load));
  return Json::Object(std::move(members));
}

std::string RunToText(const LoadedLayer& layer, const LayerRun& run) {
  std::string out;
  if (!layer.resolved.note.empty()) out += "note: " + layer.resolved.note + "\n";
  out += fmt::format("layer    {}\nspec_id  {}\nkernel   {}\nact      {}\nm        {}\n",
                     layer.resolved.site->path, layer.key.ToId(), run.kernel,
                     layer.activation.ToString(), run.m);
  out += ErrorHeader() + "\n" + ErrorRow(run) + "\n";
  out += Verdict(run.zero_reference, run.quantized_at_load, run.weight_error, run.pass());
  return out;
}

Json ExpertsRunToJson(const LoadedExperts& layer, const ExpertsRun& run, uint64_t seed) {
  const LayerSite& site = *layer.resolved.site;
  const LoadedExpert& front = layer.experts.at(static_cast<size_t>(run.expert.value_or(0)));
  const size_t down = front.projections.size() - 1;  // gate, up, down
  return Json::Object(
      {{"layer", Json::String(site.path)},
       {"resolved", NonEmptyOrNull(layer.resolved.note)},
       {"spec_id", Json::String(layer.key.ToId())},
       {"activation", Json::String(layer.activation.ToString())},
       {"m", Json::Int(run.w13.m)},
       {"seed", Json::Int(static_cast<int64_t>(seed))},
       {"expert", run.expert ? Json::Int(*run.expert) : Json::Null()},
       {"experts", Json::Int(run.experts)},
       {"projections", Json::Array({ProjectionToJson("w13", front, 0, down, run.w13),
                                    ProjectionToJson("w2", front, down, down + 1, run.w2)})},
       {"pass", Json::Bool(run.pass())},
       {"quantized_at_load", Json::Bool(run.w13.quantized_at_load)}});
}

std::string ExpertsRunToText(const LoadedExperts& layer, const ExpertsRun& run) {
  const LayerSite& site = *layer.resolved.site;
  std::string out;
  if (!layer.resolved.note.empty()) out += "note: " + layer.resolved.note + "\n";
  const std::string experts = run.expert ? fmt::format("{} of {}", *run.expert, site.experts)
                                         : fmt::format("all {}, one input", run.experts);
  out += fmt::format("layer    {}\nexperts  {}\nspec_id  {}\nact      {}\nm        {}\n", site.path,
                     experts, layer.key.ToId(), layer.activation.ToString(), run.w13.m);
  out += fmt::format("{:<5} {:<37} {}  kernel\n", "proj", "legs", ErrorHeader());
  const auto row = [&](std::string_view name, std::string legs, const LayerRun& r) {
    out += fmt::format("{:<5} {:<37} {}  {}\n", name, legs, ErrorRow(r), r.kernel);
  };
  const LoadedExpert& front = layer.experts.at(static_cast<size_t>(run.expert.value_or(0)));
  row("w13", front.names.at(0) + "+" + front.names.at(1), run.w13);
  row("w2", front.names.at(2), run.w2);
  std::optional<double> weight_error = run.w13.weight_error;
  if (run.w2.weight_error)
    weight_error = std::max(weight_error.value_or(0.0), *run.w2.weight_error);
  out += Verdict(run.w13.zero_reference || run.w2.zero_reference, run.w13.quantized_at_load,
                 weight_error, run.pass());
  return out;
}

}  // namespace quantpath
