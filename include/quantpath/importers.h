// quantpath importers: one per quantization format, each turning config files into a QuantPlan.
//
// Goals: read one format's fields with its documented meaning, validate them, and choose the
// matchers and policies of the requested dialect. Non-goals: kernels, devices, tensor layouts,
// and evaluating rules against layers (the planner does that).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/sources.h"

namespace quantpath {

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
};

// Importers in detection order (the first whose Detect is true wins).
const std::vector<const Importer*>& Importers();
const Importer* FindImporter(std::string_view name);  // by name or alias

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
