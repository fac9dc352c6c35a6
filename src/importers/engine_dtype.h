// The dtype an engine release builds the model in, and the methods that refuse it (vLLM 0.33.0
// config/vllm.py and SGLang 0.5.23 model_loader/loader.py _get_quantization_config: "<dtype> is
// not supported for quantization method <name>. Supported dtypes: [...]").
#pragma once

#include "quantpath/ir.h"
#include "quantpath/sources.h"

namespace quantpath {

// --dtype when given, else config.json's `dtype` / `torch_dtype` (the text config's first) as the
// engine's dtype="auto" resolves it: vLLM 0.33 _resolve_auto_dtype turns float32 (or no dtype)
// into bfloat16 on CUDA; SGLang 0.5.23 _get_and_verify_dtype into float16, bfloat16 for Gemma.
QDType EngineDtype(const ConfigSources& sources, Engine engine);

// For a current-release dialect: when the plan's method refuses the engine's dtype, every site the
// method builds errors with the engine's text. Where the importer left plan->engine_method and
// act_dtypes empty, they come from the method table by the plan's quant_method, else its importer.
void CheckActDtype(const ConfigSources& sources, const Dialect& dialect, QuantPlan* plan);

// SGLang on a CPU with AMX (--platform cpu-amx): get_quantization_config refuses a method outside
// CPU_QUANTIZATION_METHODS, so every site the plan builds errors with the engine's text. The name
// tested is --quantization's, else the method the engine resolved (plan->engine_method).
void CheckPlatformMethod(const ConfigSources& sources, const Dialect& dialect, QuantPlan* plan);

}  // namespace quantpath
