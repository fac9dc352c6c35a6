// The checkpoint tensors of every source layout, per module prefix, in one table. Names follow each
// producer's own writer: DeepSeek / transformers fp8, AutoAWQ, AutoGPTQ / GPTQModel,
// compressed-tensors' compressors, ModelOpt's export, bitsandbytes' serialization, gpt-oss and
// ModelSlim.
#include <iterator>

#include "quantpath/specs.h"

namespace quantpath {
namespace {

using S = Slot;

constexpr SourceTensor kDense[] = {{S::kWeight, ".weight", true}};
// DeepSeek-V3 style: the block scale is called an inverse but multiplies the weight.
constexpr SourceTensor kFp8ScaleInv[] = {{S::kWeight, ".weight", true},
                                         {S::kWeightScale, ".weight_scale_inv", true},
                                         {S::kInputScale, ".input_scale", false}};
constexpr SourceTensor kFp8Scale[] = {{S::kWeight, ".weight", true},
                                      {S::kWeightScale, ".weight_scale", true},
                                      {S::kInputScale, ".input_scale", false}};
// AutoAWQ: qweight [K, N / 8] int32, qzeros [K / g, N / 8] int32, scales [K / g, N] fp16.
constexpr SourceTensor kAwq[] = {{S::kWeight, ".qweight", true},
                                 {S::kWeightZero, ".qzeros", true},
                                 {S::kWeightScale, ".scales", true}};
// AutoGPTQ / GPTQModel: qweight [K / pack, N] int32, qzeros [K / g, N / pack] int32 (v1 stores
// zero − 1), scales [K / g, N] fp16, g_idx [K] int32.
constexpr SourceTensor kGptq[] = {{S::kWeight, ".qweight", true},
                                  {S::kWeightZero, ".qzeros", true},
                                  {S::kWeightScale, ".scales", true},
                                  // Written by every GPTQ producer; used only with act-order.
                                  {S::kGIdx, ".g_idx", false, true}};
// compressed-tensors pack-quantized: weight_packed [N, ceil(K·bits / 32)] int32, weight_shape [2],
// weight_zero_point [ceil(N·bits / 32), groups] int32 (asymmetric), weight_g_idx [K] (actorder).
constexpr SourceTensor kCtPack[] = {{S::kWeight, ".weight_packed", true},
                                    {S::kWeightScale, ".weight_scale", true},
                                    {S::kWeightZero, ".weight_zero_point", false},
                                    {S::kGIdx, ".weight_g_idx", false},
                                    {std::nullopt, ".weight_shape", true}};
constexpr SourceTensor kCtQuantized[] = {{S::kWeight, ".weight", true},
                                         {S::kWeightScale, ".weight_scale", true},
                                         {S::kWeightZero, ".weight_zero_point", false},
                                         {S::kInputScale, ".input_scale", false},
                                         {S::kInputOffset, ".input_zero_point", false}};
// compressed-tensors nvfp4-pack-quantized: the global scales divide.
constexpr SourceTensor kCtNvfp4[] = {{S::kWeight, ".weight_packed", true},
                                     {S::kWeightScale, ".weight_scale", true},
                                     {S::kWeightGlobalScale, ".weight_global_scale", true},
                                     {S::kInputScale, ".input_global_scale", false}};
// compressed-tensors mxfp4-pack-quantized: E8M0 scales, no global scale.
constexpr SourceTensor kCtMxfp4[] = {{S::kWeight, ".weight_packed", true},
                                     {S::kWeightScale, ".weight_scale", true}};
// ModelOpt NVFP4: weight_scale_2 multiplies.
constexpr SourceTensor kModelOptNvfp4[] = {{S::kWeight, ".weight", true},
                                           {S::kWeightScale, ".weight_scale", true},
                                           {S::kWeightGlobalScale, ".weight_scale_2", true},
                                           {S::kInputScale, ".input_scale", false}};
// ModelOpt W4A8_AWQ: weight_scale_2 (the fp8 stage) is checked whenever present, not kept.
constexpr SourceTensor kModelOptW4A8Awq[] = {
    {S::kWeight, ".weight", true},
    {S::kWeightScale, ".weight_scale", true},
    {S::kWeightGlobalScale, ".weight_scale_2", false, true},
    {S::kPreQuantScale, ".pre_quant_scale", false},
    {S::kInputScale, ".input_scale", false}};
// bitsandbytes 4-bit: the packed codes and their quant state, serialized next to the weight.
// Double quantization's nested tensors are read only to resolve the absmax (bnb_family.h).
constexpr SourceTensor kBnb4bit[] = {
    {S::kWeight, ".weight", true},
    {S::kWeightScale, ".weight.absmax", true},
    {std::nullopt, ".weight.quant_map", true},
    {std::nullopt, ".weight.nested_absmax", false},
    {std::nullopt, ".weight.nested_quant_map", false},
    {std::nullopt, ".weight.quant_state.bitsandbytes__nf4", false},
    {std::nullopt, ".weight.quant_state.bitsandbytes__fp4", false}};
// bitsandbytes LLM.int8: int8 rows with their absmax in SCB.
constexpr SourceTensor kBnb8bit[] = {{S::kWeight, ".weight", true},
                                     {S::kWeightScale, ".SCB", true},
                                     {std::nullopt, ".weight_format", false}};
// gpt-oss experts, every expert of a layer in one tensor per projection prefix
// ("<experts>.gate_up_proj"): `_blocks` U8 [E, R, K/32, 16], `_scales` U8 [E, R, K/32] (E8M0),
// `_bias` [E, R], R the projection's rows (gate and up interleaved in gate_up_proj).
constexpr SourceTensor kGptOssMxfp4[] = {
    {S::kWeight, "_blocks", true}, {S::kWeightScale, "_scales", true}, {S::kBias, "_bias", false}};
constexpr SourceTensor kModelSlim[] = {{S::kWeight, ".weight", true},
                                       {S::kWeightScale, ".weight_scale", true},
                                       // On every W8A8 layer; SGLang loads it, the spec checks 0.
                                       {S::kWeightZero, ".weight_offset", false, true},
                                       {S::kQuantBias, ".quant_bias", false},
                                       {std::nullopt, ".deq_scale", false},
                                       {S::kInputScale, ".input_scale", false},
                                       {S::kInputOffset, ".input_offset", false}};

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
  }
  return {};
}

std::optional<std::string_view> SourceSuffix(SourceLayout layout, Slot slot) {
  for (const SourceTensor& tensor : SourceTensors(layout)) {
    if (tensor.slot == slot) return tensor.suffix;
  }
  if (slot == Slot::kBias) return ".bias";
  return std::nullopt;
}

bool StacksExperts(SourceLayout layout) { return layout == SourceLayout::kGptOssMxfp4; }

}  // namespace quantpath
