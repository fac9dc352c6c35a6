// quantpath pipeline: OpenModel: a model folder as one dialect reads it (the options of the command
// line and the Python module, the sources, the plan and the sites).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "quantpath/base.h"
#include "quantpath/device.h"
#include "quantpath/importers.h"
#include "quantpath/ir.h"
#include "quantpath/models.h"
#include "quantpath/planner.h"
#include "quantpath/sources.h"

namespace quantpath {

struct OpenOptions {
  Dialect dialect;
  std::optional<std::string> quantization;  // force the importer (--quantization)
  DeviceCaps device;                        // default: cpu
  Launch launch;                            // --tp, --dtype, --speculative, --platform
  // Options for importers beyond the files, by name (--modelslim-packing new), passed to the
  // importer that declares them (FormatOption, importers.h) without being read here.
  FormatOptions format_options;
  // --online: every linear layer and MoE expert of a high-precision checkpoint quantized at load
  // to this scheme (OnlinePlan, importers.h).
  std::optional<QuantScheme> online;
  // --int8-activations (the native engine on the CPU only): every int4 weight-only scheme with
  // channel scales or groups of a power-of-two multiple of 64 and no act-order, and every NVFP4
  // and MXFP4 weight-only scheme, takes
  // int8 activations, quantized per token at run time (dynamic, symmetric), and runs on integer
  // dot products: how vLLM's CPU backend runs AWQ and GPTQ (IPEX, lowp_mode INT8), and llama.cpp
  // its 4-bit types. It trades the exact W4A16 product for about twice the decode speed on AVX2;
  // other int4 layers stay weight-only.
  bool int8_activations = false;

  // An importer's option (FormatOptionsDeclared(): "modelslim-packing" = "old" | "new"), or
  // nothing for an empty value. An unknown option or value is an error naming the option and what
  // it accepts.
  Status SetFormatOption(std::string_view name, std::string_view value);
  // --online: a target's name (OnlineTargets(), specs.h), or "" for none. The target must have a
  // spec on `device` that quantizes at load; errors name the scheme and the device.
  Status SetOnline(std::string_view name);

  // From the command line's spellings: an engine name (DialectNames()), a format name or "" for
  // detection, a device name (ParseDevice), and --dtype, --tp, --speculative and --platform
  // (ParseLaunch).
  // Errors name the option and list what is accepted.
  static Result<OpenOptions> Parse(std::string_view engine, std::string_view quantization,
                                   std::string_view device, std::string_view dtype = "auto",
                                   int64_t tp_size = 1, bool speculative = false,
                                   std::string_view platform = "cuda");
};

// A model folder as one dialect reads it.
struct Model {
  std::string dir;  // the folder read: ResolveModelDir (sources.h) of the name given
  ConfigSources sources;
  QuantPlan plan;  // with the dialect's HF→engine name mapper applied to the config's lists
  ModelSites sites;
  DeviceCaps device;
  Launch launch;
};

// Resolves `dir` (a folder, a Hugging Face cache folder or a repo id in the local cache:
// ResolveModelDir), reads its config files, imports the plan and builds the sites. Errors name the
// file, the pointer and the field.
Result<Model> OpenModel(const std::string& dir, const OpenOptions& options);

// The plan `dialect`'s engine builds from `sources`, its HF→engine name mapper applied: the
// mapper of `model_class` (an architecture or the engine's "module.Class") when given, else that
// of the architecture config.json names. OpenModel and the recorded engine cases share it.
Result<QuantPlan> ImportForEngine(const ConfigSources& sources, const Dialect& dialect,
                                  const std::optional<std::string>& quantization,
                                  const std::optional<std::string>& model_class = std::nullopt);

}  // namespace quantpath
