// ModelOpt importer internals, shared by modelopt_config.cc (reading the description per
// dialect), modelopt_rules.cc (exclusion and quantized_layers rules) and modelopt.cc (the plan).
//
// Goals: the two description forms (the hf_quant_config.json shell and the flat form embedded in
// config.json), the algorithms as one table, and each dialect's reading and matching choices as
// data. Non-goals: tensor layouts (specs), the engines' kernel backends.
// Documentation followed: ModelOpt's hf_quant_config.json export (producer, quantization:
// {quant_algo, kv_cache_quant_algo, exclude_modules, group_size, quantized_layers}); vLLM
// modelopt.py @c9a59901 and quant_utils.is_layer_skipped @4de0dd6d; SGLang ModelOptQuantConfig
// (newest read: is_layer_excluded with part-by-part and MLA-tail matching, `regex` module) and
// quantization/utils.is_layer_skipped @daef1f94; ENGINES.md 3.8.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/sources.h"
#include "src/importers/common.h"

namespace quantpath::modelopt {

// One quantization algorithm and how each dialect runs it.
struct AlgoInfo {
  std::string_view name;      // "FP8", "NVFP4", …
  int64_t default_group = 0;  // group_size when the file gives none (0: not grouped)
  // The engines' quant-method classes (the decision detail): linear layers, then experts.
  std::string_view vllm_linear;
  std::string_view vllm_moe;
  std::string_view sglang_linear;
  std::string_view sglang_moe;
};
// The algorithm spelled `name` exactly, or nullptr.
const AlgoInfo* FindAlgo(std::string_view name);
// The scheme of `algo` with `group_size` (NVFP4 block, W4A8_AWQ group). MIXED_PRECISION has none.
Result<QuantScheme> AlgoScheme(const AlgoInfo& algo, std::optional<int64_t> group_size,
                               std::string_view where);
// "FP8, FP8_PER_CHANNEL_PER_TOKEN, …": the algorithms quantpath reads natively.
std::string NativeAlgoList();

// The description as one dialect reads it.
struct Description {
  std::string file;                // "hf_quant_config.json" or "config.json"
  Provenance where;                // the object read (shell root or embedded quantization_config)
  std::string algo;                // as the dialect normalises it (vLLM upper-cases)
  const AlgoInfo* info = nullptr;  // nullptr for MIXED_PRECISION
  bool mixed = false;
  std::optional<QuantScheme> kv;  // the KV-cache scheme the kv algorithm names
  bool kv_method = false;         // SGLang: a truthy kv_cache_quant_algo attaches its KV method
  std::string exclude_key;        // "exclude_modules" or "ignore"
  std::vector<ListEntry> exclude;
  std::optional<int64_t> group_size;
  const Json* quantized_layers = nullptr;  // MIXED_PRECISION table (native)
  std::string quantized_layers_file;
  std::vector<std::string> notes;
  // SGLang takes packed_modules_mapping from the config object itself; a file without one leaves
  // its exact-name check blind to fused layers (they are then matched by their own name).
  bool packed_mapping_in_config = false;
};

// Which object describes ModelOpt: the embedded quantization_config when it is ModelOpt's, else
// hf_quant_config.json. nullopt when neither.
std::optional<Located> FindDescription(const ConfigSources& sources);

// Reads and validates the description with `dialect`'s rules; engine errors carry the engine's
// text (from_config raises).
Result<Description> ReadDescription(const ConfigSources& sources, const Located& located,
                                    const Dialect& dialect);

// The exclusion rule groups of `dialect`, in evaluation order.
Result<std::vector<RuleGroup>> ExclusionGroups(const Description& d, const Dialect& dialect);

// Native MIXED_PRECISION: quantized_layers as exact-path rules (fused sites through their legs,
// MoE sites through their experts' entries).
Result<RuleGroup> QuantizedLayersGroup(const Description& d);

}  // namespace quantpath::modelopt
