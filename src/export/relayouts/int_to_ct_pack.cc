// GPTQ (v1, v2, act-order) and AWQ integer layers to compressed-tensors' pack-quantized layout,
// every code, zero point, scale and g_idx kept: each leg decoded by its layout's own decoder
// (src/specs/int_source_*.cc) and packed as compressed-tensors packs it —
//   weight_packed      I32 [N, ceil(K·b / 32)]: each row a little-endian bit stream of its
//                      codes (the unsigned code, compressed-tensors' q + 2^(b-1));
//   weight_scale       [N, G] in the dtype the source stores its scales in (F16 for GPTQ / AWQ);
//   weight_shape       I64 [2]: N, K;
//   weight_zero_point  asymmetric only: I32 [ceil(N·b / 32), G], each group's column a bit stream
//                      along N of the zero codes;
//   weight_g_idx       act-order only: I32 [K], the source's g_idx.
// GPTQ v1's stored z − 1 is decoded to z first (as AutoGPTQ reads it). A symmetric GPTQ layer
// stores zero points anyway; compressed-tensors' symmetric layout has none and the engines take
// 2^(b-1), so any other zero point would change the weights: an error naming it, unless --lossy,
// which writes the layer as vLLM's GPTQ kernels compute it (2^(b-1)).
#include <cstring>

#include "fmt/format.h"
#include "quantpath/numeric.h"
#include "quantpath/specs.h"
#include "src/export/layer_names.h"
#include "src/export/relayout.h"
#include "src/specs/int_family.h"
#include "src/specs/int_source.h"

namespace quantpath::export_internal {
namespace {

using specs_internal::IntLegCodes;
using specs_internal::IntSourceRequest;

bool Applies(SourceLayout from, SourceLayout to) {
  return to == SourceLayout::kCtPackQuantized &&
         (from == SourceLayout::kGptqV1 || from == SourceLayout::kGptqV2 ||
          from == SourceLayout::kAwqGemm);
}

int64_t Words(int64_t count, int bits) { return (count * bits + 31) / 32; }

std::vector<std::byte> BytesOf(const void* data, size_t size) {
  std::vector<std::byte> bytes(size);
  std::memcpy(bytes.data(), data, size);
  return bytes;
}

// The scales in `dtype`, the one they were read from (so exactly).
Result<std::vector<std::byte>> ScaleBytes(const std::vector<float>& scales, StDtype dtype,
                                          std::string_view layer) {
  if (dtype == StDtype::kF32) return BytesOf(scales.data(), scales.size() * 4);
  if (dtype != StDtype::kF16 && dtype != StDtype::kBF16) {
    return InvalidInput(
        fmt::format("{}: scales of {} cannot be written", layer, StDtypeName(dtype)));
  }
  std::vector<uint16_t> bits(scales.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    bits[i] = dtype == StDtype::kF16 ? FloatToFp16(scales[i]) : FloatToBf16(scales[i]);
  }
  return BytesOf(bits.data(), bits.size() * 2);
}

// What the source layout's decoder is asked for `p`.
IntSourceRequest RequestFor(const QuantScheme& scheme, const Projection& p) {
  const TensorQuant& w = scheme.weight;
  IntSourceRequest request;
  request.layer = p.layer;
  request.prefix = p.prefix;
  request.layout = w.load.layout;
  request.bits = Info(w.dtype).bits;
  request.group = w.granularity == Granularity::kGroup && w.group_size ? *w.group_size : p.cols;
  request.zero_point = !w.symmetric;
  request.act_order = w.load.act_order;
  request.rows = p.rows;
  request.cols = p.cols;
  return request;
}

Result<std::vector<TensorHeader>> Headers(const std::vector<TensorHeader>& stored,
                                          const QuantScheme& scheme, SourceLayout,
                                          const Projection& p) {
  const IntSourceRequest r = RequestFor(scheme, p);
  const std::string scales =
      p.prefix + std::string(SourceSuffix(r.layout, Slot::kWeightScale).value_or(""));
  const TensorHeader* scale = nullptr;
  for (const TensorHeader& h : stored) {
    if (h.name == scales) scale = &h;
  }
  if (scale == nullptr) {
    return InvalidInput(fmt::format("{}: the checkpoint has no {}", p.layer, scales));
  }
  const int64_t groups = r.groups();
  std::vector<TensorHeader> out = {
      {p.prefix + ".weight_packed", StDtype::kI32, {r.rows, Words(r.cols, r.bits)}},
      {p.prefix + ".weight_scale", scale->dtype, {r.rows, groups}},
      {p.prefix + ".weight_shape", StDtype::kI64, {2}}};
  if (r.zero_point) {
    out.push_back(
        {p.prefix + ".weight_zero_point", StDtype::kI32, {Words(r.rows, r.bits), groups}});
  }
  if (r.act_order) out.push_back({p.prefix + ".weight_g_idx", StDtype::kI32, {r.cols}});
  return out;
}

Result<std::vector<OutputBytes>> Produce(const Checkpoint& source, const QuantScheme& scheme,
                                         SourceLayout, const Projection& p, bool lossy) {
  const IntSourceRequest request = RequestFor(scheme, p);
  QP_ASSIGN_OR_RETURN(specs_internal::IntSourceFn decode,
                      specs_internal::FindIntSource(request.layout, p.layer));
  QP_ASSIGN_OR_RETURN(IntLegCodes leg, decode(source, request));
  const int b = request.bits;
  const int64_t rows = request.rows;
  const int64_t cols = request.cols;
  const int64_t g = request.groups();
  const uint32_t offset = 1u << (b - 1);
  if (!request.zero_point && !lossy) {
    for (size_t i = 0; i < leg.zeros.size(); ++i) {
      if (leg.zeros[i] != offset) {
        return InvalidInput(fmt::format(
            "{}: {} holds zero point {} for row {}, group {} of a symmetric layer; "
            "compressed-tensors' symmetric layout stores none and the engines take {}, which "
            "would change these weights (--lossy writes them as vLLM's GPTQ kernels compute "
            "them, with {})",
            p.layer, leg.zeros_tensor, leg.zeros[i], i / g, i % g, offset, offset));
      }
    }
  }
  const int64_t row_words = Words(cols, b);
  std::vector<uint32_t> packed(static_cast<size_t>(rows * row_words), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      specs_internal::PutStreamCode(packed.data() + r * row_words, 1, c, b,
                                    leg.codes[r * cols + c]);
    }
  }
  std::vector<OutputBytes> out;
  out.push_back(OutputBytes::Own(BytesOf(packed.data(), packed.size() * 4)));
  QP_ASSIGN_OR_RETURN(std::vector<std::byte> scales,
                      ScaleBytes(leg.scales, leg.scale_dtype, p.layer));
  out.push_back(OutputBytes::Own(std::move(scales)));
  const int64_t shape[] = {rows, cols};
  out.push_back(OutputBytes::Own(BytesOf(shape, sizeof shape)));
  if (request.zero_point) {
    std::vector<uint32_t> zeros(static_cast<size_t>(Words(rows, b) * g), 0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < g; ++i) {
        specs_internal::PutStreamCode(zeros.data() + i, g, r, b, leg.zeros[r * g + i]);
      }
    }
    out.push_back(OutputBytes::Own(BytesOf(zeros.data(), zeros.size() * 4)));
  }
  if (request.act_order) {
    out.push_back(OutputBytes::Own(BytesOf(leg.g_idx.data(), leg.g_idx.size() * 4)));
  }
  return out;
}

std::string Note(const QuantScheme& scheme) {
  if (!scheme.weight.load.act_order) return "";
  return "act-order layers are written with weight_g_idx and actorder \"group\", which vLLM 0.33 "
         "and SGLang 0.5.23 read; compressed-tensors' own library refuses \"group\" from 0.19 on "
         "(its \"weight\" ordering keeps no g_idx, and GPTQ's act-order groups need one)";
}

const RelayoutRegistrar kRegister({Applies, Headers, Produce, Note});

}  // namespace
}  // namespace quantpath::export_internal
