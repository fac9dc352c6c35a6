// NVFP4 between ModelOpt and compressed-tensors: the E2M1 codes and E4M3 block scales are the
// same bytes under other names; the fp32 second-level scales are each other's reciprocals
// (ModelOpt's `weight_scale_2` / `input_scale` multiply, compressed-tensors' `weight_global_scale`
// / `input_global_scale` divide), inverted in fp32 and so within one ulp of the exact reciprocal.
// ModelOpt stores them as 0-d tensors, compressed-tensors as [1].
#include <cmath>
#include <cstring>

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/export/layer_names.h"
#include "src/export/relayout.h"

namespace quantpath::export_internal {
namespace {

bool Applies(SourceLayout from, SourceLayout to) {
  return (from == SourceLayout::kModelOptNvfp4 && to == SourceLayout::kCtNvfp4PackQuantized) ||
         (from == SourceLayout::kCtNvfp4PackQuantized && to == SourceLayout::kModelOptNvfp4);
}

std::optional<Slot> SlotOf(SourceLayout layout, std::string_view suffix) {
  for (const SourceTensor& t : SourceTensors(layout)) {
    if (t.suffix == suffix) return t.slot;
  }
  return std::nullopt;
}

// 1 / the fp32 scalar `view`, a positive finite value.
Result<float> Reciprocal(const TensorView& view, std::string_view layer) {
  if (view.info->dtype != StDtype::kF32 || view.bytes.size() != 4) {
    return InvalidInput(fmt::format("{}: tensor {} is {} of {} bytes, not one F32 value", layer,
                                    view.info->name, StDtypeName(view.info->dtype),
                                    view.bytes.size()));
  }
  float v;
  std::memcpy(&v, view.bytes.data(), 4);
  if (!std::isfinite(v) || !(v > 0.0f) || !std::isfinite(1.0f / v)) {
    return InvalidInput(fmt::format("{}: tensor {} holds {}; a global scale is positive and finite",
                                    layer, view.info->name, v));
  }
  return 1.0f / v;
}

bool IsSecondLevel(const std::string& name, const Projection& p, SourceLayout layout) {
  const std::optional<Slot> slot = SlotOf(layout, std::string_view(name).substr(p.prefix.size()));
  return slot == Slot::kWeightGlobalScale || slot == Slot::kInputScale;
}

Result<std::vector<TensorHeader>> Headers(const std::vector<TensorHeader>& stored,
                                          const QuantScheme& scheme, SourceLayout to,
                                          const Projection& p) {
  const SourceLayout from = scheme.weight.load.layout;
  std::vector<TensorHeader> out;
  for (const TensorHeader& h : stored) {
    QP_ASSIGN_OR_RETURN(std::string renamed, RelaidName(h.name, p.prefix, from, to, p.layer));
    if (IsSecondLevel(h.name, p, from)) {
      out.push_back(
          {renamed, StDtype::kF32,
           to == SourceLayout::kModelOptNvfp4 ? std::vector<int64_t>{} : std::vector<int64_t>{1}});
    } else {
      out.push_back({renamed, h.dtype, h.shape});
    }
  }
  return out;
}

Result<std::vector<OutputBytes>> Produce(const Checkpoint& source, const QuantScheme& scheme,
                                         SourceLayout, const Projection& p, bool) {
  const SourceLayout from = scheme.weight.load.layout;
  std::vector<OutputBytes> out;
  for (const std::string& name : LayoutTensors(source, from, p.prefix)) {
    QP_ASSIGN_OR_RETURN(TensorView view, source.Get(name));
    if (IsSecondLevel(name, p, from)) {
      QP_ASSIGN_OR_RETURN(float inverse, Reciprocal(view, p.layer));
      std::vector<std::byte> bytes(4);
      std::memcpy(bytes.data(), &inverse, 4);
      out.push_back(OutputBytes::Own(std::move(bytes)));
    } else {
      // Copied: `source` may be a quantizer's tensors, gone before the bytes are written.
      out.push_back(OutputBytes::Own({view.bytes.begin(), view.bytes.end()}));
    }
  }
  return out;
}

std::string Note(const QuantScheme&) {
  return "NVFP4 second-level scales inverted in fp32 (ModelOpt's weight_scale_2 / input_scale "
         "multiply, compressed-tensors' weight_global_scale / input_global_scale divide): each "
         "within "
         "one fp32 ulp of the exact reciprocal, and so are the dequantized weights; every 4-bit "
         "code "
         "and block scale is kept bit for bit";
}

const RelayoutRegistrar kRegister({Applies, Headers, Produce, Note});

}  // namespace
}  // namespace quantpath::export_internal
