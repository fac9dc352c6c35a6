// The architecture registry: config.json's `architectures[0]` → the family builder that lists its
// sites, plus the fields every architecture shares (torch_dtype).
//
// Goals: one explicit table, so adding an architecture means adding a file and a row; an
// architecture outside the table falls back to sites inferred from the checkpoint's tensor names
// (inferred_sites.cc) when the model folder has an index or shards, with a warning. Non-goals:
// guessing an architecture from config fields.
#include <array>
#include <cctype>
#include <filesystem>
#include <string_view>

#include "fmt/format.h"
#include "src/models/model_builder.h"

namespace quantpath {
namespace {

using models::ArchBuilder;
using models::kConfigFile;

struct ArchEntry {
  std::string_view name;
  ArchBuilder build;
  std::string_view decoder_blocks;  // the language model's block list, as checkpoints name it
};

// Kimi-K2 (`model_type kimi_k2`) names DeepseekV3ForCausalLM and is served by that row. Qwen3.5's
// dense and MoE wrappers share one builder, which picks the MLP from the text config's
// model_type as vLLM does.
constexpr std::array<ArchEntry, 13> kArchitectures = {{
    {"LlamaForCausalLM", &models::BuildLlama, "model.layers"},
    {"Qwen2ForCausalLM", &models::BuildQwen2, "model.layers"},
    {"Qwen3ForCausalLM", &models::BuildQwen3, "model.layers"},
    {"DeepseekV3ForCausalLM", &models::BuildDeepseekV3, "model.layers"},
    {"GptOssForCausalLM", &models::BuildGptOss, "model.layers"},
    {"QWenLMHeadModel", &models::BuildQwenV1, "transformer.h"},
    {"GPTBigCodeForCausalLM", &models::BuildGptBigCode, "transformer.h"},
    {"PhiForCausalLM", &models::BuildPhi, "model.layers"},
    {"Glm4MoeForCausalLM", &models::BuildGlm4Moe, "model.layers"},
    {"Qwen3MoeForCausalLM", &models::BuildQwen3Moe, "model.layers"},
    {"Qwen3_5ForConditionalGeneration", &models::BuildQwen3_5, "model.language_model.layers"},
    {"Qwen3_5MoeForConditionalGeneration", &models::BuildQwen3_5, "model.language_model.layers"},
    {"MolmoForCausalLM", &models::BuildMolmo, "model.transformer.blocks"},
}};

const ArchEntry* FindArchitecture(std::string_view name) {
  for (const ArchEntry& entry : kArchitectures) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

struct DtypeSpelling {
  std::string_view name;
  QDType dtype;
};
// The spellings transformers writes for the unquantized storage dtype ("torch." prefix removed).
constexpr std::array<DtypeSpelling, 6> kDtypeSpellings = {{
    {"bfloat16", QDType::kBF16},
    {"float16", QDType::kFP16},
    {"half", QDType::kFP16},
    {"float32", QDType::kFP32},
    {"float", QDType::kFP32},
    {"bf16", QDType::kBF16},
}};

// `torch_dtype` (transformers < 4.56) or `dtype` (newer), looked up in the architecture's own
// config first, then in config.json's root (multimodal wrappers may differ between the two; the
// language model's own value describes its weights).
Status ReadTorchDtype(const Json& root, const Json& text, ModelSites* out) {
  for (const Json* object : {&text, &root}) {
    for (std::string_view key : {"torch_dtype", "dtype"}) {
      const Json* v = object->FindNonNull(key);
      if (v == nullptr) continue;
      if (!v->is_string()) {
        return InvalidInput(
            fmt::format("{}: expected a string such as \"bfloat16\" for \"{}\", "
                        "found {}",
                        Where(kConfigFile, *v), key, v->TypeName()));
      }
      std::string_view name = v->string_value();
      if (name.starts_with("torch.")) name.remove_prefix(6);
      for (const DtypeSpelling& s : kDtypeSpellings) {
        if (s.name == name) {
          out->torch_dtype = s.dtype;
          return Status();
        }
      }
      // Some quantized checkpoints write their storage type here (e.g. "float8_e4m3fn"); the
      // unquantized tensors of those are bfloat16.
      out->warnings.push_back(
          fmt::format("{}: unrecognised dtype {}; unquantized layers are assumed to be bfloat16",
                      Where(kConfigFile, *v), JsonQuote(v->string_value())));
      return Status();
    }
  }
  out->warnings.push_back(fmt::format(
      "{}: no torch_dtype or dtype; unquantized layers are assumed to be bfloat16", kConfigFile));
  return Status();
}

Result<std::string> ReadArchitecture(const Json& root, ModelSites* out) {
  const Json* list = root.FindNonNull("architectures");
  const std::string where = fmt::format("{}#/architectures", kConfigFile);
  if (list == nullptr) {
    return InvalidInput(
        fmt::format("{}: missing; the layer sites are built from the architecture "
                    "it names (supported: {})",
                    where, Join(SupportedArchitectures(), ", ")));
  }
  if (!list->is_array() || list->items().empty() || !list->items()[0].is_string()) {
    return InvalidInput(fmt::format("{}: expected a non-empty list of architecture names, found {}",
                                    where, list->TypeName()));
  }
  if (list->items().size() > 1) {
    out->warnings.push_back(fmt::format("{}: lists {} architectures; the first one is used", where,
                                        list->items().size()));
  }
  return list->items()[0].string_value();
}

// A site is in a decoder block when its checkpoint path is "<blocks>.<index>.…" and it is not an
// MTP layer (which checkpoints number after the last block). The checkpoint path, because an
// engine may build the blocks under another prefix (vLLM's `language_model.model.layers`).
void MarkDecoderBlocks(std::string_view blocks, ModelSites* out) {
  out->decoder_blocks = std::string(blocks);
  const std::string prefix = std::string(blocks) + ".";
  for (LayerSite& site : out->sites) {
    std::string_view path = site.checkpoint_path;
    bool indexed = path.starts_with(prefix) && path.size() > prefix.size() &&
                   std::isdigit(static_cast<unsigned char>(path[prefix.size()]));
    site.in_decoder_block = indexed && !site.mtp;
  }
}

// The checkpoint modules of a site the engine builds without a quantization config: a fused
// site's legs (SGLang's gpt-oss qkv_proj is stored as q_proj, k_proj and v_proj), else the site.
void AddUnlistedModules(const LayerSite& site, ModelSites* out) {
  const std::string& path = site.checkpoint_path;
  if (site.legs.empty() || site.kind == SiteKind::kMoe) {
    out->unlisted_modules.push_back(path);
    return;
  }
  const size_t dot = path.rfind('.');
  for (const Leg& leg : site.legs) {
    out->unlisted_modules.push_back(dot == std::string::npos ? leg.name
                                                             : path.substr(0, dot + 1) + leg.name);
  }
}

// An engine dialect lists only the modules its engine calls get_quant_method for, and MTP layers
// only with speculative decoding; the weights of the others still belong to the checkpoint. The
// MTP layers' modules, whose other tensors SiteList kept out of other_tensors, are already
// skipped_modules.
void KeepEngineCalls(bool build_mtp, ModelSites* out) {
  std::vector<LayerSite> kept;
  for (LayerSite& site : out->sites) {
    if (site.engine_quant_call && (build_mtp || !site.mtp)) {
      kept.push_back(std::move(site));
    } else {
      out->other_params += site.params;  // SiteList::status() checked the total
      if (!site.mtp) AddUnlistedModules(site, out);
    }
  }
  out->sites = std::move(kept);
}

// `checkpoint` is the model folder's when the config came from one: an unknown architecture then
// falls back to sites inferred from its tensors.
Result<ModelSites> Build(const Json& root, const Json& text, const Dialect& dialect,
                         const Launch& launch, const CheckpointListing* checkpoint) {
  if (!root.is_object()) {
    return InvalidInput(fmt::format("{}: expected a JSON object at the top level, found {}",
                                    kConfigFile, root.TypeName()));
  }
  ModelSites out;
  QP_ASSIGN_OR_RETURN(out.architecture, ReadArchitecture(root, &out));
  QP_RETURN_IF_ERROR(ReadTorchDtype(root, text, &out));
  const ArchEntry* entry = FindArchitecture(out.architecture);
  if (entry == nullptr) {
    const std::string unsupported =
        fmt::format("{}#/architectures/0: architecture {} is not supported (supported: {})",
                    kConfigFile, JsonQuote(out.architecture), Join(SupportedArchitectures(), ", "));
    if (checkpoint == nullptr) return Unsupported(unsupported);
    const Status inferred = models::InferSitesFromCheckpoint(*checkpoint, &out);
    if (inferred.code() == ErrorCode::kNotFound) {
      return Unsupported(fmt::format("{}; {}", unsupported, inferred.message()));
    }
    QP_RETURN_IF_ERROR(inferred);
    return out;
  }
  const models::ConfigReader reader(text, entry->name);
  const models::ConfigReader root_reader(root, entry->name);
  const models::DialectNames& names = models::NamesFor(dialect, launch.platform);
  const bool builds_mtp = !names.mtp_needs_speculative || launch.speculative;
  QP_RETURN_IF_ERROR(entry->build({reader, root_reader, names, builds_mtp}, &out));
  MarkDecoderBlocks(entry->decoder_blocks, &out);
  if (!names.lists_unconfigured) KeepEngineCalls(builds_mtp, &out);
  return out;
}

}  // namespace

std::vector<std::string> SupportedArchitectures() {
  std::vector<std::string> names;
  for (const ArchEntry& entry : kArchitectures) names.emplace_back(entry.name);
  return names;
}

Result<ModelSites> BuildModelSites(const ConfigSources& sources, const Dialect& dialect,
                                   const Launch& launch) {
  const Json* root = sources.config();
  if (root == nullptr) {
    // A standalone quantization file says how layers are quantized, not which layers exist.
    std::vector<std::string> found;
    for (const SourceFile& file : sources.files()) found.push_back(file.name);
    return NotFound(fmt::format(
        "{}: {} but no {}, whose architecture fields the layer sites are built from; add the "
        "model's {} (the one published with it) to the folder",
        sources.dir().string(), found.empty() ? "no file" : Join(found, ", "), kConfigFile,
        kConfigFile));
  }
  return Build(*root, *sources.text_config(), dialect, launch, &sources.checkpoint());
}

Result<ModelSites> BuildModelSites(const Json& config_json, const Dialect& dialect,
                                   const Launch& launch) {
  // The same rule as ConfigSources::text_config(): a `text_config` object holds the language
  // model's fields.
  const Json* text = config_json.Find("text_config");
  return Build(config_json, text != nullptr && text->is_object() ? *text : config_json, dialect,
               launch, /*checkpoint=*/nullptr);
}

}  // namespace quantpath
