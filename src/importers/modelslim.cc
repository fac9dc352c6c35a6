// The ModelSlim importer: Ascend ModelSlim exports described by quant_model_description.json
// ("<module>.weight": "W8A8" | "W8A8_DYNAMIC" | "W4A4_DYNAMIC" | "W4A8_DYNAMIC" | "W8A8_MXFP8" |
// "W4A8_MXFP" | "W4A4_MXFP4" | "FLOAT", plus ignore and packed_modules_mapping).
//
// Goals, per dialect (kDialects below):
//   - native: the description's keys as written, plus the aliases later ModelSlim loaders accept
//     (block_sparse_moe ↔ mlp; with and without "language_model."), every type; a fused site is
//     resolved through its legs, which must agree; an MoE site through its experts' gate/up (w13)
//     and down (w2) keys, w13 agreeing across gate, up and every expert; a layer without a key is
//     an error (ModelSlim lists every weight, FLOAT ones included).
//   - SGLang @b39fe43c (ENGINES.md 3.9): should_ignore_layer with the whole mapping, the section
//     chosen by prefix, a fused name looked up through its first shard in the description's own
//     mapping, is_layer_skipped over every shard (FLOAT agreement), W8A8 / W8A8_DYNAMIC /
//     W4A4_DYNAMIC only, no aliases, "No modelslim compatible scheme was found." otherwise. MoE
//     (not recorded) follows the later get_moe_scheme: expert 0's w13 / w2 keys.
//   - SGLang 0.5.23: modelslim_sglang.cc.
// Non-goals: NPU kernels, the RMSNorm bias patch.
// Documentation followed: SGLang modelslim/modelslim.py (@b39fe43c and later), seed 003; the
// recorded cases in tests/data/oracle/cases/sglang-modelslim.json.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/modelslim.h"

namespace quantpath {
namespace {

using modelslim::AddExact;
using modelslim::Description;
using modelslim::WeightKey;

constexpr SiteKindSet kMoe = KindBit(SiteKind::kMoe);
constexpr SiteKindSet kNotMoe = kAllKinds & ~kMoe;

struct SlimDialect {
  Engine engine;
  bool aliases;      // block_sparse_moe ↔ mlp, language_model. added / removed
  bool own_mapping;  // fused names through the description's mapping (SGLang) or the legs
  bool all_experts;  // MoE types from every expert (native) or expert 0 (SGLang)
  Action missing;    // a linear layer without a key
  std::string_view ignore_detail;
  KindPolicy lm_head;
  KindPolicy router;
};

const SlimDialect kDialects[] = {
    {Engine::kNative,
     true,
     false,
     true,
     {ActionKind::kFail, std::nullopt,
      "quant_model_description.json has no \"{prefix}.weight\" entry (nor an alias; a fused "
      "layer is looked up through its legs {legs})",
      ""},
     "ignored",
     KindPolicy::kRules,
     KindPolicy::kRules},
    {Engine::kSglang,
     false,
     true,
     false,
     {ActionKind::kFail, std::nullopt,
      "NotImplementedError: No modelslim compatible scheme was found.", ""},
     "UnquantizedLinearMethod(ignore)",
     KindPolicy::kUnquantized,
     KindPolicy::kUnquantized},
};

const SlimDialect* DialectFor(Engine engine) {
  for (const SlimDialect& d : kDialects) {
    if (d.engine == engine) return &d;
  }
  return nullptr;
}

// The action of one key for a linear layer.
Action LinearAction(const WeightKey& key, const SlimDialect& d, int64_t group_size) {
  const modelslim::TypeInfo* type = modelslim::FindType(key.type);
  const std::string message = fmt::format("\"{}.weight\": {}", key.path, key.type);
  if (type != nullptr && !type->quantized) {
    return {ActionKind::kSkip, std::nullopt, message,
            d.engine == Engine::kSglang ? "UnquantizedLinearMethod(FLOAT)" : "FLOAT"};
  }
  if (d.engine == Engine::kSglang) {
    // get_linear_scheme @b39fe43c knows only the int8 and int4 schemes.
    if (key.type == "W8A8" || key.type == "W8A8_DYNAMIC") {
      return {ActionKind::kQuantize, modelslim::TypeScheme(*type, group_size), message,
              fmt::format("ModelSlimLinearMethod[ModelSlimW8A8Int8({}) key={}.weight]", key.type,
                          key.path)};
    }
    if (key.type == "W4A4_DYNAMIC") {
      return {ActionKind::kQuantize, modelslim::TypeScheme(*type, group_size), message,
              fmt::format("ModelSlimLinearMethod[ModelSlimW4A4Int4 key={}.weight]", key.path)};
    }
    return d.missing;
  }
  if (type == nullptr) {
    return {ActionKind::kFail, std::nullopt,
            fmt::format("{}: unknown ModelSlim type \"{}\" (known: {})", key.where.ToString(),
                        key.type, modelslim::TypeList()),
            ""};
  }
  return {ActionKind::kQuantize, modelslim::TypeScheme(*type, group_size), message, key.type};
}

// Native aliases of a key path: block_sparse_moe ↔ mlp, and the language_model. wrapper added or
// removed (multimodal checkpoints keep the language model under it).
std::vector<std::string> Aliases(const std::string& path) {
  std::vector<std::string> moe = {path};
  if (path.find(".block_sparse_moe.") != std::string::npos) {
    moe.push_back(modelslim::ReplaceAll(path, ".block_sparse_moe.", ".mlp."));
  } else if (path.find(".mlp.") != std::string::npos) {
    moe.push_back(modelslim::ReplaceAll(path, ".mlp.", ".block_sparse_moe."));
  }
  std::vector<std::string> out;
  for (const std::string& p : moe) {
    out.push_back(p);
    if (p.starts_with("model.language_model.")) {
      out.push_back("model." + p.substr(21));
    } else if (p.starts_with("language_model.")) {
      out.push_back(p.substr(15));
    } else if (p.starts_with("model.")) {
      out.push_back("model.language_model." + p.substr(6));
      out.push_back("language_model." + p);
    }
  }
  return out;
}

// SGLang's fused lookup: for a prefix whose last segment is a fused name of its section, the
// shards (str.replace) must agree on FLOAT, and the first shard's key gives the scheme.
Action SglangFusedAction(const Description& desc, const SlimDialect& d, const std::string& prefix,
                         const std::string& fused, const std::vector<std::string>& shards) {
  std::optional<bool> skipped;
  for (const std::string& shard : shards) {
    const WeightKey* k = desc.Find(modelslim::ReplaceAll(prefix, fused, shard));
    bool is_float = k != nullptr && k->type == "FLOAT";
    if (skipped && *skipped != is_float) {
      return {ActionKind::kFail, std::nullopt,
              "ValueError: Detected some but not all shards of {prefix} are quantized. All shards "
              "of fused layers to have the same precision.",
              ""};
    }
    skipped = is_float;
  }
  const WeightKey* first = desc.Find(modelslim::ReplaceAll(prefix, fused, shards.front()));
  if (first == nullptr) return d.missing;
  return LinearAction(*first, d, desc.group_size);
}

// Exact rules for every layer path the description decides, linear kinds only.
Status TableRules(const Description& desc, const SlimDialect& d, std::vector<Rule>* rules) {
  std::set<std::string> seen;
  for (const WeightKey& key : desc.weights) {
    const std::vector<std::string> paths = d.aliases ? Aliases(key.path) : std::vector{key.path};
    for (const std::string& path : paths) {
      const modelslim::Mapping* section = d.own_mapping ? desc.SectionFor(path) : nullptr;
      auto is_fused = [&](const auto& entry) { return entry.first == LastSegment(path); };
      // A key whose own name is fused in its section is looked up through its shards instead.
      if (section && std::any_of(section->begin(), section->end(), is_fused)) continue;
      QP_RETURN_IF_ERROR(
          AddExact(rules, &seen, path, kNotMoe, LinearAction(key, d, desc.group_size), key.where));
    }
    if (!d.own_mapping) continue;
    for (const auto& [name, section] : desc.mapping) {
      for (const auto& [fused, shards] : section) {
        if (shards.empty() ||
            std::find(shards.begin(), shards.end(), LastSegment(key.path)) == shards.end()) {
          continue;
        }
        std::string prefix = std::string(ParentPath(key.path)) + "." + fused;
        if (desc.SectionFor(prefix) != &section) continue;
        QP_RETURN_IF_ERROR(AddExact(rules, &seen, prefix, kNotMoe,
                                    SglangFusedAction(desc, d, prefix, fused, shards), key.where));
      }
    }
  }
  return {};
}

// The w13 (gate, up) and w2 (down) keys of one MoE layer.
struct ExpertKeys {
  std::vector<const WeightKey*> w13;
  std::vector<const WeightKey*> w2;
};

constexpr std::string_view kW13[] = {"gate_proj", "up_proj", "w1", "w3"};
constexpr std::string_view kW2[] = {"down_proj", "w2"};

// "<parent>.experts" → keys, for keys "<parent>.experts.<n>.<proj>.weight" (only n = 0 unless
// `all_experts`), in document order.
std::vector<std::pair<std::string, ExpertKeys>> CollectExperts(const Description& desc,
                                                               bool all_experts) {
  std::vector<std::pair<std::string, ExpertKeys>> out;
  for (const WeightKey& key : desc.weights) {
    size_t pos = key.path.rfind(".experts.");
    if (pos == std::string::npos) continue;
    std::vector<std::string> rest = Split(std::string_view(key.path).substr(pos + 9), '.');
    if (rest.size() != 2 || rest[0].empty() ||
        !std::all_of(rest[0].begin(), rest[0].end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        (!all_experts && rest[0] != "0")) {
      continue;
    }
    std::string parent = key.path.substr(0, pos + 8);
    auto it =
        std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == parent; });
    if (it == out.end()) it = out.insert(out.end(), {parent, {}});
    if (std::find(std::begin(kW13), std::end(kW13), rest[1]) != std::end(kW13)) {
      it->second.w13.push_back(&key);
    } else if (std::find(std::begin(kW2), std::end(kW2), rest[1]) != std::end(kW2)) {
      it->second.w2.push_back(&key);
    }
  }
  return out;
}

// SGLang get_moe_scheme (later version; the recorded one was not read).
Action SglangMoeAction(const std::string& parent, const ExpertKeys& keys, int64_t group_size) {
  if (keys.w13.empty() || keys.w2.empty()) {
    auto state = [](bool found) { return found ? "found" : "missing"; };
    return {ActionKind::kFail, std::nullopt,
            fmt::format("ValueError: Missing ModelSlim MoE quantization description for layer {}: "
                        "(gate_proj/up_proj={}, down_proj={}); (w1/w3=missing, w2=missing)",
                        parent, state(!keys.w13.empty()), state(!keys.w2.empty())),
            ""};
  }
  std::vector<std::string> entries;
  for (const WeightKey* k : keys.w13)
    entries.push_back(fmt::format("'{}.weight': '{}'", k->path, k->type));
  for (const WeightKey* k : keys.w13) {
    if (k->type != keys.w13.front()->type) {
      return {
          ActionKind::kFail, std::nullopt,
          fmt::format("ValueError: Mismatched ModelSlim quantization for W13 in layer {}: {{{}}}",
                      parent, Join(entries, ", ")),
          ""};
    }
  }
  const std::string& w13 = keys.w13.front()->type;
  const std::string& w2 = keys.w2.front()->type;
  constexpr std::string_view kMoeTypes[] = {"W4A4_DYNAMIC", "W4A8_DYNAMIC", "W8A8_DYNAMIC",
                                            "W8A8_MXFP8"};
  auto supported = [&](const std::string& t) {
    return std::find(std::begin(kMoeTypes), std::end(kMoeTypes), t) != std::end(kMoeTypes);
  };
  if (!supported(w13) || !supported(w2)) {
    return {ActionKind::kFail, std::nullopt,
            fmt::format("ValueError: Unsupported ModelSlim MoE schemes for layer {}: W13='{}', "
                        "W2='{}'",
                        parent, w13, w2),
            ""};
  }
  return {ActionKind::kQuantize, modelslim::TypeScheme(*modelslim::FindType(w13), group_size),
          fmt::format("experts of {}: W13 {}, W2 {}", parent, w13, w2),
          fmt::format("ModelSlimFusedMoEMethod[W13={} W2={}]", w13, w2)};
}

// Native: w13 must agree across gate, up and every expert (and so must w2); one MoE site holds one
// scheme, so w2 may differ from w13 only as a note.
Action NativeMoeAction(const std::string& parent, const ExpertKeys& keys, int64_t group_size,
                       std::vector<std::string>* notes) {
  for (const auto* list : {&keys.w13, &keys.w2}) {
    for (const WeightKey* k : *list) {
      if (k->type == list->front()->type) continue;
      return {ActionKind::kFail, std::nullopt,
              fmt::format("Mismatched ModelSlim quantization for {} in layer {}: \"{}.weight\" is "
                          "{}, \"{}.weight\" is {}",
                          list == &keys.w13 ? "W13 (gate and up)" : "W2 (down)", parent,
                          list->front()->path, list->front()->type, k->path, k->type),
              ""};
    }
  }
  if (keys.w13.empty()) {
    return {ActionKind::kFail, std::nullopt,
            fmt::format("quant_model_description.json has no gate/up (w13) keys for the experts of "
                        "{}",
                        parent),
            ""};
  }
  const WeightKey& w13 = *keys.w13.front();
  const modelslim::TypeInfo* type = modelslim::FindType(w13.type);
  if (type == nullptr) {
    return {ActionKind::kFail, std::nullopt,
            fmt::format("{}: unknown ModelSlim type \"{}\"", w13.where.ToString(), w13.type), ""};
  }
  if (!keys.w2.empty() && keys.w2.front()->type != w13.type) {
    notes->push_back(
        fmt::format("experts of {}: w13 is {} and w2 is {}; the plan shows w13's "
                    "scheme",
                    parent, w13.type, keys.w2.front()->type));
  }
  if (!type->quantized) {
    return {ActionKind::kSkip, std::nullopt, fmt::format("experts of {}: FLOAT", parent), "FLOAT"};
  }
  return {ActionKind::kQuantize, modelslim::TypeScheme(*type, group_size),
          fmt::format("experts of {}: {}", parent, w13.type), w13.type};
}

Status MoeRules(const Description& desc, const SlimDialect& d, std::vector<Rule>* rules,
                std::vector<std::string>* notes) {
  std::set<std::string> seen;
  for (const auto& [parent, keys] : CollectExperts(desc, d.all_experts)) {
    Action a = d.engine == Engine::kSglang ? SglangMoeAction(parent, keys, desc.group_size)
                                           : NativeMoeAction(parent, keys, desc.group_size, notes);
    const Provenance& where = (keys.w13.empty() ? keys.w2 : keys.w13).front()->where;
    for (const std::string& path : d.aliases ? Aliases(parent) : std::vector{parent}) {
      QP_RETURN_IF_ERROR(AddExact(rules, &seen, path, kMoe, a, where));
    }
  }
  // An MoE layer the description never mentions.
  Action missing = d.engine == Engine::kSglang
                       ? Action{ActionKind::kFail, std::nullopt,
                                "ValueError: Missing ModelSlim MoE quantization description for "
                                "layer {prefix}: (gate_proj/up_proj=missing, down_proj=missing); "
                                "(w1/w3=missing, w2=missing)",
                                ""}
                       : Action{ActionKind::kFail, std::nullopt,
                                "quant_model_description.json has no expert keys for {prefix}", ""};
  QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kGlob, "*", RegexFlavor::kPythonRe, kMoe,
                                          std::move(missing), desc.where));
  rules->push_back(std::move(rule));
  return {};
}

// should_ignore_layer (SGLang's compressed-tensors helper): "re:" entries by re.match, others as
// case-insensitive substrings. The engine hands it the whole packed mapping, so shards are
// compared only for fused names at its top level (a flat mapping).
Result<std::vector<RuleGroup>> IgnoreGroups(const Description& desc, const SlimDialect& d) {
  std::vector<RuleGroup> groups;
  const bool by_legs = !d.own_mapping || desc.flat_mapping;
  const std::string disagree =
      "ValueError: Found a different quantization schemes for {legs} in {prefix}. vLLM requires "
      "all to use the same scheme.";
  RuleGroup exact{"ignore (fused name listed)", {}, FusedPolicy::kFusedNameOnly, ""};
  RuleGroup ignore{
      "ignore", {}, by_legs ? FusedPolicy::kLegsMustAgree : FusedPolicy::kFusedNameOnly, disagree};
  for (const ListEntry& e : desc.ignore) {
    Action skip{ActionKind::kSkip, std::nullopt, fmt::format("ignore \"{}\"", e.value),
                std::string(d.ignore_detail)};
    bool regex = e.value.starts_with("re:");
    QP_ASSIGN_OR_RETURN(
        Rule rule, MakeRule(regex ? MatchKind::kRegexMatch : MatchKind::kSubstringIgnoreCase,
                            regex ? e.value.substr(3) : e.value, RegexFlavor::kPythonRe, kAllKinds,
                            skip, e.where));
    ignore.rules.push_back(std::move(rule));
    if (regex) continue;
    QP_ASSIGN_OR_RETURN(Rule listed, MakeRule(MatchKind::kExact, e.value, RegexFlavor::kPythonRe,
                                              kAllKinds, skip, e.where));
    exact.rules.push_back(std::move(listed));
  }
  if (by_legs && d.own_mapping) groups.push_back(std::move(exact));
  groups.push_back(std::move(ignore));
  return groups;
}

class ModelSlimImporterImpl : public Importer {
 public:
  std::string_view name() const override { return "modelslim"; }

  bool Detect(const ConfigSources& sources) const override {
    std::optional<Located> embedded = sources.Embedded();
    if (embedded) {
      const Json* method = embedded->value->FindNonNull("quant_method");
      return method && method->is_string() && ToLower(method->string_value()) == "modelslim" &&
             sources.File(modelslim::kFile) != nullptr;
    }
    return sources.File(modelslim::kFile) != nullptr;
  }

  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override {
    QP_ASSIGN_OR_RETURN(QuantPlan plan, DescribedPlan(sources, dialect));
    // The files do not say how 4-bit weights are packed: SGLang reads it from its environment
    // (SGLANG_NPU_W4A4_NEW_PACKING), so the user says it; the loader knows it from LoadFacts.
    const bool pairs = sources.format_option(kPackingOption) == "new";
    plan.ForEachScheme([pairs](QuantScheme& s) {
      TensorQuant& w = s.weight;
      if (w.load.layout == SourceLayout::kModelSlim && w.dtype == QDType::kINT4) {
        w.load.int4_pairs = pairs;
      }
    });
    return plan;
  }

  std::vector<FormatOption> options() const override {
    return {{kPackingOption,
             {"old", "new"},
             "How ModelSlim's 4-bit weights are packed (old: one code per int8, SGLang's "
             "default; new: two per int8, SGLANG_NPU_W4A4_NEW_PACKING)"}};
  }

  // The description is its own file; SGLang 0.5.23's get_quant_config puts the model's
  // packed_modules_mapping in place of the description's.
  DescriptionPlacement PlaceDescription(const Json& /*description*/,
                                        const Dialect& dialect) const override {
    DescriptionPlacement placement;
    placement.file = std::string(modelslim::kFile);
    if (Since(dialect, DialectId::kSglang0523)) {
      placement.packed_mapping = DescriptionPlacement::PackedMapping::kReplace;
    }
    return placement;
  }

 private:
  static constexpr std::string_view kPackingOption = "modelslim-packing";

  Result<QuantPlan> DescribedPlan(const ConfigSources& sources, const Dialect& dialect) const {
    const SourceFile* file = sources.File(modelslim::kFile);
    if (file == nullptr) {
      return InvalidInput(
          fmt::format("ModelSlim is described by {}, which the model's files ({}) "
                      "do not include",
                      modelslim::kFile, Join(sources.FileNames(), ", ")));
    }
    if (Since(dialect, DialectId::kSglang0523)) {
      return modelslim::SglangCurrentPlan(*file, dialect);
    }
    const SlimDialect* d = DialectFor(dialect.engine);
    if (d == nullptr) {
      return Unsupported(
          "vLLM has no ModelSlim support in the versions quantpath reproduces "
          "(ModelSlim checkpoints run on vllm-ascend)");
    }
    QP_ASSIGN_OR_RETURN(Description desc, modelslim::ReadDescription(*file));
    QuantPlan plan;
    plan.quant_method = "modelslim";
    plan.dialect = dialect;
    plan.sources.push_back(desc.where);
    plan.notes = desc.notes;
    QP_ASSIGN_OR_RETURN(plan.groups, IgnoreGroups(desc, *d));
    RuleGroup table{"quant_model_description",
                    {},
                    d->own_mapping ? FusedPolicy::kFusedNameOnly : FusedPolicy::kLegsMustAgree,
                    "quant_model_description.json gives the legs of this fused layer different "
                    "types"};
    QP_RETURN_IF_ERROR(TableRules(desc, *d, &table.rules));
    QP_RETURN_IF_ERROR(MoeRules(desc, *d, &table.rules, &plan.notes));
    plan.groups.push_back(std::move(table));
    plan.default_action = d->missing;
    plan.linear = KindPolicy::kRules;
    plan.moe = KindPolicy::kRules;
    plan.lm_head = d->lm_head;
    plan.router = d->router;
    plan.embedding = KindPolicy::kUnquantized;
    return plan;
  }
};

}  // namespace

const Importer* ModelSlimImporter() {
  static const ModelSlimImporterImpl importer;
  return &importer;
}

}  // namespace quantpath
