// quantpath importers: one per quantization format, each turning config files into a QuantPlan.
//
// Goals: read one format's fields with its documented meaning, validate them, and choose the
// matchers and policies of the requested dialect. Non-goals: kernels, devices, tensor layouts,
// and evaluating rules against layers (the planner does that).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/ir.h"
#include "quantpath/sources.h"

namespace quantpath {

// Where a format's description sits in a model folder when it is given alone.
struct DescriptionPlacement {
  std::string file = "config.json";  // config.json: embedded as its quantization_config
  // How the engine that built the description's config object also saw the model's
  // packed_modules_mapping in it: not at all, added where the description has none, or in place
  // of the description's own.
  enum class PackedMapping : uint8_t { kNone, kAddIfAbsent, kReplace };
  PackedMapping packed_mapping = PackedMapping::kNone;
};

// An option a user gives an importer beyond the files (the CLI's `--<name>`, the Python module's
// keyword with underscores), declared by the importer that reads it through
// ConfigSources::format_option; the pipeline passes every option through without reading it.
struct FormatOption {
  std::string_view name;                 // "modelslim-packing"
  std::vector<std::string_view> values;  // the values accepted; the first is the default
  std::string_view help;                 // one line for --help
};

// The checkpoint's small tensors as an importer's refinement reads them: the names of every
// tensor, and one tensor (its dtype, shape and stored bytes) of at most max_bytes (a larger one
// is an error naming it), so that no refinement reads a bulk weight. The checkpoint of `dir` is
// opened on first use, so a plan whose importer refines nothing opens no shard; a folder without
// weights has no tensors.
class SmallTensors {
 public:
  SmallTensors(std::string dir, int64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}
  Result<std::vector<std::string>> Names() const;
  Result<TensorView> Read(std::string_view name) const;

 private:
  // The opened checkpoint; nullptr for a folder without weights.
  Result<const Checkpoint*> Opened() const;

  std::string dir_;
  int64_t max_bytes_;
  mutable std::optional<Result<Checkpoint>> checkpoint_;
};

class Importer {
 public:
  virtual ~Importer() = default;
  // The name `--quantization` accepts, e.g. "fp8", "gptq", "compressed-tensors".
  virtual std::string_view name() const = 0;
  // Other names the files or users use for the same format (e.g. "modelopt_fp4").
  virtual std::vector<std::string_view> aliases() const { return {}; }
  // Formats whose files this importer may be forced over with `--quantization` (SGLang accepts
  // w8a8_int8 over a compressed-tensors checkpoint); any other disagreement is an error.
  virtual std::vector<std::string_view> forced_over() const { return {}; }
  // Whether the folder's files describe this format.
  virtual bool Detect(const ConfigSources& sources) const = 0;
  virtual Result<QuantPlan> BuildPlan(const ConfigSources& sources,
                                      const Dialect& dialect) const = 0;
  // The plan of `--quantization <name>` on a folder that describes no quantization, where the
  // dialect's engine builds the method without a description (vLLM's and SGLang's
  // get_quant_config construct a config class that reads no file with its defaults, which
  // quantizes high-precision weights at load); nullopt where it does not, which is an error
  // naming the format.
  virtual Result<std::optional<QuantPlan>> PlanWithoutDescription(
      const ConfigSources& /*sources*/, const Dialect& /*dialect*/) const {
    return std::optional<QuantPlan>();
  }
  // The options this importer reads beyond the files.
  virtual std::vector<FormatOption> options() const { return {}; }
  // Facts of the plan that only the checkpoint's data holds (bitsandbytes' block size lives in
  // each quant_state tensor), set on a plan this importer built, where the folder has weights;
  // by default none.
  virtual Status Refine(const SmallTensors& /*tensors*/, QuantPlan* /*plan*/) const { return {}; }
  // Where a description of this format given on its own (an engine case's `config`) sits in a
  // model folder, and how the engine merged the model's packed_modules_mapping into it.
  virtual DescriptionPlacement PlaceDescription(const Json& /*description*/,
                                                const Dialect& /*dialect*/) const {
    return {};
  }
};

// Every option the importers declare, in importer order.
std::vector<FormatOption> FormatOptionsDeclared();
// Checks one option as given: an unknown name, or a value its importer does not accept, is an
// error naming the option and what it accepts.
Status CheckFormatOption(std::string_view name, std::string_view value);
// Runs the refinement of the importer that built `plan` (QuantPlan::importer).
Status RefinePlan(const SmallTensors& tensors, QuantPlan* plan);

// Importers in detection order (the first whose Detect is true wins).
const std::vector<const Importer*>& Importers();
const Importer* FindImporter(std::string_view name);  // by name or alias

// The linear kernel an engine picks for a quantized linear layer when it creates the weights, where
// the platform's recordings name it (vLLM 0.34 on a CPU): `name`, or the engine's `error` when no
// kernel of the platform implements the scheme.
struct EngineKernel {
  std::string name;
  std::string error;
};
// For a linear layer of `scheme` as `plan`'s dialect runs on `platform`; nullopt where the
// dialect's details name no kernel.
std::optional<EngineKernel> LinearKernelFor(const QuantPlan& plan, Platform platform,
                                            const QuantScheme& scheme);

// Detects (or, with `forced`, checks) the format and builds the plan. A folder without any
// quantization description yields an unquantized plan (quant_method "none"). When `forced` names
// a format other than the files', the error names both. The files are searched as the dialect's
// engine searches them. `mapper` is the model's HF→engine name mapper for the dialect (models.h
// FindNameMapper): the config lists the engine rewrites with it are read rewritten.
Result<QuantPlan> ImportPlan(const ConfigSources& sources, const Dialect& dialect,
                             const std::optional<std::string>& forced = std::nullopt,
                             const std::optional<NameMapper>& mapper = std::nullopt);

// `--online`: every linear layer and MoE expert quantized at load to `scheme` (its weight source
// layout kDense), the LM head, routers and embeddings left in the checkpoint's dtype; for a folder
// whose `unquantized` plan (ImportPlan's) describes no quantization, else an error naming the
// method and its files.
Result<QuantPlan> OnlinePlan(const QuantPlan& unquantized, const QuantScheme& scheme);

}  // namespace quantpath
