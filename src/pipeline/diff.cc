// Plans one folder under several dialects, lines the sites up by their checkpoint names and keeps
// what differs in what is stored or computed; the rest becomes notes (the report prints them).
#include <algorithm>
#include <map>

#include "fmt/format.h"
#include "quantpath/pipeline.h"
#include "src/pipeline/engine_kernel.h"
#include "src/pipeline/model_folder.h"

namespace quantpath {
namespace {

// One dialect's plan of the folder.
struct DialectRun {
  Dialect dialect;
  ModelSites sites;
  Status plan_status;               // why the quantization config did not import
  std::optional<QuantPlan> plan;    // when it did
  std::vector<Decision> decisions;  // per site, without traces; empty without a plan
};

// Sites → plan → decisions for every dialect, the folder read once, each plan imported as
// OpenModel imports it.
Result<std::vector<DialectRun>> PlanDialects(const std::string& given, const DiffOptions& options) {
  OpenOptions open;
  open.quantization = options.quantization;
  open.launch = options.launch;
  QP_ASSIGN_OR_RETURN(pipeline_internal::ModelFolder folder,
                      pipeline_internal::ReadModelFolder(given, open));
  const std::optional<AttentionHeads> heads = ReadAttentionHeads(folder.sources);
  std::vector<DialectRun> runs;
  for (const Dialect& dialect : options.dialects) {
    DialectRun& run = runs.emplace_back();
    run.dialect = dialect;
    open.dialect = dialect;
    QP_ASSIGN_OR_RETURN(run.sites, BuildModelSites(folder.sources, dialect, options.launch));
    Result<QuantPlan> plan = pipeline_internal::ImportModelPlan(folder, open);
    if (!plan.ok()) {
      run.plan_status = plan.status();
      continue;
    }
    run.plan = *std::move(plan);
    NameFindingTensors(run.sites, &*run.plan);
    // Traces are recorded later, for the sites that differ only: a plan with hundreds of
    // exclusions would otherwise keep millions of steps.
    QP_ASSIGN_OR_RETURN(run.decisions, DecidePlanSites(*run.plan, run.sites.sites));
    for (size_t i = 0; i < run.decisions.size(); ++i) {
      ApplyShapeChecks(*run.plan, run.sites.sites[i], options.launch.tp_size, heads,
                       &run.decisions[i]);
      ApplyEngineKernel(*run.plan, options.launch.platform, run.sites.sites[i], &run.decisions[i]);
    }
  }
  return runs;
}

// An engine that attaches a KV-cache method to attention without a KV scheme stores and computes
// what an unquantized attention layer does (the cache keeps the model's dtype unless the engine
// is told otherwise).
bool KvMethodOnly(const Decision& d, SiteKind kind) {
  return kind == SiteKind::kAttention && d.kind == DecisionKind::kQuantized && !d.scheme;
}

DecisionKind StoredKind(const Decision& d, SiteKind kind) {
  return KvMethodOnly(d, kind) ? DecisionKind::kUnquantized : d.kind;
}

// Whether two decisions store or compute the same thing.
bool SameOutcome(const Decision& a, const Decision& b, SiteKind kind) {
  if (StoredKind(a, kind) != StoredKind(b, kind)) return false;
  return StoredKind(a, kind) != DecisionKind::kQuantized || a.scheme == b.scheme;
}

// The sites of every dialect under one checkpoint key.
struct Aligned {
  SiteKind kind = SiteKind::kLinear;
  std::vector<std::vector<size_t>> sites;  // per dialect, indices into its ModelSites::sites
};

// Keys in the reference's construction order, then those only later dialects have.
std::vector<std::pair<std::string, Aligned>> Align(const std::vector<DialectRun>& runs) {
  std::vector<std::pair<std::string, Aligned>> order;
  std::map<std::string, size_t> index;
  for (size_t d = 0; d < runs.size(); ++d) {
    const std::vector<LayerSite>& sites = runs[d].sites.sites;
    for (size_t i = 0; i < sites.size(); ++i) {
      auto [it, inserted] = index.try_emplace(sites[i].CheckpointKey(), order.size());
      if (inserted) {
        order.emplace_back(it->first, Aligned{sites[i].kind, {}});
        order.back().second.sites.resize(runs.size());
      }
      order[it->second].second.sites[d].push_back(i);
    }
  }
  return order;
}

// The decisions of a differing layer again, with the rules that decided.
void AddTraces(const std::vector<DialectRun>& runs, const Aligned& aligned, LayerDiff* layer) {
  for (size_t d = 0; d < runs.size(); ++d) {
    if (!layer->dialects[d].decision) continue;
    layer->dialects[d].decision =
        DecideSite(*runs[d].plan, runs[d].sites.sites[aligned.sites[d][0]], /*record_trace=*/true);
  }
}

// Notes of one kind and dialect, counted, with the first example.
class NoteBook {
 public:
  void Add(const std::string& dialect, std::string_view kind, const std::string& example) {
    auto [it, inserted] = index_.try_emplace({dialect, std::string(kind)}, notes_.size());
    if (inserted) notes_.push_back({dialect, std::string(kind), 0, example});
    ++notes_[it->second].count;
  }
  // The notes with their text, grouped by dialect in `dialects` order.
  std::vector<DiffNote> Finish(const std::vector<std::string>& dialects) &&;

 private:
  std::map<std::pair<std::string, std::string>, size_t> index_;
  std::vector<DiffNote> notes_;
};

std::string_view Plural(int64_t n, std::string_view one, std::string_view many) {
  return n == 1 ? one : many;
}

std::vector<DiffNote> NoteBook::Finish(const std::vector<std::string>& dialects) && {
  auto rank = [&](const DiffNote& note) {
    return std::find(dialects.begin(), dialects.end(), note.dialect) - dialects.begin();
  };
  std::stable_sort(notes_.begin(), notes_.end(),
                   [&](const DiffNote& a, const DiffNote& b) { return rank(a) < rank(b); });
  for (DiffNote& note : notes_) {
    const std::string more =
        note.count > 1 ? fmt::format(" (and {} more)", note.count - 1) : std::string();
    if (note.kind == "naming") {
      note.text = fmt::format("names {} {} differently (aligned by checkpoint name), e.g. {}{}",
                              note.count, Plural(note.count, "site", "sites"), note.text, more);
    } else if (note.kind == "missing") {
      note.text = fmt::format(
          "makes no get_quant_method call for {} {} that another dialect lists (built without a "
          "quantization config, or not built), e.g. {}{}",
          note.count, Plural(note.count, "module", "modules"), note.text, more);
    } else if (note.kind == "empty_prefix") {
      note.text = fmt::format(
          "builds {} {} with an empty prefix, so no name-based rule of the config reaches "
          "{}, e.g. {}{}",
          note.count, Plural(note.count, "layer", "layers"), Plural(note.count, "it", "them"),
          note.text, more);
    } else if (note.kind == "kv_method") {
      note.text = fmt::format(
          "attaches a KV-cache method without a KV-cache scheme to {} attention {} (the cache "
          "keeps the model's dtype; not counted as a difference), e.g. {}{}",
          note.count, Plural(note.count, "layer", "layers"), note.text, more);
    } else {
      note.text = fmt::format("errors with another text than the reference at {} {}, e.g. {}{}",
                              note.count, Plural(note.count, "layer", "layers"), note.text, more);
    }
  }
  return std::move(notes_);
}

// Fills `layer.dialects[d]` for every dialect and decides which ones differ from the reference.
// Returns false when no dialect decided the key (every plan failed for it).
bool Compare(const std::vector<DialectRun>& runs, const Aligned& aligned, LayerDiff* layer,
             NoteBook* notes) {
  bool reference_found = false;
  for (size_t d = 0; d < runs.size(); ++d) {
    DialectDecision& mine = layer->dialects.emplace_back();
    for (size_t i : aligned.sites[d]) mine.paths.push_back(runs[d].sites.sites[i].path);
    if (aligned.sites[d].empty() || runs[d].decisions.empty()) continue;
    mine.decision = runs[d].decisions[aligned.sites[d][0]];
    // Sites sharing a key in one dialect (SGLang's two MLA attention modules) must agree too.
    for (size_t i : aligned.sites[d]) {
      if (!SameOutcome(*mine.decision, runs[d].decisions[i], aligned.kind)) mine.differs = true;
    }
    if (!reference_found) {
      reference_found = true;
      layer->reference = d;
    }
  }
  if (!reference_found) return false;
  const DialectDecision& ref = layer->dialects[layer->reference];
  for (size_t d = 0; d < runs.size(); ++d) {
    DialectDecision& mine = layer->dialects[d];
    const std::string name(runs[d].dialect.name);
    if (mine.paths.empty()) {
      notes->Add(name, "missing", fmt::format("{} ({})", ref.paths[0], layer->key));
      continue;
    }
    for (size_t i : aligned.sites[d]) {
      const LayerSite& site = runs[d].sites.sites[i];
      if (site.path.empty()) notes->Add(name, "empty_prefix", site.checkpoint_path);
    }
    if (mine.paths != ref.paths) {
      notes->Add(name, "naming",
                 fmt::format("{} for {}'s {}", Join(mine.paths, " + "),
                             runs[layer->reference].dialect.name, Join(ref.paths, " + ")));
    }
    if (!mine.decision) continue;
    mine.kv_method_only = KvMethodOnly(*mine.decision, layer->kind);
    if (mine.kv_method_only) {
      notes->Add(name, "kv_method", fmt::format("{} ({})", mine.paths[0], mine.decision->detail));
    }
    if (d == layer->reference) continue;
    if (!SameOutcome(*mine.decision, *ref.decision, layer->kind)) {
      mine.differs = true;
    } else if (mine.decision->kind == DecisionKind::kError &&
               mine.decision->detail != ref.decision->detail) {
      notes->Add(name, "error_text", mine.paths[0]);
    }
  }
  return true;
}

// Adds one aligned key to the per-dialect summaries (every key counts, not only differing ones).
void Summarize(const std::vector<DialectRun>& runs, const Aligned& aligned, const LayerDiff& layer,
               std::vector<EngineSummary>* summaries) {
  const std::optional<Decision>& native = layer.dialects[0].decision;
  for (size_t d = 0; d < runs.size(); ++d) {
    if (runs[d].decisions.empty()) continue;
    EngineSummary& s = (*summaries)[d];
    // Each site on its own, where two share a key.
    for (size_t i : aligned.sites[d]) {
      const Decision& decision = runs[d].decisions[i];
      const DecisionKind stored = StoredKind(decision, aligned.kind);
      s.quantized += stored == DecisionKind::kQuantized;
      s.unquantized += stored == DecisionKind::kUnquantized;
      s.errors += stored == DecisionKind::kError;
      if (stored == DecisionKind::kError && s.first_error_layer.empty()) {
        // A site built without a prefix is named by its checkpoint path.
        const LayerSite& site = runs[d].sites.sites[i];
        s.first_error_layer = site.path.empty() ? site.checkpoint_path : site.path;
        s.first_error = decision.detail;
      }
      if (d > 0 && native && native->kind == DecisionKind::kQuantized &&
          stored == DecisionKind::kUnquantized) {
        ++s.unquantized_meant;
      }
    }
  }
}

// A model-level finding (the engine does not detect the method) fails the load before any layer.
void SummarizeFindings(const DialectRun& run, EngineSummary* s) {
  if (!run.plan || run.plan->errors.empty()) return;
  const ModelFinding& finding = run.plan->errors.front();
  s->first_error_layer = finding.tensor;
  s->first_error = finding.message;
}

void FinishSummary(EngineSummary* s) {
  if (!s->config_error.empty()) {
    s->loads = false;
    s->line = "errors at config: " + s->config_error;
  } else if (!s->first_error_layer.empty()) {
    s->loads = false;
    s->line = fmt::format("errors at {}: {}", s->first_error_layer, s->first_error);
  } else if (s->unquantized_meant > 0) {
    s->line = fmt::format("loads with {} layers unquantized that the file meant to quantize",
                          s->unquantized_meant);
  } else {
    s->line = "loads";
  }
}

}  // namespace

std::vector<Dialect> DefaultDiffDialects() {
  return {DialectAt(DialectId::kNative), NewestRelease(Engine::kVllm),
          NewestRelease(Engine::kSglang)};
}

Result<std::vector<Dialect>> ParseDiffEngines(std::string_view list) {
  if (list == "all")
    return std::vector<Dialect>(std::begin(kDialectTable), std::end(kDialectTable));
  std::vector<Dialect> dialects = {DialectAt(DialectId::kNative)};
  for (const std::string& name : Split(list, ',')) {
    std::optional<Dialect> dialect = ParseDialect(name);
    if (!dialect) {
      const std::vector<std::string_view> names = DialectChoices();
      return InvalidInput(fmt::format("--engines: expected \"all\" or names from {}, got \"{}\"",
                                      Join({names.begin(), names.end()}, ", "), name));
    }
    if (dialect->engine == Engine::kNative) continue;  // always first already
    for (const Dialect& seen : dialects) {
      if (seen.name == dialect->name) {
        return InvalidInput(fmt::format("--engines: \"{}\" is named twice", name));
      }
    }
    dialects.push_back(*dialect);
  }
  return dialects;
}

int64_t ModelDiff::Differences() const {
  const auto failed = [](const EngineSummary& s) { return !s.config_error.empty(); };
  const bool some_fail = std::any_of(summaries.begin(), summaries.end(), failed);
  const bool all_fail = std::all_of(summaries.begin(), summaries.end(), failed);
  return static_cast<int64_t>(layers.size()) + (some_fail && !all_fail ? 1 : 0);
}

Result<ModelDiff> DiffDialects(const std::string& dir, const DiffOptions& options) {
  if (options.dialects.empty() || options.dialects[0].engine != Engine::kNative) {
    return InternalError("DiffDialects: the first dialect must be native");
  }
  QP_ASSIGN_OR_RETURN(std::vector<DialectRun> runs, PlanDialects(dir, options));
  ModelDiff diff;
  diff.model = dir;
  diff.architecture = runs[0].sites.architecture;
  bool any_plan = false;
  for (const DialectRun& run : runs) {
    diff.dialects.emplace_back(run.dialect.name);
    EngineSummary& s = diff.summaries.emplace_back();
    s.dialect = run.dialect.name;
    if (!run.plan_status.ok()) s.config_error = run.plan_status.message();
    SummarizeFindings(run, &s);
    any_plan |= run.plan_status.ok();
  }
  // No dialect could read the quantization config: nothing to compare.
  if (!any_plan) return runs[0].plan_status;
  NoteBook notes;
  for (auto& [key, aligned] : Align(runs)) {
    LayerDiff layer;
    layer.key = key;
    layer.kind = aligned.kind;
    if (!Compare(runs, aligned, &layer, &notes)) continue;
    Summarize(runs, aligned, layer, &diff.summaries);
    bool differs = false;
    for (const DialectDecision& mine : layer.dialects) differs |= mine.differs;
    if (!differs) continue;
    AddTraces(runs, aligned, &layer);
    diff.layers.push_back(std::move(layer));
  }
  for (EngineSummary& s : diff.summaries) FinishSummary(&s);
  diff.notes = std::move(notes).Finish(diff.dialects);
  return diff;
}

}  // namespace quantpath
