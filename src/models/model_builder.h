// Internal to src/models: what an architecture file needs to turn config fields into sites.
//
// Goals: typed, bounded reads of config.json fields whose errors name `config.json#/<pointer>` and
// the architecture; a site list that computes parameter counts with overflow checks (the config is
// untrusted); the per-dialect names kept as one table. Non-goals: any particular architecture
// (those live in one file per family) and any quantization format.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/models.h"

namespace quantpath::models {

inline constexpr std::string_view kConfigFile = "config.json";

// Bounds on config values. They are far above every published model and keep a hostile config from
// asking for billions of sites; parameter products are overflow-checked separately.
inline constexpr int64_t kMaxDim = int64_t{1} << 24;  // hidden, vocab, intermediate, ranks
inline constexpr int64_t kMaxLayers = 4096;           // num_hidden_layers, MTP layers
inline constexpr int64_t kMaxHeads = int64_t{1} << 16;
inline constexpr int64_t kMaxExperts = int64_t{1} << 16;

// ---------------------------------------------------------------------------------------------
// Names and layer lists that differ between dialects, as data: an architecture file asks for a
// name or a flag, it never branches on the engine. An engine dialect lists the modules its engine
// builds, under the prefix it passes to get_quant_method; native lists every site under vLLM's
// execution names (DESIGN.md, "Dialects").

// How a DeepSeek-style MTP layer is named when it is built.
enum class MtpNames : uint8_t {
  kCheckpoint,  // native: model.layers.<L>.*, as the checkpoint stores it
  // vLLM's DeepSeekMTP: model.layers.<L>.*, its head `model.layers.<L>.head` built before the
  // decoder block (SharedHead gets the layer's prefix).
  kVllm,
  // SGLang's NextN draft model: the decoder block `model.decoder.*`, then the head
  // `model.shared_head.head`.
  kSglang,
};

struct DialectNames {
  // DeepSeek MLA: the fused q_a_proj + kv_a_proj_with_mqa site, and its class (SGLang builds one
  // ReplicatedLinear, a single output partition never split across ranks).
  std::string_view mla_fused_qkv_a;
  std::string_view mla_fused_qkv_a_class = "MergedColumnParallelLinear";
  // Attention sites of an MLA layer, in construction order (SGLang builds two RadixAttention
  // modules, one for the absorbed MQA path and one for the MHA prefill path).
  std::vector<std::string_view> mla_attention;
  std::string_view mla_attention_class;
  // Attention site class of a standard (GQA) layer.
  std::string_view attention_class;
  // Class of a layer's routed experts: FusedMoE, vLLM 0.33's RoutedExperts (compressed-tensors
  // class-name targets match it).
  std::string_view experts_class = "FusedMoE";
  // gpt-oss: vLLM names the attention block `attn` (checkpoint `self_attn`). Its `embedding` is
  // built without a quantization config, so no row carries that name.
  std::string_view gpt_oss_attention;
  // SGLang builds gpt-oss's attention block (qkv_proj, o_proj, attn) without a quantization
  // config.
  bool gpt_oss_attention_configured = true;
  // Whether modules the engine builds without a quantization config (routers, MTP eh_proj, an
  // embedding built without quant_config) are sites; the engines make no get_quant_method call for
  // them, so their weights count in other_params there.
  bool lists_unconfigured = true;
  // Whether MTP layers are built only when speculative decoding is asked for (Launch).
  bool mtp_needs_speculative = false;
  MtpNames mtp_names = MtpNames::kCheckpoint;
  // vLLM's LlamaModel builds embed_tokens without a prefix.
  bool unnamed_llama_embedding = false;
  // SGLang's phi.py builds every linear layer and the LM head without a prefix, and the
  // embedding without a quantization config.
  bool unnamed_phi_layers = false;
  // vLLM 0.33 serves GPTBigCode and Phi through its Transformers backend (registry.py
  // _TRANSFORMERS_SUPPORTED_MODELS): Hugging Face's modules under `model.`, attention modules
  // built after every layer.
  bool transformers_backend = false;
  // SGLang reuses the embedding module as the LM head when the head is tied (no ParallelLMHead,
  // so no get_quant_method call); vLLM builds ParallelLMHead and ties its weight.
  bool tied_head_reuses_embedding = false;
  // SGLang fuses DeepSeek-V3's and GLM-4.5's shared experts into the routed FusedMoE when the
  // model allows it (each architecture file states its conditions).
  bool fuses_shared_experts = false;
  // SGLang builds the routed experts before the shared experts (vLLM: shared first).
  bool shared_experts_after_routed = false;
  // SGLang's glm4_moe.py builds the attention module (RadixAttention) without a quantization
  // config.
  bool glm4_moe_attention_configured = true;
  // SGLang's qwen3_moe.py builds the attention module (RadixAttention) without one too.
  bool qwen3_moe_attention_configured = true;
  // Qwen3.5 (Qwen3_5ForConditionalGeneration): the prefixes the engine passes for the language
  // model, its head and the vision tower (checkpoint: model.language_model, lm_head,
  // model.visual), the name of a vision block's packed qkv (SGLang: qkv_proj), and whether the
  // vision tower gets the quantization config (SGLang builds it without one).
  std::string_view qwen3_5_language = "model.language_model";
  std::string_view qwen3_5_lm_head = "lm_head";
  std::string_view qwen3_5_visual = "model.visual";
  std::string_view qwen3_5_visual_qkv = "qkv";
  bool qwen3_5_visual_configured = true;
  // vLLM 0.33's Qwen3_5MTP draft model builds its own `lm_head` (a get_quant_method call).
  bool qwen3_5_mtp_head = false;
  // Architectures whose token embedding the engine builds without a quantization config (no
  // get_quant_method call): vLLM's gpt_oss.py, glm4_moe.py, qwen3_5.py; SGLang's deepseek_v2.py,
  // glm4_moe.py, gpt_oss.py, gpt_bigcode.py, phi.py, qwen3_5.py, qwen3_moe.py (Qwen2MoeModel).
  std::vector<std::string_view> embedding_without_quant_config = {};
};
const DialectNames& NamesFor(const Dialect& dialect, Platform platform);

// ---------------------------------------------------------------------------------------------
// Reads fields of one config object (config.json itself, or its `text_config`). Every error names
// the field as `config.json#/<pointer>` and says which architecture needed it and what it expected.
class ConfigReader {
 public:
  ConfigReader(const Json& object, std::string_view architecture)
      : object_(object), architecture_(architecture) {}

  const Json& object() const { return object_; }
  std::string_view architecture() const { return architecture_; }
  // "config.json#/text_config/hidden_size" for `key`, whether or not it is present.
  std::string Where(std::string_view key) const;

  // A required integer in [1, max].
  Result<int64_t> Positive(std::string_view key, int64_t max = kMaxDim) const;
  // An integer in [1, max]; absent or null gives nullopt (e.g. `q_lora_rank: null`).
  Result<std::optional<int64_t>> OptionalPositive(std::string_view key,
                                                  int64_t max = kMaxDim) const;
  // An integer in [1, max]; absent or null gives `fallback`.
  Result<int64_t> PositiveOr(std::string_view key, int64_t fallback, int64_t max = kMaxDim) const;
  // An integer in [0, max]; absent or null gives `fallback`.
  Result<int64_t> CountOr(std::string_view key, int64_t fallback, int64_t max) const;
  // A boolean; absent or null gives `fallback`.
  Result<bool> BoolOr(std::string_view key, bool fallback) const;
  // A string; absent or null gives nullopt.
  Result<std::optional<std::string>> OptionalString(std::string_view key) const;
  // A number (integer or not) in (0, max], e.g. Qwen-VL's `mlp_ratio`.
  Result<double> PositiveNumber(std::string_view key, double max = kMaxDim) const;
  // The same; absent or null gives `fallback`.
  Result<double> PositiveNumberOr(std::string_view key, double fallback,
                                  double max = kMaxDim) const;
  // A list of strings; absent or null gives nullopt.
  Result<std::optional<std::vector<std::string>>> OptionalStringList(std::string_view key) const;
  // The length of a list (any items); absent or null gives 0.
  Result<int64_t> ListLength(std::string_view key, int64_t max) const;
  // A nested object (e.g. `vision_config`); absent or null gives nullptr.
  Result<const Json*> OptionalObject(std::string_view key) const;

 private:
  Result<std::optional<int64_t>> Int(std::string_view key, int64_t min, int64_t max) const;

  const Json& object_;
  std::string architecture_;
};

// How a checkpoint stores the projections of one routed expert, and how they combine.
struct ExpertLayout {
  // gpt-oss: one `gate_up_proj` and one `down_proj` tensor per layer holding every expert
  // (LayerSite::stacked_experts), gate and up rows interleaved, instead of separate gate_proj and
  // up_proj per expert.
  bool fused_gate_up = false;
  // gpt-oss: `gate_up_proj_bias` and `down_proj_bias`.
  bool bias = false;
  ExpertActivation activation;
};

struct ArchInput;

// ---------------------------------------------------------------------------------------------
// Appends sites to a ModelSites in construction order. Parameter products are checked: the first
// overflow is kept and reported by status(), so architecture code can add sites without testing
// each product.
class SiteList {
 public:
  SiteList(ModelSites* out, const ArchInput& input);

  // Sites and other tensors added from now on, until EndMtp(), belong to the
  // multi-token-prediction module `module` (its checkpoint prefix: "model.layers.61", "mtp").
  // When the engine does not build MTP layers (ArchInput::builds_mtp), the module is one of
  // ModelSites::skipped_modules and its other tensors count in other_params only; its sites are
  // still added, marked mtp, and KeepEngineCalls drops them.
  void BeginMtp(std::string module);
  void EndMtp() { mtp_ = false; }
  // Sites added from now on are built by the engines without a quantization config.
  void set_without_quant_config(bool without) { without_quant_config_ = without; }
  // Sites added from now on are modules the engines build without a quantization config where
  // native still decides them through the format (an embedding built without quant_config).
  void set_no_engine_call(bool none) { no_engine_call_ = none; }

  // `module_class` is VocabParallelEmbedding except for position tables the engines build as a
  // plain nn.Embedding.
  void Embedding(std::string path, int64_t vocab, int64_t hidden,
                 std::string_view module_class = "VocabParallelEmbedding");
  // A linear site of logical shape [out_rows, in_cols]; with legs, out_rows must be their sum.
  void Linear(std::string path, std::string_view module_class, int64_t out_rows, int64_t in_cols,
              bool bias, std::vector<Leg> legs = {});
  void Attention(std::string path, std::string_view module_class);
  void Router(std::string path, int64_t experts, int64_t hidden, bool bias = false);
  // All routed experts of one layer: shape is one expert's [intermediate, hidden].
  void Moe(std::string path, std::string_view module_class, int64_t experts, int64_t intermediate,
           int64_t hidden, const ExpertLayout& layout = {});
  // A tied head is still a site (the engines build ParallelLMHead and tie its weight), but it
  // stores no parameters of its own (nor a bias).
  void LmHead(std::string path, int64_t vocab, int64_t hidden, bool tied, bool bias = false);
  // A checkpoint tensor that is no site's (a norm, a router's bias), by its checkpoint name and
  // stored shape (ModelSites::other_tensors).
  void Other(std::string name, std::initializer_list<int64_t> shape);

  // The engine path of the site added last, when the engine's prefix is not the checkpoint's
  // module path (checkpoint_path keeps that).
  void RenameLast(std::string path);
  // The site added last is built without a quantization config by the engine (no call).
  void NoEngineCallForLast();
  // Sites added so far; with RenamePrefix, renames the sites of one block after it is added.
  size_t size() const { return out_->sites.size(); }
  // Sites [first, size()) whose path starts with `from` get `to` instead (checkpoint_path kept).
  void RenamePrefix(size_t first, std::string_view from, std::string_view to);
  // Moves the attention sites among [first, size()) after every other site of that range, in
  // their order (vLLM's Transformers backend builds attention modules after the whole model).
  void MoveAttentionLast(size_t first);

  // Ok, or the first parameter count that did not fit in 64 bits.
  Status status() const;

 private:
  int64_t Product(std::initializer_list<int64_t> factors);
  int64_t Sum(int64_t a, int64_t b);
  LayerSite& Add(std::string path, SiteKind kind, std::string_view module_class);

  ModelSites* out_;
  std::string architecture_;
  bool builds_mtp_ = true;
  bool mtp_ = false;
  bool without_quant_config_ = false;
  bool no_engine_call_ = false;
  bool overflow_ = false;
};

// ---------------------------------------------------------------------------------------------
// Building blocks shared by several families.

// The token embedding at `path`, with no engine call where `names` says the engine builds it
// without a quantization config.
void AddTokenEmbedding(SiteList& list, const ArchInput& input, std::string path, int64_t vocab,
                       int64_t hidden);

// `quantization_config.quant_method` of config.json's root, or nullopt (for the model-level
// conditions engines put on a method name, e.g. SGLang's shared-experts fusion).
Result<std::optional<std::string>> ReadQuantMethod(const ArchInput& input);

// The LM head at `path` (SiteList::LmHead); with `tied` and an engine that reuses the embedding
// module as its head, no engine call.
void AddLmHead(SiteList& list, const ArchInput& input, std::string path, int64_t vocab,
               int64_t hidden, bool tied, bool bias = false);

// The RMSNorms around a decoder layer's attention and MLP: `<layer>.input_layernorm.weight` and
// `<layer>.post_attention_layernorm.weight`, [hidden] each.
void AddDecoderNorms(SiteList& list, const std::string& layer, int64_t hidden);
// A LayerNorm with its bias: `<module>.weight` and `<module>.bias`, [width] each.
void AddLayerNorm(SiteList& list, const std::string& module, int64_t width);
// Per-head RMSNorms over q and k: `<attention>.q_norm.weight` and `<attention>.k_norm.weight`,
// [head_dim] each.
void AddQkNorms(SiteList& list, const std::string& attention, int64_t head_dim);

// The gated MLP every family here uses: `<prefix>.gate_up_proj` (legs gate_proj, up_proj) and
// `<prefix>.down_proj`.
void AddGatedMlp(SiteList& list, const std::string& prefix, int64_t hidden, int64_t intermediate,
                 bool bias);

// Grouped-query attention as vLLM builds it: `<prefix>.qkv_proj` (legs q_proj, k_proj, v_proj),
// the output projection and the attention module `<prefix>.attn`.
struct GqaAttention {
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  bool qkv_bias = false;
  bool o_bias = false;
  // Qwen3.5's gated attention: q_proj also emits a per-head output gate, doubling its rows.
  bool output_gate = false;
  // The output projection's name: o_proj, or Phi's dense.
  std::string_view o_name = "o_proj";
};
// hidden_size, num_attention_heads, num_key_value_heads (default: the head count) and head_dim
// (default: hidden_size / num_attention_heads), with the engines' divisibility rules.
Result<GqaAttention> ReadGqaAttention(const ConfigReader& c);
void AddGqaAttention(SiteList& list, const std::string& prefix, const GqaAttention& attention,
                     std::string_view attention_class);

// A DeepSeek-style MoE block at `prefix` (`model.layers.N.mlp`), in vLLM's construction order:
// router `gate`, its score-correction bias, the shared experts (vLLM builds them before the
// routed ones and hands them to the fused MoE layer), then `experts`; SGLang's order puts the
// shared experts last (`names`).
struct RoutedMoe {
  int64_t hidden = 0;
  int64_t experts = 0;
  int64_t moe_intermediate = 0;
  int64_t shared_intermediate = 0;  // 0: no shared experts
  bool score_correction_bias = false;
  // Shared experts fused into the routed experts as extra expert slots (SGLang's shared-experts
  // fusion): no shared_experts sites, `experts` + this many experts in the moe site.
  int64_t fused_shared_experts = 0;
};
void AddRoutedMoe(SiteList& list, const DialectNames& names, const std::string& prefix,
                  const RoutedMoe& moe);

// One DeepSeek-style multi-token-prediction layer as the checkpoint stores it under `layer`
// (`model.layers.<n>`): its own copy of the embedding, enorm/hnorm, eh_proj mixing [embedding;
// previous hidden], the decoder layer that `add_decoder_layer` appends, then shared_head (norm
// and its own copy of the head), all in SiteList::BeginMtp(layer). The engine paths follow
// `names.mtp_names` (the embedding and eh_proj are built without a quantization config).
void AddMtpLayer(SiteList& list, const DialectNames& names, const std::string& layer, int64_t vocab,
                 int64_t hidden, const std::function<void()>& add_decoder_layer);

// ---------------------------------------------------------------------------------------------
// One architecture family's builder: reads its fields and appends its sites.
struct ArchInput {
  // The architecture's own config (`text_config` for multimodal wrappers).
  const ConfigReader& config;
  // config.json's root, where multimodal wrappers keep their vision tower's config.
  const ConfigReader& root;
  const DialectNames& names;
  // Whether the engine builds the MTP layers: native always, an engine dialect only with
  // launch.speculative (the others are skipped_modules).
  bool builds_mtp = true;
};
using ArchBuilder = Status (*)(const ArchInput& input, ModelSites* out);

Status BuildLlama(const ArchInput& input, ModelSites* out);
Status BuildQwen2(const ArchInput& input, ModelSites* out);
Status BuildQwen3(const ArchInput& input, ModelSites* out);
Status BuildDeepseekV3(const ArchInput& input, ModelSites* out);
Status BuildGptOss(const ArchInput& input, ModelSites* out);
Status BuildQwenV1(const ArchInput& input, ModelSites* out);
Status BuildGptBigCode(const ArchInput& input, ModelSites* out);
Status BuildPhi(const ArchInput& input, ModelSites* out);
Status BuildGlm4Moe(const ArchInput& input, ModelSites* out);
Status BuildQwen3Moe(const ArchInput& input, ModelSites* out);
Status BuildQwen3_5(const ArchInput& input, ModelSites* out);
Status BuildMolmo(const ArchInput& input, ModelSites* out);

// ---------------------------------------------------------------------------------------------
// The fallback for an architecture no builder knows: sites inferred from the checkpoint's tensors
// (names, and shapes from the safetensors headers when the folder has them). NotFound when the
// folder has neither an index nor safetensors files.
Status InferSitesFromCheckpoint(const CheckpointListing& checkpoint, ModelSites* out);

}  // namespace quantpath::models
