// GPTQ `dynamic`: per-module overrides and exclusions keyed by regexes, first hit in document
// order.
//
// Goals: reproduce the one lookup every reader of `dynamic` shares — GPTQModel's
// `dynamic_get` (gptqmodel/quantization/config.py), vLLM's and SGLang's `get_dynamic_override`
// (vllm/model_executor/layers/quantization/utils/gptq_utils.py; sglang/srt/layers/quantization/
// utils.py) — which walk the dict in insertion order and stop at the first key whose regex
// re.match-es the module name: "-:" returns "skip", anything else returns that key's override dict
// ("+:" is optional). re.match anchors at the start only, so "-:model.layers.1" also hits
// "model.layers.10…" and a pattern needs "$" or "\Z" to end-anchor. Which regex module runs the
// pattern (vLLM: `regex`, SGLang and GPTQModel: Python `re` / its PCRE binding) and which names
// are matched (execution names or Hugging Face names) is the caller's DynamicStyle.
// Non-goals: the base fields (gptq.cc) and what a dialect does with the effective settings.
#include <utility>

#include "fmt/format.h"
#include "src/importers/common.h"
#include "src/importers/gptq.h"

namespace quantpath {
namespace {

// The override keys that change decisions. Everything else in an override dict (GPTQModel also
// accepts quantization-time keys such as damp_percent or adapter settings) is noted.
enum class OverrideType { kInt, kBool };
struct OverrideField {
  std::string_view key;
  OverrideType type;
};
constexpr OverrideField kOverrideFields[] = {{"bits", OverrideType::kInt},
                                             {"group_size", OverrideType::kInt},
                                             {"desc_act", OverrideType::kBool},
                                             {"sym", OverrideType::kBool}};

void Assign(GptqSettings* s, std::string_view key, const Json& v) {
  if (key == "bits") s->bits = v.int_value();
  if (key == "group_size") s->group_size = v.int_value();
  if (key == "desc_act") s->desc_act = v.bool_value();
  if (key == "sym") s->sym = v.bool_value();
}

// The base settings with the overrides of one `+:` dict applied.
Result<GptqSettings> ApplyOverrides(const ConfigCopy& copy, const Json& overrides,
                                    const GptqSettings& base, const DynamicStyle& style,
                                    std::vector<std::string>* notes) {
  GptqSettings s = base;
  for (const Json::Member& m : overrides.members()) {
    const OverrideField* field = nullptr;
    for (const OverrideField& f : kOverrideFields) {
      if (f.key == m.first) field = &f;
    }
    if (field == nullptr) {
      notes->push_back(fmt::format("{} = {}: not a decision field of a dynamic override; noted",
                                   Where(copy.file(), m.second), Excerpt(m.second)));
      continue;
    }
    bool typed = field->type == OverrideType::kInt ? m.second.is_int() : m.second.is_bool();
    if (!typed) {
      if (style.strict_values) {
        return InvalidInput(
            fmt::format("{}: expected {} for \"{}\", found {}", Where(copy.file(), m.second),
                        field->type == OverrideType::kInt ? "an integer" : "a boolean", m.first,
                        m.second.TypeName()));
      }
      notes->push_back(
          fmt::format("{} = {}: ignored, as the engine ignores an override of the wrong type",
                      Where(copy.file(), m.second), Excerpt(m.second)));
      continue;
    }
    Assign(&s, m.first, m.second);
  }
  return s;
}

}  // namespace

Result<RuleGroup> BuildDynamicGroup(const ConfigCopy& copy, const Json& dynamic,
                                    const GptqSettings& base, const DynamicStyle& style,
                                    const GptqQuantizeAction& quantize, const Action& skip,
                                    std::vector<std::string>* notes) {
  RuleGroup group;
  group.name = "dynamic";
  group.fused = style.fused;
  group.disagree_message = "the shards of a fused layer hit different dynamic rules";
  if (!dynamic.is_object()) {
    return InvalidInput(
        fmt::format("{}: expected an object of regex keys for \"dynamic\", found {}",
                    Where(copy.file(), dynamic), dynamic.TypeName()));
  }
  for (const Json::Member& m : dynamic.members()) {
    const std::string& key = m.first;
    Provenance where = ProvenanceOf(copy.file(), m.second);
    if (!m.second.is_object()) {
      return InvalidInput(
          fmt::format("{}: expected an object of overrides for dynamic key \"{}\", "
                      "found {}",
                      where.ToString(), key, m.second.TypeName()));
    }
    bool negative = key.starts_with("-:");
    std::string pattern = key.substr(key.starts_with("-:") || key.starts_with("+:") ? 2 : 0);
    // One rule per group of site kinds that share an outcome; a key the dialect's regex module
    // rejects is an error naming the key's pointer.
    auto append = [&](SiteKindSet kinds, Action action) -> Status {
      if ((kinds & style.kinds) == 0) return {};
      QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kRegexMatch, pattern, style.regex,
                                              kinds & style.kinds, std::move(action), where));
      group.rules.push_back(std::move(rule));
      return {};
    };
    if (!negative) {
      QP_ASSIGN_OR_RETURN(GptqSettings s, ApplyOverrides(copy, m.second, base, style, notes));
      QP_ASSIGN_OR_RETURN(Action action, quantize(s, where));
      // A kFail message is the engine's text and the decision's detail: kept verbatim.
      if (action.kind == ActionKind::kQuantize) {
        action.message = fmt::format("dynamic \"{}\": quantized as {}", key, action.message);
      }
      QP_RETURN_IF_ERROR(append(kAllKinds, std::move(action)));
      continue;
    }
    if (!m.second.members().empty()) {
      notes->push_back(
          fmt::format("{}: the overrides of a \"-:\" key are never read", where.ToString()));
    }
    Action action = skip;
    action.message = fmt::format("dynamic \"{}\": left unquantized", key);
    SiteKindSet rest = kAllKinds;
    for (auto [kind, detail] : {std::pair{SiteKind::kLmHead, style.lm_head_skip_detail},
                                std::pair{SiteKind::kMoe, style.moe_skip_detail}}) {
      if (detail.empty()) continue;
      Action own = action;
      own.detail = std::string(detail);
      QP_RETURN_IF_ERROR(append(KindBit(kind), std::move(own)));
      rest &= ~KindBit(kind);
    }
    QP_RETURN_IF_ERROR(append(rest, std::move(action)));
  }
  return group;
}

}  // namespace quantpath
