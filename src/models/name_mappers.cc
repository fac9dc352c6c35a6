// HF→engine name mappers per model class and dialect, as data.
//
// Each row copies the renaming rules a model class declares for one engine release; the planner
// never sees them (the importers read the config lists the engine rewrites, rewritten). Sources
// read: vLLM 0.33.0 model_executor/models/qwen2_5_vl.py (Qwen2_5_VLForConditionalGeneration
// .hf_to_vllm_mapper; vLLM hands quant configs `get_rename_mapper()`, i.e. without its stacked
// and deletion rules) and SGLang 0.5.23 srt/models/qwen2_5_vl.py (.hf_to_sglang_mapper); vLLM
// 0.33.0 qwen3_vl.py / qwen3_5.py (Qwen3_5ForConditionalGeneration.hf_to_vllm_mapper: Qwen3-VL's
// prefix renames, its `mtp.` deletion dropped by get_rename_mapper).
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "quantpath/models.h"

namespace quantpath {
namespace {

struct MapperRow {
  std::string_view model_class;  // the class name; also the architecture config.json names
  DialectId dialect;
  NameRewriteOrder order;
  std::vector<NameRewrite> rules;
  std::string_view mapper_name;
};

const std::vector<MapperRow>& Rows() {
  using K = NameRewriteKind;
  // Qwen3VLForConditionalGeneration.hf_to_vllm_mapper's orig_to_new_prefix, in its order.
  const std::vector<NameRewrite> kQwen3VlPrefixes = {
      {K::kPrefix, "model.visual.", "visual."},
      {K::kPrefix, "lm_head.", "language_model.lm_head."},
      {K::kPrefix, "model.language_model.", "language_model.model."}};
  static const std::vector<MapperRow> rows = {
      {"Qwen2_5_VLForConditionalGeneration",
       DialectId::kVllmCurrent,
       NameRewriteOrder::kEveryInOrder,
       {// Checkpoints saved after transformers v4.52, then the original layout.
        {K::kPrefix, "model.language_model.", "language_model.model."},
        {K::kPrefix, "model.visual.", "visual."},
        {K::kPrefix, "lm_head.", "language_model.lm_head."},
        {K::kPrefix, "model.", "language_model.model."}},
       "hf_to_vllm_mapper"},
      {"Qwen2_5_VLForConditionalGeneration",
       DialectId::kSglangCurrent,
       NameRewriteOrder::kLongestMatchOnly,
       {{K::kSubstring, "attn.qkv", "attn.qkv_proj"},
        {K::kPrefix, "model.language_model.", "language_model.model."},
        {K::kPrefix, "model.visual.", "visual."},
        {K::kPrefix, "lm_head.", "language_model.lm_head."},
        {K::kPrefix, "model.", "language_model.model."}},
       "hf_to_sglang_mapper"},
      {"Qwen3_5ForConditionalGeneration", DialectId::kVllmCurrent, NameRewriteOrder::kEveryInOrder,
       kQwen3VlPrefixes, "hf_to_vllm_mapper"},
      {"Qwen3_5MoeForConditionalGeneration", DialectId::kVllmCurrent,
       NameRewriteOrder::kEveryInOrder, kQwen3VlPrefixes, "hf_to_vllm_mapper"},
  };
  return rows;
}

}  // namespace

std::optional<NameMapper> FindNameMapper(std::string_view model, const Dialect& dialect) {
  // "qwen2_5_vl.Qwen2_5_VLForConditionalGeneration": the module only names the engine file.
  std::string_view class_name = model.substr(model.rfind('.') + 1);
  for (const MapperRow& row : Rows()) {
    if (row.model_class != class_name || row.dialect != dialect.id) continue;
    return NameMapper{fmt::format("{}.{}", row.model_class, row.mapper_name), row.rules, row.order};
  }
  return std::nullopt;
}

std::optional<NameMapper> FindNameMapper(const ConfigSources& sources, const Dialect& dialect) {
  const Json* config = sources.config();
  const Json* architectures = config != nullptr ? config->FindNonNull("architectures") : nullptr;
  if (architectures == nullptr || !architectures->is_array() || architectures->items().empty() ||
      !architectures->items().front().is_string()) {
    return std::nullopt;
  }
  return FindNameMapper(architectures->items().front().string_value(), dialect);
}

}  // namespace quantpath
