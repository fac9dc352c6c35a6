// `quantize` (export.h): every linear layer and expert of a high-precision checkpoint through the
// quantizer of quantizing at load, written in the chosen format's layout; every other tensor
// copied as stored.
#include <memory>

#include "fmt/format.h"
#include "quantpath/materialize.h"
#include "quantpath/pipeline.h"
#include "src/base/pyregex.h"
#include "src/export/format_row.h"
#include "src/export/layer_names.h"
#include "src/export/relayout.h"
#include "src/export/write_folder.h"

namespace quantpath {
namespace export_internal {
namespace {

// --ignore, as compressed-tensors reads its `ignore`: a module name, or "re:" and a Python regex
// matched from the start of the name (re.match).
class IgnorePatterns {
 public:
  static Result<IgnorePatterns> Compile(const std::vector<std::string>& patterns) {
    IgnorePatterns ignore;
    for (const std::string& p : patterns) {
      std::shared_ptr<const CompiledRegex> regex;
      if (p.starts_with("re:")) {
        Result<std::shared_ptr<const CompiledRegex>> compiled =
            CompiledRegex::Compile(std::string_view(p).substr(3), PyRegexFlavor::kRe);
        if (!compiled.ok()) {
          return InvalidInput(fmt::format("--ignore {}: {}", p, compiled.status().message()));
        }
        regex = *compiled;
      }
      ignore.patterns_.push_back(p);
      ignore.regex_.push_back(std::move(regex));
    }
    ignore.used_.assign(patterns.size(), false);
    return ignore;
  }
  Result<bool> Matches(const std::string& name) {
    bool hit = false;
    for (size_t i = 0; i < patterns_.size(); ++i) {
      bool matched = name == patterns_[i];
      if (regex_[i] != nullptr) {
        QP_ASSIGN_OR_RETURN(matched, regex_[i]->Match(name, false));
      }
      if (matched) used_[i] = true;
      hit = hit || matched;
    }
    return hit;
  }
  const std::vector<std::string>& patterns() const { return patterns_; }
  std::vector<std::string> Unused() const {
    std::vector<std::string> unused;
    for (size_t i = 0; i < patterns_.size(); ++i) {
      if (!used_[i]) unused.push_back(patterns_[i]);
    }
    return unused;
  }

 private:
  std::vector<std::string> patterns_;
  std::vector<std::shared_ptr<const CompiledRegex>> regex_;
  std::vector<bool> used_;
};

// Whether `site` is left unquantized by --ignore: every module name it is matched by must be
// (an engine deciding a fused layer refuses legs that disagree).
Result<bool> Ignored(const LayerSite& site, IgnorePatterns* ignore) {
  const std::vector<std::string> names = ModuleNames(site);
  size_t hits = 0;
  for (const std::string& name : names) {
    QP_ASSIGN_OR_RETURN(bool hit, ignore->Matches(name));
    hits += hit ? 1 : 0;
  }
  if (hits != 0 && hits != names.size()) {
    return InvalidInput(fmt::format(
        "{}: --ignore names {} of its {} modules ({}); the engines load a fused layer with one "
        "scheme, so ignore all of them or none",
        site.path, hits, names.size(), Join(names, ", ")));
  }
  return hits != 0;
}

// A scheme whose activations need a scale measured by calibration, which quantizing weights
// to nearest cannot write; an error saying so, else ok.
Status NeedsNoCalibration(const QuantScheme& scheme) {
  const std::string name = scheme.CanonicalName();
  if (scheme.input && scheme.input->dtype == QDType::kNVFP4) {
    return Unsupported(fmt::format(
        "{}: NVFP4 activations read a calibrated global scale per layer (compressed-tensors' "
        "input_global_scale, ModelOpt's input_scale), which round-to-nearest quantization does "
        "not measure; w4a16-nvfp4 writes the same weights",
        name));
  }
  if (scheme.input && scheme.input->dynamic == Dynamic::kStatic) {
    return Unsupported(fmt::format(
        "{}: static activation scales are measured by calibration; a -dyn scheme writes the same "
        "weights",
        name));
  }
  return {};
}

struct Target {
  QuantScheme scheme;  // the online target, as the quantizer writes it
  SpecKey key;
  ActivationQuant act;
  SourceLayout layout;  // the format's
};

// The module prefix among `prefixes` that `name` is a tensor of.
const std::string* PrefixOf(const std::string& name, const std::vector<std::string>& prefixes) {
  const std::string* best = nullptr;
  for (const std::string& p : prefixes) {
    if (name.size() > p.size() && name.starts_with(p) && name[p.size()] == '.' &&
        (best == nullptr || p.size() > best->size())) {
      best = &p;
    }
  }
  return best;
}

// The quantizer's tensors of one leg in the format's layout: the same bytes under the format's
// names, or moved by a relayout row (relayout.h) where the layouts differ in more than names.
struct LegMove {
  const RelayoutRow* row = nullptr;  // null: renamed
  QuantScheme scheme;                // the quantizer's scheme, stored in its layout
  Projection projection;
};

// One layer (or one expert projection) quantized: the quantizer's tensors in the format's layout.
Result<ExportUnit> QuantizedUnit(const Checkpoint& checkpoint, const Target& target,
                                 const AllocationRequest& request,
                                 const std::vector<std::string>& prefixes,
                                 std::vector<std::string>* notes) {
  QP_ASSIGN_OR_RETURN(QuantizedHeaders headers,
                      QuantizedLayerHeaders(target.key, target.act, request, prefixes));
  ExportUnit unit;
  unit.layer = request.layer;
  std::vector<LegMove> moves;
  for (size_t leg = 0; leg < prefixes.size(); ++leg) {
    const std::string& prefix = prefixes[leg];
    QP_ASSIGN_OR_RETURN(TensorView weight, checkpoint.Get(prefix + ".weight"));
    unit.inputs.push_back(prefix + ".weight");
    unit.bytes_in += static_cast<int64_t>(weight.bytes.size());
    if (weight.info->shape.size() != 2) {
      return InvalidInput(
          fmt::format("{}: tensor {} is {}-dimensional; a linear weight is [rows, columns]",
                      unit.layer, weight.info->name, weight.info->shape.size()));
    }
    LegMove move{FindRelayout(headers.layout, target.layout),
                 target.scheme,
                 {unit.layer, prefix, weight.info->shape[0], weight.info->shape[1], false}};
    move.scheme.weight.load.layout = headers.layout;
    if (move.row != nullptr) AddRelayoutNote(*move.row, move.scheme, notes);
    std::vector<TensorHeader> leg_headers;
    for (const TensorHeader& h : headers.tensors) {
      if (PrefixOf(h.name, prefixes) == &prefix) leg_headers.push_back(h);
    }
    std::vector<TensorHeader> stored = InLayoutOrder(leg_headers, headers.layout, prefix);
    if (stored.size() != leg_headers.size()) {
      return InternalError(
          fmt::format("{}: the quantizer writes tensors its layout {} does not name", unit.layer,
                      SourceLayoutName(headers.layout)));
    }
    if (move.row != nullptr) {
      QP_ASSIGN_OR_RETURN(std::vector<TensorHeader> moved,
                          move.row->headers(stored, move.scheme, target.layout, move.projection));
      for (TensorHeader& h : moved) unit.outputs.push_back(std::move(h));
    } else {
      for (TensorHeader& h : stored) {
        QP_ASSIGN_OR_RETURN(h.name,
                            RelaidName(h.name, prefix, headers.layout, target.layout, unit.layer));
        unit.outputs.push_back(std::move(h));
      }
    }
    moves.push_back(std::move(move));
  }
  unit.produce = [&checkpoint, target, request, prefixes,
                  moves]() -> Result<std::vector<OutputBytes>> {
    QP_ASSIGN_OR_RETURN(QuantizedTensors q, QuantizeLayerTensors(target.key, target.act, checkpoint,
                                                                 request, prefixes));
    QP_ASSIGN_OR_RETURN(Checkpoint held,
                        Checkpoint::FromTensors(request.layer, std::move(q.tensors)));
    std::vector<OutputBytes> out;
    for (const LegMove& move : moves) {
      if (move.row != nullptr) {
        QP_ASSIGN_OR_RETURN(
            std::vector<OutputBytes> moved,
            move.row->produce(held, move.scheme, target.layout, move.projection, false));
        for (OutputBytes& o : moved) out.push_back(std::move(o));
        continue;
      }
      for (const std::string& name :
           LayoutTensors(held, move.scheme.weight.load.layout, move.projection.prefix)) {
        QP_ASSIGN_OR_RETURN(TensorView view, held.Get(name));
        out.push_back(OutputBytes::Own({view.bytes.begin(), view.bytes.end()}));
      }
    }
    return out;
  };
  return unit;
}

// The units of one site to quantize: the layer, or each projection of each expert.
Result<std::vector<ExportUnit>> SiteUnits(const Model& model, const Checkpoint& checkpoint,
                                          const LayerSite& site, const Target& target,
                                          std::vector<std::string>* notes) {
  AllocationRequest request = RequestForSite(site, model.sites.torch_dtype, model.device);
  request.layer = site.path;
  std::vector<ExportUnit> units;
  if (site.kind != SiteKind::kMoe) {
    QP_ASSIGN_OR_RETURN(ExportUnit unit,
                        QuantizedUnit(checkpoint, target, request, LegPrefixes(site), notes));
    units.push_back(std::move(unit));
    return units;
  }
  if (site.stacked_experts) {
    return Unsupported(fmt::format(
        "{}: the checkpoint stacks every expert in one tensor; quantize writes experts stored "
        "one module per expert",
        site.path));
  }
  QP_ASSIGN_OR_RETURN(std::vector<AllocationRequest> projections,
                      ExpertProjectionRequests(request));
  if (projections.size() != site.legs.size()) {
    return InternalError(fmt::format("{}: {} projections for {} legs", site.path,
                                     projections.size(), site.legs.size()));
  }
  for (int64_t e = 0; e < site.experts; ++e) {
    for (size_t leg = 0; leg < projections.size(); ++leg) {
      AllocationRequest projection = projections[leg];
      projection.layer = fmt::format("{}, expert {} ({})", site.path, e, site.legs[leg].name);
      QP_ASSIGN_OR_RETURN(ExportUnit unit, QuantizedUnit(checkpoint, target, projection,
                                                         {site.ExpertLegPath(e, leg)}, notes));
      units.push_back(std::move(unit));
    }
  }
  return units;
}

}  // namespace
}  // namespace export_internal

Result<ExportReport> QuantizeCheckpoint(const std::string& in_dir, const std::string& out_dir,
                                        const QuantizeOptions& options) {
  using namespace export_internal;
  QP_ASSIGN_OR_RETURN(QuantScheme online, OnlineTargetNamed(options.scheme));
  const CheckpointFormat format = options.format.value_or(CheckpointFormat::kCompressedTensors);
  const FormatRow& row = FormatRowOf(format);
  QuantScheme written = online;
  written.online = false;
  QP_RETURN_IF_ERROR(NeedsNoCalibration(written));
  QP_ASSIGN_OR_RETURN(SourceLayout layout, row.layout(written));
  QP_ASSIGN_OR_RETURN(OpenOptions open, OpenOptions::Parse("native", "", "cpu"));
  QP_ASSIGN_OR_RETURN(Model model, OpenModel(in_dir, open));
  if (model.plan.quant_method != "none") {
    std::vector<std::string> files;
    for (const Provenance& where : model.plan.sources) files.push_back(where.ToString());
    return InvalidInput(fmt::format(
        "{}: already quantized ({}, {}); quantize reads a bf16 / fp16 / fp32 checkpoint, "
        "convert writes a quantized one in another format",
        model.dir, model.plan.quant_method, Join(files, ", ")));
  }
  QP_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::Open(model.dir));
  QP_ASSIGN_OR_RETURN(SpecKey key, KeyFor(online, model.device));
  QP_ASSIGN_OR_RETURN(ActivationQuant act, ActivationQuantFor(online));
  const Target target{online, key, act, layout};
  QP_ASSIGN_OR_RETURN(IgnorePatterns ignore, IgnorePatterns::Compile(options.ignore));

  FolderContent content;
  content.in_dir = model.dir;
  content.report.format = std::string(row.name);
  content.report.scheme = options.scheme;
  std::vector<ExportUnit> quantized;
  std::vector<std::string> unquantized;  // modules the config must leave out
  for (const LayerSite& site : model.sites.sites) {
    const bool quantizable = (site.kind == SiteKind::kLinear || site.kind == SiteKind::kMoe) &&
                             site.quant_config_applies;
    if (site.kind == SiteKind::kLmHead || site.kind == SiteKind::kRouter ||
        ((site.kind == SiteKind::kLinear || site.kind == SiteKind::kMoe) && !quantizable)) {
      for (std::string& name : ModuleNames(site)) unquantized.push_back(std::move(name));
      continue;
    }
    if (!quantizable) continue;
    QP_ASSIGN_OR_RETURN(bool ignored, Ignored(site, &ignore));
    if (ignored) {
      if (!row.ignore_patterns) {
        for (std::string& name : ModuleNames(site, true)) unquantized.push_back(std::move(name));
      }
      continue;
    }
    QP_ASSIGN_OR_RETURN(std::vector<ExportUnit> units,
                        SiteUnits(model, checkpoint, site, target, &content.report.notes));
    for (ExportUnit& unit : units) {
      quantized.push_back(std::move(unit));
    }
    ++content.report.layers_written;
  }

  QP_ASSIGN_OR_RETURN(content.units,
                      UnitsInOrder(checkpoint, std::move(quantized), nullptr, nullptr));
  for (const std::string& pattern : ignore.Unused()) {
    content.report.notes.push_back(
        fmt::format("--ignore {} matches no quantizable layer", pattern));
  }
  // Where the format reads no patterns, the modules --ignore matched are listed by name.
  const std::vector<std::string> patterns =
      row.ignore_patterns ? ignore.patterns() : std::vector<std::string>();
  Describe(row, written, layout, IgnoreList(patterns, unquantized), &content);
  return WriteModelFolder(out_dir, std::move(content), options);
}

}  // namespace quantpath
