// HF→engine name mappers per model class and dialect, as data.
//
// Each row copies the renaming rules a model class declares for one engine release; the planner
// never sees them (the importers read the config lists the engine rewrites, rewritten). Sources
// read: vLLM 0.33.0 model_executor/models/qwen2_5_vl.py (Qwen2_5_VLForConditionalGeneration
// .hf_to_vllm_mapper; vLLM hands quant configs `get_rename_mapper()`, i.e. without its stacked
// and deletion rules), qwen3_vl.py, qwen3_vl_moe.py and qwen3_5.py; SGLang 0.5.23
// srt/models/qwen2_5_vl.py, qwen3_vl.py, qwen3_vl_moe.py and qwen3_5.py (.hf_to_sglang_mapper).
// A class that declares no mapper of its own inherits its base class's, as Python's attribute
// lookup does, so the table names classes by inheritance rather than repeating rules.
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "quantpath/models.h"

namespace quantpath {
namespace {

struct MapperRow {
  std::string_view model_class;  // the class name; also the architecture config.json names
  DialectId since;               // the dialect it holds for (and the later releases)
  NameRewriteOrder order;
  std::vector<NameRewrite> rules;
  std::string_view mapper_name;
};

const std::vector<MapperRow>& Rows() {
  using K = NameRewriteKind;
  static const std::vector<MapperRow> rows = {
      {"Qwen2_5_VLForConditionalGeneration",
       DialectId::kVllm033,
       NameRewriteOrder::kEveryInOrder,
       {// Checkpoints saved after transformers v4.52, then the original layout.
        {K::kPrefix, "model.language_model.", "language_model.model."},
        {K::kPrefix, "model.visual.", "visual."},
        {K::kPrefix, "lm_head.", "language_model.lm_head."},
        {K::kPrefix, "model.", "language_model.model."}},
       "hf_to_vllm_mapper"},
      {"Qwen2_5_VLForConditionalGeneration",
       DialectId::kSglang0523,
       NameRewriteOrder::kLongestMatchOnly,
       {{K::kSubstring, "attn.qkv", "attn.qkv_proj"},
        {K::kPrefix, "model.language_model.", "language_model.model."},
        {K::kPrefix, "model.visual.", "visual."},
        {K::kPrefix, "lm_head.", "language_model.lm_head."},
        {K::kPrefix, "model.", "language_model.model."}},
       "hf_to_sglang_mapper"},
      {"Qwen3VLForConditionalGeneration",
       DialectId::kVllm033,
       NameRewriteOrder::kEveryInOrder,
       {{K::kPrefix, "model.visual.", "visual."},
        {K::kPrefix, "lm_head.", "language_model.lm_head."},
        {K::kPrefix, "model.language_model.", "language_model.model."}},
       "hf_to_vllm_mapper"},
      {"Qwen3VLForConditionalGeneration",
       DialectId::kSglang0523,
       NameRewriteOrder::kLongestMatchOnly,
       {{K::kSubstring, "attn.qkv", "attn.qkv_proj"},
        {K::kPrefix, "model.language_model.", "language_model.model."},
        {K::kPrefix, "model.visual.", "visual."},
        {K::kPrefix, "lm_head.", "language_model.lm_head."},
        {K::kPrefix, "model.", "language_model.model."}},
       "hf_to_sglang_mapper"},
  };
  return rows;
}

// Classes whose mapper is their base class's. A class that sets the attribute to None (SGLang's
// Qwen3_5ForConditionalGeneration) has no row: the engine applies no mapper to it.
struct InheritRow {
  std::string_view model_class;
  DialectId since;
  std::string_view base_class;
};

constexpr InheritRow kInherited[] = {
    {"Qwen3VLMoeForConditionalGeneration", DialectId::kVllm033, "Qwen3VLForConditionalGeneration"},
    {"Qwen3VLMoeForConditionalGeneration", DialectId::kSglang0523,
     "Qwen3VLForConditionalGeneration"},
    // vLLM adds {"mtp.": None} to the base mapper; get_rename_mapper drops mappings to None.
    {"Qwen3_5ForConditionalGeneration", DialectId::kVllm033, "Qwen3VLForConditionalGeneration"},
    {"Qwen3_5MoeForConditionalGeneration", DialectId::kVllm033, "Qwen3_5ForConditionalGeneration"},
};

// The newest row for `class_name` that holds for `dialect`; a class's own row before a mapper
// it inherits.
const MapperRow* FindRow(std::string_view class_name, const Dialect& dialect) {
  const MapperRow* found = nullptr;
  for (const MapperRow& row : Rows()) {
    if (row.model_class != class_name || !RowHolds(row.since, dialect)) continue;
    if (found == nullptr || DialectAt(row.since).rank > DialectAt(found->since).rank) found = &row;
  }
  if (found != nullptr) return found;
  for (const InheritRow& row : kInherited) {
    if (row.model_class == class_name && RowHolds(row.since, dialect)) {
      return FindRow(row.base_class, dialect);
    }
  }
  return nullptr;
}

}  // namespace

std::optional<NameMapper> FindNameMapper(std::string_view model, const Dialect& dialect) {
  // "qwen2_5_vl.Qwen2_5_VLForConditionalGeneration": the module only names the engine file.
  std::string_view class_name = model.substr(model.rfind('.') + 1);
  const MapperRow* row = FindRow(class_name, dialect);
  if (row == nullptr) return std::nullopt;
  // Named after the class the engine built, whose (possibly inherited) attribute it read.
  return NameMapper{fmt::format("{}.{}", class_name, row->mapper_name), row->rules, row->order};
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
