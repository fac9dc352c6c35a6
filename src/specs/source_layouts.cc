// The checkpoint tensors of every source layout, per module prefix, in one table, with the dtype
// and shape each producer writes for a leg: the loaders read those shapes (int_source.h) and
// `check` holds the headers against them. Names follow each producer's own writer: DeepSeek /
// transformers fp8, AutoAWQ, AutoGPTQ / GPTQModel, compressed-tensors' compressors, ModelOpt's
// export, bitsandbytes' serialization, gpt-oss and ModelSlim.
#include <algorithm>
#include <iterator>

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/spec_common.h"

namespace quantpath {
namespace {

using S = Slot;
using Rule = std::optional<SourceTensorRule>;
using D = StDtype;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int Bits(const SourceLeg& l) { return Info(l.weight.dtype).bits; }
// int32 words holding `count` codes of the leg's bits, packed as a bit stream.
int64_t Words(const SourceLeg& l, int64_t count) { return CeilDiv(count * Bits(l), 32); }
// Scales along K: one per group, one for a channel or a tensor.
int64_t Groups(const SourceLeg& l) {
  const bool grouped = l.weight.granularity == Granularity::kGroup ||
                       l.weight.granularity == Granularity::kTensorGroup;
  return grouped && l.weight.group_size ? CeilDiv(l.cols, *l.weight.group_size) : 1;
}

Rule Exactly(std::vector<StDtype> dtypes, std::vector<int64_t> shape) {
  return SourceTensorRule{std::move(dtypes), {std::move(shape)}};
}
Rule Elements(std::vector<StDtype> dtypes, int64_t elements) {
  return SourceTensorRule{std::move(dtypes), {{elements}}, true};
}
std::vector<StDtype> Floats() { return {D::kF16, D::kBF16, D::kF32}; }

Rule Scalar(const SourceLeg&) { return Elements(Floats(), 1); }
Rule Fp32Scalar(const SourceLeg&) { return Elements({D::kF32}, 1); }
Rule PerRow(const SourceLeg& l) { return Elements(Floats(), l.rows); }
Rule PerColumn(const SourceLeg& l) { return Elements(Floats(), l.cols); }
Rule Int32Bias(const SourceLeg& l) { return Elements({D::kI32}, l.rows); }
Rule GIdx(const SourceLeg& l) { return Exactly({D::kI32}, {l.cols}); }
// compressed-tensors' weight_shape: the unpacked [N, K].
Rule ShapeVector(const SourceLeg&) { return Exactly({D::kI32, D::kI64}, {2}); }

// One unpacked element per weight, [N, K]: fp8 (and MXFP8's E4M3) or int8 codes.
Rule ElementWeight(const SourceLeg& l) {
  switch (l.weight.dtype) {
    case QDType::kFP8E4M3:
    case QDType::kMXFP8:
      return Exactly({D::kF8E4M3}, {l.rows, l.cols});
    case QDType::kFP8E5M2:
      return Exactly({D::kF8E5M2}, {l.rows, l.cols});
    case QDType::kINT8:
      return Exactly({D::kI8}, {l.rows, l.cols});
    default:
      return std::nullopt;
  }
}
// E2M1 pairs, two per byte along K.
Rule E2m1Pairs(const SourceLeg& l) { return Exactly({D::kU8}, {l.rows, CeilDiv(l.cols, 2)}); }
// One E8M0 byte per 32-element micro-block along K.
Rule E8m0Scales(const SourceLeg& l) { return Exactly({D::kU8}, {l.rows, CeilDiv(l.cols, 32)}); }
// NVFP4: one E4M3 scale per 16 along K.
Rule Nvfp4Scales(const SourceLeg& l) {
  return Exactly({D::kF8E4M3}, {l.rows, CeilDiv(l.cols, 16)});
}

// A float scale per tensor, output row, [N, groups] or 2-D block; MXFP8's E8M0 bytes.
Rule GranularScale(const SourceLeg& l) {
  const TensorQuant& w = l.weight;
  if (w.micro_scaled) return E8m0Scales(l);
  switch (w.granularity) {
    case Granularity::kPerTensor:
      return Elements(Floats(), 1);
    case Granularity::kPerChannel:
      return Elements(Floats(), l.rows);
    case Granularity::kGroup:
      return Exactly(Floats(), {l.rows, Groups(l)});
    case Granularity::kBlock: {
      if (!w.block_shape) return std::nullopt;
      // ModelOpt FP8_PB_WO writes its amax shape [rows, 1, cols, 1], a scalar for one block.
      const int64_t rows = CeilDiv(l.rows, (*w.block_shape)[0]);
      const int64_t cols = CeilDiv(l.cols, (*w.block_shape)[1]);
      SourceTensorRule rule{Floats(), {{rows, cols}, {rows, 1, cols, 1}}};
      if (rows * cols == 1) rule.shapes.push_back({});
      return rule;
    }
    default:
      return std::nullopt;
  }
}
// compressed-tensors' zero points beside unpacked codes: one per scale.
Rule GranularZero(const SourceLeg& l) {
  Rule scale = GranularScale(l);
  if (scale) scale->dtypes.clear();  // I8 or I32, as the release wrote it
  return scale;
}

// AutoAWQ: qweight [K, N / 8], qzeros [G, N / 8] int32, scales [G, N].
Rule AwqQweight(const SourceLeg& l) { return Exactly({D::kI32}, {l.cols, Words(l, l.rows)}); }
Rule AwqQzeros(const SourceLeg& l) { return Exactly({D::kI32}, {Groups(l), Words(l, l.rows)}); }
Rule GroupMajorScales(const SourceLeg& l) { return Exactly(Floats(), {Groups(l), l.rows}); }
// AutoGPTQ / GPTQModel: qweight [ceil(K·b / 32), N], qzeros [G, ceil(N·b / 32)].
Rule GptqQweight(const SourceLeg& l) { return Exactly({D::kI32}, {Words(l, l.cols), l.rows}); }
Rule GptqQzeros(const SourceLeg& l) { return Exactly({D::kI32}, {Groups(l), Words(l, l.rows)}); }
// compressed-tensors pack-quantized: weight_packed [N, ceil(K·b / 32)], zero points
// [ceil(N·b / 32), G], scales [N, G] (a channel's [N, 1] or [N], a tensor's [1] or []).
Rule CtPacked(const SourceLeg& l) { return Exactly({D::kI32}, {l.rows, Words(l, l.cols)}); }
Rule CtPackedZeros(const SourceLeg& l) { return Exactly({D::kI32}, {Words(l, l.rows), Groups(l)}); }
Rule CtPackedScales(const SourceLeg& l) {
  switch (l.weight.granularity) {
    case Granularity::kPerTensor:
      return SourceTensorRule{Floats(), {{1}, {}}};
    case Granularity::kPerChannel:
      return SourceTensorRule{Floats(), {{l.rows, 1}, {l.rows}}};
    default:
      return Exactly(Floats(), {l.rows, Groups(l)});
  }
}
// ModelOpt W4A8_AWQ: two int4 codes per byte along N, [N / 2, K]; scales [N, K / g].
Rule RowPairs(const SourceLeg& l) { return Exactly({D::kU8}, {CeilDiv(l.rows, 2), l.cols}); }
Rule RowMajorGroupScales(const SourceLeg& l) { return Exactly(Floats(), {l.rows, Groups(l)}); }
// w4afp8 experts: two signed int4 codes per int8 along K, [N, K / 2].
Rule ColumnPairsInt8(const SourceLeg& l) { return Exactly({D::kI8}, {l.rows, CeilDiv(l.cols, 2)}); }
// bitsandbytes 4-bit: absmax per block of the flattened weight (E8M0-like bytes under double
// quantization), its 16-value code book, the nested code book of 256.
Rule Bnb4Absmax(const SourceLeg& l) {
  if (!l.weight.group_size) return std::nullopt;
  return Elements({l.weight.load.double_quant ? D::kU8 : D::kF32},
                  CeilDiv(l.rows * l.cols, *l.weight.group_size));
}
Rule Bnb4QuantMap(const SourceLeg&) { return Exactly({D::kF32}, {16}); }
Rule Bnb4NestedQuantMap(const SourceLeg&) { return Exactly({D::kF32}, {256}); }
Rule Bnb8Scb(const SourceLeg& l) { return Elements({D::kF32}, l.rows); }
// gpt-oss: `_blocks` [E, R, K / 32, 16] E2M1 pairs, `_scales` [E, R, K / 32] E8M0, `_bias` [E, R].
Rule GptOssBlocks(const SourceLeg& l) {
  return Exactly({D::kU8}, {l.experts, l.rows, CeilDiv(l.cols, 32), 16});
}
Rule GptOssScales(const SourceLeg& l) {
  return Exactly({D::kU8}, {l.experts, l.rows, CeilDiv(l.cols, 32)});
}
Rule GptOssBias(const SourceLeg& l) { return Exactly(Floats(), {l.experts, l.rows}); }
// ModelSlim: int8 codes [N, K] (int4 one per int8, or two per int8 along N with the new
// packing), MXFP4 pairs along K, MXFP8 E4M3; per-row float scales, or E8M0 per 32 for MX.
Rule ModelSlimWeight(const SourceLeg& l) {
  switch (l.weight.dtype) {
    case QDType::kINT4:
      return Exactly({D::kI8}, {l.weight.load.int4_pairs ? CeilDiv(l.rows, 2) : l.rows, l.cols});
    case QDType::kMXFP4:
      return E2m1Pairs(l);
    default:
      return ElementWeight(l);
  }
}
Rule ModelSlimScale(const SourceLeg& l) {
  return l.weight.micro_scaled ? E8m0Scales(l) : PerRow(l);
}
Rule ModelSlimDeqScale(const SourceLeg& l) { return Elements({D::kF32, D::kI64}, l.rows); }

constexpr SourceTensor kDense[] = {{S::kWeight, ".weight", true, false, &ElementWeight}};
// DeepSeek-V3 style: the block scale is called an inverse but multiplies the weight.
constexpr SourceTensor kFp8ScaleInv[] = {
    {S::kWeight, ".weight", true, false, &ElementWeight},
    {S::kWeightScale, ".weight_scale_inv", true, false, &GranularScale},
    {S::kInputScale, ".input_scale", false, false, &Scalar}};
constexpr SourceTensor kFp8Scale[] = {
    {S::kWeight, ".weight", true, false, &ElementWeight},
    {S::kWeightScale, ".weight_scale", true, false, &GranularScale},
    {S::kInputScale, ".input_scale", false, false, &Scalar}};
// AutoAWQ: qweight [K, N / 8] int32, qzeros [K / g, N / 8] int32, scales [K / g, N] fp16.
constexpr SourceTensor kAwq[] = {
    {S::kWeight, ".qweight", true, false, &AwqQweight},
    {S::kWeightZero, ".qzeros", true, false, &AwqQzeros},
    {S::kWeightScale, ".scales", true, false, &GroupMajorScales, SourceValues::kScaleByGroup}};
// AutoGPTQ / GPTQModel: qweight [K / pack, N] int32, qzeros [K / g, N / pack] int32 (v1 stores
// zero − 1), scales [K / g, N] fp16, g_idx [K] int32.
constexpr SourceTensor kGptq[] = {
    {S::kWeight, ".qweight", true, false, &GptqQweight},
    {S::kWeightZero, ".qzeros", true, false, &GptqQzeros},
    {S::kWeightScale, ".scales", true, false, &GroupMajorScales, SourceValues::kScaleByGroup},
    // Written by every GPTQ producer; used only with act-order.
    {S::kGIdx, ".g_idx", false, true, &GIdx}};
// compressed-tensors pack-quantized: weight_packed [N, ceil(K·bits / 32)] int32, weight_shape [2],
// weight_zero_point [ceil(N·bits / 32), groups] int32 (asymmetric), weight_g_idx [K] (actorder).
constexpr SourceTensor kCtPack[] = {
    {S::kWeight, ".weight_packed", true, false, &CtPacked},
    {S::kWeightScale, ".weight_scale", true, false, &CtPackedScales},
    {S::kWeightZero, ".weight_zero_point", false, false, &CtPackedZeros},
    {S::kGIdx, ".weight_g_idx", false, false, &GIdx},
    {std::nullopt, ".weight_shape", true, false, &ShapeVector, SourceValues::kShapeVector}};
constexpr SourceTensor kCtQuantized[] = {
    {S::kWeight, ".weight", true, false, &ElementWeight},
    {S::kWeightScale, ".weight_scale", true, false, &GranularScale},
    {S::kWeightZero, ".weight_zero_point", false, false, &GranularZero},
    {S::kInputScale, ".input_scale", false, false, &Scalar},
    {S::kInputOffset, ".input_zero_point", false}};
// compressed-tensors nvfp4-pack-quantized: the global scales divide.
constexpr SourceTensor kCtNvfp4[] = {
    {S::kWeight, ".weight_packed", true, false, &E2m1Pairs},
    {S::kWeightScale, ".weight_scale", true, false, &Nvfp4Scales},
    {S::kWeightGlobalScale, ".weight_global_scale", true, false, &Fp32Scalar},
    {S::kInputScale, ".input_global_scale", false, false, &Fp32Scalar}};
// compressed-tensors mxfp4-pack-quantized: E8M0 scales, no global scale.
constexpr SourceTensor kCtMxfp4[] = {{S::kWeight, ".weight_packed", true, false, &E2m1Pairs},
                                     {S::kWeightScale, ".weight_scale", true, false, &E8m0Scales}};
// ModelOpt NVFP4: weight_scale_2 multiplies.
constexpr SourceTensor kModelOptNvfp4[] = {
    {S::kWeight, ".weight", true, false, &E2m1Pairs},
    {S::kWeightScale, ".weight_scale", true, false, &Nvfp4Scales},
    {S::kWeightGlobalScale, ".weight_scale_2", true, false, &Fp32Scalar},
    {S::kInputScale, ".input_scale", false, false, &Fp32Scalar}};
// ModelOpt W4A8_AWQ: weight_scale_2 (the fp8 stage) is checked whenever present, not kept.
constexpr SourceTensor kModelOptW4A8Awq[] = {
    {S::kWeight, ".weight", true, false, &RowPairs},
    {S::kWeightScale, ".weight_scale", true, false, &RowMajorGroupScales},
    {S::kWeightGlobalScale, ".weight_scale_2", false, true, &Scalar},
    {S::kPreQuantScale, ".pre_quant_scale", false, false, &PerColumn},
    {S::kInputScale, ".input_scale", false, false, &Scalar}};
// w4afp8 routed experts (vLLM 0.34 W4AFP8Config's checkpoint mapper drops the input scale).
constexpr SourceTensor kW4afp8Experts[] = {
    {S::kWeight, ".weight", true, false, &ColumnPairsInt8},
    {S::kWeightScale, ".weight_scale_inv", true, false, &RowMajorGroupScales},
    {S::kInputScale, ".input_scale", false, false, &Scalar}};
// bitsandbytes 4-bit: the packed codes and their quant state, serialized next to the weight (the
// codes' container dtype is bnb_4bit_quant_storage's). Double quantization's nested tensors are
// read only to resolve the absmax (bnb_family.h).
constexpr SourceTensor kBnb4bit[] = {
    {S::kWeight, ".weight", true},
    {S::kWeightScale, ".weight.absmax", true, false, &Bnb4Absmax},
    {std::nullopt, ".weight.quant_map", true, false, &Bnb4QuantMap, SourceValues::kFinite},
    {std::nullopt, ".weight.nested_absmax", false, false, nullptr, SourceValues::kScale},
    {std::nullopt, ".weight.nested_quant_map", false, false, &Bnb4NestedQuantMap,
     SourceValues::kFinite},
    {std::nullopt, ".weight.quant_state.bitsandbytes__nf4", false, false, nullptr,
     SourceValues::kUnchecked},
    {std::nullopt, ".weight.quant_state.bitsandbytes__fp4", false, false, nullptr,
     SourceValues::kUnchecked}};
// bitsandbytes LLM.int8: int8 rows with their absmax in SCB.
constexpr SourceTensor kBnb8bit[] = {
    {S::kWeight, ".weight", true, false, &ElementWeight},
    {S::kWeightScale, ".SCB", true, false, &Bnb8Scb},
    {std::nullopt, ".weight_format", false, false, nullptr, SourceValues::kUnchecked}};
// gpt-oss experts, every expert of a layer in one tensor per projection prefix
// ("<experts>.gate_up_proj"): `_blocks` U8 [E, R, K/32, 16], `_scales` U8 [E, R, K/32] (E8M0),
// `_bias` [E, R], R the projection's rows (gate and up interleaved in gate_up_proj).
constexpr SourceTensor kGptOssMxfp4[] = {{S::kWeight, "_blocks", true, false, &GptOssBlocks},
                                         {S::kWeightScale, "_scales", true, false, &GptOssScales},
                                         {S::kBias, "_bias", false, false, &GptOssBias}};
constexpr SourceTensor kModelSlim[] = {
    {S::kWeight, ".weight", true, false, &ModelSlimWeight},
    {S::kWeightScale, ".weight_scale", true, false, &ModelSlimScale},
    // On every W8A8 layer; SGLang loads it, the spec checks 0.
    {S::kWeightZero, ".weight_offset", false, true, &PerRow},
    {S::kQuantBias, ".quant_bias", false, false, &Int32Bias},
    {std::nullopt, ".deq_scale", false, false, &ModelSlimDeqScale, SourceValues::kUnchecked},
    {S::kInputScale, ".input_scale", false, false, &Scalar},
    {S::kInputOffset, ".input_offset", false, false, &Scalar}};

}  // namespace

std::span<const SourceTensor> SourceTensors(SourceLayout layout) {
  switch (layout) {
    case SourceLayout::kDense:
      return kDense;
    case SourceLayout::kFp8ScaleInv:
      return kFp8ScaleInv;
    case SourceLayout::kFp8Scale:
    case SourceLayout::kCtFloatQuantized:
    case SourceLayout::kModelOptFp8:
      return kFp8Scale;
    case SourceLayout::kAwqGemm:
    case SourceLayout::kAwqGemv:
      return kAwq;
    case SourceLayout::kGptqV1:
    case SourceLayout::kGptqV2:
      return kGptq;
    case SourceLayout::kCtPackQuantized:
      return kCtPack;
    case SourceLayout::kCtNaiveQuantized:
      return kCtQuantized;
    case SourceLayout::kCtNvfp4PackQuantized:
      return kCtNvfp4;
    case SourceLayout::kCtMxfp4PackQuantized:
      return kCtMxfp4;
    case SourceLayout::kModelOptNvfp4:
      return kModelOptNvfp4;
    case SourceLayout::kModelOptW4A8Awq:
      return kModelOptW4A8Awq;
    case SourceLayout::kBnb4bit:
      return kBnb4bit;
    case SourceLayout::kBnb8bit:
      return kBnb8bit;
    case SourceLayout::kGptOssMxfp4:
      return kGptOssMxfp4;
    case SourceLayout::kModelSlim:
      return kModelSlim;
    case SourceLayout::kW4afp8Experts:
      return kW4afp8Experts;
  }
  return {};
}

SourceValues SourceValuesOf(const SourceTensor& tensor) {
  if (tensor.values != SourceValues::kBySlot || !tensor.slot) return tensor.values;
  switch (*tensor.slot) {
    case Slot::kWeight:
      return SourceValues::kCodes;
    case Slot::kWeightScale:
      return SourceValues::kScale;
    case Slot::kWeightZero:
      return SourceValues::kZeroPoint;
    case Slot::kGIdx:
      return SourceValues::kGroupMap;
    case Slot::kWeightGlobalScale:
    case Slot::kInputScale:
      return SourceValues::kDivisor;
    case Slot::kInputOffset:
      return SourceValues::kOffset;
    case Slot::kQuantBias:
      return SourceValues::kUnchecked;
    case Slot::kBias:
    case Slot::kPreQuantScale:
      return SourceValues::kFinite;
  }
  return SourceValues::kUnchecked;
}

std::optional<std::string_view> SourceSuffix(SourceLayout layout, Slot slot) {
  for (const SourceTensor& tensor : SourceTensors(layout)) {
    if (tensor.slot == slot) return tensor.suffix;
  }
  if (slot == Slot::kBias) return ".bias";
  return std::nullopt;
}

std::optional<SourceTensorRule> SourceRule(SourceLayout layout, Slot slot, const SourceLeg& leg) {
  for (const SourceTensor& tensor : SourceTensors(layout)) {
    if (tensor.slot == slot) return tensor.rule ? tensor.rule(leg) : std::nullopt;
  }
  return std::nullopt;
}

bool SourceTensorRule::AcceptsDtype(StDtype dtype) const {
  return dtypes.empty() || std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
}

bool SourceTensorRule::AcceptsShape(const std::vector<int64_t>& shape) const {
  if (any_shape) {
    int64_t elements = 1;
    for (int64_t d : shape) elements *= d;
    return !shapes.empty() && !shapes[0].empty() && elements == shapes[0][0];
  }
  return std::find(shapes.begin(), shapes.end(), shape) != shapes.end();
}

std::string SourceTensorRule::DtypesText() const {
  std::vector<std::string> names;
  for (StDtype dtype : dtypes) names.emplace_back(StDtypeName(dtype));
  if (names.size() < 2) return names.empty() ? "any dtype" : names[0];
  const std::string last = names.back();
  names.pop_back();
  return Join(names, ", ") + " or " + last;
}

std::string SourceTensorRule::ShapesText() const {
  if (any_shape) return fmt::format("{} elements", shapes.empty() ? 0 : shapes[0][0]);
  std::vector<std::string> texts;
  for (const std::vector<int64_t>& shape : shapes) {
    texts.push_back(specs_internal::ShapeString(shape));
  }
  return Join(texts, " or ");
}

bool StacksExperts(SourceLayout layout) { return layout == SourceLayout::kGptOssMxfp4; }

}  // namespace quantpath
