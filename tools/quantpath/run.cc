// quantpath run MODEL_DIR --layer PATH [--m N] [--seed S] [--json]
//
// Loads one layer the way an engine would (plan → decision → materialize → spec → kernel), runs
// Forward on seeded random input and compares it with the double-precision reference.
//
// Input: X [m, K] with X[i] = bf16(2u − 1), u = (mt19937_64(seed)() >> 11) · 2^-53, in bf16;
// Y is fp32. Reference (DequantizeReference and QuantizeActivationsReference in specs.h): the
// layer's weights dequantized to double straight from the checkpoint tensors (W = weight × scale
// per the scheme's granularity, legs stacked in order), X quantized as the spec's activation mode
// says (fp32 scale, e4m3 rounding in double; the static scale is the max of the legs'
// input_scale), Y_ref = X' · Wᵀ + bias summed in double.
// Printed: max_abs = max |Y − Y_ref|, mean_abs = mean |Y − Y_ref|, rel = max_abs / max |Y_ref|,
// tol = ToleranceFor(spec key, activation mode), time_ms = one Forward (after a warm-up call).
// Exit 1 when rel > tol (or is not finite), 2 for unusable input.
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

#include "fmt/format.h"
#include "quantpath/linear.h"
#include "quantpath/materialize.h"
#include "quantpath/numeric.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct RunArgs {
  std::string dir;
  std::string layer;
  int64_t m = 4;
  uint64_t seed = 0;
  bool json = false;
};

struct Errors {
  double max_abs = 0;
  double mean_abs = 0;
  double rel = 0;
};

// Seeded input values, bf16-representable, in [-1, 1).
std::vector<uint16_t> RandomInput(uint64_t seed, int64_t count) {
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> x(static_cast<size_t>(count));
  for (uint16_t& v : x) {
    const double u = static_cast<double>(rng() >> 11) * 0x1p-53;
    v = FloatToBf16(static_cast<float>(2.0 * u - 1.0));
  }
  return x;
}

Errors Compare(const std::vector<float>& y, const ReferenceLayer& ref, const ActivationQuant& act,
               const std::vector<uint16_t>& x, int64_t m) {
  std::vector<double> xd(x.size());
  for (size_t i = 0; i < x.size(); ++i) xd[i] = Bf16ToFloat(x[i]);
  const std::vector<double> xq =
      QuantizeActivationsReference(xd, m, ref.cols, act, ref.input_scale);
  Errors e;
  double max_ref = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ref.rows; ++j) {
      double acc = ref.bias.empty() ? 0.0 : ref.bias[j];
      for (int64_t c = 0; c < ref.cols; ++c)
        acc += xq[i * ref.cols + c] * ref.weight[j * ref.cols + c];
      const double diff = std::fabs(y[i * ref.rows + j] - acc);
      e.max_abs = std::isnan(diff) ? diff : std::max(e.max_abs, diff);
      e.mean_abs += diff;
      max_ref = std::max(max_ref, std::fabs(acc));
    }
  }
  e.mean_abs /= static_cast<double>(m * ref.rows);
  e.rel = max_ref > 0 ? e.max_abs / max_ref : e.max_abs;
  return e;
}

Json Number(double v) { return std::isfinite(v) ? Json::Double(v) : Json::Null(); }

int RunLayer(const RunArgs& args) {
  if (args.m < 1 || args.m > 65536) return ReportBadInput("--m: expected 1 to 65536 rows");
  const Dialect dialect;
  Result<ConfigSources> sources = ConfigSources::Load(args.dir);
  if (!sources.ok()) return ReportBadInput(sources.status().message());
  Result<QuantPlan> plan = ImportPlan(*sources, dialect);
  if (!plan.ok()) return ReportBadInput(plan.status().message());
  Result<ModelSites> sites = BuildModelSites(*sources, dialect);
  if (!sites.ok()) return ReportBadInput(sites.status().message());
  Result<ResolvedSite> resolved = ResolveLayer(*sites, args.layer);
  if (!resolved.ok()) return ReportBadInput(resolved.status().message());
  const LayerSite& site = *resolved->site;
  if (!resolved->note.empty())
    (args.json ? std::cerr : std::cout) << "note: " << resolved->note << "\n";
  if (site.kind != SiteKind::kLinear && site.kind != SiteKind::kLmHead &&
      site.kind != SiteKind::kRouter) {
    return ReportBadInput(
        fmt::format("{} is a {} site; run multiplies linear, lm_head and router "
                    "layers",
                    site.path, SiteKindName(site.kind)));
  }
  const Decision decision = DecideSite(*plan, site, false);
  if (decision.kind == DecisionKind::kError) {
    return ReportBadInput(fmt::format("{}: decided error: {}", site.path, decision.detail));
  }
  const QuantScheme scheme = decision.scheme.value_or(QuantScheme{});
  const DeviceCaps device;
  Result<std::unique_ptr<WeightSpec>> spec = Materialize(scheme, device);
  if (!spec.ok()) return ReportBadInput(fmt::format("{}: {}", site.path, spec.status().message()));
  const ActivationQuant act = (*spec)->activation();
  const SpecKey key = (*spec)->key();
  const std::string spec_id = key.ToId();
  Result<Checkpoint> checkpoint = Checkpoint::Open(args.dir);
  if (!checkpoint.ok()) return ReportBadInput(checkpoint.status().message());
  Result<std::shared_ptr<Dispatcher>> dispatcher = Dispatcher::Default();
  if (!dispatcher.ok()) return ReportBadInput(dispatcher.status().message());
  const std::vector<std::string> prefixes = LegPrefixes(site);
  Result<Linear> linear =
      LoadLinear(std::move(*spec), RequestForSite(site, sites->torch_dtype, device), *checkpoint,
                 prefixes, *dispatcher);
  if (!linear.ok()) return ReportBadInput(linear.status().message());
  Result<const LinearKernel*> kernel = linear->KernelFor(args.m, QDType::kBF16, QDType::kFP32);
  if (!kernel.ok()) return ReportBadInput(kernel.status().message());

  const int64_t k = linear->in_features();
  const int64_t n = linear->out_features();
  const std::vector<uint16_t> x = RandomInput(args.seed, args.m * k);
  std::vector<float> y(static_cast<size_t>(args.m * n));
  const ConstMatrix xm{QDType::kBF16, x.data(), args.m, k};
  const MutableMatrix ym{QDType::kFP32, y.data(), args.m, n};
  Status warm = linear->Forward(xm, ym);
  if (!warm.ok()) return ReportBadInput(warm.message());
  const auto start = std::chrono::steady_clock::now();
  Status forward = linear->Forward(xm, ym);
  const double time_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!forward.ok()) return ReportBadInput(forward.message());

  Result<ReferenceLayer> ref =
      DequantizeReference(*checkpoint, scheme, site.path, prefixes, site.bias);
  if (!ref.ok()) return ReportBadInput(ref.status().message());
  const Errors e = Compare(y, *ref, act, x, args.m);
  const double tol = ToleranceFor(key, act.mode);
  const bool pass = std::isfinite(e.rel) && e.rel <= tol;

  if (args.json) {
    Json out = Json::Object({{"layer", Json::String(site.path)},
                             {"spec_id", Json::String(spec_id)},
                             {"kernel", Json::String(std::string((*kernel)->name()))},
                             {"m", Json::Int(args.m)},
                             {"max_abs", Number(e.max_abs)},
                             {"mean_abs", Number(e.mean_abs)},
                             {"rel", Number(e.rel)},
                             {"tol", Number(tol)},
                             {"time_ms", Number(time_ms)}});
    std::cout << ToJson(out) << "\n";
  } else {
    std::cout << fmt::format("layer    {}\nspec_id  {}\nkernel   {}\nact      {}\nm        {}\n",
                             site.path, spec_id, (*kernel)->name(), act.ToString(), args.m);
    std::cout << fmt::format("{:<12} {:<12} {:<12} {:<12} {:<12}\n", "max_abs", "mean_abs", "rel",
                             "tol", "time_ms");
    std::cout << fmt::format("{:<12.3e} {:<12.3e} {:<12.3e} {:<12.1e} {:<12.3f}\n", e.max_abs,
                             e.mean_abs, e.rel, tol, time_ms);
    std::cout << (pass ? "ok\n" : "above tolerance\n");
  }
  return pass ? kExitOk : kExitFindings;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Load one layer, run it on seeded input and compare with an fp64 reference");
  cmd->add_option("model_dir", args->dir, "Model folder")->required();
  cmd->add_option("--layer", args->layer, "Layer (execution name, leg or HF name)")->required();
  cmd->add_option("--m", args->m, "Rows of the input (default 4)");
  cmd->add_option("--seed", args->seed, "Seed of the input (default 0)");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, exit_code] { *exit_code = RunLayer(*args); });
}

}  // namespace quantpath::cli
