// HF→engine name mappers applied to quantization descriptions, as the engines apply them.
//
// vLLM (`apply_vllm_mapper`) and SGLang (`apply_weight_name_mapper`) rewrite the module names a
// quantization config lists with the model class's mapper, once, after reading the config and
// before deciding any layer. Which lists each engine rewrites, and how, depends on the format:
// that is a table here (one row per importer, engine and field), so that every importer keeps
// reading its own fields unchanged. Non-goals: choosing the mapper (the models stage owns the
// mappers) and matching (the rewritten entries go through each importer's own matchers).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/ir.h"
#include "quantpath/sources.h"

namespace quantpath {

// `name` rewritten by `mapper` the way the engine's WeightsMapper does it: substring rules, then
// prefix rules, then suffix rules, each kind walked in the mapper's order.
std::string MapName(const NameMapper& mapper, std::string_view name);

// The folder as the importer named `importer` reads it under `dialect` once the engine has applied
// `mapper`: the listed fields of every description object (the embedded one and each standalone
// file) are rewritten, each new entry keeping the pointer of the entry it came from. Each change is
// described in `notes`. Formats and dialects whose engine maps nothing get the folder unchanged.
ConfigSources ApplyNameMapper(const ConfigSources& sources, std::string_view importer,
                              const Dialect& dialect, const NameMapper& mapper,
                              std::vector<std::string>* notes);

}  // namespace quantpath
