// compressed-tensors importer internals, shared by its three files: the QuantizationArgs /
// QuantizationScheme model (compressed_tensors_args.cc), the target and ignore matchers of each
// dialect (compressed_tensors_targets.cc) and the plan (compressed_tensors.cc).
//
// Goals: the library's data model with its validation rules, kept apart from the dialects' string
// semantics. Non-goals: the engines' scheme classes (CompressedTensorsW8A8Fp8, …), which depend on
// the device and belong to materialize.
// Documentation followed: compressed-tensors (vllm-project/compressed-tensors@ac8e2ba8)
// quantization/quant_args.py, quant_scheme.py, quant_config.py, config/base.py, utils/match.py,
// lifecycle/apply.py; vLLM compressed_tensors.py and utils.py (@e9476487); SGLang
// compressed_tensors/utils.py (@4e75f468).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "src/importers/common.h"

namespace quantpath::ct {

enum class Strategy : uint8_t {
  kTensor,
  kChannel,
  kGroup,
  kBlock,
  kToken,
  kTensorGroup,
  kAttnHead
};
std::string_view StrategyName(Strategy s);  // the library's spelling: "tensor", "tensor_group", …
// The strategy spelled exactly `name` (QuantizationStrategy(name), no lower-casing), or nullopt.
std::optional<Strategy> ParseStrategyExact(std::string_view name);
std::string ToUpperAscii(std::string_view s);

enum class ActOrder : uint8_t { kNone, kGroup, kWeight };

// One QuantizationArgs after the library's field validators and model validator.
struct Args {
  int64_t num_bits = 8;
  bool is_float = false;  // type "float" (else "int")
  bool symmetric = true;
  std::optional<int64_t> group_size;
  Strategy strategy = Strategy::kTensor;
  bool strategy_inferred = false;  // strategy was null and came from group_size
  std::optional<std::array<int64_t, 2>> block_structure;
  Dynamic dynamic = Dynamic::kStatic;
  ActOrder actorder = ActOrder::kNone;
  std::optional<std::string> scale_dtype;  // torch dtype name without "torch."
  std::optional<std::string> zp_dtype;
  std::optional<std::string> observer;
  std::string where;  // file#pointer of the object, for messages
};

// Parses and validates one QuantizationArgs object (extra keys are an error: the model forbids
// them). Errors name `file` and the pointer of the offending member.
Result<Args> ParseArgs(const Json& object, std::string_view file);

// The IR tensor description of `args`; `layout` is the checkpoint layout of a weight (activations
// pass kDense). Float widths and group shapes quantpath has no dtype for are kUnsupported.
Result<TensorQuant> ToTensorQuant(const Args& args, SourceLayout layout);

// "observer mse, scale_dtype float8_e4m3fn, …" for plan notes; empty when nothing to show.
std::string ArgsExtras(const Args& args);

// One compression format name ("pack-quantized", …) and what it means.
struct FormatInfo {
  std::string_view name;
  SourceLayout layout;
  bool modelled;  // false: quantpath has no source layout for it yet (plan says so)
};
const FormatInfo* FindFormat(std::string_view name);
// The format llm-compressor would write for these weights, for groups that name none.
std::string_view InferFormat(const Args& weights);

// The JSON of the preset scheme named `upper` (upper case), or nullopt for no such preset.
std::optional<std::string> PresetJson(std::string_view upper);

// One config group as the library reads it (QuantizationScheme, or a preset name with targets).
struct Group {
  std::string name;
  Provenance where;
  std::vector<ListEntry> targets;
  std::optional<Args> weights;
  std::optional<Args> input;
  std::optional<Args> output;
  std::optional<std::string> format;  // per-group format, when given
  bool preset = false;                // expanded from the preset named like the group
};

// How strictly a group is read: the library validates QuantizationScheme (targets required,
// activation strategies, no actorder on activations, no per-group "mixed-precision", no extra
// keys) and expands presets; the engines read the raw dict and validate only the QuantizationArgs
// they use.
struct GroupReading {
  bool validate_scheme = true;
  bool presets = true;
  bool weights_required = false;  // the engines call QuantizationArgs.model_validate(weights)
  bool parse_output = true;
};

Result<Group> ParseGroup(const std::string& name, const Json& value, std::string_view file,
                         const GroupReading& reading);

// ---------------------------------------------------------------------------------------------
// Dialects: which matchers and policies reproduce the library (native), vLLM or SGLang. One row per
// dialect (compressed_tensors_targets.cc); the plan builder reads only this table.

// How attention sites are decided.
enum class KvPolicy : uint8_t {
  kSchemeOnly,    // KV cache quantized exactly when kv_cache_scheme is given
  kEngineMethod,  // CompressedTensorsKVCacheMethod on every attention layer, scheme validated there
};

struct CtDialect {
  Engine engine;
  RegexFlavor regex;  // vLLM imports `regex`, SGLang and the library the standard `re`
  // should_ignore_layer / is_match(ignore).
  MatchKind ignore_plain;         // a plain (non "re:") ignore entry
  bool ignore_classes;            // entries also name module classes (the library's is_match)
  bool exact_fused_name_ignored;  // `layer_name not in ignore` guard: a listed fused name counts
  std::string_view ignore_disagree;
  std::string_view ignore_detail;
  // find_matched_target / match_targets.
  bool library_order;  // exact names, regexes (sorted), classes (sorted) vs name pass, class pass
  FusedPolicy target_fused;
  std::string_view target_disagree;
  std::string_view target_detail;  // fmt pattern with {0} = target, {1} = group
  Action no_target;                // the default action
  GroupReading reading;
  bool drop_attention_groups;  // vLLM from_config: single-target groups ending in "Attention"
  bool fused_moe_alias;        // vLLM: "FusedMoE" gets the "Linear" group (RoutedExperts)
  bool sparsity_fails;         // vLLM: a sparsity_config with targets raises at from_config
  KvPolicy kv;
  std::string_view attention_detail;
  KindPolicy lm_head;
  KindPolicy router;
  KindPolicy embedding;
};
const CtDialect& DialectFor(Engine engine);

// One target as target_scheme_map holds it: config order, first position kept, the last group
// naming it wins (a Python dict).
struct TargetRef {
  std::string target;
  size_t group = 0;  // index into the plan's groups
  Provenance where;
};

// The ignore rule groups of `dialect`, in evaluation order.
Result<std::vector<RuleGroup>> IgnoreGroups(const std::vector<ListEntry>& ignore,
                                            const CtDialect& dialect,
                                            std::vector<std::string>* notes);

// The targets rule group. `actions[i]` is what a hit of a target of group i does; its detail holds
// the group's name, which the dialect's target_detail pattern places.
Result<RuleGroup> TargetGroup(const std::vector<TargetRef>& targets,
                              const std::vector<Action>& actions, const CtDialect& dialect,
                              std::vector<std::string>* notes);

}  // namespace quantpath::ct
