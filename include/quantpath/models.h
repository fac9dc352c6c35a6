// quantpath models: architectures → layer sites.
//
// Goals: from config.json fields alone, list every quantizable site of a model (full module path
// in the dialect's execution names, kind, logical shape, fused legs, expert count), in module
// construction order, every checkpoint tensor outside them (by checkpoint name and shape), and
// parameter counts. Non-goals: quantization formats, weights.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/sources.h"

namespace quantpath {

// One component of a fused site, e.g. q_proj of qkv_proj, with its output rows.
struct Leg {
  std::string name;  // short name, e.g. "q_proj"
  int64_t rows = 0;
};

// How an expert combines its gate and up outputs into down_proj's input: the fused MoE activation
// the engines run for the architecture.
struct ExpertActivation {
  enum class Kind : uint8_t {
    kSiluAndMul,  // silu(gate) · up (vLLM's SiluAndMul): Qwen3-MoE, DeepSeek-V3, GLM-4.5
    // gpt-oss: g = min(gate, limit), u = clamp(up, −limit, limit), (u + 1) · g · σ(alpha · g)
    // (transformers' GptOssExperts, vLLM's swigluoai_and_mul).
    kSwigluOai,
  };
  Kind kind = Kind::kSiluAndMul;
  double alpha = 0;  // kSwigluOai: 1.702, fixed in both engines
  double limit = 0;  // kSwigluOai: config.json `swiglu_limit` (7.0 where absent, as transformers)
  // The activation of one (gate, up) pair, in double.
  double Apply(double gate, double up) const;
  // The same as down_proj reads it, in bf16 (the engines' activation dtype): Apply rounded to fp32,
  // then to bf16 (FloatToBf16's bits). The grouped MoE forward, its reference and `run --input`
  // round the same way, so that equal gate and up give equal inputs to down.
  uint16_t ApplyBf16(double gate, double up) const;
};

// How the engine class of a site splits it across tensor-parallel ranks. The models stage sets it
// with the class (TpStyleOf); the planner's shape checks and the loader read it.
struct TpStyle {
  // RowParallelLinear: kRow; ColumnParallelLinear, MergedColumnParallelLinear, QKVParallelLinear:
  // kColumn; ReplicatedLinear and its merged forms: kReplicated. nullopt for a class no linear
  // split places (ParallelLMHead, FusedMoE, attention, nn.Linear, an unknown class).
  std::optional<Parallel> parallel;
  // A merged class (Merged*, QKV*) keeps one output partition per fused leg; any other class has
  // one for the whole layer.
  bool merged = false;
  // A QKV class: the ranks divide the attention heads, each holding one whole KV head when there
  // are fewer KV heads than ranks.
  bool qkv = false;
  bool operator==(const TpStyle&) const = default;
};

// The style of an engine class as vLLM and SGLang name theirs ("QKVParallelLinear"), read from
// the parts of its name: the only place a class name says how a site splits.
TpStyle TpStyleOf(std::string_view module_class);

struct LayerSite {
  std::string path;  // execution name, e.g. "model.layers.0.self_attn.qkv_proj"
  SiteKind kind = SiteKind::kLinear;
  // Logical weight shape [N (out), K (in)]; for moe one expert's [intermediate, hidden]; none for
  // attention.
  std::optional<std::array<int64_t, 2>> shape;
  std::vector<Leg> legs;     // packed-mapping order; empty when not fused
  int64_t experts = 0;       // moe only
  std::string module_class;  // engine class, for class-name targets
  TpStyle tp_style;          // TpStyleOf(module_class)
  bool bias = false;
  int64_t params = 0;  // weights as the checkpoint stores them, biases included
  bool mtp = false;    // part of a multi-token-prediction layer
  // Inside one of the model's repeated decoder blocks (ModelSites::decoder_blocks), where
  // block-wise quantizers (GPTQ, AWQ) work. True for sites made from engine cases.
  bool in_decoder_block = true;
  // False when the engines build this module without a quantization config (DeepSeek's MTP
  // eh_proj is a plain nn.Linear), so no format quantizes it.
  bool quant_config_applies = true;
  // Whether the engines call get_quant_method for this module (false for routers, MTP eh_proj
  // and embeddings they build without a quantization config). Engine dialects list only the
  // sites with a call; native lists every site.
  bool engine_quant_call = true;
  // The module as the checkpoint (Hugging Face) names it, with vLLM's fused names for fused
  // sites (the native dialect's path). Every site carries it; `path` is the prefix the dialect's
  // engine passes to get_quant_method, which may differ (vLLM's gpt-oss `model.layers.N.attn.*`)
  // or be empty (vLLM's Llama embed_tokens, SGLang's phi-2 linear layers).
  std::string checkpoint_path;
  // moe only: the checkpoint holds each projection of every expert in one tensor, the experts
  // along its first dimension (gpt-oss's `<experts>.gate_up_proj_blocks` [E, 2I, H/32, 16], gate
  // and up rows interleaved); ExpertLegPath then names that tensor's module, whatever the expert.
  bool stacked_experts = false;
  // moe only: how gate and up combine before down_proj.
  ExpertActivation expert_activation;

  // "model.layers.0.self_attn.q_proj" for leg 0 of qkv_proj: the parent path plus the leg's name.
  // For an moe site the legs belong to each expert, and this returns the path without an expert
  // index ("model.layers.3.mlp.experts.gate_proj"); see ExpertLegPath. Empty when `leg` is out of
  // range, and for a site the engine builds without a prefix (it looks at no leg: its fused-shard
  // lookup starts from the prefix's last segment).
  std::string LegPath(size_t leg) const;
  // "model.layers.3.mlp.experts.5.gate_proj": leg `leg` of expert `expert`, as the checkpoint
  // names it ("model.layers.3.mlp.experts.gate_up_proj" for every expert of stacked_experts).
  // Empty unless this is an moe site and both indices are in range.
  std::string ExpertLegPath(int64_t expert, size_t leg) const;
  // What lines this site up with the same module under another dialect, built from checkpoint
  // names only (dialects name fused MLA projections, attention modules and routers differently):
  // a fused site by its parent and legs ("model.layers.0.self_attn.{q_a_proj+kv_a_proj_with_mqa}"),
  // attention by its parent module ("model.layers.0.self_attn.<attention>", which SGLang's two MLA
  // attention modules share), an moe site by the module holding its experts, any other site by
  // its checkpoint path.
  std::string CheckpointKey() const;
};

using PackedModulesMapping = std::vector<std::pair<std::string, std::vector<std::string>>>;

// A checkpoint tensor that belongs to no site: a norm's weight or bias, a router's
// e_score_correction_bias, gpt-oss's attention sinks, a vision tower's convolution or position
// table.
struct OtherTensor {
  // As model.safetensors names it ("model.layers.0.input_layernorm.weight"), whatever the
  // dialect's execution names.
  std::string name;
  // As stored. Empty for a scalar, and for every tensor of sites inferred from an index without
  // its shards (the names are all it gives).
  std::vector<int64_t> shape;
};

struct ModelSites {
  std::string architecture;
  std::vector<LayerSite> sites;  // module construction order, MTP last
  // Every checkpoint tensor that belongs to no site, in construction order: `load` requires each
  // with its shape and accepts no other tensor outside the sites (but those of unlisted_modules
  // and skipped_modules).
  std::vector<OtherTensor> other_tensors;
  // The elements of other_tensors, plus, in engine dialects, the weights of unlisted_modules and
  // skipped_modules.
  int64_t other_params = 0;
  // Engine dialects: the checkpoint paths of the modules the engine builds without a quantization
  // config (embeddings, routers, SGLang's gpt-oss attention: a fused site's legs), which it does
  // not list as sites; their weights, unquantized, count in other_params.
  std::vector<std::string> unlisted_modules;
  // Engine dialects without launch.speculative: the checkpoint modules of the MTP layers the
  // engine does not build ("model.layers.61", Qwen3.5's "mtp"). It skips their weights when
  // loading (vLLM's DeepseekV3 load_weights drops layers past num_hidden_layers), so they have no
  // sites and no other_tensors; all their weights count in other_params.
  std::vector<std::string> skipped_modules;
  QDType torch_dtype = QDType::kBF16;
  PackedModulesMapping packed_modules_mapping;
  // The module list of the language model's decoder blocks, e.g. "model.layers", "transformer.h".
  std::string decoder_blocks;
  std::vector<std::string> warnings;

  // Sum of the sites' params (biases included, tied heads counted once).
  int64_t SiteParams() const;
  // SiteParams() + other_params: the whole checkpoint's parameter count.
  int64_t TotalParams() const { return SiteParams() + other_params; }
  // The site whose execution path is exactly `path`, or nullptr (an empty path names no site).
  const LayerSite* Find(std::string_view path) const;
  // The first site whose checkpoint_path is exactly `path`, or nullptr.
  const LayerSite* FindCheckpoint(std::string_view path) const;
};

// Builds the sites of the architecture named in config.json (`architectures[0]`) for `dialect`:
// native lists every site; an engine dialect lists the modules its engine calls get_quant_method
// for, in its construction order and under its prefixes, with MTP layers only when
// `launch.speculative` asks for speculative decoding (the weights of modules not listed count in
// other_params).
// An unknown architecture is an error naming it and the supported ones.
// Errors name config.json and the JSON pointer of the field (missing fields, wrong types, values
// out of range) together with the architecture.
Result<ModelSites> BuildModelSites(const ConfigSources& sources, const Dialect& dialect,
                                   const Launch& launch = {});
// The same from an already parsed config.json root object (for callers and tests that hold the
// JSON in memory). Multimodal wrappers are read as ConfigSources::text_config() reads them.
Result<ModelSites> BuildModelSites(const Json& config_json, const Dialect& dialect,
                                   const Launch& launch = {});
// Names of the supported architectures.
std::vector<std::string> SupportedArchitectures();

// The HF→engine name mapper `dialect` applies to the quantization config of `model`: an
// architecture ("Qwen2_5_VLForConditionalGeneration") or the engine's model class as
// module.Class ("qwen2_5_vl.Qwen2_5_VLForConditionalGeneration"). nullopt when the engine applies
// none (native never does: it follows each format's reference over Hugging Face names).
std::optional<NameMapper> FindNameMapper(std::string_view model, const Dialect& dialect);
// The same for the architecture config.json names (`architectures[0]`); nullopt without one.
std::optional<NameMapper> FindNameMapper(const ConfigSources& sources, const Dialect& dialect);

}  // namespace quantpath
