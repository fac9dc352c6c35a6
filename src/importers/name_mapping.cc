// Which config lists vLLM 0.33.0 and SGLang 0.5.23 rewrite with the model's name mapper, and how.
// Sources read: vLLM model_loader/utils.py (configure_quant_config) and models/interfaces.py
// (SupportsQuant) hand `hf_to_vllm_mapper.get_rename_mapper()` to `apply_vllm_mapper` of fp8.py,
// compressed_tensors.py, modelopt.py, auto_awq.py and auto_gptq.py; SGLang model_loader/loader.py
// hands `hf_to_sglang_mapper` to `apply_weight_name_mapper` of fp8.py, compressed_tensors.py and
// modelopt_quant.py.
#include "src/importers/name_mapping.h"

#include <algorithm>
#include <optional>
#include <span>
#include <utility>

#include "fmt/format.h"

namespace quantpath {
namespace {

// How one field's entries are rewritten.
enum class FieldMapping : uint8_t {
  kEveryEntry,  // apply_list: every string of the list
  // vLLM compressed-tensors `_map_target`: only layer paths, i.e. entries with a '.' that do not
  // start with "re:" (class names and regexes stay as written).
  kDottedNotRegex,
  // vLLM ModelOpt: an entry "x*" whose character before the '*' is not '.' becomes "x" and "x.*"
  // (ModelOpt means "the module x and everything under it"), then every entry is mapped.
  kModelOptStarSplit,
  // SGLang ModelOpt: every entry mapped, plus, for a result starting with "language_model.", a copy
  // without that prefix; duplicates dropped, first position kept.
  kWithoutLanguageModelCopy,
  // SGLang fp8: from_config keeps each entry without and with a leading "model."; the mapper then
  // rewrites both and duplicates are dropped. The importer applies the "model." step again to the
  // result, which only adds "model."-prefixed twins of entries that match no more sites than the
  // entries themselves (SGLang matches whole dotted segments) while no result starts with "model."
  // — true of every mapper in the models table, whose "model." rule always fires.
  kModelPrefixVariants,
  kObjectKeys,  // apply_dict: the keys of an object (ModelOpt quantized_layers)
};

struct MappedField {
  std::string_view importer;  // Importer::name()
  Engine engine;
  std::string_view path;  // keys under the description object; "*" stands for every member
  FieldMapping mapping;
};

constexpr MappedField kMappedFields[] = {
    // vLLM Fp8Config: ignored_layers holds whichever of the two lists from_config read.
    {"fp8", Engine::kVllm, "ignored_layers", FieldMapping::kEveryEntry},
    {"fp8", Engine::kVllm, "modules_to_not_convert", FieldMapping::kEveryEntry},
    // vLLM CompressedTensorsConfig: target_scheme_map keys and ignore (kv_cache_scheme keys are
    // schema fields without a '.', which the rule leaves alone).
    {"compressed-tensors", Engine::kVllm, "config_groups/*/targets", FieldMapping::kDottedNotRegex},
    {"compressed-tensors", Engine::kVllm, "ignore", FieldMapping::kDottedNotRegex},
    // vLLM ModelOptQuantConfigBase.exclude_modules (flat "ignore", else "exclude_modules"; the
    // hf_quant_config.json shell's quantization.exclude_modules) and, for MIXED_PRECISION,
    // quantized_layers.
    {"modelopt", Engine::kVllm, "ignore", FieldMapping::kModelOptStarSplit},
    {"modelopt", Engine::kVllm, "exclude_modules", FieldMapping::kModelOptStarSplit},
    {"modelopt", Engine::kVllm, "quantization/exclude_modules", FieldMapping::kModelOptStarSplit},
    {"modelopt", Engine::kVllm, "quantized_layers", FieldMapping::kObjectKeys},
    {"modelopt", Engine::kVllm, "quantization/quantized_layers", FieldMapping::kObjectKeys},
    // vLLM AutoAWQConfig.modules_to_not_convert and AutoGPTQConfig.modules_in_block_to_quantize
    // (string entries; a nested GPTQ list is flattened only later, in maybe_update_config).
    {"awq", Engine::kVllm, "modules_to_not_convert", FieldMapping::kEveryEntry},
    {"gptq", Engine::kVllm, "modules_in_block_to_quantize", FieldMapping::kEveryEntry},
    // AutoRound exports under quant_method "awq" / "gptq" reach the same two configs (the vLLM
    // dialects of the auto-round importer read neither field for quant_method "auto-round").
    {"auto-round", Engine::kVllm, "modules_to_not_convert", FieldMapping::kEveryEntry},
    {"auto-round", Engine::kVllm, "modules_in_block_to_quantize", FieldMapping::kEveryEntry},
    // SGLang Fp8Config.ignored_layers (read from the first key present of the two).
    {"fp8", Engine::kSglang, "ignored_layers", FieldMapping::kModelPrefixVariants},
    {"fp8", Engine::kSglang, "modules_to_not_convert", FieldMapping::kModelPrefixVariants},
    // SGLang CompressedTensorsConfig: target_scheme_map, ignore and the sparsity lists, every entry
    // (class names and "re:" patterns go through the mapper too).
    {"compressed-tensors", Engine::kSglang, "config_groups/*/targets", FieldMapping::kEveryEntry},
    {"compressed-tensors", Engine::kSglang, "ignore", FieldMapping::kEveryEntry},
    {"compressed-tensors", Engine::kSglang, "sparsity_config/targets", FieldMapping::kEveryEntry},
    {"compressed-tensors", Engine::kSglang, "sparsity_config/ignore", FieldMapping::kEveryEntry},
    // SGLang ModelOptQuantConfig.exclude_modules (flat "ignore", "modules_to_not_convert" or
    // "exclude_modules"; the shell's quantization.exclude_modules) and quantized_layers.
    {"modelopt", Engine::kSglang, "ignore", FieldMapping::kWithoutLanguageModelCopy},
    {"modelopt", Engine::kSglang, "modules_to_not_convert",
     FieldMapping::kWithoutLanguageModelCopy},
    {"modelopt", Engine::kSglang, "exclude_modules", FieldMapping::kWithoutLanguageModelCopy},
    {"modelopt", Engine::kSglang, "quantization/exclude_modules",
     FieldMapping::kWithoutLanguageModelCopy},
    {"modelopt", Engine::kSglang, "quantized_layers", FieldMapping::kObjectKeys},
    {"modelopt", Engine::kSglang, "quantization/quantized_layers", FieldMapping::kObjectKeys},
};

// A row listed twice would map its field twice, and a rule that hits its own result again (a
// substring rule whose replacement contains `from`) would then apply twice.
constexpr bool EachFieldOnce() {
  for (size_t i = 0; i < std::size(kMappedFields); ++i) {
    for (size_t j = i + 1; j < std::size(kMappedFields); ++j) {
      const MappedField& a = kMappedFields[i];
      const MappedField& b = kMappedFields[j];
      if (a.importer == b.importer && a.engine == b.engine && a.path == b.path) return false;
    }
  }
  return true;
}
static_assert(EachFieldOnce(), "a field of kMappedFields is listed twice");

bool Hits(const NameRewrite& rule, const std::string& key) {
  switch (rule.kind) {
    case NameRewriteKind::kSubstring:
      return key.find(rule.from) != std::string::npos;
    case NameRewriteKind::kPrefix:
      return key.starts_with(rule.from);
    case NameRewriteKind::kSuffix:
      return key.ends_with(rule.from);
  }
  return false;
}

// `key` with the hit of `rule` replaced (Hits(rule, key) holds).
std::string Rewrite(const NameRewrite& rule, const std::string& key) {
  size_t at = 0;
  switch (rule.kind) {
    case NameRewriteKind::kSubstring:
      at = key.find(rule.from);  // str.replace(substr, new, 1): the first occurrence
      break;
    case NameRewriteKind::kPrefix:
      at = 0;
      break;
    case NameRewriteKind::kSuffix:
      at = key.size() - rule.from.size();
      break;
  }
  return key.substr(0, at) + rule.to + key.substr(at + rule.from.size());
}

// The entries one list entry becomes (before deduplication).
std::vector<std::string> MapEntry(const NameMapper& mapper, FieldMapping mapping,
                                  const std::string& entry) {
  switch (mapping) {
    case FieldMapping::kEveryEntry:
    case FieldMapping::kObjectKeys:
      return {MapName(mapper, entry)};
    case FieldMapping::kDottedNotRegex:
      if (entry.find('.') == std::string::npos || entry.starts_with("re:")) return {entry};
      return {MapName(mapper, entry)};
    case FieldMapping::kModelOptStarSplit:
      if (entry.size() >= 2 && entry.back() == '*' && entry[entry.size() - 2] != '.') {
        std::string stem = entry.substr(0, entry.size() - 1);
        return {MapName(mapper, stem), MapName(mapper, stem + ".*")};
      }
      return {MapName(mapper, entry)};
    case FieldMapping::kWithoutLanguageModelCopy: {
      constexpr std::string_view kLanguageModel = "language_model.";
      std::string mapped = MapName(mapper, entry);
      if (!mapped.starts_with(kLanguageModel)) return {mapped};
      return {mapped, mapped.substr(kLanguageModel.size())};
    }
    case FieldMapping::kModelPrefixVariants: {
      std::string base = entry.starts_with("model.") ? entry.substr(6) : entry;
      return {MapName(mapper, base), MapName(mapper, "model." + base)};
    }
  }
  return {entry};
}

bool Deduplicates(FieldMapping mapping) {
  return mapping == FieldMapping::kWithoutLanguageModelCopy ||
         mapping == FieldMapping::kModelPrefixVariants;
}

struct Context {
  const NameMapper& mapper;
  const MappedField& field;
  std::string_view file;
  std::vector<std::string>* notes;
};

void Note(const Context& c, const Json& from, std::string_view old_name,
          const std::vector<std::string>& new_names) {
  std::vector<std::string> quoted;
  for (const std::string& n : new_names) quoted.push_back(JsonQuote(n));
  c.notes->push_back(fmt::format("{}: {} read as {} ({} of the model)", Where(c.file, from),
                                 JsonQuote(old_name), Join(quoted, ", "), c.mapper.name));
}

// A list of names; items that are not strings are left for the importer to report.
void MapList(const Context& c, Json* list) {
  std::vector<Json> items;
  for (const Json& item : list->items()) {
    if (!item.is_string()) {
      items.push_back(item);
      continue;
    }
    std::vector<std::string> names = MapEntry(c.mapper, c.field.mapping, item.string_value());
    if (names != std::vector<std::string>{item.string_value()}) {
      Note(c, item, item.string_value(), names);
    }
    for (std::string& name : names) {
      bool seen = Deduplicates(c.field.mapping) &&
                  std::any_of(items.begin(), items.end(), [&](const Json& j) {
                    return j.is_string() && j.string_value() == name;
                  });
      if (seen) continue;
      Json mapped = Json::String(std::move(name));
      mapped.set_pointer(item.pointer());  // provenance: the entry as the file writes it
      items.push_back(std::move(mapped));
    }
  }
  list->mutable_items() = std::move(items);
}

// An object keyed by names, with Python dict semantics: a key mapped onto an earlier one replaces
// that one's value and keeps its position.
void MapKeys(const Context& c, Json* object) {
  std::vector<Json::Member> members;
  for (Json::Member& m : object->mutable_members()) {
    std::string name = MapName(c.mapper, m.first);
    if (name != m.first) Note(c, m.second, m.first, {name});
    auto same = std::find_if(members.begin(), members.end(),
                             [&](const Json::Member& x) { return x.first == name; });
    if (same != members.end()) {
      same->second = std::move(m.second);
    } else {
      members.emplace_back(std::move(name), std::move(m.second));
    }
  }
  object->mutable_members() = std::move(members);
}

void MapAt(const Context& c, Json* value, std::span<const std::string> path) {
  if (path.empty()) {
    if (c.field.mapping == FieldMapping::kObjectKeys && value->is_object()) MapKeys(c, value);
    if (c.field.mapping != FieldMapping::kObjectKeys && value->is_array()) MapList(c, value);
    return;
  }
  if (!value->is_object()) return;
  for (Json::Member& m : value->mutable_members()) {
    if (path.front() == "*" || m.first == path.front()) MapAt(c, &m.second, path.subspan(1));
  }
}

// The object at `pointer` inside `root` (descriptions are objects, so only members are followed).
Json* FindByPointer(Json* root, std::string_view pointer) {
  if (root->pointer() == pointer) return root;
  if (!root->is_object()) return nullptr;
  for (Json::Member& m : root->mutable_members()) {
    if (!pointer.starts_with(m.second.pointer())) continue;
    if (Json* found = FindByPointer(&m.second, pointer)) return found;
  }
  return nullptr;
}

}  // namespace

std::string MapName(const NameMapper& mapper, std::string_view name) {
  std::string key(name);
  for (NameRewriteKind kind :
       {NameRewriteKind::kSubstring, NameRewriteKind::kPrefix, NameRewriteKind::kSuffix}) {
    const NameRewrite* longest = nullptr;
    for (const NameRewrite& rule : mapper.rules) {
      if (rule.kind != kind || !Hits(rule, key)) continue;
      if (mapper.order == NameRewriteOrder::kEveryInOrder) {
        key = Rewrite(rule, key);
      } else if (longest == nullptr || rule.from.size() > longest->from.size()) {
        longest = &rule;  // Python's stable sort keeps declaration order among equal lengths
      }
    }
    if (longest != nullptr) key = Rewrite(*longest, key);
  }
  return key;
}

ConfigSources ApplyNameMapper(const ConfigSources& sources, std::string_view importer,
                              const Dialect& dialect, const NameMapper& mapper,
                              std::vector<std::string>* notes) {
  std::vector<const MappedField*> fields;
  for (const MappedField& f : kMappedFields) {
    if (f.importer == importer && f.engine == dialect.engine) fields.push_back(&f);
  }
  if (fields.empty()) return sources;
  std::optional<Located> embedded = sources.Embedded();
  std::vector<SourceFile> files = sources.files();
  for (SourceFile& file : files) {
    Json* description = nullptr;
    if (file.name != "config.json") {
      description = &file.root;
    } else if (embedded && embedded->where.file == file.name) {
      description = FindByPointer(&file.root, embedded->where.pointer);
    }
    if (description == nullptr) continue;
    for (const MappedField* f : fields) {
      std::vector<std::string> path = Split(f->path, '/');
      MapAt({mapper, *f, file.name, notes}, description, path);
    }
  }
  return sources.WithFiles(std::move(files));
}

}  // namespace quantpath
