// Internal to src/pipeline: the checkpoint tensors that hold an attention layer's KV-cache scales,
// which `check` and `load` give to the attention site its KV-cache method is attached to, and the
// name each engine release loads them as.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "quantpath/ir.h"
#include "quantpath/models.h"

namespace quantpath::pipeline_internal {

// The checkpoint module an attention site's KV-cache scales are stored under: the site's parent
// ("model.layers.0.self_attn" for "model.layers.0.self_attn.attn").
std::string KvScaleModule(const LayerSite& attention);

// Whether `rest`, a tensor's name after that module and its dot, is a KV-cache scale as the
// producers write them:
//   {k,v,q}_scale           compressed-tensors (its attention hooks), fused attention or not
//   kv_scale                the one scale of older fp8 exports (the engines copy it to k and v)
//   <proj>.{k,v,q}_scale    ModelOpt, on the projection that computes them (k_proj.k_scale, or
//                           the fused qkv_proj where q, k and v are one module)
//   {k,v,q}_proj.output_scale  AutoFP8 and compressed-tensors before the attention hooks
bool IsKvScaleName(std::string_view rest);

// Where a KV-cache scale tensor of `attention` goes when `dialect`'s engine loads the model
// (`architecture`, quantized by the importer `importer`): nullopt where it becomes the
// attention's own scale, else why not, in words.
std::optional<std::string> KvScaleNotLoaded(const Dialect& dialect, std::string_view architecture,
                                            std::string_view importer, const LayerSite& attention,
                                            std::string_view tensor);

}  // namespace quantpath::pipeline_internal
