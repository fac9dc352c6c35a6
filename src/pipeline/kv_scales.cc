#include "src/pipeline/kv_scales.h"

#include <algorithm>
#include <array>
#include <span>

#include "fmt/format.h"

namespace quantpath::pipeline_internal {
namespace {

// How an engine release renames a KV-cache scale tensor before it looks the name up.
enum class KvScaleRenamer : uint8_t {
  kNative,  // every form IsKvScaleName accepts is the attention's own
  // vLLM: AutoWeightsLoader (every model of quantpath's architectures loads through it) applies
  // the quantization config's get_cache_scale_mapper (base_config.py, the same in 0.33 and 0.34;
  // Fp8Config adds the output_scale suffixes), and ignores a *_scale name left unexpected
  // (QuantizationConfig._ignore_unexpected_suffixes).
  kVllmCacheScaleMapper,
  // SGLang: weight_utils.maybe_remap_kv_scale_name, called by the load_weights of the
  // architectures listed only; the others look the checkpoint name up as it is.
  kSglangRemapKvScaleName,
};

struct KvScaleRow {
  KvScaleRenamer renamer;
  std::span<const std::string_view> renaming_architectures;  // kSglangRemapKvScaleName only
};

// SGLang 0.5.23: models/llama.py (LlamaForCausalLM, and the classes built on it) and
// models/qwen3.py call maybe_remap_kv_scale_name; qwen2.py, qwen3_moe.py, qwen.py,
// deepseek_v2.py, glm4_moe.py, gpt_oss.py and the others quantpath builds do not.
constexpr std::array<std::string_view, 2> kSglang0523Renaming = {"LlamaForCausalLM",
                                                                 "Qwen3ForCausalLM"};

constexpr std::array<DialectRow<KvScaleRow>, 5> kKvScaleRows = {{
    {DialectId::kNative, {KvScaleRenamer::kNative, {}}},
    {DialectId::kVllmHelpers, {KvScaleRenamer::kVllmCacheScaleMapper, {}}},
    {DialectId::kSglangHelpers, {KvScaleRenamer::kSglangRemapKvScaleName, kSglang0523Renaming}},
    {DialectId::kVllm033, {KvScaleRenamer::kVllmCacheScaleMapper, {}}},
    {DialectId::kSglang0523, {KvScaleRenamer::kSglangRemapKvScaleName, kSglang0523Renaming}},
}};
static_assert(CoversEveryDialect(kKvScaleRows));

// `name` without `suffix` when it ends so.
std::optional<std::string> Strip(const std::string& name, std::string_view suffix) {
  if (!name.ends_with(suffix)) return std::nullopt;
  return name.substr(0, name.size() - suffix.size());
}

// base_config.get_cache_scale_mapper's rules in their order, each applied to what the one before
// left (WeightsMapper applies every matching pattern): kv_scale -> attn.k_scale;
// self_attn.{k,v}_proj.{k,v}_scale, self_attn.qkv_proj / qkqkv_proj.{k,v}_scale and
// mixer.{k,v}_proj.{k,v}_scale -> <attention>.attn.{k,v}_scale; then any {q,k,v}_scale not already
// after ".attn" -> .attn.{q,k,v}_scale. Fp8Config's suffixes come after the patterns.
std::string VllmKvScaleName(std::string name, bool fp8) {
  if (std::optional<std::string> base = Strip(name, ".kv_scale")) name = *base + ".attn.k_scale";
  for (const char which : {'k', 'v'}) {
    const std::string scale = fmt::format(".{}_scale", which);
    for (const std::string_view module :
         {".self_attn.k_proj", ".self_attn.v_proj", ".self_attn.qkv_proj", ".self_attn.qkqkv_proj",
          ".mixer.k_proj", ".mixer.v_proj"}) {
      if (std::optional<std::string> base = Strip(name, std::string(module) + scale)) {
        const std::string_view parent = module.substr(0, module.rfind('.'));
        name = fmt::format("{}{}.attn{}", *base, parent, scale);
      }
    }
  }
  for (const char which : {'q', 'k', 'v'}) {
    const std::string scale = fmt::format(".{}_scale", which);
    std::optional<std::string> base = Strip(name, scale);
    if (base && !base->ends_with(".attn")) name = *base + ".attn" + scale;
  }
  if (fp8) {
    for (const char which : {'q', 'k', 'v'}) {
      if (std::optional<std::string> base =
              Strip(name, fmt::format(".{}_proj.output_scale", which))) {
        name = fmt::format("{}.attn.{}_scale", *base, which);
      }
    }
  }
  return name;
}

// weight_utils.maybe_remap_kv_scale_name: kv_scale -> attn.k_scale; a name ending k_scale or
// v_scale has self_attn.{k,v}_proj.{k,v}_scale (and mixer.) renamed to self_attn.attn.*, else
// every ".k_scale" in it becomes ".attn.k_scale"; {q,k,v}_proj.output_scale -> attn.*_scale.
std::string SglangKvScaleName(std::string name) {
  if (std::optional<std::string> base = Strip(name, ".kv_scale")) return *base + ".attn.k_scale";
  for (const char which : {'k', 'v'}) {
    const std::string scale = fmt::format(".{}_scale", which);
    if (!name.ends_with(scale)) continue;
    for (const std::string_view prefix : {".self_attn.", ".mixer."}) {
      const std::string on_projection = fmt::format("{}{}_proj{}", prefix, which, scale);
      if (const size_t at = name.find(on_projection); at != std::string::npos) {
        return name.replace(at, on_projection.size(), fmt::format("{}attn{}", prefix, scale));
      }
    }
    for (size_t at = name.find(scale); at != std::string::npos;
         at = name.find(scale, at + scale.size() + 5)) {
      name.replace(at, scale.size(), ".attn" + scale);
    }
    return name;
  }
  for (const char which : {'q', 'k', 'v'}) {
    if (std::optional<std::string> base =
            Strip(name, fmt::format(".{}_proj.output_scale", which))) {
      return fmt::format("{}.attn.{}_scale", *base, which);
    }
  }
  return name;
}

// The attention's parameter a KV-cache scale tensor is meant for: its k_scale, v_scale or q_scale
// (kv_scale is loaded as k_scale).
std::string_view ScaleOf(std::string_view tensor) {
  const size_t dot = tensor.rfind('.');
  const std::string_view last = tensor.substr(dot + 1);
  if (last == "output_scale") {
    const std::string_view module = tensor.substr(0, dot);
    const char which = module[module.rfind('.') + 1];
    return which == 'q' ? "q_scale" : which == 'k' ? "k_scale" : "v_scale";
  }
  return last == "kv_scale" ? "k_scale" : last;
}

std::string Parent(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

}  // namespace

std::string KvScaleModule(const LayerSite& attention) {
  return Parent(attention.checkpoint_path.empty() ? attention.path : attention.checkpoint_path);
}

bool IsKvScaleName(std::string_view rest) {
  constexpr std::array<std::string_view, 4> kScales = {"k_scale", "v_scale", "q_scale", "kv_scale"};
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos) {
    return std::find(kScales.begin(), kScales.end(), rest) != kScales.end();
  }
  const std::string_view module = rest.substr(0, dot), tensor = rest.substr(dot + 1);
  if (module.empty() || tensor.find('.') != std::string_view::npos) return false;
  if (tensor == "output_scale")
    return module == "k_proj" || module == "v_proj" || module == "q_proj";
  return tensor == "k_scale" || tensor == "v_scale" || tensor == "q_scale";
}

std::optional<std::string> KvScaleNotLoaded(const Dialect& dialect, std::string_view architecture,
                                            std::string_view importer, const LayerSite& attention,
                                            std::string_view tensor) {
  const KvScaleRow& row = RowFor(dialect, kKvScaleRows);
  if (row.renamer == KvScaleRenamer::kNative) return std::nullopt;
  // The tensor as the engine names the attention's module, before the engine renames it.
  const std::string checkpoint_module = KvScaleModule(attention);
  const std::string engine_path =
      attention.path.empty() ? attention.checkpoint_path : attention.path;
  const std::string name =
      Parent(engine_path) + std::string(tensor.substr(checkpoint_module.size()));
  const std::string wanted = fmt::format("{}.{}", engine_path, ScaleOf(tensor));
  std::string loaded_as = name;
  std::string how;
  if (row.renamer == KvScaleRenamer::kVllmCacheScaleMapper) {
    loaded_as = VllmKvScaleName(name, importer == "fp8");
    how = "its quantization config's get_cache_scale_mapper";
  } else if (std::find(row.renaming_architectures.begin(), row.renaming_architectures.end(),
                       architecture) != row.renaming_architectures.end()) {
    loaded_as = SglangKvScaleName(name);
    how = "maybe_remap_kv_scale_name";
  } else {
    how = fmt::format("its {} loader, which", architecture);
  }
  if (loaded_as == wanted) return std::nullopt;
  if (loaded_as == name) {
    return fmt::format(
        "{} looks it up as {} ({} renames no such name), not as the attention's "
        "{}: the layer's KV cache does not get this scale",
        dialect.name, name, how, wanted);
  }
  return fmt::format(
      "{} reads it as {} ({}), not as the attention's {}: the layer's KV cache "
      "does not get this scale",
      dialect.name, loaded_as, how, wanted);
}

}  // namespace quantpath::pipeline_internal
