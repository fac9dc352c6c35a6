// The registry of integer source-layout decoders and the checkpoint reads they share.
#include "src/specs/int_source.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "fmt/format.h"
#include "src/specs/spec_common.h"

namespace quantpath::specs_internal {
namespace {

struct Decoders {
  std::mutex mu;
  std::map<SourceLayout, IntSourceFn> by_layout;
};

Decoders& IntDecoders() {
  static Decoders* decoders = new Decoders();  // never destroyed: used at exit
  return *decoders;
}

}  // namespace

IntSourceRegistrar::IntSourceRegistrar(SourceLayout layout, IntSourceFn decode) {
  Decoders& d = IntDecoders();
  std::lock_guard<std::mutex> lock(d.mu);
  d.by_layout.emplace(layout, decode);
}

Result<IntSourceFn> FindIntSource(SourceLayout layout, std::string_view layer) {
  Decoders& d = IntDecoders();
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.by_layout.find(layout);
  if (it == d.by_layout.end()) {
    return Unsupported(fmt::format("{}: integer weights in source layout {} cannot be loaded",
                                   layer, SourceLayoutName(layout)));
  }
  return it->second;
}

SourceLeg IntSourceRequest::leg() const {
  constexpr QDType kIntOfBits[] = {QDType::kINT2, QDType::kINT3, QDType::kINT4, QDType::kINT5,
                                   QDType::kINT6, QDType::kINT7, QDType::kINT8};
  SourceLeg leg;
  leg.rows = rows;
  leg.cols = cols;
  leg.weight.dtype = bits >= 2 && bits <= 8 ? kIntOfBits[bits - 2] : QDType::kINT4;
  leg.weight.granularity = tensor          ? Granularity::kPerTensor
                           : group >= cols ? Granularity::kPerChannel
                                           : Granularity::kGroup;
  leg.weight.group_size = group;
  leg.weight.load.layout = layout;
  return leg;
}

Status CheckZeroPoints(const IntLegCodes& leg, const IntSourceRequest& r) {
  if (r.zero_point || leg.zeros.empty()) return {};
  const uint8_t implied = static_cast<uint8_t>(1u << (r.bits - 1));
  const int64_t groups = r.tensor ? 1 : r.groups();
  for (size_t i = 0; i < leg.zeros.size(); ++i) {
    if (leg.zeros[i] == implied) continue;
    return InvalidInput(fmt::format(
        "{}: the scheme is symmetric, but tensor {} holds zero point {} (row {}, group {}), not {}",
        r.layer, leg.zeros_tensor, leg.zeros[i], i / groups, i % groups, implied));
  }
  return {};
}

Status CheckGroupMap(const IntLegCodes& leg, const IntSourceRequest& r) {
  const int64_t groups = r.groups();
  std::vector<int64_t> count(static_cast<size_t>(groups), 0);
  for (int64_t c = 0; c < r.cols; ++c) {
    const int32_t gi = leg.g_idx[c];
    if (gi < 0 || gi >= groups) {
      return InvalidInput(fmt::format(
          "{}: tensor {} maps input column {} to group {}, but the layer has {} groups of {}",
          r.layer, leg.g_idx_tensor, c, gi, groups, r.group));
    }
    ++count[gi];
  }
  for (int64_t gi = 0; gi < groups; ++gi) {
    const int64_t expected = std::min(r.group, r.cols - gi * r.group);
    if (count[gi] != expected) {
      return InvalidInput(fmt::format(
          "{}: tensor {} puts {} input columns in group {}; the act-order layout needs {}", r.layer,
          leg.g_idx_tensor, count[gi], gi, expected));
    }
  }
  return {};
}

Result<std::vector<uint32_t>> ReadInt32Words(const Checkpoint& checkpoint,
                                             const IntSourceRequest& request, Slot slot,
                                             std::string* name) {
  QP_ASSIGN_OR_RETURN(TensorView view, FindSlotTensor(checkpoint, request.layer, request.prefix,
                                                      request.layout, slot));
  *name = view.info->name;
  QP_RETURN_IF_ERROR(ExpectSourceRule(view, request.layer, request.layout, slot, request.leg()));
  std::vector<uint32_t> words(static_cast<size_t>(view.info->Elements()));
  // The mapped bytes need not be 4-byte aligned: copy.
  std::memcpy(words.data(), view.bytes.data(), words.size() * 4);
  return words;
}

Result<std::vector<float>> ReadIntScales(const Checkpoint& checkpoint,
                                         const IntSourceRequest& request, Slot slot,
                                         IntLegCodes* leg) {
  QP_ASSIGN_OR_RETURN(TensorView view, FindSlotTensor(checkpoint, request.layer, request.prefix,
                                                      request.layout, slot));
  QP_RETURN_IF_ERROR(ExpectSourceRule(view, request.layer, request.layout, slot, request.leg()));
  leg->scale_dtype = view.info->dtype;
  leg->scales_tensor = view.info->name;
  return ReadScales(view, request.layer);
}

IntPackedDims PackedDimsOf(SourceLayout layout, bool zero_point) {
  switch (layout) {
    case SourceLayout::kGptqV1:
    case SourceLayout::kGptqV2:
      return {.k = true, .n = true};  // qzeros exist for symmetric checkpoints too
    case SourceLayout::kAwqGemm:
      return {.k = false, .n = true};
    case SourceLayout::kCtPackQuantized:
      return {.k = true, .n = zero_point};
    default:
      return {};
  }
}

uint32_t StreamCode(const uint32_t* words, int64_t stride, int64_t i, int bits) {
  const int64_t bit = i * bits;
  const int64_t word = bit / 32;
  const int shift = static_cast<int>(bit % 32);
  uint64_t value = words[word * stride] >> shift;
  // A code that crosses a word (3-bit GPTQ, dense compressed-tensors packing) takes its high
  // bits from the next word.
  if (shift + bits > 32) value |= static_cast<uint64_t>(words[(word + 1) * stride]) << (32 - shift);
  return static_cast<uint32_t>(value) & ((1u << bits) - 1);
}

void PutStreamCode(uint32_t* words, int64_t stride, int64_t i, int bits, uint32_t code) {
  const int64_t bit = i * bits;
  const int64_t word = bit / 32;
  const int shift = static_cast<int>(bit % 32);
  words[word * stride] |= code << shift;
  if (shift + bits > 32) words[(word + 1) * stride] |= code >> (32 - shift);
}

}  // namespace quantpath::specs_internal

namespace quantpath {

bool HasIntegerLoader(SourceLayout layout) {
  specs_internal::Decoders& d = specs_internal::IntDecoders();
  std::lock_guard<std::mutex> lock(d.mu);
  return d.by_layout.contains(layout);
}

std::optional<SourceValueProblem> CheckIntegerSourceValues(const Checkpoint& values,
                                                           const SourceLeg& leg,
                                                           std::string_view prefix,
                                                           std::string_view layer) {
  const Result<specs_internal::IntSourceFn> decode =
      specs_internal::FindIntSource(leg.weight.load.layout, layer);
  if (!decode.ok()) return std::nullopt;  // not an integer layout
  specs_internal::IntSourceRequest r;
  r.layer = layer;
  r.prefix = std::string(prefix);
  r.layout = leg.weight.load.layout;
  r.bits = Info(leg.weight.dtype).bits;
  r.tensor = leg.weight.granularity == Granularity::kPerTensor;
  r.group = r.tensor || !leg.weight.group_size ? leg.cols : *leg.weight.group_size;
  r.zero_point = !leg.weight.symmetric;
  r.act_order = leg.weight.load.act_order;
  r.rows = leg.rows;
  r.cols = leg.cols;
  r.weights = false;
  const Result<specs_internal::IntLegCodes> codes = (*decode)(values, r);
  // What this build does not load is no fault of the values (`plan` says so).
  if (!codes.ok() && codes.status().code() == ErrorCode::kUnsupported) return std::nullopt;
  if (!codes.ok()) {
    return SourceValueProblem{std::nullopt, "", std::string(codes.status().message())};
  }
  if (Status s = specs_internal::CheckZeroPoints(*codes, r); !s.ok()) {
    return SourceValueProblem{Slot::kWeightZero, codes->zeros_tensor, std::string(s.message())};
  }
  if (r.act_order) {
    if (Status s = specs_internal::CheckGroupMap(*codes, r); !s.ok()) {
      return SourceValueProblem{Slot::kGIdx, codes->g_idx_tensor, std::string(s.message())};
    }
  }
  return std::nullopt;
}

}  // namespace quantpath
