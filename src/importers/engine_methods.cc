// Each release's QUANTIZATION_METHODS (vLLM: layers/quantization/__init__.py; SGLang: the CUDA
// registry of srt/layers/quantization/__init__.py), in the engine's order.
#include "src/importers/engine_methods.h"

#include <array>

namespace quantpath {
namespace {

constexpr std::array<DialectRow<std::string_view>, 6> kMethods = {{
    {DialectId::kNative, ""},
    {DialectId::kVllmHelpers, ""},
    {DialectId::kSglangHelpers, ""},
    {DialectId::kVllm033,
     "['awq', 'auto_awq', 'fp8', 'fbgemm_fp8', 'fp_quant', 'modelopt', 'modelopt_fp4', "
     "'modelopt_mxfp8', 'modelopt_mixed', 'auto_gptq', 'gptq', 'gptq_marlin', 'awq_marlin', "
     "'humming', 'compressed-tensors', 'experts_int8', 'quark', 'moe_wna16', 'torchao', 'inc', "
     "'mxfp4', 'gpt_oss_mxfp4', 'deepseek_v4_fp8', 'online', 'fp8_per_tensor', 'fp8_per_block', "
     "'fp8_per_channel', 'int8_per_channel_weight_only', 'nvfp4_per_token', 'mxfp8']"},
    // 0.34 adds w4afp8 and the lut_b_moe / mxfp4_hadamard32 shorthands and drops fp_quant.
    {DialectId::kVllm034,
     "['awq', 'auto_awq', 'fp8', 'w4afp8', 'fbgemm_fp8', 'modelopt', 'modelopt_fp4', "
     "'modelopt_mxfp8', 'modelopt_mixed', 'auto_gptq', 'gptq', 'gptq_marlin', 'awq_marlin', "
     "'humming', 'compressed-tensors', 'experts_int8', 'quark', 'moe_wna16', 'torchao', 'inc', "
     "'mxfp4', 'gpt_oss_mxfp4', 'deepseek_v4_fp8', 'online', 'fp8_per_tensor', 'fp8_per_block', "
     "'fp8_per_channel', 'int8_per_channel_weight_only', 'nvfp4_per_token', 'mxfp8', "
     "'lut_b_moe', 'mxfp4_hadamard32']"},
    {DialectId::kSglang0523,
     "['fp8', 'mxfp8', 'minimax_m3_nvfp4', 'blockwise_int8', 'modelopt', 'modelopt_fp8', "
     "'modelopt_fp4', 'nvfp4_online', 'modelopt_mixed', 'w8a8_int8', 'w8a8_fp8', 'awq', "
     "'awq_marlin', 'bitsandbytes', 'gguf', 'gptq_marlin', 'moe_wna16', 'compressed-tensors', "
     "'w4afp8', 'petit_nvfp4', 'quark', 'quark_mxfp4', 'auto-round', 'auto-round-int8', "
     "'modelslim', 'quark_int4fp8_moe', 'humming', 'mxfp_w4a8', 'mxfp4']"},
}};
static_assert(CoversEveryDialect(kMethods));

}  // namespace

std::string_view RegisteredMethodsText(const Dialect& dialect) { return RowFor(dialect, kMethods); }

}  // namespace quantpath
