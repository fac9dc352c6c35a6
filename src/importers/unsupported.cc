// Formats seen in the wild that quantpath recognises and rejects with a precise message until an
// importer exists: AMD Quark, FBGEMM FP8, HQQ, torchao, GGUF and FP-Quant (each keyed on its
// quant_method), MLX configs, which carry `quantization` / `quantization_config` = {group_size,
// bits} and no quant_method at all, and humming, a kernel library the engines run other formats on.
//
// Goals: a folder in one of these formats never falls through to another importer (an MLX config
// looks like a GPTQ one without quant_method) or to "unquantized"; the error names the file and
// pointer, the format, what quantpath lacks for it, who reads it (the engine releases quantpath
// reproduces, from the methods each registers, and the libraries that do) and what to do instead.
// Under an engine release that registers none of its names, the error is that release's own
// "Unknown quantization method". Non-goals: reading any of their fields beyond what the message
// shows.
#include <algorithm>
#include <functional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "quantpath/importers.h"
#include "src/importers/engine_methods.h"
#include "src/importers/gptq_family.h"

namespace quantpath {
namespace {

// Where a recognised-but-unsupported description sits, if the folder has one.
using Locate = std::function<const Json*(const ConfigSources&)>;

struct UnsupportedEntry {
  std::string_view name;     // the --quantization name
  std::string_view format;   // in words
  std::string_view missing;  // what quantpath would need
  Locate locate;
  // The names the engines register it under (their QUANTIZATION_METHODS), the libraries that
  // read it besides them, and what a user of quantpath can do instead.
  std::span<const std::string_view> engine_names;
  std::string_view others;
  std::string_view instead;
};

// Whether QUANTIZATION_METHODS as Python prints it lists `name`.
bool Registers(std::string_view methods, std::string_view name) {
  return methods.find(fmt::format("'{}'", name)) != std::string_view::npos;
}

// The names of `entry` that `dialect` registers on `platform`.
std::vector<std::string_view> Registered(const UnsupportedEntry& entry, const Dialect& dialect,
                                         Platform platform) {
  std::vector<std::string_view> names;
  const std::string_view methods = RegisteredMethodsText(dialect, platform);
  for (std::string_view name : entry.engine_names) {
    if (Registers(methods, name)) names.push_back(name);
  }
  return names;
}

// "vllm@0.33 and vllm@0.34 (fbgemm_fp8); sglang@0.5.23 on mps (mlx_q4, mlx_q8); transformers":
// every reproduced release that registers one of its names, on the platforms it does (releases
// of one engine that agree share an entry), then the other readers.
std::string Readers(const UnsupportedEntry& entry) {
  struct Reader {
    const Dialect* dialect;
    std::string where;  // " on mps", or "" where cuda registers it
    std::string names;
  };
  std::vector<Reader> found;
  for (const Dialect& dialect : kDialectTable) {
    if (!dialect.is_release()) continue;
    std::vector<std::string_view> platforms, names;
    for (size_t p = 0; p < std::size(kPlatformNames); ++p) {
      const std::vector<std::string_view> here =
          Registered(entry, dialect, static_cast<Platform>(p));
      if (here.empty()) continue;
      platforms.push_back(kPlatformNames[p]);
      for (std::string_view name : here) {
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
    }
    if (names.empty()) continue;
    const bool cuda = platforms.front() == PlatformName(Platform::kCuda);
    found.push_back({&dialect, cuda ? "" : fmt::format(" on {}", fmt::join(platforms, ", ")),
                     fmt::format("{}", fmt::join(names, ", "))});
  }
  std::sort(found.begin(), found.end(), [](const Reader& a, const Reader& b) {
    return std::tie(a.dialect->engine, a.dialect->rank) <
           std::tie(b.dialect->engine, b.dialect->rank);
  });
  std::vector<std::string> readers;
  for (size_t i = 0; i < found.size();) {
    size_t j = i + 1;
    while (j < found.size() && found[j].dialect->engine == found[i].dialect->engine &&
           found[j].where == found[i].where && found[j].names == found[i].names) {
      ++j;
    }
    std::vector<std::string_view> dialects;
    for (size_t k = i; k < j; ++k) dialects.push_back(found[k].dialect->name);
    readers.push_back(
        fmt::format("{}{} ({})", fmt::join(dialects, " and "), found[i].where, found[i].names));
    i = j;
  }
  if (!entry.others.empty()) readers.emplace_back(entry.others);
  return readers.empty() ? "no engine release quantpath reproduces" : Join(readers, "; ");
}

// The embedded description when its quant_method is `method`.
Locate ByQuantMethod(std::string_view method) {
  return [method](const ConfigSources& sources) -> const Json* {
    std::optional<Located> embedded = sources.Embedded();
    if (!embedded || !embedded->value->is_object()) return nullptr;
    return QuantMethod(*embedded->value) == method ? embedded->value : nullptr;
  };
}

// MLX (mlx-lm) writes the same {group_size, bits} under `quantization` and, for transformers'
// sake, `quantization_config`, without quant_method.

class UnsupportedFormat final : public Importer {
 public:
  explicit UnsupportedFormat(UnsupportedEntry entry) : entry_(std::move(entry)) {}
  std::string_view name() const override { return entry_.name; }
  bool Detect(const ConfigSources& sources) const override {
    return entry_.locate(sources) != nullptr;
  }
  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override {
    const Json* at = entry_.locate(sources);
    std::string where = at != nullptr ? Where("config.json", *at) : std::string("config.json");
    const Platform platform = sources.launch().platform;
    const std::string_view methods = RegisteredMethodsText(dialect, platform);
    // The engines check a quant_method against what they register; MLX has none to check.
    const bool keyed = at != nullptr && QuantMethod(*at) == entry_.name;
    if (keyed && !methods.empty() && Registered(entry_, dialect, platform).empty()) {
      return InvalidInput(fmt::format(
          "{}: ValueError: Unknown quantization method: {}. Must be one of {}. ({} on {} does not "
          "register it; read by: {})",
          where, entry_.name, methods, dialect.name, PlatformName(platform), Readers(entry_)));
    }
    return Unsupported(fmt::format("{}: {} is recognised but not supported: {}. Read by: {}. {}",
                                   where, entry_.format, entry_.missing, Readers(entry_),
                                   entry_.instead));
  }

 private:
  UnsupportedEntry entry_;
};

}  // namespace

const Json* LocateMlx(const ConfigSources& sources) {
  const Json* root = sources.config();
  if (root == nullptr) return nullptr;
  for (std::string_view key : {"quantization", "quantization_config"}) {
    const Json* q = root->FindNonNull(key);
    if (q != nullptr && q->is_object() && q->FindNonNull("quant_method") == nullptr &&
        q->Find("bits") != nullptr && q->Find("group_size") != nullptr) {
      return q;
    }
  }
  return nullptr;
}

const Importer* QuarkImporter() {
  static constexpr std::string_view kNames[] = {"quark"};
  static const UnsupportedFormat kImporter(
      {"quark", "quant_method \"quark\" (AMD Quark)",
       "quantpath has no importer for Quark's global_quant_config / layer_quant_config / exclude "
       "description or for its OCP MX tensor layouts",
       ByQuantMethod("quark"), kNames, "transformers (QuarkConfig, with amd-quark)",
       "Plan and load it with one of those engines; quantpath cannot stand in for them yet"});
  return &kImporter;
}

const Importer* FbgemmFp8Importer() {
  static constexpr std::string_view kNames[] = {"fbgemm_fp8"};
  static const UnsupportedFormat kImporter(
      {"fbgemm_fp8",
       "quant_method \"fbgemm_fp8\" (FBGEMM FP8: one weight scale per output row, dynamic "
       "per-token activations)",
       "quantpath has no importer for it; its modules_to_not_convert and activation_scale_ub are "
       "not read",
       ByQuantMethod("fbgemm_fp8"), kNames, "transformers (FbgemmFp8Config, with fbgemm-gpu)",
       "The same scheme in a format quantpath and both engines read: quantize the bf16 model "
       "with `quantpath quantize --scheme w8a8-fp8-channel-dyn`"});
  return &kImporter;
}

const Importer* HqqImporter() {
  static constexpr std::string_view kNames[] = {"hqq"};
  static const UnsupportedFormat kImporter(
      {"hqq", "quant_method \"hqq\" (Half-Quadratic Quantization)",
       "quantpath has no importer for its per-layer quant_config or its W_q / meta tensors",
       ByQuantMethod("hqq"), kNames, "transformers (HqqConfig, with hqq)",
       "To serve it with vLLM or SGLang, dequantize it with transformers (`model.dequantize()`), "
       "save it in bf16 and quantize that with `quantpath quantize`"});
  return &kImporter;
}

const Importer* TorchaoImporter() {
  static constexpr std::string_view kNames[] = {"torchao"};
  static const UnsupportedFormat kImporter(
      {"torchao", "quant_method \"torchao\" (PyTorch torchao)",
       "quantpath cannot read its quant_type (a serialised torchao config object) or its tensor "
       "subclasses",
       ByQuantMethod("torchao"), kNames, "transformers (TorchAoConfig)",
       "Its int4 weight-only, int8 and fp8 schemes have compressed-tensors equivalents: quantize "
       "the bf16 model with `quantpath quantize` (w4a16-int4-g128, w8a8-int8-channel-dyn, "
       "w8a8-fp8-channel-dyn)"});
  return &kImporter;
}

const Importer* GgufImporter() {
  static constexpr std::string_view kNames[] = {"gguf"};
  static const UnsupportedFormat kImporter(
      {"gguf", "quant_method \"gguf\" (llama.cpp GGUF)",
       "GGUF keeps its tensors and their block types in .gguf files; quantpath reads safetensors "
       "folders",
       ByQuantMethod("gguf"), kNames, "llama.cpp; transformers dequantizes it at load (gguf_file)",
       "Plan the safetensors checkpoint the GGUF was made from, or SGLang reads the .gguf"});
  return &kImporter;
}

const Importer* FpQuantImporter() {
  static constexpr std::string_view kNames[] = {"fp_quant"};
  static const UnsupportedFormat kImporter(
      {"fp_quant",
       "quant_method \"fp_quant\" (FP-Quant: MXFP4 or NVFP4 weights and activations behind a "
       "Hadamard rotation)",
       "quantpath has no importer for its forward_dtype / hadamard_group_size description or its "
       "qweight / scales / Hadamard tensors",
       ByQuantMethod("fp_quant"), kNames, "transformers (FPQuantConfig, with fp_quant and qutlass)",
       "vLLM 0.34 no longer registers it; it quantizes a bf16 model at load instead "
       "(--quantization mxfp4_hadamard32, which quantpath plans as `--online "
       "w4a4-mxfp4-had32-online`)"});
  return &kImporter;
}

const Importer* HummingImporter() {
  static constexpr std::string_view kNames[] = {"humming"};
  static const UnsupportedFormat kImporter(
      {"humming", "quant_method \"humming\" (the humming kernel library)",
       "humming is no checkpoint format: the engines run other formats' layers on its kernels "
       "(--quantization humming over a GPTQ, AWQ, fp8 or MX checkpoint), and quantpath plans the "
       "format underneath",
       ByQuantMethod("humming"), kNames, "",
       "Plan the checkpoint as the format its tensors are in (its own quant_method, or "
       "--quantization with that format's name)"});
  return &kImporter;
}

const Importer* MlxImporter() {
  static constexpr std::string_view kNames[] = {"mlx_q4", "mlx_q8"};
  static const UnsupportedFormat kImporter(
      {"mlx",
       "MLX affine quantization (group_size and bits without quant_method, as mlx-lm writes)",
       "quantpath has no importer for MLX's per-group scales and biases (the `.scales` / `.biases` "
       "tensors); it is not GPTQ, which it resembles",
       LocateMlx, kNames, "mlx-lm",
       "mlx-lm writes it back in bf16 (`mlx_lm.convert --dequantize`); quantize that with "
       "`quantpath quantize` for vLLM or SGLang on a GPU"});
  return &kImporter;
}

}  // namespace quantpath
