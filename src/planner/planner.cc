// Evaluates a QuantPlan against one layer site. The plan carries every format- and engine-specific
// choice (matchers, fused policy, kind policies); this file only applies them in order.
#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/planner.h"
#include "src/ir/rule_index.h"

namespace quantpath {
namespace {

// `text` with the site placeholders (kSitePathPlaceholder, kLegNamesPlaceholder) expanded.
std::string ExpandSitePlaceholders(std::string_view text, const LayerSite& site) {
  std::string out;
  out.reserve(text.size() + site.path.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t brace = text.find('{', i);
    out.append(text.substr(i, brace - i));
    if (brace == std::string_view::npos) break;
    const std::string_view rest = text.substr(brace);
    if (rest.starts_with(kSitePathPlaceholder)) {
      out += site.path;
      i = brace + kSitePathPlaceholder.size();
    } else if (rest.starts_with(kLegNamesPlaceholder)) {
      out += '[';
      for (size_t l = 0; l < site.legs.size(); ++l) {
        if (l > 0) out += ", ";
        out += '\'';
        out += site.legs[l].name;
        out += '\'';
      }
      out += ']';
      i = brace + kLegNamesPlaceholder.size();
    } else {
      out += '{';
      i = brace + 1;
    }
  }
  return out;
}

// "<source>: <message>", the text a Decision names its deciding rule or policy by.
std::string RuleText(const Provenance& source, std::string_view message) {
  std::string out;
  out.reserve(source.file.size() + 1 + source.pointer.size() + 2 + message.size());
  out += source.file;
  if (!source.pointer.empty()) {
    out += '#';
    out += source.pointer;
  }
  out += ": ";
  out += message;
  return out;
}

bool HasSitePlaceholder(std::string_view text) {
  return text.find(kSitePathPlaceholder) != std::string_view::npos ||
         text.find(kLegNamesPlaceholder) != std::string_view::npos;
}

// The name leg `leg` is matched under, written into `out`'s buffer without formatting (the
// planner builds it for every fused site): LayerSite::ExpertLegPath(0, leg) for MoE sites,
// LayerSite::LegPath(leg) for the others; empty for an MoE site without experts and for an empty
// prefix (an engine that passes one never looks at the legs).
void BuildLegSubject(const LayerSite& site, size_t leg, std::string* out) {
  out->clear();
  if (site.kind == SiteKind::kMoe) {
    if (site.experts <= 0) return;
    out->append(site.path).append(".0.");
  } else if (site.path.empty()) {
    return;
  } else if (const std::string_view parent = ParentPath(site.path); !parent.empty()) {
    out->append(parent).append(".");
  }
  *out += site.legs[leg].name;
}

// The outcome of one rule group for one path or site.
struct GroupOutcome {
  const Rule* rule = nullptr;        // the rule that hit, if any
  std::optional<std::string> error;  // legs disagreed, or a matcher failed
  std::optional<size_t> leg;         // the leg whose hit decided; none for the site's own path
};

// A matcher's failure (a regex limit) named by the rule's place in the config.
std::string MatcherError(const Rule& rule, const Status& status) {
  return rule.source.ToString() + ": " + status.message();
}

struct Evaluator {
  const LayerSite& site;
  bool record_trace;
  std::vector<TraceStep>* trace;
  // The legs' subjects, built on first use and kept for every group (buffers reused across sites).
  std::vector<std::string>* leg_subjects;
  bool legs_built = false;

  // First rule of `group` hitting `subject`; a matcher failure (regex limit) is an error. Without
  // a trace only the rules the group's index cannot rule out are tried, in the same order.
  GroupOutcome FirstHit(const RuleGroup& group, std::string_view subject) {
    if (!record_trace) return ScreenedFirstHit(group, subject);
    for (const Rule& rule : group.rules) {
      if ((rule.kinds & KindBit(site.kind)) == 0) continue;
      Result<bool> hit = rule.matcher.Matches(subject, site.module_class);
      if (!hit.ok()) return {nullptr, MatcherError(rule, hit.status()), std::nullopt};
      if (record_trace) {
        std::string_view against = rule.matcher.kind() == MatchKind::kClassName
                                       ? std::string_view(site.module_class)
                                       : std::string_view(subject);
        trace->push_back(
            {group.name, std::string(subject), rule.matcher.kind(), rule.matcher.pattern(),
             rule.source, *hit,
             fmt::format("{} \"{}\" {} \"{}\"", MatchKindName(rule.matcher.kind()),
                         rule.matcher.pattern(), *hit ? "matches" : "does not match", against)});
      }
      if (*hit) return {&rule, std::nullopt, std::nullopt};
    }
    return {};
  }

  GroupOutcome ScreenedFirstHit(const RuleGroup& group, std::string_view subject) {
    thread_local std::vector<uint32_t> candidates;
    IndexOf(group).Candidates(subject, &candidates);
    for (uint32_t i : candidates) {
      const Rule& rule = group.rules[i];
      if ((rule.kinds & KindBit(site.kind)) == 0) continue;
      Result<bool> hit = rule.matcher.Matches(subject, site.module_class);
      if (!hit.ok()) return {nullptr, MatcherError(rule, hit.status()), std::nullopt};
      if (*hit) return {&rule, std::nullopt, std::nullopt};
    }
    return {};
  }

  // A leg's outcome in a disagreement message; a scheme is named so that two quantize outcomes
  // that differ can be told apart.
  static std::string Describe(const Rule* rule) {
    if (rule == nullptr) return "no rule";
    switch (rule->action.kind) {
      case ActionKind::kQuantize:
        return rule->action.scheme ? "quantize " + rule->action.scheme->CanonicalName()
                                   : "quantize";
      case ActionKind::kSkip:
        return "skip";
      case ActionKind::kFail:
        return "fail";
    }
    return "?";
  }

  static bool SameAction(const Rule* a, const Rule* b) {
    if ((a == nullptr) != (b == nullptr)) return false;
    if (a == nullptr) return true;
    return a->action.kind == b->action.kind && a->action.scheme == b->action.scheme;
  }

  // The path a leg is matched under: expert 0's projection for MoE sites.
  const std::string& LegSubject(size_t leg) {
    if (!legs_built) {
      leg_subjects->resize(site.legs.size());
      for (size_t i = 0; i < site.legs.size(); ++i) BuildLegSubject(site, i, &(*leg_subjects)[i]);
      legs_built = true;
    }
    return (*leg_subjects)[leg];
  }

  // Every leg resolved on its own; they must agree.
  GroupOutcome LegsMustAgree(const RuleGroup& group) {
    thread_local std::vector<const Rule*> hits;
    hits.clear();
    for (size_t i = 0; i < site.legs.size(); ++i) {
      GroupOutcome leg = FirstHit(group, LegSubject(i));
      if (leg.error) return leg;
      hits.push_back(leg.rule);
    }
    for (size_t i = 1; i < hits.size(); ++i) {
      if (SameAction(hits[0], hits[i])) continue;
      const auto outcomes = [&] {
        std::vector<std::string> parts;
        for (size_t j = 0; j < hits.size(); ++j) {
          parts.push_back(fmt::format("{} → {}", site.legs[j].name, Describe(hits[j])));
        }
        return Join(parts, ", ");
      };
      std::string message =
          group.disagree_message.empty()
              ? fmt::format("the legs of fused layer {} disagree in rule group \"{}\": {}",
                            site.path, group.name, outcomes())
          : HasSitePlaceholder(group.disagree_message)
              ? ExpandSitePlaceholders(group.disagree_message, site)
              : fmt::format("{} ({}: {})", group.disagree_message, site.path, outcomes());
      return {nullptr, std::move(message), std::nullopt};
    }
    if (hits.empty() || hits[0] == nullptr) return {};
    return {hits[0], std::nullopt, 0};  // every leg agrees; the first leg's hit is the one taken
  }

  // Every leg must hit some rule; the first leg's rule decides.
  GroupOutcome AllLegsFirstRule(const RuleGroup& group) {
    const Rule* first = nullptr;
    for (size_t i = 0; i < site.legs.size(); ++i) {
      GroupOutcome leg = FirstHit(group, LegSubject(i));
      if (leg.error) return leg;
      if (leg.rule == nullptr) return {};
      if (i == 0) first = leg.rule;
    }
    return {first, std::nullopt, 0};
  }

  GroupOutcome Evaluate(const RuleGroup& group) {
    if (group.rules.empty()) return {};  // nothing can hit, and nothing is traced
    // MoE sites are matched by their own path (engines build one module for all experts),
    // unless the group looks experts up through their projections.
    const bool moe_by_path = site.kind == SiteKind::kMoe && !group.moe_through_expert_legs;
    if (site.legs.empty() || moe_by_path || group.fused == FusedPolicy::kFusedNameOnly) {
      return FirstHit(group, site.path);
    }
    switch (group.fused) {
      case FusedPolicy::kLegsMustAgree:
        return LegsMustAgree(group);
      case FusedPolicy::kFusedNameThenLegs: {
        GroupOutcome direct = FirstHit(group, site.path);
        if (direct.rule != nullptr || direct.error) return direct;
        return LegsMustAgree(group);
      }
      case FusedPolicy::kAllLegsFirstRule: {
        GroupOutcome direct = FirstHit(group, site.path);
        if (direct.rule != nullptr || direct.error) return direct;
        return AllLegsFirstRule(group);
      }
      case FusedPolicy::kFusedNameOnly:
        break;
    }
    return FirstHit(group, site.path);
  }
};

KindPolicy PolicyFor(const QuantPlan& plan, SiteKind kind) {
  switch (kind) {
    case SiteKind::kLinear:
      return plan.linear;
    case SiteKind::kLmHead:
      return plan.lm_head;
    case SiteKind::kMoe:
      return plan.moe;
    case SiteKind::kRouter:
      return plan.router;
    case SiteKind::kEmbedding:
      return plan.embedding;
    case SiteKind::kAttention:
      return KindPolicy::kUnquantized;
  }
  return KindPolicy::kUnquantized;
}

// Why a kind the plan never quantizes stays unquantized.
std::string UnquantizedKindReason(const QuantPlan& plan, SiteKind kind) {
  switch (kind) {
    case SiteKind::kEmbedding:
      return "not a linear layer";
    case SiteKind::kRouter:
      return "router gate: built without a quantization config";
    case SiteKind::kLmHead:
      return fmt::format("{} does not quantize the LM head", plan.quant_method);
    case SiteKind::kMoe:
      return fmt::format("{} does not quantize MoE experts", plan.quant_method);
    case SiteKind::kLinear:
      return plan.default_action.message;
    case SiteKind::kAttention:
      return "no KV-cache scheme";
  }
  return "";
}

// The decision `action` makes at `site`, named by `rule`. A failure's texts may name the site
// (kSitePathPlaceholder, kLegNamesPlaceholder); every other text is shared as it is.
Decision FromAction(const Action& action, const LayerSite& site, const SharedText& rule) {
  Decision d;
  d.rule = rule;
  d.detail = action.detail;
  switch (action.kind) {
    case ActionKind::kQuantize:
      d.kind = DecisionKind::kQuantized;
      d.scheme = action.scheme;
      break;
    case ActionKind::kSkip:
      d.kind = DecisionKind::kUnquantized;
      break;
    case ActionKind::kFail:
      d.kind = DecisionKind::kError;
      if (HasSitePlaceholder(rule.str())) d.rule = ExpandSitePlaceholders(rule.str(), site);
      d.detail = HasSitePlaceholder(action.message.str())
                     ? SharedText(ExpandSitePlaceholders(action.message.str(), site))
                     : action.message;
      break;
  }
  return d;
}

bool InBlocks(const std::string& block_name, const LayerSite& site) {
  if (block_name.empty()) return site.in_decoder_block;
  return site.path.size() > block_name.size() && site.path.starts_with(block_name) &&
         site.path[block_name.size()] == '.' && !site.mtp;
}

std::string PlanSource(const QuantPlan& plan) {
  return plan.sources.empty() ? plan.quant_method : plan.sources.front().ToString();
}

// "<plan source>: <message>".
std::string PlanRuleText(const QuantPlan& plan, std::string_view message) {
  if (!plan.sources.empty()) return RuleText(plan.sources.front(), message);
  std::string out;
  out.reserve(plan.quant_method.size() + 2 + message.size());
  out += plan.quant_method;
  out += ": ";
  out += message;
  return out;
}

}  // namespace

std::optional<RankShape> RankShapeOf(const LayerSite& site, int64_t tp,
                                     const std::optional<AttentionHeads>& heads) {
  if (!site.shape) return std::nullopt;
  const auto [n, k] = *site.shape;
  RankShape r;
  if (site.kind == SiteKind::kMoe) {
    if (n % tp != 0) return std::nullopt;  // the engine's own divide() fails first
    r.split = tp > 1;
    r.moe_intermediate = n / tp;
    return r;
  }
  const TpStyle& style = site.tp_style;
  if (!style.parallel) return std::nullopt;
  const bool row = style.parallel == Parallel::kRow;
  const bool column = style.parallel == Parallel::kColumn;
  // Only the merged classes keep one partition per leg (SGLang's fused ReplicatedLinear has one).
  const bool merged = !site.legs.empty() && style.merged;
  std::vector<int64_t> sizes;
  if (merged) {
    for (const Leg& leg : site.legs) sizes.push_back(leg.rows);
  } else {
    sizes.push_back(n);
  }
  r.split = tp > 1 && (row || column);
  r.merged_column = column && merged;
  r.input = row ? k / tp : k;
  if (row && k % tp != 0) return std::nullopt;
  if (column && tp > 1) {
    const bool qkv = style.qkv && sizes.size() == 3 && heads && sizes[0] % heads->heads == 0;
    const int64_t head_dim = qkv ? sizes[0] / heads->heads : 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (qkv && i > 0 && heads->kv_heads < tp) {
        sizes[i] = head_dim;  // one replicated KV head per rank
      } else if (sizes[i] % tp != 0) {
        return std::nullopt;
      } else {
        sizes[i] /= tp;
      }
    }
    if (qkv && heads->heads % tp != 0) return std::nullopt;
  }
  r.partitions = std::move(sizes);
  return r;
}

namespace {

// The first of the plan's create_weights checks the site's per-rank shape fails, as its text.
std::optional<std::string> FailedShapeCheck(const QuantPlan& plan, const LayerSite& site,
                                            int64_t tp,
                                            const std::optional<AttentionHeads>& heads) {
  std::optional<RankShape> rank;
  for (const ShapeCheck& check : plan.shape_checks) {
    if ((check.kinds & KindBit(site.kind)) == 0) continue;
    if (!rank) rank = RankShapeOf(site, tp, heads);
    if (!rank) return std::nullopt;
    const bool fused = rank->partitions.size() > 1;
    bool runs = false;
    switch (check.when) {
      case CheckWhen::kAlways:
        runs = true;
        break;
      case CheckWhen::kTpAbove1:
        runs = tp > 1;
        break;
      case CheckWhen::kSplit:
        runs = rank->split;
        break;
      case CheckWhen::kSplitOrFused:
        runs = rank->split || fused;
        break;
    }
    if (check.ragged_merged_column_exempt > 0 && rank->merged_column &&
        std::any_of(rank->partitions.begin(), rank->partitions.end(),
                    [&](int64_t size) { return size % check.ragged_merged_column_exempt != 0; })) {
      runs = false;
    }
    if (!runs) continue;
    std::vector<int64_t> sizes;
    switch (check.dim) {
      case ShapeDim::kInput:
        sizes = {rank->input};
        break;
      case ShapeDim::kMoeIntermediate:
        sizes = {rank->moe_intermediate};
        break;
      case ShapeDim::kOutputLegs:
        sizes = rank->partitions;
        if (check.last_leg_exempt_unsplit && !rank->split && fused) sizes.pop_back();
        break;
    }
    for (int64_t size : sizes) {
      if (size % check.multiple == 0) continue;
      std::string text = check.message;
      const size_t at = text.find(kSizePlaceholder);
      if (at != std::string::npos) text.replace(at, kSizePlaceholder.size(), std::to_string(size));
      return text;
    }
  }
  return std::nullopt;
}

}  // namespace

// Each rule's decision text, "<source>: <message>", built once per group: the same text is then
// shared by every decision the rule makes.
struct RuleTexts {
  std::vector<SharedText> of_rule;
  SharedText of_group;  // what names the group when its matching fails or its legs disagree
};

// The texts of the decisions no rule makes, built once per plan.
struct PlanTexts {
  SharedText default_rule;      // the default action's
  SharedText attention_rule;    // plan.attention's
  SharedText kv_cache_rule;     // plan.kv_cache's
  SharedText blocks_only_rule;  // a linear site outside plan.blocks_only
  static constexpr size_t kKinds = static_cast<size_t>(SiteKind::kAttention) + 1;
  std::array<SharedText, kKinds> unquantized_kind;  // a kind the plan never quantizes
  std::array<SharedText, kKinds> no_rule;           // kRulesOnly: no rule names the site
};

namespace {

const RuleTexts& TextsOf(const RuleGroup& group) {
  return group.texts.Get([&] {
    auto built = std::make_unique<RuleTexts>();
    built->of_rule.reserve(group.rules.size());
    for (const Rule& r : group.rules) {
      built->of_rule.emplace_back(RuleText(r.source, r.action.message.str()));
    }
    built->of_group = fmt::format("rule group \"{}\"", group.name);
    return std::unique_ptr<const RuleTexts>(std::move(built));
  });
}

const SharedText& TextOf(const RuleGroup& group, const Rule& rule) {
  return TextsOf(group).of_rule[static_cast<size_t>(&rule - group.rules.data())];
}

const PlanTexts& TextsOf(const QuantPlan& plan) {
  return plan.texts.Get([&] {
    auto t = std::make_unique<PlanTexts>();
    t->default_rule = PlanRuleText(plan, plan.default_action.message.str());
    if (plan.attention) t->attention_rule = PlanRuleText(plan, plan.attention->message.str());
    if (plan.kv_cache) {
      t->kv_cache_rule =
          fmt::format("{}: KV cache {}", PlanSource(plan), plan.kv_cache->CanonicalName());
    }
    if (plan.blocks_only) {
      t->blocks_only_rule = fmt::format(
          "{}: {} quantizes only the linear layers of the decoder blocks{}", PlanSource(plan),
          plan.quant_method, plan.blocks_only->empty() ? "" : " under " + *plan.blocks_only);
    }
    for (size_t k = 0; k < PlanTexts::kKinds; ++k) {
      const auto kind = static_cast<SiteKind>(k);
      t->unquantized_kind[k] = UnquantizedKindReason(plan, kind);
      t->no_rule[k] = fmt::format("no rule names this {}", SiteKindName(kind));
    }
    return std::unique_ptr<const PlanTexts>(std::move(t));
  });
}

}  // namespace

std::string MatchedName(const Decision& decision, const LayerSite& site) {
  if (!decision.rule_hit) return "";
  if (!decision.leg) return site.path;
  std::string name;
  BuildLegSubject(site, *decision.leg, &name);
  return name;
}

std::string_view DecisionKindName(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::kQuantized:
      return "quantized";
    case DecisionKind::kUnquantized:
      return "unquantized";
    case DecisionKind::kError:
      return "error";
  }
  return "?";
}

Decision DecideSite(const QuantPlan& plan, const LayerSite& site, bool record_trace) {
  const PlanTexts& texts = TextsOf(plan);
  const auto kind_index = static_cast<size_t>(site.kind);
  if (site.kind == SiteKind::kAttention) {
    if (const Action* action = plan.AttentionFor(site.module_class)) {
      return FromAction(*action, site, texts.attention_rule);
    }
    Decision d;
    if (plan.attention) {
      std::string message = "the engine attaches its KV-cache method to ";
      for (size_t i = 0; i < plan.attention_classes.size(); ++i) {
        if (i > 0) message += ", ";
        message += plan.attention_classes[i];
      }
      message.append(" only; ").append(site.module_class).append(" gets none");
      d.rule = PlanRuleText(plan, message);
      d.detail = "get_quant_method returned None";
      return d;
    }
    if (plan.kv_cache) {
      d.kind = DecisionKind::kQuantized;
      d.scheme = plan.kv_cache;
      d.rule = texts.kv_cache_rule;
    } else {
      d.rule = texts.unquantized_kind[kind_index];
    }
    return d;
  }
  if (!site.quant_config_applies) {
    static const SharedText kBuiltWithout(
        "built without a quantization config by the model (no format quantizes it)");
    Decision d;
    d.rule = kBuiltWithout;
    return d;
  }
  if (plan.blocks_only && site.kind == SiteKind::kLinear && !InBlocks(*plan.blocks_only, site)) {
    Decision d;
    d.rule = texts.blocks_only_rule;
    return d;
  }
  KindPolicy policy = PolicyFor(plan, site.kind);
  if (policy == KindPolicy::kUnquantized) {
    Decision d;
    d.rule = texts.unquantized_kind[kind_index];
    return d;
  }
  std::vector<TraceStep> trace;
  thread_local std::vector<std::string> leg_subjects;
  Evaluator evaluator{site, record_trace, &trace, &leg_subjects};
  for (const RuleGroup& group : plan.groups) {
    GroupOutcome outcome = evaluator.Evaluate(group);
    if (outcome.error) {
      Decision d;
      d.kind = DecisionKind::kError;
      d.rule = TextsOf(group).of_group;
      d.detail = *std::move(outcome.error);
      d.trace = std::move(trace);
      return d;
    }
    if (outcome.rule != nullptr) {
      Decision d = FromAction(outcome.rule->action, site, TextOf(group, *outcome.rule));
      d.rule_hit = true;
      d.leg = outcome.leg;
      if (d.leg && site.kind == SiteKind::kMoe) d.expert = 0;  // expert 0 stands for all
      d.trace = std::move(trace);
      return d;
    }
  }
  Decision d;
  if (policy == KindPolicy::kRulesOnly) {
    d.rule = texts.no_rule[kind_index];
  } else {
    d = FromAction(plan.default_action, site, texts.default_rule);
  }
  d.trace = std::move(trace);
  return d;
}

std::vector<Decision> DecideSites(const QuantPlan& plan, const std::vector<LayerSite>& sites) {
  std::vector<Decision> decisions;
  decisions.reserve(sites.size());
  for (const LayerSite& site : sites) decisions.push_back(DecideSite(plan, site, false));
  return decisions;
}

void NameFindingTensors(const ModelSites& sites, QuantPlan* plan) {
  const LayerSite* first = nullptr;
  for (const LayerSite& site : sites.sites) {
    if (site.kind == SiteKind::kLinear && site.in_decoder_block && !site.mtp) {
      first = &site;
      break;
    }
  }
  for (ModelFinding& finding : plan->errors) {
    if (finding.tensor_listed || first == nullptr) continue;
    std::string module = first->legs.empty() ? first->path : first->LegPath(0);
    if (first->legs.empty() && !first->checkpoint_path.empty()) module = first->checkpoint_path;
    finding.tensor = module + "." + finding.implied_suffix;
    const size_t at = finding.message.find(kTensorPlaceholder);
    if (at != std::string::npos) {
      finding.message.replace(at, kTensorPlaceholder.size(), finding.tensor);
    }
  }
}

void ApplyShapeChecks(const QuantPlan& plan, const LayerSite& site, int64_t tp_size,
                      const std::optional<AttentionHeads>& heads, Decision* decision) {
  if (decision->kind != DecisionKind::kQuantized) return;
  std::optional<std::string> failed = FailedShapeCheck(plan, site, tp_size, heads);
  if (!failed) return;
  decision->kind = DecisionKind::kError;
  decision->rule = fmt::format("{}; the method then rejects the weights it creates at --tp {}",
                               decision->rule.str(), tp_size);
  decision->detail = *std::move(failed);
  decision->scheme.reset();
}

std::optional<AttentionHeads> ReadAttentionHeads(const ConfigSources& sources) {
  const Json* text = sources.text_config();
  const Json* heads = text != nullptr ? text->FindNonNull("num_attention_heads") : nullptr;
  if (heads == nullptr || !heads->is_int() || heads->int_value() <= 0) return std::nullopt;
  const Json* kv = text->FindNonNull("num_key_value_heads");
  const int64_t kv_heads =
      kv != nullptr && kv->is_int() && kv->int_value() > 0 ? kv->int_value() : heads->int_value();
  return AttentionHeads{heads->int_value(), kv_heads};
}

}  // namespace quantpath
