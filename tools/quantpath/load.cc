// quantpath load MODEL_DIR [--quantization NAME | --online SCHEME] [--engine E] [--device D]
//                          [--tp N --rank R]
//                [--json]
//
// Loads every layer of the model through its spec (the pipeline's LoadModel) and reports what it
// cost: layers, bytes read, bytes held, GB/s, peak RSS, seconds. Progress goes to stderr: a bar
// on a terminal, one final line otherwise. Exit 0 when every layer loaded and every checkpoint
// tensor was consumed, 2 otherwise (stderr names the layer, the tensor and the file).

#include <cstdio>
#include <iostream>
#include <map>

#include "fmt/format.h"
#include "quantpath/pipeline.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {
namespace {

struct LoadArgs {
  std::string dir;
  std::string engine = "native";
  std::string quantization;
  FormatArgs format_options;
  std::string device = "cpu";
  std::string online;
  bool int8_activations = false;
  int64_t tp_size = 1;
  int64_t tp_rank = 0;
  bool json = false;
};

constexpr SiteKind kKinds[] = {SiteKind::kLinear, SiteKind::kLmHead, SiteKind::kEmbedding,
                               SiteKind::kRouter, SiteKind::kMoe,    SiteKind::kAttention};

LoadProgressFn LoadProgressPrinter() {
  return [line = ProgressPrinter("load", "sites")](const LoadProgress& p) {
    line(p.done, p.total, DecimalBytes(p.bytes_read) + " read");
  };
}

// The sites quantized at load, their scheme and the largest weight error among them.
std::string QuantizedAtLoad(const Model& model, const ModelLoad& load) {
  const SiteLoad* worst = nullptr;
  for (const SiteLoad& site : load.sites) {
    if (site.quantization_error &&
        (worst == nullptr || *site.quantization_error > *worst->quantization_error)) {
      worst = &site;
    }
  }
  const std::optional<QuantScheme>& scheme = model.plan.default_action.scheme;
  return fmt::format(
      "quantized at load: {} layers{}, weights max |W' - W| / max |W| up to {:.3e} ({})\n",
      load.quantized_at_load, scheme ? " to " + scheme->CanonicalName() : "",
      *worst->quantization_error, worst->site->path);
}

std::string Summary(const Model& model, const LoadArgs& args, const ModelLoad& load) {
  std::string kinds;
  for (SiteKind kind : kKinds) {
    if (int64_t n = load.loaded_per_kind[static_cast<size_t>(kind)]) {
      kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, SiteKindName(kind));
    }
  }
  std::string out;
  // Sites not loaded, grouped by why, with a few of their paths.
  std::map<std::string, std::vector<std::string>> skipped;
  for (const SiteLoad& site : load.sites) {
    if (!site.loaded) skipped[site.note].push_back(site.site->path);
  }
  for (const auto& [note, paths] : skipped) {
    std::string some;
    for (size_t i = 0; i < paths.size() && i < 3; ++i) some += (i ? ", " : "") + paths[i];
    if (paths.size() > 3) some += ", …";
    out += fmt::format("not loaded: {} site{}: {} ({})\n", paths.size(),
                       paths.size() == 1 ? "" : "s", note, some);
  }
  out += fmt::format("other tensors (norms): {}, {}\n", load.other_tensors,
                     DecimalBytes(load.other_bytes));
  if (load.skipped_tensors > 0) {
    out += fmt::format("skipped, as the engine skips them: {} tensors\n", load.skipped_tensors);
  }
  if (args.tp_size > 1) {
    out += fmt::format("tensor parallel: rank {} of {} (held: this rank's shard)\n", args.tp_rank,
                       args.tp_size);
  }
  if (load.quantized_at_load > 0) out += QuantizedAtLoad(model, load);
  out += fmt::format(
      "loaded {} layers ({}) · {} tensors · read {} · held {} · {:.2f} GB/s · peak RSS {} · "
      "{:.3f} s ({:.3f} s CPU)\n",
      load.layers_loaded, kinds, load.tensors, DecimalBytes(load.bytes_read),
      DecimalBytes(load.bytes_held), load.gb_per_s, DecimalBytes(load.peak_rss_bytes), load.seconds,
      load.cpu_seconds);
  return out;
}

Json LoadToJson(const Model& model, const LoadArgs& args, const ModelLoad& load) {
  std::vector<Json::Member> per_kind;
  for (SiteKind kind : kKinds) {
    per_kind.emplace_back(std::string(SiteKindName(kind)),
                          Json::Int(load.loaded_per_kind[static_cast<size_t>(kind)]));
  }
  std::vector<Json> sites;
  for (const SiteLoad& site : load.sites) {
    sites.push_back(Json::Object(
        {{"path", Json::String(site.site->path)},
         {"kind", Json::String(std::string(SiteKindName(site.site->kind)))},
         {"loaded", Json::Bool(site.loaded)},
         {"spec_id", NullIfEmpty(site.spec_id)},
         {"note", NullIfEmpty(site.note)},
         {"tensors", Json::Int(site.tensors)},
         {"bytes_read", Json::Int(site.bytes_read)},
         {"bytes_held", Json::Int(site.bytes_held)},
         {"quantization_error",
          site.quantization_error ? Json::Double(*site.quantization_error) : Json::Null()}}));
  }
  return Json::Object({{"model", Json::String(model.dir)},
                       {"engine", Json::String(std::string(model.plan.dialect.name))},
                       {"tp_size", Json::Int(args.tp_size)},
                       {"tp_rank", Json::Int(args.tp_rank)},
                       {"layers_loaded", Json::Int(load.layers_loaded)},
                       {"loaded_per_kind", Json::Object(std::move(per_kind))},
                       {"not_loaded", Json::Int(load.not_loaded)},
                       {"quantized_at_load", Json::Int(load.quantized_at_load)},
                       {"tensors", Json::Int(load.tensors)},
                       {"other_tensors", Json::Int(load.other_tensors)},
                       {"other_bytes", Json::Int(load.other_bytes)},
                       {"skipped_tensors", Json::Int(load.skipped_tensors)},
                       {"bytes_read", Json::Int(load.bytes_read)},
                       {"bytes_held", Json::Int(load.bytes_held)},
                       {"largest_layer_bytes", Json::Int(load.largest_layer_bytes)},
                       {"seconds", Json::Double(load.seconds)},
                       {"cpu_seconds", Json::Double(load.cpu_seconds)},
                       {"gb_per_s", Json::Double(load.gb_per_s)},
                       {"peak_rss_bytes", Json::Int(load.peak_rss_bytes)},
                       {"sites", Json::Array(std::move(sites))}});
}

int RunLoad(const LoadArgs& args) {
  Result<OpenOptions> options =
      OpenOptions::Parse(args.engine, args.quantization, args.device, "auto", args.tp_size);
  if (!options.ok()) return ReportBadInput(options.status().message());
  if (Status s = SetFormatOptions(args.format_options, &*options); !s.ok()) {
    return ReportBadInput(s.message());
  }
  if (Status s = options->SetOnline(args.online); !s.ok()) return ReportBadInput(s.message());
  options->int8_activations = args.int8_activations;
  Result<Model> model = OpenModel(args.dir, *options);
  if (!model.ok()) return ReportBadInput(model.status().message());
  Result<ModelLoad> load = LoadModel(*model, LoadModelOptions{args.tp_rank, LoadProgressPrinter()});
  if (!load.ok()) return ReportBadInput(load.status().message());
  if (args.json) {
    std::cout << ToJson(LoadToJson(*model, args, *load)) << "\n";
  } else {
    std::cout << Summary(*model, args, *load);
  }
  return kExitOk;
}

}  // namespace

void AddLoadCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<LoadArgs>();
  CLI::App* cmd = app.add_subcommand(
      "load", "Load every layer of a model through its spec and report bytes, speed and memory");
  AddModelDir(cmd, &args->dir);
  AddEngineOption(cmd, &args->engine);
  AddQuantizationOption(cmd, &args->quantization);
  AddDeviceOption(cmd, &args->device, "The device whose layouts to load");
  cmd->add_option("--tp", args->tp_size, "Tensor-parallel size");
  cmd->add_option("--rank", args->tp_rank, "This rank, 0 to tp - 1 (default 0)");
  AddFormatOptions(cmd, &args->format_options);
  AddOnlineOption(cmd, &args->online);
  AddInt8ActivationsFlag(cmd, &args->int8_activations);
  AddJsonFlag(cmd, &args->json);
  cmd->callback([args, exit_code] { *exit_code = RunLoad(*args); });
}

}  // namespace quantpath::cli
