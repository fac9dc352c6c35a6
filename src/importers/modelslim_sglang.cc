// ModelSlim as SGLang 0.5.23 serves it on Ascend NPUs (sglang@0.5.23).
//
// The engine rewrites the description before any lookup (ModelSlimConfig.__init__), in this
// order: DeepSeek-V4 checkpoints (any key starting "hc_head_") get every key renamed to Hugging
// Face names (DeepseekV4ForCausalLM.remap_weight_name_to_dpsk_hf_format); every block_sparse_moe
// key gains an mlp twin; DSpark MTP keys "mtp.<stage>.<rest>" gain "stages.<stage>.<rest'>"
// aliases placed before the original keys (attn → self_attn, ffn → mlp, w1/w2/w3 →
// gate_proj/down_proj/up_proj; the stage's own embedding and head copies get none). Any key
// containing "norm.bias" makes the engine patch RMSNorm (a zero bias and the add-bias kernel).
// The loader replaces the file's packed_modules_mapping with the model's, updated on NPU with
// fixed "visual", "vision_model" and "model" sections (model_loader/loader.py).
//
// Lookups: a prefix is tried as written, with ".mlp." → ".block_sparse_moe.", and each of those
// with "language_model." removed or added (_quant_prefix_candidates), the first with a ".weight"
// key winning. Linear layers: FLOAT (over every shard of a fused name, which must agree) is
// UnquantizedLinearMethod, six types have a scheme, anything else (no key included) falls back to
// UnquantizedLinearMethod with a warning; the ignore list is read and never used. MoE layers:
// expert 0's gate/up (w13, which must agree) and down (w2) keys, gate_proj/up_proj/down_proj then
// w1/w3/w2, per candidate; six MoE types; a missing description lists every key pattern tried.
// Nothing else (LM head, attention) gets a method. Sources read: SGLang 0.5.23
// srt/layers/quantization/modelslim/modelslim.py, srt/models/deepseek_v4.py,
// srt/model_loader/loader.py and weight_utils.py; seed 003.
#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <utility>

#include "fmt/format.h"
#include "src/importers/modelopt.h"  // PyStr: str() of a JSON value
#include "src/importers/modelslim.h"

namespace quantpath::modelslim {
namespace {

constexpr SiteKindSet kLinearOnly = KindBit(SiteKind::kLinear);
constexpr SiteKindSet kMoeOnly = KindBit(SiteKind::kMoe);

// A Python dict in insertion order: assigning an existing key keeps its position.
class OrderedDict {
 public:
  void Set(const std::string& key, const Json& value) {
    auto [it, inserted] = index_.emplace(key, entries_.size());
    if (inserted) {
      entries_.emplace_back(key, value);
    } else {
      entries_[it->second].second = value;
    }
  }
  const Json* Get(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &entries_[it->second].second;
  }
  const std::vector<std::pair<std::string, Json>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<std::string, Json>> entries_;
  std::map<std::string, size_t> index_;
};

bool Contains(std::string_view s, std::string_view p) { return s.find(p) != std::string::npos; }

// DeepseekV4ForCausalLM.remap_weight_name_to_dpsk_hf_format with its defaults (not nextn).
std::string RemapV4(std::string name) {
  if (name.starts_with("vision.")) {
    return ReplaceAll(ReplaceAll(name, ".attn.wqkv.", ".attn.qkv_proj."), ".attn.wo.",
                      ".attn.proj.");
  }
  if (name.starts_with("aligner.") || name.starts_with("image_")) return name;
  if (name.starts_with("embed.")) return "model.embed_tokens." + name.substr(6);
  if (name.starts_with("head.")) return "lm_head." + name.substr(5);
  if (name == "norm.weight") return "model.norm.weight";
  if (name.starts_with("hc_head_")) return "model." + name;
  if (name.starts_with("layers.")) name = "model." + name;
  name = ReplaceAll(name, ".attn.", ".self_attn.");
  name = ReplaceAll(name, ".ffn.", ".mlp.");
  name = ReplaceAll(name, ".attn_norm.", ".input_layernorm.");
  name = ReplaceAll(name, ".ffn_norm.", ".post_attention_layernorm.");
  auto scale_inv = [&] { name = name.substr(0, name.size() - 6) + ".weight_scale_inv"; };
  if (Contains(name, "self_attn") && name.ends_with(".scale")) scale_inv();
  if (Contains(name, ".engram.wkv.") && name.ends_with(".scale")) scale_inv();
  name = ReplaceAll(name, ".gate.tid2eid", ".topk.tid2eid");
  name = ReplaceAll(name, ".gate.bias", ".gate.e_score_correction_bias");
  name = ReplaceAll(name, ".w1.", ".gate_proj.");
  name = ReplaceAll(name, ".w2.", ".down_proj.");
  name = ReplaceAll(name, ".w3.", ".up_proj.");
  if (Contains(name, "mlp") && name.ends_with(".scale")) scale_inv();
  return name;
}

// The DSpark alias of "mtp.<stage>.<rest>", or nullopt when the key gets none.
std::optional<std::string> DsparkAlias(const std::string& name) {
  if (!name.starts_with("mtp.")) return std::nullopt;
  std::vector<std::string> parts = Split(name, '.');
  if (parts.size() < 3) return std::nullopt;
  const std::string& stage = parts[1];
  if (stage.empty() ||
      !std::all_of(stage.begin(), stage.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::string rest = name.substr(5 + stage.size());
  for (std::string_view local : {"embed.", "embed_tokens.", "head.", "lm_head."}) {
    if (rest.starts_with(local)) return std::nullopt;  // the target model's copies are used
  }
  if (rest.starts_with("markov_head.") || rest.starts_with("confidence_head.")) return rest;
  constexpr std::pair<std::string_view, std::string_view> kLeading[] = {
      {"attn.", "self_attn."},
      {"ffn.", "mlp."},
      {"attn_norm.", "input_layernorm."},
      {"ffn_norm.", "post_attention_layernorm."}};
  for (const auto& [from, to] : kLeading) {
    if (rest.starts_with(from)) {
      rest = std::string(to) + rest.substr(from.size());
      break;
    }
  }
  rest = ReplaceAll(rest, ".w1.", ".gate_proj.");
  rest = ReplaceAll(rest, ".w2.", ".down_proj.");
  rest = ReplaceAll(rest, ".w3.", ".up_proj.");
  rest = ReplaceAll(rest, ".gate.tid2eid", ".topk.tid2eid");
  rest = ReplaceAll(rest, ".gate.bias", ".gate.e_score_correction_bias");
  return fmt::format("stages.{}.{}", stage, rest);
}

// The NPU sections the loader adds to the model's packed_modules_mapping.
Json NpuSection(std::initializer_list<std::pair<std::string_view, std::vector<std::string>>> rows) {
  std::vector<std::pair<std::string, Json>> members;
  for (const auto& [fused, shards] : rows) {
    std::vector<Json> items;
    for (const std::string& s : shards) items.push_back(Json::String(s));
    members.emplace_back(std::string(fused), Json::Array(std::move(items)));
  }
  return Json::Object(std::move(members));
}

struct Engine523 {
  OrderedDict desc;
  OrderedDict mapping;  // the packed_modules_mapping the config holds
  Provenance where;
  int64_t group_size = 0;

  std::string TypeOf(const std::string& prefix) const {
    const Json* v = desc.Get(prefix + ".weight");
    return v != nullptr && v->is_string() ? v->string_value() : "";
  }
  bool Has(const std::string& key) const { return desc.Get(key) != nullptr; }

  std::vector<std::string> Candidates(const std::string& prefix) const {
    std::vector<std::string> c = {prefix};
    if (Contains(prefix, ".mlp.")) c.push_back(ReplaceAll(prefix, ".mlp.", ".block_sparse_moe."));
    const size_t n = c.size();
    for (size_t i = 0; i < n; ++i) {
      c.push_back(c[i].starts_with("language_model.") ? c[i].substr(15) : "language_model." + c[i]);
    }
    std::vector<std::string> unique;
    for (std::string& s : c) {
      if (std::find(unique.begin(), unique.end(), s) == unique.end()) unique.push_back(s);
    }
    return unique;
  }
  std::string Resolve(const std::string& prefix) const {
    for (const std::string& c : Candidates(prefix)) {
      if (Has(c + ".weight")) return c;
    }
    return prefix;
  }

  // The shards of `proj` in a mapping object ({fused: [shards]}), or nullptr.
  static const Json* Shards(const Json* section, std::string_view proj) {
    if (section == nullptr || !section->is_object()) return nullptr;
    const Json* shards = section->Find(proj);
    return shards != nullptr && shards->is_array() ? shards : nullptr;
  }

  // is_layer_skipped; an error text when the shards disagree.
  std::optional<std::string> Skipped(const std::string& prefix, const Json* fused_mapping,
                                     bool* skipped) const {
    std::string proj(LastSegment(prefix));
    const Json* shards = Shards(fused_mapping, proj);
    if (shards == nullptr) {
      *skipped = TypeOf(Resolve(prefix)) == "FLOAT";
      return std::nullopt;
    }
    std::optional<bool> state;
    for (const Json& shard : shards->items()) {
      std::string name = shard.is_string() ? shard.string_value() : "";
      bool is_float = TypeOf(Resolve(ReplaceAll(prefix, proj, name))) == "FLOAT";
      if (state && *state != is_float) {
        return fmt::format(
            "ValueError: Detected some but not all shards of {} are quantized. All shards of "
            "fused layers to have the same precision.",
            prefix);
      }
      state = is_float;
    }
    // A fused name with no shards leaves is_skipped None: the engine's assert fails.
    if (!state) return std::string("AssertionError: ");
    *skipped = *state;
    return std::nullopt;
  }

  Action Linear(std::string prefix) const {
    std::string key = "model";
    if (Contains(prefix, "vision_model")) {
      key = "vision_model";
    } else if (Contains(prefix, "visual")) {
      key = "visual";
    }
    if (Contains(prefix, "vision_tower") || Contains(prefix, "mm_projector")) {
      prefix = ReplaceAll(ReplaceAll(prefix, "attn.qkv_proj", "wqkv"), "attn.proj", "wo");
    }
    const Json* subset = mapping.Get(key);
    std::string in_config = prefix;
    std::string proj(LastSegment(prefix));
    if (const Json* shards = Shards(subset, proj);
        shards != nullptr && !shards->items().empty() && shards->items().front().is_string()) {
      in_config = ReplaceAll(prefix, proj, shards->items().front().string_value());
    }
    in_config = Resolve(in_config);
    Json whole = Json::Object(mapping.entries());
    for (const Json* m : {subset, static_cast<const Json*>(&whole)}) {
      bool skipped = false;
      if (std::optional<std::string> error = Skipped(prefix, m, &skipped)) {
        return {ActionKind::kFail, std::nullopt, *error, ""};
      }
      if (skipped) {
        return {ActionKind::kSkip, std::nullopt,
                fmt::format("\"{}.weight\" is FLOAT", Resolve(prefix)), "UnquantizedLinearMethod"};
      }
    }
    const std::string resolved = Resolve(in_config);
    const std::string type = TypeOf(resolved);
    constexpr std::pair<std::string_view, std::string_view> kLinear[] = {
        {"W4A4_DYNAMIC", "ModelSlimW4A4Int4"},     {"W8A8", "ModelSlimW8A8Int8"},
        {"W8A8_DYNAMIC", "ModelSlimW8A8Int8"},     {"W8A8_MXFP8", "ModelSlimMXFP8Scheme"},
        {"W4A8_MXFP", "ModelSlimMXFP4W4A8Scheme"}, {"W4A4_MXFP4", "ModelSlimMXFP4Scheme"}};
    for (const auto& [name, scheme_class] : kLinear) {
      if (type != name) continue;
      return {ActionKind::kQuantize, TypeScheme(*FindType(type), group_size),
              fmt::format("\"{}.weight\": {}", resolved, type),
              fmt::format("ModelSlimLinearMethod[{}]", scheme_class)};
    }
    return {
        ActionKind::kSkip, std::nullopt,
        fmt::format("Unsupported Linear modelslim scheme: ['{}'] in layer: {} (SGLang warns and "
                    "leaves the layer unquantized)",
                    type, resolved),
        "UnquantizedLinearMethod"};
  }

  Action Moe(const std::string& prefix) const {
    constexpr std::array<std::array<std::string_view, 3>, 2> kNames = {
        {{"gate_proj", "up_proj", "down_proj"}, {"w1", "w3", "w2"}}};
    std::vector<std::string> attempted;
    for (const std::string& c : Candidates(prefix)) {
      for (const auto& [gate, up, down] : kNames) {
        const std::string w13[] = {fmt::format("{}.0.{}.weight", c, gate),
                                   fmt::format("{}.0.{}.weight", c, up)};
        const std::string w2 = fmt::format("{}.0.{}.weight", c, down);
        std::vector<std::pair<std::string, const Json*>> found;
        for (const std::string& k : w13) {
          if (const Json* v = desc.Get(k)) found.emplace_back(k, v);
        }
        if (!found.empty() && Has(w2)) return MoeSchemes(prefix, found, *desc.Get(w2));
        attempted.push_back(fmt::format("{} ({}/{}={}, {}={})", c, gate, up,
                                        found.empty() ? "missing" : "found", down,
                                        Has(w2) ? "found" : "missing"));
      }
    }
    return {ActionKind::kFail, std::nullopt,
            fmt::format("ValueError: Missing ModelSlim MoE quantization description for layer {}: "
                        "{}",
                        prefix, Join(attempted, "; ")),
            ""};
  }

  static std::string PyRepr(const Json& v) {
    return v.is_string() ? fmt::format("'{}'", v.string_value()) : ToJson(v);
  }

  Action MoeSchemes(const std::string& prefix,
                    const std::vector<std::pair<std::string, const Json*>>& w13,
                    const Json& w2) const {
    for (const auto& entry : w13) {
      if (ToJson(*entry.second) == ToJson(*w13.front().second)) continue;  // set() of values
      std::vector<std::string> shown;
      for (const auto& [k, v] : w13) shown.push_back(fmt::format("'{}': {}", k, PyRepr(*v)));
      return {
          ActionKind::kFail, std::nullopt,
          fmt::format("ValueError: Mismatched ModelSlim quantization for W13 in layer {}: {{{}}}",
                      prefix, Join(shown, ", ")),
          ""};
    }
    constexpr std::pair<std::string_view, std::string_view> kMoe[] = {
        {"W4A4_MXFP4", "ModelSlimW4A4MXFP4MoE"},  {"W4A8_MXFP", "ModelSlimW4A8MXFP4MoE"},
        {"W4A4_DYNAMIC", "ModelSlimW4A4Int4MoE"}, {"W4A8_DYNAMIC", "ModelSlimW4A8Int8MoE"},
        {"W8A8_DYNAMIC", "ModelSlimW8A8Int8MoE"}, {"W8A8_MXFP8", "ModelSlimMXFP8MoEScheme"}};
    auto scheme_class = [&](const Json& v) -> std::string_view {
      for (const auto& [name, cls] : kMoe) {
        if (v.is_string() && v.string_value() == name) return cls;
      }
      return "";
    };
    const Json& first = *w13.front().second;
    std::string_view c13 = scheme_class(first);
    std::string_view c2 = scheme_class(w2);
    if (c13.empty() || c2.empty()) {
      return {ActionKind::kFail, std::nullopt,
              fmt::format("ValueError: Unsupported ModelSlim MoE schemes for layer {}: W13='{}', "
                          "W2='{}'",
                          prefix, modelopt::PyStr(first), modelopt::PyStr(w2)),
              ""};
    }
    return {ActionKind::kQuantize, TypeScheme(*FindType(first.string_value()), group_size),
            fmt::format("experts of {}: W13 {}, W2 {}", prefix, first.string_value(),
                        w2.string_value()),
            fmt::format("ModelSlimFusedMoEMethod[W13={} W2={}]", c13, c2)};
  }
};

// The prefixes whose candidates include `path` (the inverse of Candidates, a superset).
std::vector<std::string> Uncandidates(const std::string& path) {
  std::vector<std::string> out = {path};
  if (path.starts_with("language_model.")) out.push_back(path.substr(15));
  out.push_back("language_model." + path);
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) {
    if (Contains(out[i], ".block_sparse_moe.")) {
      out.push_back(ReplaceAll(out[i], ".block_sparse_moe.", ".mlp."));
    }
  }
  return out;
}

}  // namespace

Result<QuantPlan> SglangCurrentPlan(const SourceFile& file, const Dialect& dialect) {
  const Json& root = file.root;
  if (!root.is_object()) {
    return InvalidInput(
        fmt::format("{}: expected an object, found {}", file.name, root.TypeName()));
  }
  QuantPlan plan;
  plan.quant_method = "modelslim";
  plan.dialect = dialect;
  Engine523 e;
  e.where = {file.name, ""};
  plan.sources.push_back(e.where);

  const bool v4 = std::any_of(root.members().begin(), root.members().end(),
                              [](const auto& m) { return m.first.starts_with("hc_head_"); });
  OrderedDict described;
  for (const auto& [key, value] : root.members()) described.Set(v4 ? RemapV4(key) : key, value);
  if (v4) {
    plan.notes.push_back(fmt::format(
        "{}: \"hc_head_\" keys mark a DeepSeek-V4 checkpoint; SGLang renames every key to Hugging "
        "Face names (layers.N.attn → model.layers.N.self_attn, ffn → mlp, w1/w2/w3 → "
        "gate_proj/down_proj/up_proj, embed → model.embed_tokens, head → lm_head)",
        file.name));
  }
  const std::vector<std::pair<std::string, Json>> before_alias = described.entries();
  for (const auto& [key, value] : before_alias) {
    if (!Contains(key, "block_sparse_moe")) continue;
    described.Set(ReplaceAll(ReplaceAll(key, "block_sparse_moe.experts", "mlp.experts"),
                             "block_sparse_moe.shared_experts", "mlp.shared_experts"),
                  value);
  }
  // The loader replaced the file's mapping with the model's (match: the case's), then added the
  // NPU sections.
  if (const Json* pmm = described.Get("packed_modules_mapping"); pmm && pmm->is_object()) {
    for (const auto& [k, v] : pmm->members()) e.mapping.Set(k, v);
    plan.notes.push_back(fmt::format(
        "{}: SGLang replaces this packed_modules_mapping with the model class's; quantpath reads "
        "the file's in its place, then adds the loader's NPU visual / vision_model / model "
        "sections as the engine does",
        file.name));
  }
  e.mapping.Set("visual",
                NpuSection({{"qkv_proj", {"qkv"}}, {"gate_up_proj", {"gate_proj", "up_proj"}}}));
  e.mapping.Set("vision_model",
                NpuSection({{"qkv_proj", {"q_proj", "k_proj", "v_proj"}}, {"proj", {"out_proj"}}}));
  e.mapping.Set("model",
                NpuSection({{"qkv_proj", {"q_proj", "k_proj", "v_proj"}},
                            {"gate_up_proj", {"gate_proj", "up_proj"}},
                            {"fused_qkv_a_proj_with_mqa", {"q_a_proj", "kv_a_proj_with_mqa"}},
                            {"index_qkv_proj", {"index_q_proj", "index_k_proj"}}}));
  std::vector<std::string> norm_bias;
  for (const auto& [key, value] : described.entries()) {
    if (Contains(key, "norm.bias")) norm_bias.push_back(key);
  }
  if (!norm_bias.empty()) {
    plan.notes.push_back(fmt::format(
        "{}: \"{}\" (and {} more norm.bias keys): SGLang patches RMSNorm for the whole model — "
        "every RMSNorm gets a zero-initialised bias parameter and its NPU forward adds it "
        "(add_rmsnorm_bias), as static W8A8 activations need",
        file.name, norm_bias.front(), norm_bias.size() - 1));
  }
  // DSpark aliases go first; an original key of the same name keeps the original's value.
  for (const auto& [key, value] : described.entries()) {
    if (std::optional<std::string> alias = DsparkAlias(key)) e.desc.Set(*alias, value);
  }
  for (const auto& [key, value] : described.entries()) e.desc.Set(key, value);
  if (const Json* gs = e.desc.Get("group_size"); gs && gs->is_int()) e.group_size = gs->int_value();
  if (const Json* ignore = e.desc.Get("ignore");
      ignore && ignore->is_array() && !ignore->items().empty()) {
    plan.notes.push_back(fmt::format(
        "{}: ignore is read but never consulted by SGLang 0.5.23 (only FLOAT keys skip a layer)",
        file.name));
  }

  // Exact rules for every prefix some key can reach, each decided as the engine would.
  RuleGroup table{"quant_model_description", {}, FusedPolicy::kFusedNameOnly, ""};
  std::set<std::string> linear_seen;
  std::set<std::string> moe_seen;
  for (const auto& [key, value] : e.desc.entries()) {
    if (!key.ends_with(".weight")) continue;
    const std::string path = key.substr(0, key.size() - 7);
    const Provenance where = ProvenanceOf(file.name, value);
    std::vector<std::string> targets = Uncandidates(path);
    // A fused name reached through one of its shards (any section), and the vision renames.
    const std::vector<std::string> direct = targets;
    for (const std::string& t : direct) {
      for (const auto& [section, fused_map] : e.mapping.entries()) {
        const Json* object = fused_map.is_object() ? &fused_map : nullptr;
        std::vector<std::pair<std::string, Json>> rows;
        if (object != nullptr) rows = object->members();
        if (fused_map.is_array()) rows.emplace_back(section, fused_map);
        for (const auto& [fused, shards] : rows) {
          if (!shards.is_array()) continue;
          for (const Json& s : shards.items()) {
            if (!s.is_string() || LastSegment(t) != s.string_value()) continue;
            targets.push_back(std::string(ParentPath(t)) + "." + fused);
          }
        }
      }
      if (Contains(t, "wqkv") || Contains(t, ".wo")) {
        targets.push_back(ReplaceAll(ReplaceAll(t, "wqkv", "attn.qkv_proj"), ".wo", ".attn.proj"));
      }
    }
    for (const std::string& t : targets) {
      QP_RETURN_IF_ERROR(AddExact(&table.rules, &linear_seen, t, kLinearOnly, e.Linear(t), where));
    }
    // "<experts>.0.<proj>.weight" → the experts layer.
    size_t pos = path.rfind(".0.");
    if (pos != std::string::npos && path.find('.', pos + 3) == std::string::npos) {
      for (const std::string& t : Uncandidates(path.substr(0, pos))) {
        QP_RETURN_IF_ERROR(AddExact(&table.rules, &moe_seen, t, kMoeOnly, e.Moe(t), where));
      }
    }
  }
  // An experts layer no key reaches: the error lists the patterns tried for a Llama-style
  // "<…>.mlp.experts" prefix's candidates.
  QP_ASSIGN_OR_RETURN(
      Rule missing_moe,
      MakeRule(MatchKind::kGlob, "*", RegexFlavor::kPythonRe, kMoeOnly,
               {ActionKind::kFail, std::nullopt,
                "ValueError: Missing ModelSlim MoE quantization description for layer {prefix}: "
                "no expert 0 gate_proj/up_proj/down_proj or w1/w3/w2 keys under any candidate "
                "name",
                ""},
               e.where));
  table.rules.push_back(std::move(missing_moe));
  // ParallelLMHead is not a LinearBase: get_quant_method returns None.
  QP_ASSIGN_OR_RETURN(
      Rule head,
      MakeRule(MatchKind::kGlob, "*", RegexFlavor::kPythonRe, KindBit(SiteKind::kLmHead),
               {ActionKind::kSkip, std::nullopt, "the LM head is not a LinearBase: no method",
                "get_quant_method returned None"},
               e.where));
  table.rules.push_back(std::move(head));
  plan.groups.push_back(std::move(table));
  plan.default_action = {ActionKind::kSkip, std::nullopt,
                         "no key: SGLang warns \"Unsupported Linear modelslim scheme: ['']\" and "
                         "leaves the layer unquantized",
                         "UnquantizedLinearMethod"};
  plan.linear = KindPolicy::kRules;
  plan.moe = KindPolicy::kRules;
  // RadixAttention gets nothing either.
  plan.lm_head = KindPolicy::kRules;
  plan.router = KindPolicy::kUnquantized;
  plan.embedding = KindPolicy::kUnquantized;
  plan.attention = Action{ActionKind::kSkip, std::nullopt, "ModelSlim attaches no KV-cache method",
                          "get_quant_method returned None"};
  return plan;
}

}  // namespace quantpath::modelslim
