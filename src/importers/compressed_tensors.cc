// The compressed-tensors importer: `quant_method: "compressed-tensors"` descriptions (config.json
// quantization_config / compression_config, or a bare library dict with config_groups).
//
// Goals: every QuantizationArgs strategy and format of the library, config groups with exact,
// "re:" and class-name targets, `ignore` checked first, kv_cache_scheme, and the dialect's matching
// semantics (the table in compressed_tensors_targets.cc). Fields that change no decision
// (quantization_status, global_compression_ratio, version, observers, sparsity_config,
// transform_config) are read and shown in plan.notes. Non-goals: sparse compression and online
// transforms (recognised, reported as not supported), the engines' device-dependent scheme classes.
// Documentation followed: compressed-tensors@ac8e2ba8 quantization/quant_config.py,
// lifecycle/apply.py; vLLM CompressedTensorsConfig (from_config, get_quant_method,
// get_scheme_dict, CompressedTensorsKVCacheMethod.validate_kv_cache_scheme) @e9476487; the
// recorded cases in tests/data/oracle/cases/{vllm,sglang}-compressed-tensors.json and
// releases/*/cases/ (vLLM 0.33.0 and 0.34.0, SGLang 0.5.23).
#include <algorithm>
#include <utility>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/compressed_tensors.h"
#include "src/importers/modelopt.h"  // Truthy: Python truthiness of a JSON value

namespace quantpath {
namespace {

using ct::Args;
using ct::CtDialect;
using ct::Group;

constexpr std::string_view kMethod = "compressed-tensors";

// QuantizationConfig fields quantpath interprets or shows; others are listed in a note.
constexpr std::string_view kConfigKeys[] = {"quant_method",
                                            "config_groups",
                                            "ignore",
                                            "format",
                                            "kv_cache_scheme",
                                            "quantization_status",
                                            "global_compression_ratio",
                                            "sparsity_config",
                                            "transform_config",
                                            "version",
                                            "run_compressed",
                                            "total_num_heads",
                                            "total_num_kv_heads"};

// The layout of a group's weights: its own format, else the global one; "mixed-precision" (or no
// format at all) leaves it to the weights, as llm-compressor chose it.
Result<SourceLayout> GroupLayout(const Group& g, const std::optional<std::string>& global,
                                 const Dialect& dialect, std::vector<std::string>* notes) {
  std::string format = g.format ? *g.format : global.value_or("");
  if ((format.empty() || format == "mixed-precision") && g.weights) {
    std::string_view inferred = ct::InferFormat(*g.weights);
    notes->push_back(
        fmt::format("{}: config group {} names no format of its own{}; its weights "
                    "read as {}",
                    g.where.ToString(), g.name,
                    format.empty() ? "" : " under the global \"mixed-precision\"", inferred));
    format = inferred;
  }
  if (format.empty()) return SourceLayout::kDense;
  const ct::FormatInfo* info = ct::FindFormat(format);
  if (info == nullptr) {
    if (dialect.engine == Engine::kNative) {
      return InvalidInput(fmt::format("{}: unknown compression format \"{}\" in config group {}",
                                      g.where.ToString(), format, g.name));
    }
    notes->push_back(fmt::format("config group {}: unknown format \"{}\"", g.name, format));
    return SourceLayout::kDense;
  }
  if (!info->modelled) {
    notes->push_back(
        fmt::format("config group {}: format {} is recognised, but quantpath has no "
                    "source layout for it yet; loading such a checkpoint is not "
                    "supported",
                    g.name, format));
  }
  return info->layout;
}

Result<Action> GroupAction(const Group& g, SourceLayout layout) {
  Action a{ActionKind::kQuantize, QuantScheme{}, fmt::format("config_groups.{}", g.name), g.name};
  if (g.weights) {
    QP_ASSIGN_OR_RETURN(a.scheme->weight, ct::ToTensorQuant(*g.weights, layout));
  }
  if (g.input) {
    QP_ASSIGN_OR_RETURN(TensorQuant t, ct::ToTensorQuant(*g.input, SourceLayout::kDense));
    a.scheme->input = t;
  }
  // Output activations change no decision, but arguments quantpath cannot describe still fail the
  // group, as the weights' and the inputs' do.
  if (g.output) QP_RETURN_IF_ERROR(ct::ToTensorQuant(*g.output, SourceLayout::kDense).status());
  if (!g.weights && !g.input && !g.output) {
    a = {ActionKind::kSkip, std::nullopt, fmt::format("config_groups.{} quantizes nothing", g.name),
         g.name};
  } else if (!g.weights) {
    a.message = a.message.str() + " (activations only: the weights stay in the checkpoint dtype)";
  }
  return a;
}

void NoteArgs(const Group& g, std::vector<std::string>* notes) {
  if (g.preset) {
    notes->push_back(fmt::format("{}: config group {} is the library's preset scheme of that name",
                                 g.where.ToString(), g.name));
  }
  const std::pair<const char*, const std::optional<Args>*> parts[] = {
      {"weights", &g.weights}, {"input_activations", &g.input}, {"output_activations", &g.output}};
  for (const auto& [key, args] : parts) {
    if (!*args) continue;
    std::string extras = ct::ArgsExtras(**args);
    if (!extras.empty()) notes->push_back(fmt::format("{} {}: {}", (*args)->where, key, extras));
  }
}

// vLLM CompressedTensorsKVCacheMethod.validate_kv_cache_scheme, on the raw dict (its own checks,
// including the `and` that lets a non-float 8-bit scheme through). nullopt when it passes.
std::optional<std::string> EngineKvError(const Json& kv) {
  auto shown = [&](std::string_view key) -> std::string {
    const Json* v = kv.FindNonNull(key);
    if (v == nullptr) return "None";
    if (v->is_string()) return v->string_value();
    if (v->is_bool()) return v->bool_value() ? "True" : "False";
    return ToJson(*v);
  };
  const Json* type = kv.FindNonNull("type");
  const Json* bits = kv.FindNonNull("num_bits");
  bool is_float = type && type->is_string() && type->string_value() == "float";
  bool is_8 = bits && bits->is_int() && bits->int_value() == 8;
  if (!is_float && !is_8) {
    return fmt::format(
        "NotImplementedError: Currently supported kv cache quantization is "
        "num_bits=8, type=float, however received num_bits={}, type={}",
        shown("num_bits"), shown("type"));
  }
  const Json* strategy = kv.FindNonNull("strategy");
  std::string s = strategy && strategy->is_string() ? strategy->string_value() : "";
  if (!ct::ParseStrategyExact(s)) {
    return fmt::format("ValueError: {} is not a valid QuantizationStrategy",
                       strategy && strategy->is_string() ? "'" + s + "'" : shown("strategy"));
  }
  if (s != "tensor" && s != "attn_head") {
    return fmt::format(
        "NotImplementedError: Invalid strategy for compressed-tensors KV cache. "
        "Expected strategies: (<QuantizationStrategy.TENSOR: 'tensor'>, "
        "<QuantizationStrategy.ATTN_HEAD: 'attn_head'>), found strategy: "
        "QuantizationStrategy.{}",
        ct::ToUpperAscii(s));
  }
  const Json* sym = kv.FindNonNull("symmetric");
  if (sym == nullptr || !sym->is_bool() || !sym->bool_value()) {
    return fmt::format(
        "NotImplementedError: Only support symmetric scaling factor for "
        "compressed-tensors KV cache. However found symmetric: {}",
        shown("symmetric"));
  }
  return std::nullopt;
}

Result<std::optional<QuantScheme>> KvScheme(const Json& kv, std::string_view file) {
  QP_ASSIGN_OR_RETURN(Args args, ct::ParseArgs(kv, file));
  QP_ASSIGN_OR_RETURN(TensorQuant t, ct::ToTensorQuant(args, SourceLayout::kDense));
  QuantScheme s;
  s.weight = t;
  return std::optional<QuantScheme>(s);
}

// SGLang 0.5.23 CompressedTensorsKVCacheMethod.is_supported_scheme, on the raw dict.
bool SglangSupportedKv(const Json& kv) {
  const Json* type = kv.Find("type");
  const Json* bits = kv.Find("num_bits");
  const Json* strategy = kv.Find("strategy");
  const Json* sym = kv.Find("symmetric");
  return type && type->is_string() && type->string_value() == "float" && bits &&
         bits->is_number() && bits->number_value() == 8 && strategy && strategy->is_string() &&
         strategy->string_value() == "tensor" && (sym == nullptr || modelopt::Truthy(sym)) &&
         !modelopt::Truthy(kv.Find("dynamic"));
}

Status ReadSglangKvCache(const Json* kv, std::string_view file, const CtDialect& d,
                         QuantPlan* plan) {
  Action none{ActionKind::kSkip, std::nullopt,
              "no kv_cache_scheme: SGLang attaches no KV-cache method to RadixAttention",
              "get_quant_method returned None"};
  if (kv == nullptr) {
    plan->attention = none;
    return {};
  }
  if (!kv->is_object()) {
    return InvalidInput(fmt::format("{}: kv_cache_scheme must be an object, found {}",
                                    Where(file, *kv), kv->TypeName()));
  }
  if (!SglangSupportedKv(*kv)) {
    none.message = fmt::format(
        "{}: SGLang ignores this kv_cache_scheme with a warning and attaches no KV-cache method "
        "(only static symmetric per-tensor FP8 scales are supported)",
        Where(file, *kv));
    plan->notes.push_back(none.message);
    plan->attention = none;
    return {};
  }
  QP_ASSIGN_OR_RETURN(plan->kv_cache, KvScheme(*kv, file));
  plan->attention = Action{ActionKind::kQuantize, plan->kv_cache,
                           fmt::format("kv_cache_scheme {}", plan->kv_cache->CanonicalName()),
                           std::string(d.attention_detail)};
  return {};
}

Status ReadKvCache(const Json& q, std::string_view file, const CtDialect& d, QuantPlan* plan) {
  const Json* kv = q.FindNonNull("kv_cache_scheme");
  if (d.kv == ct::KvPolicy::kSchemeOnly) {
    if (kv != nullptr) {
      QP_ASSIGN_OR_RETURN(plan->kv_cache, KvScheme(*kv, file));
    }
    return {};
  }
  if (d.attention_classes != nullptr) plan->attention_classes = *d.attention_classes;
  if (d.kv == ct::KvPolicy::kEngineMethodWhenSupported) return ReadSglangKvCache(kv, file, d, plan);
  if (d.engine == Engine::kSglang) {
    plan->notes.push_back(
        "SGLang's compressed-tensors attention handling is not in the recorded cases; quantpath "
        "assumes vLLM's CompressedTensorsKVCacheMethod, from which SGLang's is adapted");
  }
  Action attach{ActionKind::kQuantize, std::nullopt, "", std::string(d.attention_detail)};
  if (kv == nullptr) {
    attach.message = fmt::format(
        "{} attaches {} to every attention layer without a kv_cache_scheme (k/v scales default "
        "to 1.0; the cache is fp8 only with --kv-cache-dtype fp8)",
        d.engine == Engine::kVllm ? "vLLM" : "SGLang", d.attention_detail);
    plan->attention = attach;
    return {};
  }
  if (!kv->is_object()) {
    return InvalidInput(fmt::format("{}: kv_cache_scheme must be an object, found {}",
                                    Where(file, *kv), kv->TypeName()));
  }
  if (std::optional<std::string> error = EngineKvError(*kv)) {
    plan->attention = Action{ActionKind::kFail, std::nullopt, *error, ""};
    return {};
  }
  QP_ASSIGN_OR_RETURN(plan->kv_cache, KvScheme(*kv, file));
  attach.scheme = plan->kv_cache;
  attach.message = fmt::format("kv_cache_scheme {}", plan->kv_cache->CanonicalName());
  plan->attention = attach;
  return {};
}

// sparsity_config and transform_config: recognised, shown, not supported.
Status ReadUnsupportedSections(const Json& q, std::string_view file, const CtDialect& d,
                               std::vector<std::string>* notes) {
  if (const Json* sparsity = q.FindNonNull("sparsity_config");
      sparsity && sparsity->is_object() && !sparsity->members().empty()) {
    const Json* targets = sparsity->FindNonNull("targets");
    bool has_targets = targets && targets->is_array() && !targets->items().empty();
    if (d.sparsity_fails && has_targets) {
      return InvalidInput(fmt::format(
          "{}: DeprecationWarning: Sparsity support has been removed from compressed-tensors. "
          "Please use a model without sparsity configuration.",
          Where(file, *sparsity)));
    }
    notes->push_back(
        fmt::format("{}: sparsity_config {} is recognised; quantpath does not support "
                    "sparse compression, so decisions describe quantization only",
                    Where(file, *sparsity), ToJson(*sparsity)));
  }
  if (const Json* transform = q.FindNonNull("transform_config");
      transform && transform->is_object() && !transform->members().empty()) {
    notes->push_back(
        fmt::format("{}: transform_config is recognised; the online transforms "
                    "(rotations) it describes are not supported by quantpath",
                    Where(file, *transform)));
  }
  return {};
}

void NoteFields(const Json& q, std::string_view file, std::vector<std::string>* notes) {
  for (std::string_view key : {"quantization_status", "global_compression_ratio", "version"}) {
    if (const Json* v = q.FindNonNull(key)) {
      notes->push_back(fmt::format("{}: {} {}", Where(file, *v), key,
                                   v->is_string() ? v->string_value() : ToJson(*v)));
    }
  }
  std::vector<std::string> unknown;
  for (const Json::Member& m : q.members()) {
    if (std::find(std::begin(kConfigKeys), std::end(kConfigKeys), m.first) ==
        std::end(kConfigKeys)) {
      unknown.push_back(m.first);
    }
  }
  if (!unknown.empty()) {
    notes->push_back(
        fmt::format("{}: fields the compressed-tensors importer does not interpret: "
                    "{}",
                    Where(file, q), Join(unknown, ", ")));
  }
}

// vLLM from_config keeps only groups that are not attention quantization on its own.
bool IsAttentionOnlyGroup(const Json& value) {
  const Json* targets = value.is_object() ? value.Find("targets") : nullptr;
  return targets && targets->is_array() && targets->items().size() == 1 &&
         targets->items()[0].is_string() &&
         targets->items()[0].string_value().ends_with("Attention");
}

Result<std::vector<Group>> ReadGroups(const Json& q, std::string_view file, const CtDialect& d,
                                      std::vector<std::string>* notes) {
  std::vector<Group> groups;
  const Json* config_groups = q.FindNonNull("config_groups");
  if (config_groups == nullptr) {
    notes->push_back(fmt::format("{}: no config_groups: nothing is quantized", Where(file, q)));
    return groups;
  }
  if (!config_groups->is_object()) {
    return InvalidInput(fmt::format("{}: config_groups must be an object, found {}",
                                    Where(file, *config_groups), config_groups->TypeName()));
  }
  for (const auto& [name, value] : config_groups->members()) {
    if (d.drop_attention_groups && IsAttentionOnlyGroup(value)) {
      notes->push_back(
          fmt::format("{}: config group {} targets only attention modules; vLLM drops "
                      "it (attention quantization is coupled with the KV cache)",
                      Where(file, value), name));
      continue;
    }
    QP_ASSIGN_OR_RETURN(Group g, ct::ParseGroup(name, value, file, d.reading));
    groups.push_back(std::move(g));
  }
  return groups;
}

// target_scheme_map: a dict, so a target named again keeps its first position and takes the later
// group; the engines add their experts class (d.moe_alias) with the "Linear" group.
std::vector<ct::TargetRef> TargetMap(const std::vector<Group>& groups, const CtDialect& d) {
  std::vector<ct::TargetRef> map;
  for (size_t i = 0; i < groups.size(); ++i) {
    for (const ListEntry& t : groups[i].targets) {
      auto it = std::find_if(map.begin(), map.end(),
                             [&](const ct::TargetRef& r) { return r.target == t.value; });
      if (it != map.end()) {
        it->group = i;
      } else {
        map.push_back({t.value, i, t.where, ""});
      }
    }
  }
  if (!d.moe_alias.empty()) {
    auto find = [&](std::string_view name) {
      return std::find_if(map.begin(), map.end(),
                          [&](const ct::TargetRef& r) { return r.target == name; });
    };
    auto linear = find("Linear");
    if (linear != map.end() && find(d.moe_alias) == map.end()) {
      ct::TargetRef alias = *linear;
      alias.target = std::string(d.moe_alias);
      // The recorded details name the alias as a target of its own.
      if (d.experts_through_legs) alias.alias_of = "Linear";
      map.push_back(std::move(alias));
    }
  }
  return map;
}

class CompressedTensorsImporterImpl : public Importer {
 public:
  std::string_view name() const override { return kMethod; }
  std::vector<std::string_view> aliases() const override { return {"compressed_tensors"}; }

  bool Detect(const ConfigSources& sources) const override {
    std::optional<Located> embedded = sources.Embedded();
    if (!embedded || !embedded->value->is_object()) return false;
    const Json* method = embedded->value->FindNonNull("quant_method");
    if (method == nullptr) return embedded->value->Find("config_groups") != nullptr;
    return method->is_string() && ToLower(method->string_value()) == kMethod;
  }

  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override {
    QP_ASSIGN_OR_RETURN(Located embedded, EmbeddedObject(sources, "compressed-tensors"));
    const std::string& file = embedded.where.file;
    const Json& q = *embedded.value;
    const CtDialect& d = ct::DialectFor(dialect);
    QuantPlan plan;
    plan.quant_method = std::string(kMethod);
    plan.dialect = dialect;
    plan.sources.push_back(embedded.where);

    if (q.FindNonNull("quant_method") == nullptr) {
      // Detect accepts a bare library dict: the library's QuantizationConfig defaults
      // quant_method to "compressed-tensors", but transformers (and so the engines, which pick
      // their method from quant_method) refuse a quantization_config without one.
      plan.notes.push_back(fmt::format(
          "{}: config_groups without quant_method, read as compressed-tensors (the library's "
          "default quant_method); Hugging Face transformers rejects such a config (\"The model's "
          "quantization config from the arguments has no `quant_method` attribute\"), so the "
          "checkpoint loads only where quant_method is added",
          Where(file, q)));
    }
    QP_ASSIGN_OR_RETURN(std::optional<std::string> format, OptionalString(q, "format", file));
    QP_RETURN_IF_ERROR(ReadUnsupportedSections(q, file, d, &plan.notes));
    QP_ASSIGN_OR_RETURN(std::vector<Group> groups, ReadGroups(q, file, d, &plan.notes));
    std::vector<Action> actions;
    std::vector<Action> experts;
    for (const Group& g : groups) {
      QP_ASSIGN_OR_RETURN(SourceLayout layout, GroupLayout(g, format, dialect, &plan.notes));
      QP_ASSIGN_OR_RETURN(Action a, GroupAction(g, layout));
      experts.push_back(ct::ExpertsAction(g, a, format, d));
      actions.push_back(std::move(a));
      NoteArgs(g, &plan.notes);
    }
    QP_ASSIGN_OR_RETURN(std::optional<std::vector<ListEntry>> listed,
                        ReadEntryList(q, "ignore", file));
    const std::vector<ListEntry> ignore = listed.value_or(std::vector<ListEntry>{});
    QP_ASSIGN_OR_RETURN(plan.groups, ct::IgnoreGroups(ignore, d, &plan.notes));
    QP_ASSIGN_OR_RETURN(
        std::vector<RuleGroup> targets,
        ct::TargetGroups(TargetMap(groups, d), actions, experts, ignore, d, &plan.notes));
    for (RuleGroup& g : targets) plan.groups.push_back(std::move(g));
    QP_RETURN_IF_ERROR(ReadKvCache(q, file, d, &plan));

    // vLLM and SGLang look targets up only when the map is not empty (sparsity-only configs).
    plan.default_action = groups.empty() ? Action{ActionKind::kSkip, std::nullopt,
                                                  "no config group quantizes anything", ""}
                                         : d.no_target;
    plan.linear = KindPolicy::kRules;
    plan.moe = KindPolicy::kRules;
    plan.lm_head = d.lm_head;
    plan.router = d.router;
    plan.embedding = d.embedding;
    if (dialect.engine == Engine::kNative) {
      plan.notes.push_back(
          "compressed-tensors matches the Hugging Face modules: the router gate and the LM head "
          "are torch.nn.Linear there and follow the targets and ignore like any linear layer");
    }
    NoteFields(q, file, &plan.notes);
    return plan;
  }
};

}  // namespace

const Importer* CompressedTensorsImporter() {
  static const CompressedTensorsImporterImpl importer;
  return &importer;
}

}  // namespace quantpath
