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
