// The native fp8 importer: DeepSeek-style `quant_method: "fp8"` in config.json's
// quantization_config (DeepSeek-V3/R1, Kimi-K2, Qwen3-FP8, MiniMax, …).
//
// Fields read: quant_method, fmt, activation_scheme, weight_block_size, ignored_layers,
// modules_to_not_convert. The scheme is the same in every dialect; the dialect chooses which
// exclusion list is read, how its entries match, the LM-head policy and what attention layers get
// (the engines attach Fp8KVCacheMethod; transformers nothing). References read: transformers 5.23
// (FineGrainedFP8Config, FineGrainedFP8HfQuantizer, should_convert_module), vLLM Fp8Config as
// recorded in oracle/ (vllm@1436674bcb) and 0.33.0, SGLang 0.5.23 Fp8Config (the recorded SGLang
// code has no fp8 cases; both SGLang dialects follow 0.5.23 but for the fused-shard fallback).
//
// Schemes (weights always e4m3, see `fmt` below):
//   - weight_block_size [n, k] → weights fp8 per n×k block (DeepSeek `weight_scale_inv`, which
//     multiplies), activations fp8 dynamic per token and per group of k along K (the 1×k groups
//     the engines' block kernels quantize the input in; transformers' act_quant uses block[1] too).
//   - no block, dynamic → weights fp8 per tensor (`weight_scale`; fused legs keep one scale each,
//     broadcast per row after loading), activations fp8 dynamic per token: vLLM's Fp8LinearMethod
//     uses per-token dynamic scales where CUTLASS fp8 runs (otherwise per-tensor dynamic, a device
//     choice left to materialize), SGLang and transformers likewise.
//   - static → weights fp8 per tensor, activations fp8 per tensor with the checkpoint's
//     `input_scale`.
//
// Without a description, `--quantization fp8` quantizes a bf16 / fp16 checkpoint at load
// (PlanWithoutDescription): the engines' get_quant_config builds the config class with its defaults
// when the class reads no file. What each then stores:
//   - transformers: FineGrainedFP8Config() defaults weight_block_size to (128, 128), so blocks of
//     128 × 128 with 1 × 128 activation groups;
//   - vLLM (recorded): Fp8Config() is not fp8-serialized, and Fp8LinearMethod quantizes each
//     layer's weight once per tensor in process_weights_after_loading (ops.scaled_fp8_quant),
//     activations per token on CUTLASS; vLLM 0.33 warns that the use is deprecated and builds its
//     fp8_per_tensor online config (Fp8PerTensorOnlineLinearMethod, the same scheme, and no
//     KV-cache method);
//   - SGLang 0.5.23: Fp8Config() likewise, but Fp8LinearMethod quantizes per output channel where
//     CUTLASS fp8 runs (per_token_group_quant_fp8 over the whole row; per tensor otherwise, a
//     device choice the capability-9.0 dialect does not take), activations per token.
//
// `fmt`: neither engine's Fp8Config nor transformers' FineGrainedFP8Config reads it; all three
// load fp8 weights as float8_e4m3fn. quantpath does the same (weights are always kFP8E4M3) and
// records the field in plan.notes, with a warning for "e5m2": the checkpoint check compares the
// tensors' stored dtype.
#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/common.h"
#include "src/importers/fp8.h"

namespace quantpath {
namespace {

constexpr std::string_view kMethod = "fp8";

// Keys this importer interprets; any other key of the description is listed in plan.notes.
constexpr std::string_view kKnownKeys[] = {"quant_method",      "fmt",
                                           "activation_scheme", "weight_block_size",
                                           "ignored_layers",    "modules_to_not_convert"};

// What differs between the releases of one engine: how a fused site meets the exclusion list.
// Everything else (which list is read, its matcher semantics, texts) is the engine's and is the
// same in its recorded and current code (vLLM 0.33.0 and SGLang 0.5.23 Fp8Config.from_config /
// get_quant_method were read against the recorded ones).
// What `--quantization fp8` stores on a folder without a description (see the file comment).
enum class OnlineFp8 : uint8_t { kBlock, kPerTensor, kPerChannel };

struct Fp8Dialect {
  FusedPolicy fused;
  SglangShardTable shard_table;  // SGLang only
  OnlineFp8 online;
};

constexpr std::array<DialectRow<Fp8Dialect>, 5> kDialects = {{
    // native: transformers decides every nn.Linear (HF leg names) on its own.
    {DialectId::kNative, {FusedPolicy::kLegsMustAgree, SglangShardTable::kNone, OnlineFp8::kBlock}},
    // vllm@helpers: is_layer_skipped looks up the shards only.
    {DialectId::kVllmHelpers,
     {FusedPolicy::kLegsMustAgree, SglangShardTable::kNone, OnlineFp8::kPerTensor}},
    {DialectId::kSglangHelpers,
     {FusedPolicy::kLegsMustAgree, SglangShardTable::kNone, OnlineFp8::kPerChannel}},
    // since vllm@0.33: a fused name listed directly is honoured first (Step-3.5-Flash lists
    // self_attn.qkv_proj), then the shards.
    {DialectId::kVllm033,
     {FusedPolicy::kFusedNameThenLegs, SglangShardTable::kNone, OnlineFp8::kPerTensor}},
    // since sglang@0.5.23: qkv_proj / gate_up_proj are split into shards from a built-in table when
    // the model has no packed mapping for them (SGLang's Llama defines none).
    {DialectId::kSglang0523,
     {FusedPolicy::kLegsMustAgree, SglangShardTable::kBuiltInFallback, OnlineFp8::kPerChannel}},
}};
static_assert(CoversEveryDialect(kDialects));

// " (vLLM raises ValueError: …)" for the engine dialects, so `match` shows the engine's own text.
std::string EngineSays(const Dialect& dialect, std::string_view text) {
  switch (dialect.engine) {
    case Engine::kVllm:
      return fmt::format(" (vLLM raises ValueError: {})", text);
    case Engine::kSglang:
      return fmt::format(" (SGLang raises ValueError: {})", text);
    case Engine::kNative:
      break;
  }
  return "";
}

// The fields of one fp8 description that shape the scheme.
struct Fp8Fields {
  bool static_activations = false;
  std::optional<std::array<int64_t, 2>> block;  // [n (output rows), k (input columns)]
};

// activation_scheme: "static" or "dynamic". vLLM and SGLang require the key and compare it
// exactly; transformers defaults it to "dynamic" and lower-cases it first.
Status ReadActivationScheme(const Json& q, const std::string& file, const Dialect& dialect,
                            Fp8Fields* fields, std::vector<std::string>* notes) {
  const Json* act = q.Find("activation_scheme");
  if (act == nullptr) {
    if (dialect.engine == Engine::kNative) {
      notes->push_back(fmt::format(
          "{}: no activation_scheme; transformers' FineGrainedFP8Config defaults it to dynamic",
          Where(file, q)));
      return {};
    }
    return InvalidInput(fmt::format(
        "{}: activation_scheme is required{}", Where(file, q),
        EngineSays(
            dialect,
            "Cannot find any of ['activation_scheme'] in the model's quantization config.")));
  }
  if (!act->is_string()) {
    std::string shown = act->is_null() ? "None" : ToJson(*act);
    return InvalidInput(fmt::format(
        "{}: activation_scheme must be \"static\" or \"dynamic\", found {}{}", Where(file, *act),
        act->TypeName(), EngineSays(dialect, "Unsupported activation scheme " + shown)));
  }
  std::string scheme = act->string_value();
  if (dialect.engine == Engine::kNative) scheme = ToLower(scheme);
  if (scheme != "static" && scheme != "dynamic") {
    return InvalidInput(
        fmt::format("{}: activation_scheme must be \"static\" or \"dynamic\", found \"{}\"{}",
                    Where(file, *act), act->string_value(),
                    EngineSays(dialect, "Unsupported activation scheme " + act->string_value())));
  }
  fields->static_activations = scheme == "static";
  return {};
}

// weight_block_size: absent or null → per-tensor weights; otherwise exactly two positive integers.
// The engines only check the length (and would fail later on anything else); transformers also
// checks positivity. Block scales need dynamic activations in both engines; transformers would
// accept static ones, but a plan that neither engine can load is reported in every dialect.
Status ReadBlockSize(const Json& q, const std::string& file, const Dialect& dialect,
                     Fp8Fields* fields, std::vector<std::string>* notes) {
  const Json* block = q.Find("weight_block_size");
  if (block == nullptr || block->is_null()) {
    if (block == nullptr && dialect.engine == Engine::kNative) {
      // transformers' FineGrainedFP8Config defaults an absent key to (128, 128), which cannot load
      // a checkpoint that stores per-tensor `weight_scale`; quantpath follows the engines.
      notes->push_back(fmt::format(
          "{}: no weight_block_size, so weights are per-tensor as vLLM and SGLang read it "
          "(transformers' FineGrainedFP8Config would assume [128, 128])",
          Where(file, q)));
    }
    return {};
  }
  if (!block->is_array() || block->items().size() != 2) {
    std::string found = block->is_array() ? fmt::format("{} entries", block->items().size())
                                          : std::string(block->TypeName());
    std::string engine_text =
        block->is_array()
            ? fmt::format(
                  "The quantization block size of weight must have 2 dimensions, but got "
                  "{} dimensions",
                  block->items().size())
            : std::string();
    return InvalidInput(fmt::format(
        "{}: weight_block_size must be a list of two positive integers [block_n, block_k], found "
        "{}{}",
        Where(file, *block), found, engine_text.empty() ? "" : EngineSays(dialect, engine_text)));
  }
  std::array<int64_t, 2> shape{};
  for (size_t i = 0; i < 2; ++i) {
    const Json& item = block->items()[i];
    if (!item.is_int() || item.int_value() <= 0) {
      return InvalidInput(fmt::format(
          "{}: weight_block_size entries must be positive integers, found {}", Where(file, item),
          item.is_number() ? ToJson(item) : std::string(item.TypeName())));
    }
    shape[i] = item.int_value();
  }
  if (fields->static_activations) {
    return InvalidInput(fmt::format(
        "{}: weight_block_size needs activation_scheme \"dynamic\", found \"static\"{}",
        Where(file, *block),
        EngineSays(dialect,
                   "The block-wise quantization only supports dynamic activation scheme for now, "
                   "but got static activation scheme.")));
  }
  fields->block = shape;
  return {};
}

QuantScheme Fp8Scheme(const Fp8Fields& f) {
  QuantScheme s;
  s.weight.dtype = QDType::kFP8E4M3;
  TensorQuant input;
  input.dtype = QDType::kFP8E4M3;
  if (f.block) {
    s.weight.granularity = Granularity::kBlock;
    s.weight.block_shape = f.block;
    s.weight.load.layout = SourceLayout::kFp8ScaleInv;
    input.granularity = Granularity::kGroup;
    input.group_size = (*f.block)[1];
    input.dynamic = Dynamic::kDynamic;
  } else {
    s.weight.granularity = Granularity::kPerTensor;
    s.weight.load.layout = SourceLayout::kFp8Scale;
    if (f.static_activations) {
      input.granularity = Granularity::kPerTensor;
      input.dynamic = Dynamic::kStatic;
      input.load.layout = SourceLayout::kFp8Scale;  // the checkpoint's `input_scale`
    } else {
      input.granularity = Granularity::kPerToken;
      input.dynamic = Dynamic::kDynamic;
    }
  }
  s.input = input;
  return s;
}

// What the engines attach to every attention layer under fp8: Fp8KVCacheMethod, which reads
// k_scale / v_scale when the checkpoint has them. The config names no KV-cache scheme (kv_cache
// stays empty); the cache is fp8 only with --kv-cache-dtype fp8, but the recorded decisions count
// the attached method as "quantized".
Action EngineAttentionAction(const Dialect& dialect) {
  std::string_view engine = dialect.engine == Engine::kVllm ? "vLLM" : "SGLang";
  return {ActionKind::kQuantize, std::nullopt,
          fmt::format("{} attaches Fp8KVCacheMethod to every attention layer (k/v scales read "
                      "when present; the cache is fp8 only with --kv-cache-dtype fp8)",
                      engine),
          "Fp8KVCacheMethod"};
}

// Which exclusion list the dialect reads, with notes on the one it leaves unread. `present` is
// false when the dialect reads no list at all (transformers then applies its default skips).
struct ChosenList {
  bool present = false;
  SkipList list;
};

Result<ChosenList> ChooseSkipList(const Json& q, const std::string& file, const Dialect& dialect,
                                  std::vector<std::string>* notes) {
  // Only the list a dialect reads is validated: an engine never looks at the other one.
  const Json* ignored = q.FindNonNull("ignored_layers");
  const Json* not_convert = q.FindNonNull("modules_to_not_convert");
  const bool has_ignored_key = q.Find("ignored_layers") != nullptr;
  ChosenList chosen;
  auto take = [&](std::string_view key) -> Status {
    QP_ASSIGN_OR_RETURN(auto entries, ReadEntryList(q, key, file));
    chosen.present = true;
    chosen.list.key = std::string(key);
    if (entries) chosen.list.entries = std::move(*entries);
    return {};
  };
  auto unread = [&](std::string_view key, std::string_view why) {
    notes->push_back(fmt::format("{}#{}/{}: not read ({})", file, q.pointer(), key, why));
  };
  switch (dialect.engine) {
    case Engine::kNative:
      // FineGrainedFP8Config: modules_to_not_convert, else the `ignored_layers` alias when the key
      // exists (MiniMax ships it); neither given (or null) → None, and the quantizer adds its
      // default skips.
      if (not_convert != nullptr) {
        if (ignored != nullptr)
          unread("ignored_layers", "transformers prefers modules_to_not_convert");
        QP_RETURN_IF_ERROR(take("modules_to_not_convert"));
      } else if (ignored != nullptr) {
        QP_RETURN_IF_ERROR(take("ignored_layers"));
      }
      break;
    case Engine::kVllm: {
      // Fp8Config.from_config: ignored_layers, unless missing, null or empty.
      bool use_ignored = ignored != nullptr && !(ignored->is_array() && ignored->items().empty());
      if (use_ignored) {
        if (not_convert != nullptr) {
          unread("modules_to_not_convert", "vLLM reads a non-empty ignored_layers first");
        }
        QP_RETURN_IF_ERROR(take("ignored_layers"));
      } else {
        QP_RETURN_IF_ERROR(take("modules_to_not_convert"));
      }
      break;
    }
    case Engine::kSglang: {
      // Fp8Config.from_config: the first key present of [ignored_layers, modules_to_not_convert],
      // even when its value is null or empty; every entry is then kept both without and with a
      // leading "model." (SGLANG_FP8_IGNORED_LAYERS, an environment variable, is not modelled).
      if (has_ignored_key) {
        if (q.Find("modules_to_not_convert") != nullptr) {
          unread("modules_to_not_convert", "SGLang reads ignored_layers when the key exists");
        }
        QP_RETURN_IF_ERROR(take("ignored_layers"));
      } else {
        QP_RETURN_IF_ERROR(take("modules_to_not_convert"));
      }
      std::vector<ListEntry> normalized;
      for (const ListEntry& e : chosen.list.entries) {
        std::string base = e.value.starts_with("model.") ? e.value.substr(6) : e.value;
        normalized.push_back({base, e.where});
        normalized.push_back({"model." + base, e.where});
      }
      chosen.list.entries = std::move(normalized);
      break;
    }
  }
  return chosen;
}

// The "exclude" group: the chosen list with the dialect's matcher semantics.
Result<RuleGroup> ExcludeGroup(const ChosenList& chosen, const Dialect& dialect) {
  const Fp8Dialect& row = RowFor(dialect, kDialects);
  RuleGroup group;
  group.name = "exclude";
  group.fused = row.fused;
  const SiteKindSet linear = KindBit(SiteKind::kLinear);
  const SiteKindSet moe = KindBit(SiteKind::kMoe);
  switch (dialect.engine) {
    case Engine::kNative:
      group.disagree_message =
          "transformers decides the legs of this fused layer separately and they disagree; one "
          "fused layer cannot hold both precisions";
      QP_RETURN_IF_ERROR(AppendTransformersSkipRules(
          chosen.list,
          {{linear | KindBit(SiteKind::kLmHead), "nn.Linear (not converted)"},
           {moe, "experts (not converted)"}},
          dialect.regex, &group.rules));
      break;
    case Engine::kVllm:
      group.disagree_message = std::string(kShardsDisagreeText);
      QP_RETURN_IF_ERROR(AppendVllmSkipRules(
          chosen.list, {{linear, "UnquantizedLinearMethod"}, {moe, "UnquantizedFusedMoEMethod"}},
          &group.rules));
      break;
    case Engine::kSglang:
      group.disagree_message = std::string(kShardsDisagreeText);
      QP_RETURN_IF_ERROR(AppendSglangSkipRules(
          chosen.list, {{linear, "UnquantizedLinearMethod"}, {moe, "UnquantizedFusedMoEMethod"}},
          row.shard_table, &group.rules));
      break;
  }
  return group;
}

// fmt and unknown keys: read, shown, and deciding nothing.
void AddFieldNotes(const Json& q, const std::string& file,
                   std::span<const std::string_view> more_keys, std::vector<std::string>* notes) {
  if (const Json* fmt_value = q.FindNonNull("fmt")) {
    std::string shown = fmt_value->is_string() ? fmt_value->string_value() : ToJson(*fmt_value);
    if (shown == "e4m3") {
      notes->push_back(fmt::format("{}: fmt e4m3 (fp8 weights are e4m3fn in every engine)",
                                   Where(file, *fmt_value)));
    } else {
      notes->push_back(fmt::format(
          "{}: warning: fmt {} is not read by vLLM, SGLang or transformers, which load fp8 weights "
          "as e4m3fn; the plan does the same, and `check` compares the tensors' stored dtype",
          Where(file, *fmt_value), shown));
    }
  }
  std::vector<std::string> unknown;
  for (const Json::Member& m : q.members()) {
    bool known = false;
    for (std::string_view k : kKnownKeys) known = known || m.first == k;
    for (std::string_view k : more_keys) known = known || m.first == k;
    if (!known) unknown.push_back(m.first);
  }
  if (!unknown.empty()) {
    notes->push_back(fmt::format("{}: fields the fp8 importer does not interpret: {}",
                                 Where(file, q), Join(unknown, ", ")));
  }
}

// The checks the fp8 methods run in create_weights on block-quantized layers, same texts in both
// releases. vLLM 0.33 validate_fp8_block_shape: input columns when split, each output partition
// when split (all but the last when only fused); a merged column-parallel layer with a partition
// not a multiple of block_n skips it (linear.py allow_fp8_block_shape_mismatch). Its MoE method
// refines or pads the block to the rank's shard (resolve_fp8_moe_weight_block_shape), so no MoE
// check. SGLang 0.5.23 validate_block_quant_shapes: the same without exemptions, every partition
// of a fused layer; Fp8MoEMethod.create_weights: the rank's intermediate size against block_n
// always, against block_k when tp > 1.
std::vector<ShapeCheck> BlockShapeChecks(const std::array<int64_t, 2>& block,
                                         const Dialect& dialect) {
  const auto [block_n, block_k] = block;
  const SiteKindSet linear = KindBit(SiteKind::kLinear);
  const SiteKindSet moe = KindBit(SiteKind::kMoe);
  const bool vllm = dialect.engine == Engine::kVllm;
  const int64_t exempt = vllm ? block_n : 0;
  std::vector<ShapeCheck> checks = {
      {ShapeDim::kInput, block_k, linear, CheckWhen::kSplit, false, exempt,
       fmt::format("ValueError: Weight input_size_per_partition = {} is not divisible by weight "
                   "quantization block_k = {}.",
                   kSizePlaceholder, block_k)},
      {ShapeDim::kOutputLegs, block_n, linear, CheckWhen::kSplitOrFused, vllm, exempt,
       fmt::format("ValueError: Weight output_partition_size = {} is not divisible by weight "
                   "quantization block_n = {}.",
                   kSizePlaceholder, block_n)},
  };
  if (vllm) return checks;
  checks.push_back(
      {ShapeDim::kMoeIntermediate, block_n, moe, CheckWhen::kAlways, false, 0,
       fmt::format("ValueError: The output_size of gate's and up's weight = {} is not divisible "
                   "by weight quantization block_n = {}.",
                   kSizePlaceholder, block_n)});
  checks.push_back(
      {ShapeDim::kMoeIntermediate, block_k, moe, CheckWhen::kTpAbove1, false, 0,
       fmt::format("ValueError: The input_size of down's weight = {} is not divisible by weight "
                   "quantization block_k = {}.",
                   kSizePlaceholder, block_k)});
  return checks;
}

// The default action and kind policies of every fp8 plan. The DeepSeek / Qwen MoE gate is built
// without a quantization config (vLLM, SGLang), or is not an nn.Linear (transformers'
// DeepseekV3TopkRouter); ParallelLMHead is not a LinearBase, so the engines' Fp8Config returns no
// method for it (transformers' head is the importer's to decide).
void SetActions(const QuantScheme& scheme, const Dialect& dialect, QuantPlan* plan) {
  std::string detail = dialect.engine == Engine::kNative
                           ? "FP8Linear (FP8Experts for experts)"
                           : "Fp8LinearMethod (Fp8MoEMethod for experts)";
  plan->default_action = {ActionKind::kQuantize, scheme, "fp8 applies to every linear layer",
                          detail};
  plan->linear = KindPolicy::kRules;
  plan->moe = KindPolicy::kRules;
  plan->router = KindPolicy::kUnquantized;
  plan->embedding = KindPolicy::kUnquantized;
  plan->lm_head = KindPolicy::kUnquantized;
}

// The engines' Fp8KVCacheMethod on attention layers; vLLM 0.33.0 Fp8Config.get_quant_method tests
// `Attention`, so MLAAttention gets None.
void SetEngineAttention(const Dialect& dialect, QuantPlan* plan) {
  plan->attention = EngineAttentionAction(dialect);
  if (Since(dialect, DialectId::kVllm033)) {
    plan->attention_classes = VllmAttentionClasses();
  }
}

// `--quantization fp8` without a description (the file comment says what each engine builds).
QuantPlan PlanQuantizedAtLoad(const Dialect& dialect) {
  const OnlineFp8 online = RowFor(dialect, kDialects).online;
  Fp8Fields fields;
  if (online == OnlineFp8::kBlock) fields.block = std::array<int64_t, 2>{128, 128};
  QuantScheme scheme = Fp8Scheme(fields);
  if (online == OnlineFp8::kPerChannel) scheme.weight.granularity = Granularity::kPerChannel;
  scheme.weight.load.layout = SourceLayout::kDense;
  scheme.online = true;
  QuantPlan plan;
  plan.quant_method = std::string(kMethod);
  plan.dialect = dialect;
  SetActions(scheme, dialect, &plan);
  switch (dialect.engine) {
    case Engine::kNative:
      plan.notes.push_back(
          "--quantization fp8 without a description: transformers' FineGrainedFP8Config() "
          "quantizes the weights at load in 128 x 128 blocks (its default weight_block_size) and "
          "keeps lm_head unquantized by default");
      break;
    case Engine::kVllm:
      if (Since(dialect, DialectId::kVllm033)) {
        // OnlineQuantizationConfig (fp8_per_tensor) attaches nothing to attention layers.
        plan.notes.push_back(
            "--quantization fp8 without a description: vLLM warns \"--quantization fp8 is "
            "deprecated for online quantization; use --quantization fp8_per_tensor instead.\" and "
            "builds fp8_per_tensor, which quantizes each layer's weights at load per tensor");
        break;
      }
      SetEngineAttention(dialect, &plan);
      plan.notes.push_back(
          "--quantization fp8 without a description: vLLM's Fp8Config() is not fp8-serialized, "
          "so Fp8LinearMethod quantizes each layer's weights at load per tensor");
      break;
    case Engine::kSglang:
      SetEngineAttention(dialect, &plan);
      plan.notes.push_back(
          "--quantization fp8 without a description: SGLang's Fp8Config() is not "
          "fp8-serialized, so Fp8LinearMethod quantizes each layer's weights at load per output "
          "channel (the CUTLASS path; per tensor on devices without CUTLASS fp8)");
      break;
  }
  return plan;
}

class Fp8ImporterImpl : public Importer {
 public:
  std::string_view name() const override { return kMethod; }

  bool Detect(const ConfigSources& sources) const override {
    // Both engines' Fp8Config reads no standalone file (get_config_filenames() == []).
    std::optional<Located> embedded = sources.Embedded();
    if (!embedded) return false;
    const Json* method = embedded->value->FindNonNull("quant_method");
    // The engines lower-case quant_method before choosing the config class.
    return method != nullptr && method->is_string() && ToLower(method->string_value()) == kMethod;
  }

  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override {
    QP_ASSIGN_OR_RETURN(Located embedded, EmbeddedObject(sources, "fp8"));
    return Fp8DescribedPlan(embedded, dialect, {});
  }

  Result<std::optional<QuantPlan>> PlanWithoutDescription(const ConfigSources&,
                                                          const Dialect& dialect) const override {
    return std::optional<QuantPlan>(PlanQuantizedAtLoad(dialect));
  }
};

}  // namespace

Result<QuantPlan> Fp8DescribedPlan(const Located& embedded, const Dialect& dialect,
                                   const Fp8Reading& reading) {
  const std::string& file = embedded.where.file;
  const Json& q = *embedded.value;
  QuantPlan plan;
  plan.quant_method = std::string(reading.method);
  plan.dialect = dialect;
  plan.sources.push_back(embedded.where);

  Fp8Fields fields;
  if (reading.dynamic_activations_only) {
    const Json* act = q.FindNonNull("activation_scheme");
    if (act != nullptr && !(act->is_string() && act->string_value() == "dynamic")) {
      plan.notes.push_back(fmt::format(
          "{}: not read: {} activations are always dynamic (its from_config passes \"dynamic\")",
          Where(file, *act), reading.method));
    }
  } else {
    QP_RETURN_IF_ERROR(ReadActivationScheme(q, file, dialect, &fields, &plan.notes));
  }
  QP_RETURN_IF_ERROR(ReadBlockSize(q, file, dialect, &fields, &plan.notes));
  if (!fields.block && q.Find("weight_block_size") == nullptr) fields.block = reading.default_block;
  QuantScheme scheme = Fp8Scheme(fields);

  QP_ASSIGN_OR_RETURN(ChosenList chosen, ChooseSkipList(q, file, dialect, &plan.notes));
  QP_ASSIGN_OR_RETURN(RuleGroup exclude, ExcludeGroup(chosen, dialect));
  plan.groups.push_back(std::move(exclude));

  SetActions(scheme, dialect, &plan);
  if (dialect.engine == Engine::kNative) {
    // The quantizer adds its default skips (output embedding, tied weights, last module) only
    // when the config gives no list; a given list, even an empty one, replaces them and the
    // lm_head nn.Linear is converted unless an entry reaches it.
    plan.lm_head = chosen.present ? KindPolicy::kRules : KindPolicy::kUnquantized;
    plan.notes.push_back(
        chosen.present
            ? fmt::format("{}#{}/{}: replaces transformers' default skips, so lm_head is "
                          "converted to fp8 unless an entry reaches it",
                          file, q.pointer(), chosen.list.key)
            : fmt::format("{}: no modules_to_not_convert, so transformers keeps lm_head "
                          "unquantized by default",
                          Where(file, q)));
  } else {
    SetEngineAttention(dialect, &plan);
  }
  if (fields.block && dialect.is_release())
    plan.shape_checks = BlockShapeChecks(*fields.block, dialect);
  AddFieldNotes(q, file, reading.more_keys, &plan.notes);
  return plan;
}

const Importer* Fp8Importer() {
  static const Fp8ImporterImpl importer;
  return &importer;
}

}  // namespace quantpath
