// CheckFolder: the checkpoint's headers held against the plan, site by site (`quantpath check`),
// then the values the headers let it find (check_values.cc).
//
// Goals: every finding at once, each naming the file, the tensor and the layer, first from the
// index and the headers alone (AuditCheckpoint), so that a 700 GB checkpoint's structure is checked
// in the time its headers take to parse. The tensors a site reads are those of its source layout
// (SourceTensors, the table the loaders share): required ones must be there, optional ones are
// read when the spec's row has their slot, as LoadModel consumes them, each of the dtype and shape
// the table's rule derives from the leg and the scheme (packing, groups, blocks, globals,
// experts). A leg whose headers pass has its non-code tensors read (CheckReads::kValues), or every
// tensor is (kEveryByte).
// Non-goals: the product of a layer (`run` measures that).
#include <algorithm>
#include <filesystem>
#include <unordered_set>
#include <vector>

#include "fmt/format.h"
#include "quantpath/materialize.h"
#include "quantpath/pipeline.h"
#include "src/pipeline/check_values.h"
#include "src/pipeline/kv_scales.h"
#include "src/pipeline/model_folder.h"
#include "src/pipeline/run_compare.h"

namespace quantpath {
namespace {

Finding FindingOf(const CheckpointProblem& p) {
  return {FindingKind::kCheckpoint, p.kind, p.error, p.file, p.tensor, "", "", "", p.message};
}

// A site's leg (or an expert projection's) checkpoint prefix and the leg's whole [rows, cols]
// (zero where the config gives no shape); `experts` > 0 where one tensor stacks every expert.
struct Module {
  std::string prefix;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t experts = 0;
  // The shape of its unquantized weight; nullopt where unknown or stacked.
  std::optional<std::vector<int64_t>> DenseShape() const {
    if (rows == 0 || experts > 0) return std::nullopt;
    return std::vector<int64_t>{rows, cols};
  }
};

SourceLeg DenseLeg(int64_t rows, int64_t cols) {
  SourceLeg leg;
  leg.rows = rows;
  leg.cols = cols;
  return leg;
}

class Checker {
 public:
  Checker(const Model& model, CheckpointAudit audit, const CheckReading& reading)
      : model_(model), audit_(std::move(audit)), reading_(reading) {
    by_name_.reserve(audit_.tensors.size());
    for (const AuditedTensor& t : audit_.tensors) by_name_.push_back(&t);
    std::sort(by_name_.begin(), by_name_.end(),
              [](const AuditedTensor* a, const AuditedTensor* b) { return a->name < b->name; });
  }

  Result<CheckReport> Run() {
    report_.tensors = static_cast<int64_t>(audit_.tensors.size());
    report_.not_checked = audit_.unread_files;
    for (const CheckpointProblem& p : audit_.problems) Add(FindingOf(p));
    QP_ASSIGN_OR_RETURN(std::vector<LayerDecision> decisions, DecideAll(model_));
    for (const LayerDecision& decision : decisions) CheckSite(*decision.site, decision);
    for (const LayerDecision& decision : decisions) CheckKvScales(*decision.site, decision);
    CheckOthers();
    CheckLeftOver();
    CheckSplits(decisions);
    ReadValues();
    return std::move(report_);
  }

 private:
  void CheckSite(const LayerSite& site, const LayerDecision& decision) {
    if (site.kind == SiteKind::kAttention) return;
    const std::string& path = site.path.empty() ? site.checkpoint_path : site.path;
    if (decision.decision.kind == DecisionKind::kError) {
      const std::vector<Module> modules = Modules(site);
      const AuditedTensor* first = FirstTensorOf(modules);
      const std::string file = FileOf(modules);
      const std::string tensor = first != nullptr ? std::string(first->name) : "";
      Add({FindingKind::kDecidedError, std::nullopt, true, file, tensor, path, "", "",
           fmt::format("{}: {}layer {}: decided error: {}", file,
                       tensor.empty() ? "" : fmt::format("tensor {} of ", tensor), path,
                       decision.decision.detail.str())});
      ConsumeNames(site);  // its tensors are its own, whatever the engine makes of them
      return;
    }
    const bool quantized = decision.decision.kind == DecisionKind::kQuantized &&
                           decision.decision.scheme && !decision.decision.scheme->online;
    if (site.kind == SiteKind::kLmHead && site.params == 0) {
      // A tied head: a copy some checkpoints still store is the head's, and never read.
      Consume(Prefix(site) + ".weight");
      return;
    }
    if (!quantized) {
      CheckDense(site, path);
      return;
    }
    if (!decision.spec) {
      Add({FindingKind::kNoSpec, std::nullopt, true, FileOf(Modules(site)), "", path, "", "",
           fmt::format("{}: {} has no spec: {}", path, decision.decision.scheme->CanonicalName(),
                       decision.spec_note)});
    }
    CheckQuantized(site, path, *decision.decision.scheme, decision.spec);
  }

  // An attention site whose KV cache is quantized reads the KV-cache scales stored under its
  // module (after every layer took its own: a projection's output_scale may be its activations').
  // Each divides the keys or values going into the cache: finite and positive.
  void CheckKvScales(const LayerSite& site, const LayerDecision& decision) {
    if (site.kind != SiteKind::kAttention || decision.decision.kind != DecisionKind::kQuantized) {
      return;
    }
    const std::string prefix = pipeline_internal::KvScaleModule(site) + ".";
    for (auto it = FirstWithPrefix(prefix); it != by_name_.end() && (*it)->name.starts_with(prefix);
         ++it) {
      const std::string name((*it)->name);
      if (consumed_.contains(name) ||
          !pipeline_internal::IsKvScaleName(std::string_view(name).substr(prefix.size()))) {
        continue;
      }
      Consume(name);
      Value(**it, site.path, SourceValues::kDivisor, {}, "");
      const std::optional<std::string> skipped = pipeline_internal::KvScaleNotLoaded(
          model_.plan.dialect, model_.sites.architecture, model_.plan.importer, site, name);
      if (!skipped) continue;
      const std::string& file = audit_.FileOf(**it);
      Add({FindingKind::kSkipped, std::nullopt, false, file, name, site.path, "", "",
           fmt::format("{}: tensor {} of attention layer {} is skipped by the engine: {}", file,
                       name, site.path, *skipped)});
    }
  }

  // An unquantized site reads `.weight` (and its bias) in bf16, fp16 or fp32, of its shape.
  void CheckDense(const LayerSite& site, const std::string& path) {
    for (const Module& module : Modules(site)) {
      const std::string name = module.prefix + ".weight";
      const AuditedTensor* t = audit_.Find(name);
      if (t == nullptr) {
        const std::optional<std::string> quantized = QuantizedCompanion(module.prefix);
        if (quantized) {
          Add({FindingKind::kStoredQuantized, std::nullopt, true,
               audit_.FileOf(*audit_.Find(*quantized)), *quantized, path, "an unquantized " + name,
               *quantized,
               fmt::format("{}: tensor {} of layer {}: the plan leaves the layer unquantized "
                           "(expects {}), but the checkpoint stores it quantized",
                           audit_.FileOf(*audit_.Find(*quantized)), *quantized, path, name)});
          ConsumeLayout(module.prefix);
        } else {
          Missing(name, path, FileOf({module}));
        }
        continue;
      }
      Consume(name);
      if (!t->dtype) continue;  // known from the index only
      // An embedding's or a head's padding rows are zero by design.
      const bool rows = site.kind == SiteKind::kLinear || site.kind == SiteKind::kMoe;
      Value(*t, path, SourceValues::kCodes, DenseLeg(rows ? module.rows : 0, module.cols),
            module.prefix);
      if (!IsUnquantized(*t->dtype)) {
        Add({FindingKind::kStoredQuantized, std::nullopt, true, audit_.FileOf(*t), name, path,
             "BF16, F16 or F32", std::string(StDtypeName(*t->dtype)),
             fmt::format("{}: tensor {} of layer {} is {}, but the plan leaves the layer "
                         "unquantized (expects BF16, F16 or F32)",
                         audit_.FileOf(*t), name, path, StDtypeName(*t->dtype))});
        ConsumeLayout(module.prefix);
      } else if (const auto shape = module.DenseShape(); shape && t->shape != *shape) {
        WrongShape(*t, path, pipeline_internal::ShapeText(*shape));
      }
    }
    CheckBias(site, SourceLayout::kDense, path);
  }

  // A quantized site reads its layout's tensors under every module: the required ones, and the
  // optional ones whose slot its spec holds.
  void CheckQuantized(const LayerSite& site, const std::string& path, const QuantScheme& scheme,
                      const std::optional<SpecKey>& key) {
    const SourceLayout layout = scheme.weight.load.layout;
    std::vector<Slot> slots;
    if (key) {
      const Result<ActivationQuant> act = ActivationQuantFor(scheme);
      const Result<const SpecFamilyRow*> row = FamilyRowFor(*key);
      if (act.ok() && row.ok()) slots = (*row)->Slots(*key, *act);
    }
    for (const Module& module : Modules(site)) {
      const size_t findings = report_.findings.size();
      const SourceLeg leg{module.rows, module.cols, module.experts, scheme.weight};
      std::vector<pipeline_internal::ValueTensor> values;
      const std::optional<std::string_view> weight = SourceSuffix(layout, Slot::kWeight);
      const std::string weight_name = module.prefix + std::string(weight.value_or(".weight"));
      if (audit_.Find(weight_name) == nullptr && layout != SourceLayout::kDense) {
        const AuditedTensor* dense = audit_.Find(module.prefix + ".weight");
        if (dense != nullptr && dense->dtype && IsUnquantized(*dense->dtype)) {
          Add({FindingKind::kStoredUnquantized, std::nullopt, true, audit_.FileOf(*dense),
               std::string(dense->name), path, weight_name, std::string(dense->name),
               fmt::format("{}: tensor {} of layer {} is {}, but the plan quantizes the layer as "
                           "{} (expects {})",
                           audit_.FileOf(*dense), dense->name, path, StDtypeName(*dense->dtype),
                           scheme.CanonicalName(), weight_name)});
          Consume(std::string(dense->name));
          continue;
        }
      }
      for (const SourceTensor& tensor : SourceTensors(layout)) {
        const std::string name = module.prefix + std::string(tensor.suffix);
        // An optional tensor is needed where the spec holds its slot (a static input scale, an
        // asymmetric zero point), but for the bias (CheckBias) and AWQ's input prescale, which
        // ModelOpt writes only on the layers whose prescale it could not fold into a norm.
        const bool held =
            tensor.slot && std::find(slots.begin(), slots.end(), *tensor.slot) != slots.end();
        const bool needed =
            held && *tensor.slot != Slot::kBias && *tensor.slot != Slot::kPreQuantScale;
        const bool read = tensor.required || tensor.always_read || !tensor.slot || held;
        if (const AuditedTensor* t = audit_.Find(name)) {
          if (!read) continue;
          Consume(name);
          if (tensor.rule != nullptr && module.rows > 0 && t->dtype) {
            if (const std::optional<SourceTensorRule> rule = tensor.rule(leg)) {
              CheckRule(*t, path, scheme, *rule);
            }
          }
          values.push_back({t, path, SourceValuesOf(tensor), leg, module.prefix});
        } else if (tensor.required || needed) {
          Missing(name, path, FileOf({module}));
        }
      }
      // Values are read only where the headers give them a meaning.
      if (report_.findings.size() != findings) continue;
      for (pipeline_internal::ValueTensor& v : values) {
        Value(*v.tensor, v.layer, v.values, v.leg, v.prefix);
      }
    }
    CheckBias(site, layout, path);
  }

  // Reads `t`'s values by `values` later (ReadValues), if the reading asks for them.
  void Value(const AuditedTensor& t, const std::string& layer, SourceValues values,
             const SourceLeg& leg, const std::string& prefix) {
    if (reading_.reads == CheckReads::kHeaders || !t.dtype) return;
    if (values == SourceValues::kCodes && reading_.reads != CheckReads::kEveryByte) return;
    if (!valued_.insert(t.name).second) return;
    values_.push_back({&t, layer, values, leg, prefix});
  }

  // The second pass: the values found above; with --deep, every other tensor's bytes too.
  void ReadValues() {
    if (reading_.reads == CheckReads::kHeaders) return;
    if (reading_.reads == CheckReads::kEveryByte) {
      for (const AuditedTensor& t : audit_.tensors) Value(t, "", SourceValues::kCodes, {}, "");
    }
    pipeline_internal::ValueReport read =
        pipeline_internal::ReadValues(audit_, std::move(values_), reading_.progress);
    for (Finding& finding : read.findings) Add(std::move(finding));
    report_.reads = reading_.reads;
    report_.bytes_read = read.bytes;
    report_.read_seconds = read.seconds;
    report_.read_files = audit_.files;
    report_.read_stretches = std::move(read.stretches);
  }

  // A quantized tensor of the dtype and shape its layout's producers write for the leg.
  void CheckRule(const AuditedTensor& t, const std::string& path, const QuantScheme& scheme,
                 const SourceTensorRule& rule) {
    const std::string& file = audit_.FileOf(t);
    if (!rule.AcceptsDtype(*t.dtype)) {
      Add({FindingKind::kDtype, std::nullopt, true, file, std::string(t.name), path,
           rule.DtypesText(), std::string(StDtypeName(*t.dtype)),
           fmt::format("{}: tensor {} of layer {} is {}, but {} in {} stores it as {}", file,
                       t.name, path, StDtypeName(*t.dtype), scheme.CanonicalName(),
                       SourceLayoutName(scheme.weight.load.layout), rule.DtypesText())});
    } else if (!rule.AcceptsShape(t.shape)) {
      WrongShape(t, path, rule.ShapesText());
    }
  }

  void WrongShape(const AuditedTensor& t, const std::string& path, const std::string& expected) {
    const std::string& file = audit_.FileOf(t);
    const std::string found = pipeline_internal::ShapeText(t.shape);
    Add({FindingKind::kShape, std::nullopt, true, file, std::string(t.name), path, expected, found,
         fmt::format("{}: tensor {} of layer {}: shape {}, expected {}", file, t.name, path, found,
                     expected)});
  }

  void CheckBias(const LayerSite& site, SourceLayout layout, const std::string& path) {
    if (!site.bias) return;
    const std::string suffix(SourceSuffix(layout, Slot::kBias).value_or(".bias"));
    for (const Module& module : Modules(site)) {
      const std::string name = module.prefix + suffix;
      if (const AuditedTensor* t = audit_.Find(name)) {
        Consume(name);
        if (layout != SourceLayout::kDense) {
          Value(*t, path, SourceValues::kFinite, DenseLeg(module.rows, module.cols), module.prefix);
        }
      } else {
        Missing(name, path, FileOf({module}));
      }
    }
  }

  // Every non-layer parameter the architecture has is there with its shape.
  void CheckOthers() {
    for (const OtherTensor& other : model_.sites.other_tensors) {
      const AuditedTensor* t = audit_.Find(other.name);
      if (t == nullptr) {
        Missing(other.name, "", FileNear(other.name));
        continue;
      }
      Consume(other.name);
      if (t->dtype && !other.shape.empty() && t->shape != other.shape) {
        Add({FindingKind::kShape, std::nullopt, true, audit_.FileOf(*t), other.name, "",
             pipeline_internal::ShapeText(other.shape), pipeline_internal::ShapeText(t->shape),
             fmt::format("{}: tensor {}: shape {}, but {} has it {}", audit_.FileOf(*t), other.name,
                         pipeline_internal::ShapeText(t->shape), model_.sites.architecture,
                         pipeline_internal::ShapeText(other.shape))});
      }
    }
  }

  // Every layer at every tensor-parallel size up to 16, and the launch's size as findings.
  void CheckSplits(const std::vector<LayerDecision>& decisions) {
    struct Split {
      const LayerSite* site;
      std::shared_ptr<const WeightSpec> spec;  // null for an embedding, split by its vocabulary
    };
    std::vector<Split> splits;
    for (const LayerDecision& decision : decisions) {
      const LayerSite& site = *decision.site;
      if (site.kind == SiteKind::kAttention || decision.decision.kind == DecisionKind::kError ||
          (site.kind == SiteKind::kLmHead && site.params == 0)) {
        continue;
      }
      if (site.kind == SiteKind::kEmbedding) {
        splits.push_back({&site, nullptr});
        continue;
      }
      // Without a spec: a no-spec finding.
      if (decision.weight_spec != nullptr) splits.push_back({&site, decision.weight_spec});
    }
    const auto fits = [&](const Split& split, int64_t tp) -> Status {
      const LayerSite& site = *split.site;
      if (split.spec == nullptr) {
        const int64_t vocab = site.shape ? (*site.shape)[0] : 0;
        if (vocab % tp == 0) return {};
        return InvalidInput(
            fmt::format("{}: the vocabulary of {} rows is not divisible by {} (split unpadded)",
                        site.path, vocab, tp));
      }
      return site.kind == SiteKind::kMoe
                 ? pipeline_internal::ExpertsFit(*split.spec, model_, site, tp)
                 : pipeline_internal::LayerFits(model_, site, *split.spec, tp);
    };
    for (int64_t tp = 1; tp <= 16; ++tp) {
      if (std::all_of(splits.begin(), splits.end(),
                      [&](const Split& split) { return fits(split, tp).ok(); })) {
        report_.loadable_tp.push_back(tp);
      }
    }
    const int64_t tp = model_.launch.tp_size;
    if (tp == 1) return;
    for (const Split& split : splits) {
      const Status status = fits(split, tp);
      if (status.ok()) continue;
      const std::string legal = pipeline_internal::LegalTpSizes(
          [&](int64_t size) { return size <= 16 && fits(split, size).ok(); });
      Add({FindingKind::kTensorParallel, std::nullopt, true, FileOf(Modules(*split.site)), "",
           split.site->path, fmt::format("--tp {}", tp), "",
           fmt::format("{} at --tp {}: {}; legal --tp: {}", split.site->path, tp, status.message(),
                       legal)});
    }
  }

  // Tensors no site and no parameter read: the engines' own skips are warnings, the rest errors.
  void CheckLeftOver() {
    const std::unordered_set<std::string> unlisted(model_.sites.unlisted_modules.begin(),
                                                   model_.sites.unlisted_modules.end());
    for (const AuditedTensor* tensor : by_name_) {
      const std::string name(tensor->name);
      const std::string& file = audit_.FileOf(*tensor);
      if (consumed_.contains(name)) continue;
      if (const std::optional<std::string> skipped = SkippedBy(name)) {
        Add({FindingKind::kSkipped, std::nullopt, false, file, name, "", "", "",
             fmt::format("{}: tensor {} is skipped by the engine ({})", file, name, *skipped)});
        continue;
      }
      if (UnlistedModule(name, unlisted)) continue;
      Add({FindingKind::kUnconsumed, std::nullopt, true, file, name, "", "", "",
           fmt::format("{}: tensor {} is consumed by no layer and is no non-layer parameter of "
                       "{}",
                       file, name, model_.sites.architecture)});
    }
  }

  // Why the engines skip `name` when they load, or nullopt.
  std::optional<std::string> SkippedBy(const std::string& name) const {
    if (name.ends_with(".rotary_emb.inv_freq")) return "a rotary table it computes itself";
    for (const std::string& module : model_.sites.skipped_modules) {
      if (name.starts_with(module + ".")) {
        return fmt::format("{} is built only for speculative decoding", module);
      }
    }
    return std::nullopt;
  }

  // A module the engine builds without a quantization config and lists no site for: its weights
  // are read unquantized (LoadModel refuses them stored quantized).
  bool UnlistedModule(const std::string& name,
                      const std::unordered_set<std::string>& unlisted) const {
    for (std::string_view suffix : {".weight", ".bias"}) {
      if (!name.ends_with(suffix)) continue;
      if (unlisted.contains(name.substr(0, name.size() - suffix.size()))) return true;
    }
    return false;
  }

  std::string Prefix(const LayerSite& site) const {
    return site.checkpoint_path.empty() ? site.path : site.checkpoint_path;
  }

  // The checkpoint modules of a site, by its checkpoint path (an engine's execution name may
  // differ: vLLM's unnamed Llama embedding, renamed language-model prefixes): each leg, or each
  // expert's projections (one stacked module per projection where the checkpoint stacks them).
  std::vector<Module> Modules(const LayerSite& site) const {
    std::vector<Module> modules;
    const int64_t cols = site.shape ? (*site.shape)[1] : 0;
    const std::string base = Prefix(site);
    if (site.kind == SiteKind::kMoe) {
      std::unordered_set<std::string> seen;
      for (int64_t e = 0; e < site.experts; ++e) {
        for (size_t leg = 0; leg < site.legs.size(); ++leg) {
          std::string prefix = site.stacked_experts
                                   ? fmt::format("{}.{}", base, site.legs[leg].name)
                                   : fmt::format("{}.{}.{}", base, e, site.legs[leg].name);
          if (!seen.insert(prefix).second) continue;
          Module module{std::move(prefix)};
          if (site.shape) {
            // gate and up read the hidden state; down reads the intermediate one.
            const bool down = site.legs[leg].name == "down_proj";
            module.rows = site.legs[leg].rows;
            module.cols = down ? (*site.shape)[0] : cols;
            module.experts = site.stacked_experts ? site.experts : 0;
          }
          modules.push_back(std::move(module));
        }
      }
      return modules;
    }
    // A fused site's legs replace its last segment: …self_attn.{qkv_proj → q_proj}.
    std::vector<std::string> prefixes;
    const size_t dot = base.rfind('.');
    for (const Leg& leg : site.legs) {
      prefixes.push_back(dot == std::string::npos ? leg.name : base.substr(0, dot + 1) + leg.name);
    }
    if (prefixes.empty()) prefixes.push_back(base);
    for (size_t leg = 0; leg < prefixes.size(); ++leg) {
      Module module{prefixes[leg]};
      if (site.shape) {
        module.rows = site.legs.empty() ? (*site.shape)[0] : site.legs[leg].rows;
        module.cols = cols;
      }
      modules.push_back(std::move(module));
    }
    return modules;
  }

  // A tensor under `prefix` that only a quantized layout has (any but `.weight` and `.bias`).
  std::optional<std::string> QuantizedCompanion(const std::string& prefix) const {
    for (auto it = FirstWithPrefix(prefix); it != by_name_.end() && (*it)->name.starts_with(prefix);
         ++it) {
      const std::string_view rest = (*it)->name.substr(prefix.size());
      if ((rest.starts_with(".") || rest.starts_with("_")) && rest != ".bias") {
        return std::string((*it)->name);
      }
    }
    return std::nullopt;
  }

  // Every tensor under a module of `site`, whatever its layout (a layer the engine refuses).
  void ConsumeNames(const LayerSite& site) {
    for (const Module& module : Modules(site)) ConsumeLayout(module.prefix);
  }
  void ConsumeLayout(const std::string& prefix) {
    for (auto it = FirstWithPrefix(prefix); it != by_name_.end() && (*it)->name.starts_with(prefix);
         ++it) {
      const std::string_view name = (*it)->name;
      const char next = name.size() > prefix.size() ? name[prefix.size()] : '\0';
      if (next == '.' || next == '_') consumed_.emplace(name);
    }
  }

  void Consume(const std::string& name) {
    if (audit_.Find(name) != nullptr) consumed_.insert(name);
  }

  void Missing(const std::string& name, const std::string& layer, const std::string& file) {
    const std::string of = layer.empty() ? model_.sites.architecture + "'s" : "layer " + layer;
    Add({FindingKind::kMissingTensor, std::nullopt, true, file, name, layer, name, "",
         fmt::format("{}: tensor {} of {} is not in the checkpoint", file, name, of)});
  }

  // The file holding the tensors nearest `name` (those of its module, else its parent's, …).
  std::string FileNear(const std::string& name) const {
    for (size_t dot = name.rfind('.'); dot != std::string::npos && dot > 0;
         dot = name.rfind('.', dot - 1)) {
      const std::string file = FileOf({Module{name.substr(0, dot)}});
      if (file.ends_with(".safetensors")) return file;
    }
    return FileOf({});
  }

  // The file holding the modules' other tensors, else the index, else the folder.
  // The first tensor (in name order) of the first of `modules` the checkpoint holds any of.
  const AuditedTensor* FirstTensorOf(const std::vector<Module>& modules) const {
    for (const Module& module : modules) {
      auto it = FirstWithPrefix(module.prefix);
      if (it != by_name_.end() && (*it)->name.starts_with(module.prefix)) return *it;
    }
    return nullptr;
  }
  std::string FileOf(const std::vector<Module>& modules) const {
    const AuditedTensor* first = FirstTensorOf(modules);
    if (first != nullptr) return audit_.FileOf(*first);
    return audit_.index.empty() ? model_.dir : audit_.index;
  }

  void Add(Finding finding) {
    (finding.error ? report_.errors : report_.warnings) += 1;
    report_.findings.push_back(std::move(finding));
  }

  // The first of by_name_ not before `prefix`: the tensors under a prefix follow it.
  std::vector<const AuditedTensor*>::const_iterator FirstWithPrefix(std::string_view prefix) const {
    return std::lower_bound(by_name_.begin(), by_name_.end(), prefix,
                            [](const AuditedTensor* t, std::string_view p) { return t->name < p; });
  }

  const Model& model_;
  const CheckpointAudit audit_;
  const CheckReading& reading_;
  std::vector<const AuditedTensor*> by_name_;  // audit_'s tensors in name order
  CheckReport report_;
  std::unordered_set<std::string> consumed_;
  std::vector<pipeline_internal::ValueTensor> values_;  // what ReadValues reads
  std::unordered_set<std::string_view> valued_;         // their names
};

}  // namespace

std::string_view FindingKindName(FindingKind kind) {
  switch (kind) {
    case FindingKind::kCheckpoint:
      return "checkpoint";
    case FindingKind::kDecidedError:
      return "decided-error";
    case FindingKind::kNoSpec:
      return "no-spec";
    case FindingKind::kMissingTensor:
      return "missing-tensor";
    case FindingKind::kShape:
      return "shape";
    case FindingKind::kDtype:
      return "dtype";
    case FindingKind::kStoredQuantized:
      return "stored-quantized";
    case FindingKind::kStoredUnquantized:
      return "stored-unquantized";
    case FindingKind::kUnconsumed:
      return "unconsumed";
    case FindingKind::kSkipped:
      return "skipped";
    case FindingKind::kTensorParallel:
      return "tensor-parallel";
    case FindingKind::kBadValue:
      return "bad-value";
    case FindingKind::kDeadRows:
      return "dead-rows";
    case FindingKind::kZeroPoint:
      return "zero-point";
    case FindingKind::kGroupMap:
      return "g-idx";
    case FindingKind::kStoredShape:
      return "weight-shape";
  }
  return "?";
}

std::string_view Finding::KindName() const {
  return checkpoint ? CheckpointProblemKindName(*checkpoint) : FindingKindName(kind);
}

namespace {

// The tensors the audit read a header for, as a listing to plan from.
CheckpointListing ReadableListing(const CheckpointAudit& audit) {
  CheckpointListing listing;
  listing.origin = CheckpointOrigin::kHeaders;
  listing.source = "the safetensors headers that could be read";
  for (const AuditedTensor& t : audit.tensors) {
    if (!t.dtype) continue;
    listing.tensors.push_back(
        {std::string(t.name), std::string(StDtypeName(*t.dtype)), std::vector<int64_t>(t.shape)});
  }
  std::sort(listing.tensors.begin(), listing.tensors.end(),
            [](const CheckpointTensor& a, const CheckpointTensor& b) { return a.name < b.name; });
  return listing;
}

// An index whose shards are all absent holds names only: there is nothing to check, which is not
// "0 errors". Some shards present and some absent is the audit's error per missing shard.
Status RequireAShard(const std::string& dir, const CheckpointAudit& audit) {
  if (audit.index.empty() || audit.files.empty()) return {};
  std::vector<std::string> missing;
  for (const std::string& file : audit.files) {
    std::error_code ec;
    if (std::filesystem::exists(file, ec)) return {};
    missing.push_back(std::filesystem::path(file).filename().string());
  }
  return NotFound(fmt::format(
      "{}: no weights to check: none of the {} shard files {} lists is present ({})", dir,
      missing.size(), std::filesystem::path(audit.index).filename().string(), Join(missing, ", ")));
}

}  // namespace

std::string_view CheckReadsName(CheckReads reads) {
  switch (reads) {
    case CheckReads::kHeaders:
      return "headers";
    case CheckReads::kValues:
      return "values";
    case CheckReads::kEveryByte:
      return "every-byte";
  }
  return "?";
}

Result<CheckReport> CheckFolder(const std::string& given, const OpenOptions& options,
                                const CheckReading& reading) {
  QP_ASSIGN_OR_RETURN(std::filesystem::path resolved, ResolveModelDir(given));
  const std::string dir = resolved.string();
  Result<CheckpointAudit> audit = AuditCheckpoint(dir);
  if (!audit.ok()) {
    if (audit.status().code() != ErrorCode::kNotFound) return audit.status();
    return NotFound(fmt::format("{}: no weights to check ({})", dir, audit.status().message()));
  }
  QP_RETURN_IF_ERROR(RequireAShard(dir, *audit));
  Result<Model> model = OpenModel(dir, options);
  const bool broken = std::any_of(audit->problems.begin(), audit->problems.end(),
                                  [](const CheckpointProblem& p) { return p.error; });
  if (!model.ok() && !broken) return model.status();
  if (!model.ok()) {
    // Planning reads the headers strictly; planned from what the audit could read instead, the
    // layers the files' problems leave alone are checked, and those they touch are named.
    const CheckpointListing readable = ReadableListing(*audit);
    Result<pipeline_internal::ModelFolder> folder =
        pipeline_internal::ReadModelFolder(dir, options, &readable);
    if (folder.ok()) {
      Result<Model> planned = pipeline_internal::OpenModelFolder(std::move(*folder), options);
      if (planned.ok()) model = std::move(planned);
    }
  }
  if (!model.ok()) {
    // Planning reads the headers strictly: the audit's problems are the report.
    CheckReport report;
    report.tensors = static_cast<int64_t>(audit->tensors.size());
    report.not_checked = audit->unread_files;
    report.layers_not_checked = std::string(model.status().message());
    for (const CheckpointProblem& p : audit->problems) {
      (p.error ? report.errors : report.warnings) += 1;
      report.findings.push_back(FindingOf(p));
    }
    return report;
  }
  QP_ASSIGN_OR_RETURN(CheckReport report, Checker(*model, std::move(*audit), reading).Run());
  QP_ASSIGN_OR_RETURN(report.unmatched, UnmatchedEntries(dir, options));
  report.warnings += static_cast<int64_t>(report.unmatched.size());
  return report;
}

}  // namespace quantpath
