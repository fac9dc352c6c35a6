// compressed-tensors importer internals, shared by its files: the QuantizationArgs /
// QuantizationScheme model (compressed_tensors_args.cc), presets and formats
// (compressed_tensors_presets.cc), the dialect table and the experts methods
// (compressed_tensors_dialects.cc), the target and ignore matchers (compressed_tensors_targets.cc)
// and the plan (compressed_tensors.cc).
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
// Dialects: which matchers and policies reproduce the library (native), vLLM or SGLang as recorded,
// and vLLM 0.33 / SGLang 0.5.23. One row per dialect (compressed_tensors_dialects.cc); the plan
// builder reads only this table.

// How attention sites are decided.
enum class KvPolicy : uint8_t {
  kSchemeOnly,    // KV cache quantized exactly when kv_cache_scheme is given
  kEngineMethod,  // CompressedTensorsKVCacheMethod on every attention layer, scheme validated there
  // SGLang 0.5.23: CompressedTensorsKVCacheMethod only for a kv_cache_scheme it supports (static
  // symmetric per-tensor fp8); no method without one, or for any other (a warning).
  kEngineMethodWhenSupported,
};

// How `ignore` reaches a fused layer.
enum class IgnoreShape : uint8_t {
  kLegs,                // the library: every leg on its own, they must agree
  kListedFusedName,     // should_ignore_layer's `layer_name not in ignore` guard, then the shards
  kSglangShouldIgnore,  // the same, built by SglangShouldIgnoreGroups (standard `re` only)
  kFusedNameThenLegs,   // vLLM 0.33 find_matching_patterns: any entry against the fused name first
};

// The passes of target matching, in order.
enum class TargetOrder : uint8_t {
  kLibrary,         // match_targets: exact names, regexes (sorted), classes (sorted)
  kNameClassFused,  // find_matched_target as recorded, and SGLang 0.5.23
  kNameFusedClass,  // vLLM 0.33 find_matched_target
};

// How an experts layer is decided when it is looked up through expert 0's gate/up/down projections
// (get_moe_method / get_moe_scheme); unused when CtDialect::experts_through_legs is false.
struct CtExperts {
  std::string_view disagree;        // the projections resolve to different scheme dicts
  std::string_view ignored_detail;  // every projection ignored
  Action no_target;                 // a projection no target reaches
  std::string_view method_class;    // the MoE method; empty: chosen by scheme (MoeMethodClass)
  std::string_view detail;          // fmt pattern: {0} = target, {1} = group, {2} = method
  bool wna16_global_format;         // the WNA16 check reads the top-level format, not the group's
  std::string_view wna16_error;     // fmt pattern, {0} = format, {1} = bits
};

struct CtDialect {
  Engine engine;
  RegexFlavor regex;  // vLLM imports `regex`, SGLang and the library the standard `re`
  // should_ignore_layer / is_match(ignore).
  IgnoreShape ignore_shape;
  MatchKind ignore_plain;  // a plain (non "re:") ignore entry
  std::string_view ignore_plain_words;
  bool ignore_classes;  // entries also name module classes (the library's is_match)
  std::string_view ignore_disagree;
  std::string_view ignore_detail;
  std::string_view lm_head_unquantized_detail;  // empty: ignore_detail (and the default action)
  // find_matched_target / match_targets.
  TargetOrder target_order;
  FusedPolicy target_fused;
  std::string_view target_disagree;
  std::string_view target_detail;  // fmt pattern with {0} = target, {1} = group
  bool lm_head_by_name_only;       // class targets never reach the LM head (get_lm_head_scheme)
  Action no_target;                // the default action
  GroupReading reading;
  bool drop_attention_groups;  // vLLM from_config: single-target groups ending in "Attention"
  std::string_view moe_alias;  // the class "Linear" is copied to for experts layers; empty: none
  bool experts_through_legs;   // experts looked up through expert 0's projections
  CtExperts experts;
  bool sparsity_fails;  // vLLM: a sparsity_config with targets raises at from_config
  KvPolicy kv;
  std::string_view attention_detail;
  // The attention classes the engine's KV branch reaches; nullptr = every one.
  const std::vector<std::string>* attention_classes = nullptr;
  KindPolicy lm_head;
  KindPolicy router;
  KindPolicy embedding;
};
const CtDialect& DialectFor(const Dialect& dialect);

// One target as target_scheme_map holds it: config order, first position kept, the last group
// naming it wins (a Python dict).
struct TargetRef {
  std::string target;
  size_t group = 0;  // index into the plan's groups
  Provenance where;
  std::string alias_of;  // "Linear" for the experts class the engine copies it to
};

// The ignore rule groups of `dialect`, in evaluation order (experts layers looked up through their
// projections are left to TargetGroups, which holds their ignore rules too).
Result<std::vector<RuleGroup>> IgnoreGroups(const std::vector<ListEntry>& ignore,
                                            const CtDialect& dialect,
                                            std::vector<std::string>* notes);

// The targets rule groups. `actions[i]` is what a hit of a target of group i does on a linear
// layer, `experts[i]` on an experts layer (used when the dialect looks experts up through their
// projections); an action's detail holds the group's name, which the dialect's patterns place.
// `ignore` is read again for experts layers, which consult it per projection.
Result<std::vector<RuleGroup>> TargetGroups(const std::vector<TargetRef>& targets,
                                            const std::vector<Action>& actions,
                                            const std::vector<Action>& experts,
                                            const std::vector<ListEntry>& ignore,
                                            const CtDialect& dialect,
                                            std::vector<std::string>* notes);

// What a hit of group `g` (linear action `linear`) does on an experts layer in `dialect`: the MoE
// method's checks (get_moe_method / get_moe_scheme) as a kFail, or `linear` with the MoE method's
// class as its detail (TargetGroups places it with the target and group in experts.detail).
// `global_format` is the config's top-level format.
Action ExpertsAction(const Group& g, const Action& linear,
                     const std::optional<std::string>& global_format, const CtDialect& dialect);

}  // namespace quantpath::ct
