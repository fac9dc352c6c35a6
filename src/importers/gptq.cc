// GPTQ: `quantization_config` with quant_method "gptq" in config.json, or a standalone
// quantize_config.json (AutoGPTQ wrote it without quant_method).
//
// Goals: bits, group_size (-1 = per channel), desc_act, sym, checkpoint_format (v1 zero points
// stored minus one, v2 stored as is), lm_head, modules_in_block_to_quantize and `dynamic`
// (gptq_dynamic.cc), each read as the dialect's reference reads it:
//   native — GPTQModel (gptqmodel/quantization/config.py: dynamic_get, QuantizeConfig fields) for
//     `dynamic` and lm_head, matched on Hugging Face module names (fused sites through their
//     legs); optimum's GPTQQuantizer.convert_model for the layers it converts at all — only those
//     under block_name_to_quantize, else under the model's own decoder block list
//     (`get_layers(model, prefix=block_name)`, as AutoGPTQ's layers_block_name and GPTQModel's
//     layers_node) — and for modules_in_block_to_quantize (a layer is kept when its name ends with
//     an entry); transformers' GPTQConfig defaults for absent fields.
//   vllm — GPTQMarlinConfig and vllm/model_executor/layers/quantization/utils/gptq_utils.py as
//     recorded in oracle/ (gptq_marlin@0ede9ef3, gptq_utils@93e5a576; ENGINES.md 3.4).
//   sglang — sglang/srt/layers/quantization/gptq.py and get_linear_quant_method (read at
//     006d0961): no modules_in_block_to_quantize, Marlin MoE without `dynamic`.
//   vllm@0.33 — auto_gptq.py AutoGPTQConfig (gptq, gptq_marlin, auto_gptq and marlin resolve to
//     it) with utils/gptq_utils.py: Marlin types only, desc_act=True rejected while reading the
//     config (normalize_and_validate_gptq_desc_act, also for `dynamic` overrides), an empty
//     modules_in_block_to_quantize (after the checkpoint fallback) quantizes every layer, a
//     skipped LM head gets UnquantizedEmbeddingMethod, `dynamic` also decides RoutedExperts.
//   sglang@0.5.23 — gptq/gptq.py: SGLang on CUDA registers no plain "gptq" method, so only a
//     Marlin-compatible checkpoint (is_gptq_marlin_compatible: quant_method "gptq", bits,
//     group_size, sym and desc_act present, a Marlin type and group size, not marlin-format) loads,
//     as gptq_marlin; anything else fails with "Unknown quantization method: gptq". Not
//     reproduced: `--quantization gptq` on a compatible checkpoint fails the same way in SGLang,
//     but the importer is not told the user's method name.
// Quantization-time fields (damp_percent, true_sequential, dataset, static_groups, …) are noted.
// Non-goals: tensor layouts (LoadFacts names them for the loader) and kernels.
#include "src/importers/gptq.h"

#include <algorithm>
#include <set>
#include <type_traits>
#include <utility>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/common.h"
#include "src/importers/gptq_engines.h"

namespace quantpath {
namespace {

constexpr std::string_view kStandaloneFiles[] = {"quantize_config.json"};

// Fields whose difference between an embedded block and a standalone copy changes decisions.
constexpr DecisionField kDecisionFields[] = {{"bits", std::nullopt},
                                             {"group_size", std::nullopt},
                                             {"sym", "true"},
                                             {"desc_act", "false"},
                                             {"dynamic", "{}"},
                                             {"lm_head", "false"},
                                             {"modules_in_block_to_quantize", "null"},
                                             {"checkpoint_format", "\"gptq\""}};

// Fields this importer reads; every other field is noted as quantization-time metadata.
constexpr std::string_view kReadKeys[] = {"quant_method",
                                          "bits",
                                          "group_size",
                                          "desc_act",
                                          "sym",
                                          "lm_head",
                                          "dynamic",
                                          "checkpoint_format",
                                          "is_marlin_format",
                                          "modules_in_block_to_quantize",
                                          "block_name_to_quantize"};

// quant_method "gptq", or a standalone quantize_config.json without quant_method that is not an
// AutoAWQ file written under the same name (those carry zero_point / w_bit).
bool AcceptsGptq(const Json& config, bool standalone) {
  std::optional<std::string> method = QuantMethod(config);
  if (method) return *method == "gptq";
  return standalone && config.FindNonNull("quant_method") == nullptr &&
         config.Find("zero_point") == nullptr && config.Find("w_bit") == nullptr;
}

// An optional field with the dialect's requirement: the engines raise get_from_keys' text.
template <typename T>
Result<T> ReadField(const ConfigCopy& copy, std::string_view key, bool required, T fallback,
                    std::vector<std::string>* notes) {
  std::optional<T> v;
  if constexpr (std::is_same_v<T, bool>) {
    QP_ASSIGN_OR_RETURN(v, OptionalBool(*copy.json, key, copy.file()));
  } else {
    QP_ASSIGN_OR_RETURN(v, OptionalInt(*copy.json, key, copy.file()));
  }
  if (v) return *v;
  if (required) {
    return InvalidInput(
        fmt::format("{}: ValueError: Cannot find any of ['{}'] in the model's quantization config.",
                    copy.where.ToString(), key));
  }
  notes->push_back(fmt::format("{}: no \"{}\"; assumed {} (transformers' GPTQConfig default)",
                               copy.where.ToString(), key, fallback));
  return fallback;
}

// checkpoint_format (GPTQModel) or the older is_marlin_format flag: how zero points are stored.
Result<LoadFacts> ReadCheckpointFormat(const ConfigCopy& copy, const Dialect& dialect,
                                       std::vector<std::string>* notes) {
  QP_ASSIGN_OR_RETURN(std::optional<std::string> format,
                      OptionalString(*copy.json, "checkpoint_format", copy.file()));
  QP_ASSIGN_OR_RETURN(std::optional<bool> marlin,
                      OptionalBool(*copy.json, "is_marlin_format", copy.file()));
  if (marlin.value_or(false)) format = "marlin";
  LoadFacts load;
  if (!format || *format == "gptq") {
    load.layout = SourceLayout::kGptqV1;
    load.zero_point = ZeroPointConvention::kStoredMinusOne;
  } else if (*format == "gptq_v2") {
    load.layout = SourceLayout::kGptqV2;
    load.zero_point = ZeroPointConvention::kStored;
  } else {
    return Unsupported(fmt::format(
        "{}: GPTQ checkpoint_format \"{}\" (weights stored pre-packed for that kernel) is "
        "recognised but not supported; quantpath loads the \"gptq\" and \"gptq_v2\" layouts",
        copy.where.ToString(), *format));
  }
  if (format && dialect.engine == Engine::kVllm) {
    notes->push_back(
        fmt::format("checkpoint_format \"{}\" sets how zero points are loaded; the recorded vLLM "
                    "GPTQMarlinConfig does not read it",
                    *format));
  }
  return load;
}

// modules_in_block_to_quantize as a flat list: a list of strings or a list of lists of strings.
Result<std::vector<std::string>> FlattenBlockList(const ConfigCopy& copy, const Json& value) {
  if (!value.is_array()) {
    return InvalidInput(fmt::format("{}: expected a list (of lists) of module names, found {}",
                                    Where(copy.file(), value), value.TypeName()));
  }
  std::vector<std::string> out;
  for (const Json& item : value.items()) {
    if (item.is_string()) {
      out.push_back(item.string_value());
      continue;
    }
    if (!item.is_array()) {
      return InvalidInput(fmt::format("{}: expected a module name or a list of them, found {}",
                                      Where(copy.file(), item), item.TypeName()));
    }
    for (const Json& name : item.items()) {
      if (!name.is_string()) {
        return InvalidInput(fmt::format("{}: expected a module name (string), found {}",
                                        Where(copy.file(), name), name.TypeName()));
      }
      out.push_back(name.string_value());
    }
  }
  return out;
}

// The tensors GPTQ exporters (AutoGPTQ, GPTQModel, optimum) store in int32 under their standard
// names; `scales` and `bias` stay in 16 bits.
constexpr std::string_view kGptqInt32Tensors[] = {"qweight", "qzeros", "g_idx"};

// The list vLLM's maybe_update_config derives when the config has none: the parent module of every
// checkpoint tensor whose dtype is not f16/bf16/f32. `modules` is nullopt when it cannot be
// derived from module names (see `blocks_only`).
struct DerivedBlockList {
  std::optional<std::vector<std::string>> modules;
  // No checkpoint in the folder: assume the exporters' standard layout, in which exactly the
  // linear layers of the decoder blocks (and the LM head when lm_head is true) hold int32 qweights.
  bool blocks_only = false;
  std::string note;
};

std::vector<std::string> ParentModules(const std::vector<std::string>& tensors) {
  std::set<std::string> parents;
  for (const std::string& name : tensors) parents.insert(std::string(ParentPath(name)));
  return {parents.begin(), parents.end()};
}

DerivedBlockList DeriveBlockList(const ConfigSources& sources, const ConfigCopy& copy,
                                 bool empty_quantizes_all) {
  const std::string_view empty_means = empty_quantizes_all
                                           ? "with an empty list it quantizes every layer"
                                           : "with an empty list it quantizes no linear layer";
  const CheckpointListing& checkpoint = sources.checkpoint();
  const bool folder_facts = checkpoint.origin != CheckpointOrigin::kUnknown;
  // A folder whose description is a standalone file alone keeps the earlier rule (no facts) for
  // now: the engines read such folders only when told the method with --quantization.
  const bool standalone_folder = folder_facts && copy.file() != ConfigSources::kConfigFile;
  DerivedBlockList out;
  if (const auto& params = sources.checkpoint_quantized_params(); params && !standalone_folder) {
    out.modules = ParentModules(*params);
    out.note = fmt::format(
        "modules_in_block_to_quantize: absent or empty; derived as vLLM does from the dtypes in {} "
        "(the parent modules of the tensors not stored in f16/bf16/f32): {} modules",
        folder_facts ? checkpoint.source : "the checkpoint", out.modules->size());
    return out;
  }
  if (!standalone_folder && checkpoint.origin == CheckpointOrigin::kIndex) {
    std::vector<std::string> int32_tensors;
    for (const CheckpointTensor& t : checkpoint.tensors) {
      const std::string_view last = LastSegment(t.name);
      if (std::find(std::begin(kGptqInt32Tensors), std::end(kGptqInt32Tensors), last) !=
          std::end(kGptqInt32Tensors)) {
        int32_tensors.push_back(t.name);
      }
    }
    out.modules = ParentModules(int32_tensors);
    out.note = fmt::format(
        "modules_in_block_to_quantize: absent or empty, and the shards {} lists are not in the "
        "folder; assumed the dtypes GPTQ exporters store under the standard names (qweight, "
        "qzeros, g_idx in int32): {} modules",
        checkpoint.source, out.modules->size());
    return out;
  }
  if (!standalone_folder && checkpoint.origin == CheckpointOrigin::kAbsent) {
    out.blocks_only = true;
    out.note =
        "modules_in_block_to_quantize: absent or empty, and the folder has no safetensors files "
        "or index to derive it from as vLLM does; assumed the GPTQ exporters' standard layout (an "
        "int32 qweight for every linear layer of the decoder blocks, and for the LM head when "
        "lm_head is true)";
    return out;
  }
  out.modules = std::vector<std::string>();
  out.note = fmt::format(
      "modules_in_block_to_quantize: absent and the checkpoint's tensor dtypes are unknown; vLLM "
      "derives the list from them, and {}",
      empty_means);
  return out;
}

// The group that leaves layers outside modules_in_block_to_quantize unquantized; a list derived
// from a config-only folder sets plan->blocks_only instead.
Result<std::optional<RuleGroup>> BuildBlockListGroup(const ConfigSources& sources,
                                                     const ConfigCopy& copy, const GptqDialect& d,
                                                     const Dialect& dialect, const Action& skip,
                                                     QuantPlan* plan) {
  std::vector<std::string>* notes = &plan->notes;
  const Json* value = copy.json->FindNonNull("modules_in_block_to_quantize");
  if (d.block_list == GptqBlockList::kIgnored) {
    if (value != nullptr) {
      notes->push_back(fmt::format("{}: {} does not read modules_in_block_to_quantize",
                                   Where(copy.file(), *value), dialect.name));
    }
    return std::optional<RuleGroup>();
  }
  std::vector<std::string> entries;
  Provenance where = copy.where;
  if (value != nullptr) {
    QP_ASSIGN_OR_RETURN(entries, FlattenBlockList(copy, *value));
    where = ProvenanceOf(copy.file(), *value);
  }
  // vLLM treats an absent or empty list alike and derives it from the checkpoint.
  if (d.block_list_from_checkpoint && entries.empty()) {
    DerivedBlockList derived = DeriveBlockList(sources, copy, d.empty_block_list_quantizes_all);
    notes->push_back(std::move(derived.note));
    if (derived.blocks_only) {
      plan->blocks_only = "";
      return std::optional<RuleGroup>();
    }
    entries = std::move(*derived.modules);
    where = {"checkpoint", ""};
    if (d.empty_block_list_quantizes_all && entries.empty()) return std::optional<RuleGroup>();
  } else if (value == nullptr || (d.empty_block_list_quantizes_all && entries.empty())) {
    return std::optional<RuleGroup>();
  }
  RuleGroup group;
  group.name = "modules_in_block_to_quantize";
  group.fused = FusedPolicy::kLegsMustAgree;
  bool suffix = d.block_list == GptqBlockList::kSuffix;
  group.disagree_message =
      suffix ? "the shards of a fused layer are not all listed in modules_in_block_to_quantize"
             : "ValueError: " + std::string(kShardsDisagreeText);
  Action action = skip;
  action.message = suffix ? "no entry of modules_in_block_to_quantize ends the module name"
                          : "no entry of modules_in_block_to_quantize is part of the module name";
  QP_ASSIGN_OR_RETURN(Rule rule, MakeNoneOfRule(entries, ".*", suffix ? "\\Z" : "",
                                                d.block_list_kinds, std::move(action), where));
  group.rules.push_back(std::move(rule));
  return std::optional<RuleGroup>(std::move(group));
}

// The action for layers that end up quantized with `s`: its message is the scheme name, or the
// engine's error text (kept verbatim: a kFail message is the decision's detail).
Result<Action> QuantizeAction(GptqKernel kernel, const GptqDialect& d, std::string_view method,
                              std::string_view scheme_name, const GptqSettings& s,
                              const LoadFacts& base_load, const Provenance& where) {
  if (std::optional<std::string> error = SchemeError(kernel, s)) {
    if (kernel == GptqKernel::kGptqModel) {
      return InvalidInput(fmt::format("{}: {}", where.ToString(), *error));
    }
    return Action{ActionKind::kFail, std::nullopt, *error, ""};
  }
  if (std::optional<std::string> error = LayerError(kernel, d, s)) {
    return Action{ActionKind::kFail, std::nullopt, *error, ""};
  }
  LoadFacts load = base_load;
  load.act_order = s.desc_act;
  std::optional<QuantScheme> scheme = IntScheme({s.bits, s.group_size, s.sym, load});
  if (!scheme) return InternalError(fmt::format("no integer type of {} bits", s.bits));
  // A platform config reads no sym; its detail names the kernel path (scheme) instead.
  const std::string last = scheme_name.empty() ? fmt::format("sym={}", PyBool(s.sym))
                                               : fmt::format("scheme={}", scheme_name);
  std::string detail = method.empty()
                           ? std::string()
                           : fmt::format("{}[bits={} group_size={} desc_act={} {}]", method, s.bits,
                                         s.group_size, PyBool(s.desc_act), last);
  return Action{ActionKind::kQuantize, scheme, scheme->CanonicalName(), detail};
}

class GptqFormat final : public Importer {
 public:
  std::string_view name() const override { return "gptq"; }
  std::vector<std::string_view> aliases() const override { return {"gptq_marlin", "auto_gptq"}; }
  // An AutoRound export packed as GPTQ says quant_method "gptq": --quantization gptq reads it so.
  std::vector<std::string_view> forced_over() const override { return {"auto-round"}; }
  bool Detect(const ConfigSources& sources) const override {
    Result<std::optional<FamilyConfig>> found =
        FindFamilyConfig(sources, kStandaloneFiles, AcceptsGptq);
    return !found.ok() || found->has_value();
  }
  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override {
    QP_ASSIGN_OR_RETURN(std::optional<FamilyConfig> found,
                        FindFamilyConfig(sources, kStandaloneFiles, AcceptsGptq));
    if (!found) {
      return InvalidInput(
          fmt::format("no GPTQ description in {}", Join(sources.FileNames(), ", ")));
    }
    return BuildGptqPlan(sources, dialect, *found);
  }
};

}  // namespace

Result<QuantPlan> BuildGptqPlan(const ConfigSources& sources, const Dialect& dialect,
                                const FamilyConfig& config) {
  const Platform platform = sources.launch().platform;
  const GptqDialect& d = GptqDialectFor(dialect, platform);
  const ConfigCopy& copy = config.primary;
  QuantPlan plan;
  plan.quant_method = "gptq";
  plan.sources.push_back(copy.where);
  QP_RETURN_IF_ERROR(CompareCopies(config, kDecisionFields, &plan.notes));

  // Method resolution (override_quantization_method) runs before the config is read.
  QP_ASSIGN_OR_RETURN(GptqKernel kernel, ResolveKernel(copy, d, dialect, sources.requested_method(),
                                                       platform, &plan.notes));

  GptqSettings base;
  bool required = d.engine_required_fields;
  QP_ASSIGN_OR_RETURN(base.bits, ReadField<int64_t>(copy, "bits", true, 4, &plan.notes));
  QP_ASSIGN_OR_RETURN(base.group_size,
                      ReadField<int64_t>(copy, "group_size", required, 128, &plan.notes));
  QP_ASSIGN_OR_RETURN(base.desc_act,
                      ReadField<bool>(copy, "desc_act", required, false, &plan.notes));
  QP_ASSIGN_OR_RETURN(std::optional<bool> sym, OptionalBool(*copy.json, "sym", copy.file()));
  QP_ASSIGN_OR_RETURN(std::optional<bool> lm_head,
                      OptionalBool(*copy.json, "lm_head", copy.file()));
  QP_ASSIGN_OR_RETURN(LoadFacts load, ReadCheckpointFormat(copy, dialect, &plan.notes));
  if (d.rejects_desc_act) QP_RETURN_IF_ERROR(CheckDescAct(copy, base));

  if (sym) {
    base.sym = *sym;
  } else if (kernel == GptqKernel::kMarlin) {
    QP_RETURN_IF_ERROR(ReadField<bool>(copy, "sym", true, true, &plan.notes).status());
  } else if (!required) {
    QP_ASSIGN_OR_RETURN(base.sym, ReadField<bool>(copy, "sym", false, true, &plan.notes));
  }  // else: the engines' GPTQ kernel never reads sym (symmetric storage with stored zeros).
  if (std::optional<std::string> error = SchemeError(kernel, base)) {
    const Json* bits = copy.json->Find("bits");
    return InvalidInput(fmt::format("{}: {}", Where(copy.file(), *bits), *error));
  }
  if (kernel == GptqKernel::kMarlin && base.desc_act && base.group_size == -1) {
    // GPTQMarlinConfig: act-order with one group per channel is the same as no act-order.
    base.desc_act = false;
    plan.notes.push_back("desc_act with group_size -1 is read as desc_act false (one group)");
  }

  Action skip{ActionKind::kSkip, std::nullopt, "", std::string(d.unquantized_detail)};
  QP_ASSIGN_OR_RETURN(std::optional<RuleGroup> blocks,
                      BuildBlockListGroup(sources, copy, d, dialect, skip, &plan));
  if (blocks) plan.groups.push_back(std::move(*blocks));
  std::string_view method =
      kernel == GptqKernel::kGptq ? d.names.gptq_linear : d.names.marlin_linear;
  if (d.moe_method_first && d.QuantizesMoe(kernel)) {
    QP_ASSIGN_OR_RETURN(Action experts, QuantizeAction(kernel, d, d.names.moe, d.moe_scheme, base,
                                                       load, copy.where));
    QP_ASSIGN_OR_RETURN(RuleGroup group,
                        KindMethodGroup(KindBit(SiteKind::kMoe), std::move(experts), copy.where));
    plan.groups.push_back(std::move(group));
  }
  const Json* dynamic = copy.json->FindNonNull("dynamic");
  if (dynamic != nullptr && d.platform_config) {
    plan.notes.push_back(fmt::format("{}: {} on {} does not read dynamic",
                                     Where(copy.file(), *dynamic), dialect.name,
                                     PlatformName(platform)));
  } else if (dynamic != nullptr) {
    auto quantize = [&](const GptqSettings& s, const Provenance& where) {
      return QuantizeAction(kernel, d, method, d.linear_scheme, s, load, where);
    };
    QP_ASSIGN_OR_RETURN(RuleGroup group, BuildDynamicGroup(copy, *dynamic, base, d.dynamic,
                                                           quantize, skip, &plan.notes));
    if (!group.rules.empty()) plan.groups.push_back(std::move(group));
  }
  QP_ASSIGN_OR_RETURN(plan.default_action,
                      QuantizeAction(kernel, d, method, d.linear_scheme, base, load, copy.where));
  if (plan.default_action.kind == ActionKind::kQuantize) {
    plan.default_action.message =
        fmt::format("gptq {} applies to every layer no rule names", plan.default_action.message);
  }
  if (d.decoder_blocks_only) {
    QP_ASSIGN_OR_RETURN(std::optional<std::string> block,
                        OptionalString(*copy.json, "block_name_to_quantize", copy.file()));
    plan.blocks_only = block.value_or("");
  } else if (const Json* block = copy.json->FindNonNull("block_name_to_quantize")) {
    plan.notes.push_back(fmt::format("{}: {} does not read block_name_to_quantize",
                                     Where(copy.file(), *block), dialect.name));
  }
  plan.linear = KindPolicy::kRules;
  plan.lm_head =
      lm_head.value_or(false) && !d.platform_config ? KindPolicy::kRules : KindPolicy::kUnquantized;
  plan.moe = d.QuantizesMoe(kernel) ? KindPolicy::kRules : KindPolicy::kUnquantized;
  if (d.platform_config) {
    plan.engine_method = "gptq";
    plan.act_dtypes = {QDType::kFP16, QDType::kBF16};
  }
  NoteOtherFields(copy, kReadKeys, &plan.notes);
  return plan;
}

const Importer* GptqImporter() {
  static const GptqFormat kImporter;
  return &kImporter;
}

}  // namespace quantpath
