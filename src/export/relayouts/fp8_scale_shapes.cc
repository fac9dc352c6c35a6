// fp8 per-tensor and per-channel layers between compressed-tensors (or the quantizers' `fp8-scale`
// layout) and ModelOpt: the same bytes under the same names, the scales reshaped to each format's
// convention — ModelOpt stores a per-tensor `weight_scale` / `input_scale` as a 0-d tensor and a
// per-channel `weight_scale` as [N]; compressed-tensors as [1] and [N, 1].
#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/export/layer_names.h"
#include "src/export/relayout.h"

namespace quantpath::export_internal {
namespace {

bool IsCompressedTensors(SourceLayout layout) {
  return layout == SourceLayout::kCtFloatQuantized || layout == SourceLayout::kFp8Scale;
}

bool Applies(SourceLayout from, SourceLayout to) {
  return (IsCompressedTensors(from) && to == SourceLayout::kModelOptFp8) ||
         (from == SourceLayout::kModelOptFp8 && to == SourceLayout::kCtFloatQuantized);
}

std::optional<Slot> SlotOf(SourceLayout layout, std::string_view suffix) {
  for (const SourceTensor& t : SourceTensors(layout)) {
    if (t.suffix == suffix) return t.slot;
  }
  return std::nullopt;
}

Result<std::vector<TensorHeader>> Headers(const std::vector<TensorHeader>& stored,
                                          const QuantScheme& scheme, SourceLayout to,
                                          const Projection& p) {
  const SourceLayout from = scheme.weight.load.layout;
  const bool modelopt = to == SourceLayout::kModelOptFp8;
  std::vector<TensorHeader> out;
  for (const TensorHeader& h : stored) {
    QP_ASSIGN_OR_RETURN(std::string renamed, RelaidName(h.name, p.prefix, from, to, p.layer));
    TensorHeader moved{renamed, h.dtype, h.shape};
    const std::optional<Slot> slot = SlotOf(from, std::string_view(h.name).substr(p.prefix.size()));
    const bool per_channel = scheme.weight.granularity == Granularity::kPerChannel;
    if (slot == Slot::kInputScale || (slot == Slot::kWeightScale && !per_channel)) {
      moved.shape = modelopt ? std::vector<int64_t>{} : std::vector<int64_t>{1};
    } else if (slot == Slot::kWeightScale) {
      moved.shape = modelopt ? std::vector<int64_t>{p.rows} : std::vector<int64_t>{p.rows, 1};
    }
    if (TensorByteLength(moved) != TensorByteLength(h)) {
      return InvalidInput(fmt::format("{}: tensor {} holds {} values where the layer needs {}",
                                      p.layer, h.name, TensorByteLength(h).value_or(0),
                                      TensorByteLength(moved).value_or(0)));
    }
    out.push_back(std::move(moved));
  }
  return out;
}

Result<std::vector<OutputBytes>> Produce(const Checkpoint& source, const QuantScheme& scheme,
                                         SourceLayout, const Projection& p, bool) {
  std::vector<OutputBytes> out;
  for (const std::string& name : LayoutTensors(source, scheme.weight.load.layout, p.prefix)) {
    QP_ASSIGN_OR_RETURN(TensorView view, source.Get(name));
    // Copied: `source` may be a quantizer's tensors, gone before the bytes are written.
    out.push_back(OutputBytes::Own({view.bytes.begin(), view.bytes.end()}));
  }
  return out;
}

std::string Note(const QuantScheme&) { return ""; }

const RelayoutRegistrar kRegister({Applies, Headers, Produce, Note});

}  // namespace
}  // namespace quantpath::export_internal
