// Formats seen in the wild that quantpath recognises and rejects with a precise message until an
// importer exists: AMD Quark, FBGEMM FP8, HQQ, torchao and GGUF (each keyed on its quant_method),
// and MLX configs, which carry `quantization` / `quantization_config` = {group_size, bits} and no
// quant_method at all.
//
// Goals: a folder in one of these formats never falls through to another importer (an MLX config
// looks like a GPTQ one without quant_method) or to "unquantized"; the error names the file and
// pointer, the format, and what quantpath lacks for it. Non-goals: reading any of their fields
// beyond what the message shows.
#include <functional>
#include <utility>

#include "fmt/format.h"
#include "quantpath/importers.h"
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
};

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
  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect&) const override {
    const Json* at = entry_.locate(sources);
    std::string where = at != nullptr ? Where("config.json", *at) : std::string("config.json");
    return Unsupported(fmt::format("{}: {} is recognised but not supported: {}", where,
                                   entry_.format, entry_.missing));
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
  static const UnsupportedFormat kImporter(
      {"quark", "quant_method \"quark\" (AMD Quark)",
       "quantpath has no importer for Quark's global_quant_config / layer_quant_config / exclude "
       "description or for its OCP MX tensor layouts",
       ByQuantMethod("quark")});
  return &kImporter;
}

const Importer* FbgemmFp8Importer() {
  static const UnsupportedFormat kImporter(
      {"fbgemm_fp8",
       "quant_method \"fbgemm_fp8\" (FBGEMM FP8: one weight scale per output row, dynamic "
       "per-token activations)",
       "quantpath has no importer for it; its modules_to_not_convert and activation_scale_ub are "
       "not read",
       ByQuantMethod("fbgemm_fp8")});
  return &kImporter;
}

const Importer* HqqImporter() {
  static const UnsupportedFormat kImporter(
      {"hqq", "quant_method \"hqq\" (Half-Quadratic Quantization)",
       "quantpath has no importer for its per-layer quant_config or its W_q / meta tensors",
       ByQuantMethod("hqq")});
  return &kImporter;
}

const Importer* TorchaoImporter() {
  static const UnsupportedFormat kImporter(
      {"torchao", "quant_method \"torchao\" (PyTorch torchao)",
       "quantpath cannot read its quant_type (a serialised torchao config object) or its tensor "
       "subclasses",
       ByQuantMethod("torchao")});
  return &kImporter;
}

const Importer* GgufImporter() {
  static const UnsupportedFormat kImporter(
      {"gguf", "quant_method \"gguf\" (llama.cpp GGUF)",
       "GGUF keeps its tensors and their block types in .gguf files; quantpath reads safetensors "
       "folders",
       ByQuantMethod("gguf")});
  return &kImporter;
}

const Importer* MlxImporter() {
  static const UnsupportedFormat kImporter(
      {"mlx",
       "MLX affine quantization (group_size and bits without quant_method, as mlx-lm writes)",
       "quantpath has no importer for MLX's per-group scales and biases (the `.scales` / `.biases` "
       "tensors); it is not GPTQ, which it resembles",
       LocateMlx});
  return &kImporter;
}

}  // namespace quantpath
