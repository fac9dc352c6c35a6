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
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/sources.h"
#include "src/importers/common.h"

namespace quantpath::modelopt {

// One quantization algorithm.
struct AlgoInfo {
  std::string_view name;      // "FP8", "NVFP4", …
  int64_t default_group = 0;  // group_size when the file gives none (0: not grouped)
  // Read natively; the others (MXFP8) only where an engine release accepts them.
  bool native = true;
};
// The algorithm spelled `name` exactly, or nullptr.
const AlgoInfo* FindAlgo(std::string_view name);

// The engine's quant-method classes for one algorithm (the decision detail). An empty `linear`
// leaves linear layers and the LM head unquantized (UnquantizedLinearMethod); an empty `moe` gives
// experts no method.
struct AlgoMethods {
  std::string_view algo;
  std::string_view linear;
  std::string_view moe;
};
// The row of `algo` in `table`, or nullptr.
const AlgoMethods* FindMethods(const std::vector<AlgoMethods>& table, std::string_view algo);
// The scheme of `algo` with `group_size` (NVFP4 block, W4A8_AWQ group). MIXED_PRECISION has none.
Result<QuantScheme> AlgoScheme(const AlgoInfo& algo, std::optional<int64_t> group_size,
                               std::string_view where);
// "FP8, FP8_PER_CHANNEL_PER_TOKEN, …": the algorithms quantpath reads natively.
std::string NativeAlgoList();

// Reading helpers shared by the dialects' from_config.
std::string Upper(std::string_view s);
std::string_view PyType(const Json& v);  // Python's type(x), as the engines' messages print it
bool Truthy(const Json* v);              // Python truthiness; nullptr is falsy
std::string PyStr(const Json& v);        // str(value)
// vLLM's group_size: None, an int, or whatever int() accepts; else its ValueError.
Result<std::optional<int64_t>> VllmGroupSize(const Json* gs);
Status EngineError(std::string_view text);
Result<std::vector<ListEntry>> ExcludeList(const Json& q, std::string_view key,
                                           std::string_view file);
QuantScheme Fp8KvScheme();
bool KvSchemeIsFp8(const Json* kv);  // kv_cache_scheme {"type": "float", "num_bits": 8}

// The config class a current engine release resolves the description to.
enum class EngineConfig : uint8_t {
  kSingle,  // one algorithm for every layer (ModelOptFp8Config, ModelOptNvFp4Config, …)
  kMixed,   // MIXED_PRECISION through quantized_layers (modelopt_mixed)
  kW4AFp8,  // SGLang's w4afp8: MIXED_PRECISION without an NVFP4 layer
  kMxfp8,   // SGLang's mxfp8 (Fp8Config with [1, 32] blocks) for a nested MXFP8 description
};

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
  // The config object's packed_modules_mapping (fused name → shards), in document order.
  std::vector<std::pair<std::string, std::vector<std::string>>> packed;
  EngineConfig engine_config = EngineConfig::kSingle;
};

// Which object describes ModelOpt: the embedded quantization_config when it is ModelOpt's, else
// hf_quant_config.json. nullopt when neither.
std::optional<Located> FindDescription(const ConfigSources& sources);

// Reads and validates the description with `dialect`'s rules; engine errors carry the engine's
// text (from_config raises).
Result<Description> ReadDescription(const ConfigSources& sources, const Located& located,
                                    const Dialect& dialect);

// The releases' from_config (modelopt_current.cc): vLLM ModelOptQuantConfigBase and its
// subclasses since 0.33 (`dialect` says which release), SGLang 0.5.23 ModelOptFp8Config /
// ModelOptFp4Config / ModelOptMixedPrecisionConfig with the method resolution of ModelConfig.
Status ReadVllmCurrent(const Json& root, const Json* shell, const Dialect& dialect, Description* d);
Status ReadSglangCurrent(const Json& root, const Json* shell, Description* d);

// The exclusion rule groups of `dialect`, in evaluation order.
Result<std::vector<RuleGroup>> ExclusionGroups(const Description& d, const Dialect& dialect);

// Native MIXED_PRECISION: quantized_layers as exact-path rules (fused sites through their legs,
// MoE sites through their experts' entries).
Result<RuleGroup> QuantizedLayersGroup(const Description& d);

// The releases' MIXED_PRECISION (modelopt_mixed.cc): quantized_layers looked up as
// `_resolve_quant_algo` does, as rule groups placed around the exclusion groups; each algorithm's
// method from `methods`.
Result<std::vector<RuleGroup>> EngineMixedGroups(const Description& d, const Dialect& dialect,
                                                 std::vector<RuleGroup> exclusion,
                                                 const std::vector<AlgoMethods>& methods);

}  // namespace quantpath::modelopt
