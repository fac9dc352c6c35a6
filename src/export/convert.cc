// `convert` (export.h): each quantized layer of a checkpoint re-laid out into another format's
// layout (relayout.h: its codes and scales kept bit for bit), or dequantized to bf16 through the
// double-precision reference; every other tensor copied as stored.
#include <cmath>
#include <cstring>

#include "fmt/format.h"
#include "quantpath/materialize.h"
#include "quantpath/numeric.h"
#include "quantpath/pipeline.h"
#include "src/export/format_row.h"
#include "src/export/layer_names.h"
#include "src/export/relayout.h"
#include "src/export/write_folder.h"

namespace quantpath {
namespace export_internal {
namespace {

// Tensors of the attention and activation calibrations, which a bf16 folder has no use for.
constexpr std::string_view kCalibrationSuffixes[] = {".k_scale",     ".v_scale",    ".q_scale",
                                                     ".kv_scale",    ".prob_scale", ".input_scale",
                                                     ".output_scale"};

bool IsCalibration(const std::string& name) {
  for (std::string_view suffix : kCalibrationSuffixes) {
    if (name.ends_with(suffix)) return true;
  }
  return false;
}

// bf16 nearest-even of `v`, rounded once: through float it could round twice, so the float is
// rounded to odd (toward zero, its last bit set when inexact), which the bf16 rounding then
// resolves as a single rounding would.
uint16_t RoundToBf16(double v) {
  float f = static_cast<float>(v);
  if (std::isfinite(f) && static_cast<double>(f) != v) {
    if (std::abs(static_cast<double>(f)) > std::abs(v)) f = std::nextafter(f, 0.0f);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    bits |= 1;
    std::memcpy(&f, &bits, sizeof f);
  }
  return FloatToBf16(f);
}

// The projections of a site, each with its checkpoint prefix and shape.
Result<std::vector<Projection>> ProjectionsOf(const Model& model, const LayerSite& site) {
  std::vector<Projection> out;
  if (!site.shape) return InternalError(fmt::format("{}: a layer without a shape", site.path));
  if (site.kind != SiteKind::kMoe) {
    const std::vector<std::string> prefixes = LegPrefixes(site);
    for (size_t leg = 0; leg < prefixes.size(); ++leg) {
      const int64_t rows = site.legs.empty() ? (*site.shape)[0] : site.legs[leg].rows;
      out.push_back({site.path, prefixes[leg], rows, (*site.shape)[1], false});
    }
    return out;
  }
  if (site.stacked_experts) {
    return Unsupported(fmt::format(
        "{}: the checkpoint stacks every expert in one tensor; convert writes experts stored one "
        "module per expert",
        site.path));
  }
  AllocationRequest request = RequestForSite(site, model.sites.torch_dtype, model.device);
  request.layer = site.path;
  QP_ASSIGN_OR_RETURN(std::vector<AllocationRequest> projections,
                      ExpertProjectionRequests(request));
  for (int64_t e = 0; e < site.experts; ++e) {
    for (size_t leg = 0; leg < projections.size() && leg < site.legs.size(); ++leg) {
      out.push_back({fmt::format("{}, expert {} ({})", site.path, e, site.legs[leg].name),
                     site.ExpertLegPath(e, leg), projections[leg].shape[0],
                     projections[leg].shape[1], true});
    }
  }
  return out;
}

// A projection dequantized to bf16 (round to nearest even from the double reference).
Result<ExportUnit> Bf16Unit(const Checkpoint& checkpoint, const QuantScheme& scheme,
                            const Projection& p) {
  ExportUnit unit;
  unit.layer = p.layer;
  unit.inputs = LayoutTensors(checkpoint, scheme.weight.load.layout, p.prefix);
  for (const std::string& name : unit.inputs) {
    QP_ASSIGN_OR_RETURN(TensorView view, checkpoint.Get(name));
    unit.bytes_in += static_cast<int64_t>(view.bytes.size());
  }
  unit.outputs = {{p.prefix + ".weight", StDtype::kBF16, {p.rows, p.cols}}};
  unit.produce = [&checkpoint, scheme, p]() -> Result<std::vector<OutputBytes>> {
    Result<ReferenceLayer> ref =
        p.expert ? DequantizeExpertReference(checkpoint, scheme, p.layer, p.prefix, {}, false)
                 : DequantizeReference(checkpoint, scheme, p.layer, {p.prefix}, false);
    if (!ref.ok()) return ref.status();
    if (ref->rows != p.rows || ref->cols != p.cols) {
      return InvalidInput(fmt::format("{}: {} dequantizes to [{}, {}], the model says [{}, {}]",
                                      p.layer, p.prefix, ref->rows, ref->cols, p.rows, p.cols));
    }
    std::vector<std::byte> bytes(ref->weight.size() * 2);
    for (size_t i = 0; i < ref->weight.size(); ++i) {
      const uint16_t b = RoundToBf16(ref->weight[i]);
      std::memcpy(bytes.data() + 2 * i, &b, 2);
    }
    std::vector<OutputBytes> out;
    out.push_back(OutputBytes::Own(std::move(bytes)));
    return out;
  };
  return unit;
}

// The input as quantpath reads it natively, or, where only engine releases read its description
// (ModelOpt W4A16_NVFP4, MXFP8), as the first release dialect that does (said in `notes`).
Result<Model> OpenInput(const std::string& in_dir, std::vector<std::string>* notes) {
  QP_ASSIGN_OR_RETURN(OpenOptions native, OpenOptions::Parse("native", "", "cpu"));
  Result<Model> model = OpenModel(in_dir, native);
  if (model.ok()) return model;
  for (const Dialect& release : kDialectTable) {
    if (!release.is_release()) continue;
    const std::string_view engine = release.name;
    QP_ASSIGN_OR_RETURN(OpenOptions open, OpenOptions::Parse(engine, "", "cpu"));
    Result<Model> read = OpenModel(in_dir, open);
    if (read.ok()) {
      notes->push_back(fmt::format("read as {} reads it ({})", engine, model.status().message()));
      return read;
    }
  }
  return model.status();
}

}  // namespace
}  // namespace export_internal

Result<ExportReport> ConvertCheckpoint(const std::string& in_dir, const std::string& out_dir,
                                       const ConvertOptions& options) {
  using namespace export_internal;
  const FormatRow& row = FormatRowOf(options.to);
  FolderContent content;
  QP_ASSIGN_OR_RETURN(Model model, OpenInput(in_dir, &content.report.notes));
  if (model.plan.quant_method == "none") {
    return InvalidInput(fmt::format(
        "{}: not quantized; convert reads a quantized checkpoint, quantize writes one", model.dir));
  }
  QP_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::Open(model.dir));
  QP_ASSIGN_OR_RETURN(std::vector<LayerDecision> decisions, DecideAll(model));
  const bool to_bf16 = options.to == CheckpointFormat::kBf16;

  content.in_dir = model.dir;
  content.report.format = std::string(row.name);
  std::optional<QuantScheme> scheme;  // the one scheme a quantized folder's config describes
  std::optional<SourceLayout> layout;
  std::vector<ExportUnit> layers;
  std::vector<std::string> unquantized;
  for (const LayerDecision& d : decisions) {
    const LayerSite& site = *d.site;
    if (d.decision.kind == DecisionKind::kError) {
      return InvalidInput(fmt::format("{}: {}", site.path, d.decision.detail));
    }
    if (site.kind == SiteKind::kAttention) {
      if (d.kv && d.kv->scheme && !to_bf16) {
        return Unsupported(
            fmt::format("{}: a quantized KV cache ({}); convert re-lays out weights only",
                        site.path, d.kv->scheme->CanonicalName()));
      }
      continue;
    }
    if (d.decision.kind != DecisionKind::kQuantized) {
      if (site.kind != SiteKind::kEmbedding) {
        for (std::string& name : ModuleNames(site, site.kind == SiteKind::kMoe)) {
          unquantized.push_back(std::move(name));
        }
      }
      continue;
    }
    const QuantScheme& s = *d.decision.scheme;
    if (!to_bf16) {
      if (scheme && !(*scheme == s)) {
        return Unsupported(fmt::format(
            "{}: {} where other layers are {}; convert writes one scheme per folder (--to bf16 "
            "converts any mix)",
            site.path, s.CanonicalName(), scheme->CanonicalName()));
      }
      Result<SourceLayout> to = row.layout(s);
      if (!to.ok()) return Unsupported(fmt::format("{}: {}", site.path, to.status().message()));
      if (*to == s.weight.load.layout) {
        return InvalidInput(fmt::format("{}: {} already stores {} in the {} layout", model.dir,
                                        site.path, s.CanonicalName(), row.name));
      }
      scheme = s;
      layout = *to;
    }
    QP_ASSIGN_OR_RETURN(std::vector<Projection> projections, ProjectionsOf(model, site));
    for (const Projection& p : projections) {
      Result<ExportUnit> unit = to_bf16 ? Bf16Unit(checkpoint, s, p)
                                        : RelaidProjection(checkpoint, s, *layout, p, options.lossy,
                                                           &content.report.notes);
      if (!unit.ok()) return unit.status();
      layers.push_back(std::move(*unit));
    }
    ++content.report.layers_written;
  }
  if (scheme) content.report.scheme = scheme->CanonicalName();

  std::vector<std::string> dropped;
  QP_ASSIGN_OR_RETURN(content.units, UnitsInOrder(checkpoint, std::move(layers),
                                                  to_bf16 ? IsCalibration : nullptr, &dropped));
  if (!dropped.empty()) {
    content.report.notes.push_back(fmt::format(
        "{} calibration tensors left out (activation and KV-cache scales, which bf16 layers do "
        "not read), e.g. {}",
        dropped.size(), dropped.front()));
  }
  if (!to_bf16 && scheme) {
    Describe(row, *scheme, *layout, IgnoreList({}, unquantized), &content);
  }
  return WriteModelFolder(out_dir, std::move(content), options);
}

}  // namespace quantpath
