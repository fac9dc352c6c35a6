// quantpath run MODEL_DIR --layer PATH [--expert K] [--m N] [--seed S] [--tp N --rank R]
//               [--input X.safetensors] [--output Y.safetensors] [--engine E]
//               [--quantization NAME | --online SCHEME] [--device D] [--json]
//
// Loads one layer the way an engine would (rank R's shard of N with --tp) and compares one Forward
// with the double-precision reference, on seeded input (pipeline.h RunSeeded says exactly how) or
// on the tensor `x` of
// --input; --output writes the result as the tensor `y`. Exit 1 when rel > tol (or is not
// finite), 2 for unusable input. A layer quantized at load is compared with the unquantized layer
// instead, and has no tolerance (exit 1 only for a non-finite error). An MoE layer runs each
// expert's w13 (gate and up) and w2 (down), for expert K or every expert: on seeded input each on
// its own (RunExpertsSeeded), on --input the whole expert, y = down(SiLU(gate) ⊙ up)
// (RunExpertsOnInput), [E, M, H] or [M, H] with
// --expert; with --tp, rank R's shard of every expert.
#include <filesystem>
#include <iostream>
#include <optional>

#include "fmt/format.h"
#include "quantpath/checkpoint_writer.h"
#include "quantpath/pipeline.h"
#include "quantpath/report.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct RunArgs {
  std::string dir;
  std::string layer;
  std::optional<int64_t> expert;
  int64_t expert_index = 0;  // --expert as parsed; `expert` holds it when given
  int64_t m = 4;
  uint64_t seed = 0;
  int64_t tp = 1;
  int rank = 0;
  bool json = false;
  // --engine, --quantization, --device
  std::string engine = "native";
  std::string quantization;
  std::string device = "cpu";
  FormatArgs format_options;
  std::string online;
  bool int8_activations = false;
  // --input, --output
  std::string input;
  std::string output;
};

// X as read from --input, in an aligned buffer of its own dtype.
struct InputMatrix {
  QDType dtype = QDType::kFP32;
  int64_t rows = 0;
  std::vector<uint16_t> half;  // bf16 or fp16
  std::vector<float> single;   // fp32
  ConstMatrix View(int64_t cols) const {
    return {dtype, dtype == QDType::kFP32 ? static_cast<const void*>(single.data()) : half.data(),
            rows, cols};
  }
};

// The tensor `x` [M, K] of `path`, in bf16, fp16 or fp32.
Result<InputMatrix> ReadInput(const std::string& path, int64_t k) {
  QP_ASSIGN_OR_RETURN(std::shared_ptr<const SafetensorsFile> file, SafetensorsFile::Open(path));
  const std::string expected = fmt::format("expected [M, {}] in BF16, F16 or F32", k);
  const TensorInfo* info = file->Find("x");
  if (info == nullptr) return InvalidInput(fmt::format("{}: no tensor x ({})", path, expected));
  std::string shape;
  for (int64_t d : info->shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  if (info->shape.size() != 2 || info->shape[1] != k || info->shape[0] < 1) {
    return InvalidInput(fmt::format("{}: tensor x: shape [{}], {}", path, shape, expected));
  }
  InputMatrix x;
  x.rows = info->shape[0];
  const TensorView view = file->View(*info);
  switch (info->dtype) {
    case StDtype::kBF16:
    case StDtype::kF16: {
      x.dtype = info->dtype == StDtype::kBF16 ? QDType::kBF16 : QDType::kFP16;
      QP_ASSIGN_OR_RETURN(x.half, CopyTensor<uint16_t>(view));
      break;
    }
    case StDtype::kF32: {
      QP_ASSIGN_OR_RETURN(x.single, CopyTensor<float>(view));
      break;
    }
    default:
      return InvalidInput(
          fmt::format("{}: tensor x: dtype {}, {}", path, StDtypeName(info->dtype), expected));
  }
  return x;
}

Result<LayerRun> RunGivenInput(const LoadedLayer& layer, const std::string& path) {
  const int64_t k = layer.linear.in_features();
  QP_ASSIGN_OR_RETURN(InputMatrix x, ReadInput(path, k));
  return RunOnInput(layer, x.View(k));
}

// "input" and "output" (null when not given) added to a run's JSON, whose seed is null with
// --input.
void AddInputOutput(const RunArgs& args, Json* json) {
  for (auto& [key, value] : json->mutable_members()) {
    if (key == "seed" && !args.input.empty()) value = Json::Null();
  }
  const auto path_or_null = [](const std::string& p) {
    return p.empty() ? Json::Null() : Json::String(p);
  };
  json->mutable_members().emplace_back("input", path_or_null(args.input));
  json->mutable_members().emplace_back("output", path_or_null(args.output));
}

// --output must not name --input (an atomic rename would replace it).
Status CheckOutputPath(const RunArgs& args) {
  std::error_code error;
  if (!args.input.empty() && std::filesystem::equivalent(args.input, args.output, error)) {
    return InvalidInput(fmt::format("--output {} is the input file", args.output));
  }
  return Status();
}

Status WriteOutput(const std::string& path, const LayerRun& run, int64_t n) {
  const TensorToWrite y{
      "y", StDtype::kF32, {run.m, n}, std::as_bytes(std::span<const float>(run.y))};
  return WriteSafetensors(path, std::span<const TensorToWrite>(&y, 1));
}

// An moe site: every expert (or --expert K) on seeded input, or on --input's x (y [E, M, H] or
// [M, H] to --output).
int RunExperts(const Model& model, const RunArgs& args) {
  Result<LoadedExperts> layer = LoadExperts(model, args.layer, args.rank);
  if (!layer.ok()) return ReportBadInput(layer.status().message());
  const auto run_experts = [&]() -> Result<ExpertsRun> {
    if (args.input.empty()) return RunExpertsSeeded(*layer, args.m, args.seed, args.expert);
    const int64_t hidden = layer->resolved.site->shape ? (*layer->resolved.site->shape)[1] : 0;
    QP_ASSIGN_OR_RETURN(InputMatrix x, ReadInput(args.input, hidden));
    return RunExpertsOnInput(*layer, x.View(hidden), args.expert);
  };
  Result<ExpertsRun> run = run_experts();
  if (!run.ok()) return ReportBadInput(run.status().message());
  if (!args.output.empty()) {
    std::vector<int64_t> shape = {run->w2.m,
                                  layer->experts.front().projections.back().out_features()};
    if (!args.expert) shape.insert(shape.begin(), run->experts);
    const TensorToWrite y{"y", StDtype::kF32, shape,
                          std::as_bytes(std::span<const float>(run->w2.y))};
    if (Status s = WriteSafetensors(args.output, std::span<const TensorToWrite>(&y, 1)); !s.ok()) {
      return ReportBadInput(s.message());
    }
  }
  if (args.json) {
    Json json = ExpertsRunToJson(*layer, *run, args.seed);
    AddInputOutput(args, &json);
    std::cout << ToJson(json) << "\n";
  } else {
    if (!args.input.empty()) std::cout << "input    " << args.input << " (x)\n";
    std::cout << ExpertsRunToText(*layer, *run);
    if (!args.output.empty()) std::cout << "output   " << args.output << " (y)\n";
  }
  return run->pass() ? kExitOk : kExitFindings;
}

int RunLayer(const RunArgs& args) {
  if (args.m < 1 || args.m > 65536) return ReportBadInput("--m: expected 1 to 65536 rows");
  if (!args.output.empty()) {
    if (Status s = CheckOutputPath(args); !s.ok()) return ReportBadInput(s.message());
  }
  Result<OpenOptions> options =
      OpenOptions::Parse(args.engine, args.quantization, args.device, "auto", args.tp);
  if (!options.ok()) return ReportBadInput(options.status().message());
  if (Status s = SetFormatOptions(args.format_options, &*options); !s.ok()) {
    return ReportBadInput(s.message());
  }
  if (Status s = options->SetOnline(args.online); !s.ok()) return ReportBadInput(s.message());
  options->int8_activations = args.int8_activations;
  Result<Model> model = OpenModel(args.dir, *options);
  if (!model.ok()) return ReportBadInput(model.status().message());
  Result<ResolvedSite> resolved = ResolveLayer(model->sites, args.layer);
  if (resolved.ok() && resolved->site->kind == SiteKind::kMoe) {
    return RunExperts(*model, args);
  }
  if (args.expert) return ReportBadInput("--expert: only an MoE layer (kind moe) has experts");
  Result<LoadedLayer> layer = LoadLayer(*model, args.layer, args.rank);
  if (!layer.ok()) return ReportBadInput(layer.status().message());
  Result<LayerRun> run =
      args.input.empty() ? RunSeeded(*layer, args.m, args.seed) : RunGivenInput(*layer, args.input);
  if (!run.ok()) return ReportBadInput(run.status().message());
  if (!args.output.empty()) {
    if (Status s = WriteOutput(args.output, *run, layer->linear.out_features()); !s.ok()) {
      return ReportBadInput(s.message());
    }
  }
  if (args.json) {
    Json json = RunToJson(*layer, *run, args.seed);
    AddInputOutput(args, &json);
    std::cout << ToJson(json) << "\n";
  } else {
    if (!args.input.empty()) std::cout << "input    " << args.input << " (x)\n";
    std::cout << RunToText(*layer, *run);
    if (!args.output.empty()) std::cout << "output   " << args.output << " (y)\n";
  }
  return run->pass() ? kExitOk : kExitFindings;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Load one layer, run it on seeded or given input and compare with an fp64 reference");
  AddModelDir(cmd, &args->dir);
  cmd->add_option("--layer", args->layer, "Layer (execution name, leg or HF name)")->required();
  CLI::Option* expert =
      cmd->add_option("--expert", args->expert_index,
                      "MoE layers: run this expert's w13 (gate+up) and w2 (down); default: every "
                      "expert on the same input");
  cmd->add_option("--m", args->m, "Rows of the seeded input (default 4)");
  cmd->add_option("--seed", args->seed, "Seed of the input (default 0)");
  cmd->add_option("--tp", args->tp, "Tensor-parallel size (default 1)");
  cmd->add_option("--rank", args->rank, "Tensor-parallel rank to load, 0 to tp - 1 (default 0)");
  AddJsonFlag(cmd, &args->json);
  // --engine, --quantization, --device: decide and lay out the layer as plan does.
  AddEngineOption(cmd, &args->engine);
  AddQuantizationOption(cmd, &args->quantization);
  AddDeviceOption(cmd, &args->device, "The device whose layout to load and run");
  AddFormatOptions(cmd, &args->format_options);
  AddOnlineOption(cmd, &args->online);
  AddInt8ActivationsFlag(cmd, &args->int8_activations);
  // --input, --output: given activations in, the result out.
  Completes(cmd->add_option("--input", args->input,
                            "safetensors file with x [M, K] in bf16, fp16 or fp32 (replaces --m "
                            "and --seed)"),
            {ValueCompletion::kFiles, {}});
  Completes(cmd->add_option("--output", args->output,
                            "Write y [M, N] fp32 to this safetensors file (atomically; never the "
                            "input)"),
            {ValueCompletion::kFiles, {}});
  cmd->callback([args, exit_code, expert] {
    if (expert->count() > 0) args->expert = args->expert_index;
    *exit_code = RunLayer(*args);
  });
}

}  // namespace quantpath::cli
