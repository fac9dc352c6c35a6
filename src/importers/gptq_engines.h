// How the GPTQ readers of the dialects differ, as data: the kernel family whose limits apply,
// what method resolution does with a config Marlin cannot run, how modules_in_block_to_quantize
// and `dynamic` are read, and the engine method names. gptq.cc builds the plan from these rows.
//
// Goals: one row per dialect (native, vllm, sglang, vllm@0.33, sglang@0.5.23) and the engine
// checks that decide between rows or raise before any layer is seen. Non-goals: reading the
// config's fields (gptq.cc) and `dynamic` itself (gptq_dynamic.cc).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "src/importers/gptq.h"

namespace quantpath {

// The kernel family whose limits a dialect applies to a GPTQ scheme.
enum class GptqKernel {
  kGptqModel,  // any GPTQ width; the reference implementation
  kGptq,       // the engines' exllama-style GPTQ kernels: 2/3/4/8 bits
  kMarlin,     // (bits, sym) in {(4, True), (8, True)}, group_size in {-1, 32, 64, 128}
};

// How modules_in_block_to_quantize selects layers.
enum class GptqBlockList {
  kSuffix,     // optimum: name.endswith(entry)
  kSubstring,  // vLLM is_layer_gptq_quantized: entry in prefix, per shard of a fused layer
  kIgnored,    // SGLang does not read it
};

// What a dialect does with a config its Marlin kernel cannot run.
enum class GptqNotMarlin {
  kNotChecked,     // the Marlin config is used for every config (its own checks raise)
  kGptqKernel,     // override_quantization_method keeps the plain GPTQ kernel
  kUnknownMethod,  // no plain GPTQ method is registered: method resolution fails
};

// Engine class names the details carry; empty for native.
struct GptqMethodNames {
  std::string_view marlin_linear, gptq_linear, moe;
};

// Everything that differs between dialects, as data.
struct GptqDialect {
  GptqKernel kernel;
  GptqNotMarlin not_marlin;
  // The --quantization name with which override_quantization_method keeps the plain GPTQ method
  // for a Marlin-compatible config (the user asked for it explicitly); empty when none does.
  std::string_view bypasses_marlin;
  bool engine_required_fields;  // get_from_keys: bits, group_size, desc_act (+ sym for Marlin)
  bool rejects_desc_act;        // vLLM 0.33: group activation ordering is no longer supported
  DynamicStyle dynamic;
  GptqBlockList block_list;
  SiteKindSet block_list_kinds;
  bool block_list_from_checkpoint;  // vLLM maybe_update_config
  bool decoder_blocks_only;  // the exporters quantize only the linear layers of the decoder blocks
  bool empty_block_list_quantizes_all;  // vLLM 0.33 is_layer_gptq_quantized
  // MoE sites get `names.moe` from one rule ahead of `dynamic` (the engine never reads `dynamic`
  // for them).
  bool moe_method_first;
  std::string_view unquantized_detail;
  GptqMethodNames names;
  // The platform's own GPTQ config (SGLang's CPUGPTQConfig, GPTQAscendConfig): `dynamic` and
  // lm_head are not read, every LinearBase and FusedMoE gets the plain GPTQ methods, and the
  // method resolves as "gptq" (no Marlin override off CUDA).
  bool platform_config = false;
  // The kernel path the platform config attaches (layer.scheme), which the details name.
  std::string_view linear_scheme = {}, moe_scheme = {};
  // vLLM on a CPU: Marlin's CPU kernel takes 4-bit weights only (marlin_utils), so the method's
  // constructor refuses 8 bits.
  bool marlin_4bit_only = false;
  // Off CUDA (SGLang on MPS) the Marlin check fails, so Marlin runs only when --quantization
  // gptq_marlin names it.
  bool marlin_only_when_named = false;

  // SGLang's GPTQConfig.get_quant_method goes through get_linear_quant_method, which returns None
  // for FusedMoE: the experts stay unquantized, except under a platform config.
  bool QuantizesMoe(GptqKernel k) const { return k != GptqKernel::kGptq || platform_config; }
};

// The dialect's row on `platform` (SGLang's registry differs by platform; the others are
// reproduced on CUDA only, CheckPlatformReproduced).
const GptqDialect& GptqDialectFor(const Dialect& dialect, Platform platform);

// The kernel the dialect resolves the config to: `d.kernel`, the plain GPTQ kernel when method
// resolution keeps it (a note says so), or the engine's "Unknown quantization method" error when
// the dialect has no plain GPTQ method. `requested` is the user's --quantization name, if any.
Result<GptqKernel> ResolveKernel(const ConfigCopy& copy, const GptqDialect& d,
                                 const Dialect& dialect,
                                 const std::optional<std::string>& requested, Platform platform,
                                 std::vector<std::string>* notes);

// The text the dialect raises while reading settings it cannot run, or nullopt.
std::optional<std::string> SchemeError(GptqKernel kernel, const GptqSettings& s);

// The text the dialect raises when a layer is built with settings its kernel rejects.
std::optional<std::string> LayerError(GptqKernel kernel, const GptqDialect& d,
                                      const GptqSettings& s);

// vLLM 0.33's normalize_and_validate_gptq_desc_act: act-order is accepted only where one group per
// output channel makes it a no-op, in the base config and in every "+:" override of `dynamic`
// (which inherits the base desc_act as written).
Status CheckDescAct(const ConfigCopy& copy, const GptqSettings& base);

}  // namespace quantpath
