// Reading quant_model_description.json: weight keys, types, ignore, packed_modules_mapping.
//
// Goals: every "<module>.weight" key with its type, in document order; the nested or flat
// packed_modules_mapping; the type table with its schemes. Keys for other tensors (weight_scale,
// input_offset, norm.bias, …) describe the same modules and decide nothing. Non-goals: matching.
// Documentation followed: SGLang ModelSlimConfig.__init__ / get_linear_scheme (the type → scheme
// table: W4A4_DYNAMIC, W8A8, W8A8_DYNAMIC, W8A8_MXFP8, W4A8_MXFP, W4A4_MXFP4; MoE W4A8_DYNAMIC);
// ModelSlim schemes as SGLang's modelslim/schemes implement them (int8 per-channel weights with
// weight_scale / weight_offset [out, 1]; static W8A8 has per-tensor input_scale and input_offset;
// MX types use one E8M0 scale per 32).
#include <algorithm>
#include <utility>

#include "fmt/format.h"
#include "src/importers/modelslim.h"

namespace quantpath::modelslim {
namespace {

constexpr TypeInfo kTypes[] = {
    {"W8A8", true},       {"W8A8_DYNAMIC", true}, {"W4A4_DYNAMIC", true}, {"W4A8_DYNAMIC", true},
    {"W8A8_MXFP8", true}, {"W4A8_MXFP", true},    {"W4A4_MXFP4", true},   {"FLOAT", false},
};

constexpr std::string_view kSections[] = {"model", "visual", "vision_model"};

TensorQuant Int(QDType dtype, Granularity g, Dynamic dynamic, bool symmetric = true) {
  TensorQuant t;
  t.dtype = dtype;
  t.granularity = g;
  t.symmetric = symmetric;
  t.dynamic = dynamic;
  return t;
}

// Microscaling: one E8M0 scale per 32 values.
TensorQuant Mx(QDType dtype, Dynamic dynamic) {
  TensorQuant t;
  t.dtype = dtype;
  t.granularity = Granularity::kGroup;
  t.group_size = 32;
  t.dynamic = dynamic;
  t.micro_scaled = true;
  return t;
}

Result<Mapping> ReadMapping(const Json& object, std::string_view file) {
  Mapping mapping;
  for (const auto& [fused, legs] : object.members()) {
    QP_ASSIGN_OR_RETURN(std::optional<std::vector<ListEntry>> entries,
                        ReadEntryList(object, fused, file));
    std::vector<std::string> names;
    for (const ListEntry& e : entries.value_or(std::vector<ListEntry>{})) names.push_back(e.value);
    mapping.emplace_back(fused, std::move(names));
  }
  return mapping;
}

}  // namespace

const TypeInfo* FindType(std::string_view name) {
  for (const TypeInfo& t : kTypes) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

QuantScheme TypeScheme(const TypeInfo& type, int64_t group_size) {
  QuantScheme s;
  const std::string_view n = type.name;
  if (n == "W8A8") {
    s.weight = Int(QDType::kINT8, Granularity::kPerChannel, Dynamic::kStatic);
    s.input = Int(QDType::kINT8, Granularity::kPerTensor, Dynamic::kStatic, false);
  } else if (n == "W8A8_DYNAMIC") {
    s.weight = Int(QDType::kINT8, Granularity::kPerChannel, Dynamic::kStatic);
    s.input = Int(QDType::kINT8, Granularity::kPerToken, Dynamic::kDynamic);
  } else if (n == "W4A4_DYNAMIC") {
    s.weight = Int(QDType::kINT4, Granularity::kPerChannel, Dynamic::kStatic);
    s.input = Int(QDType::kINT4, Granularity::kPerToken, Dynamic::kDynamic);
  } else if (n == "W4A8_DYNAMIC") {
    // group_size 0 means per-channel weights; otherwise a second per-group scale level.
    s.weight = Int(QDType::kINT4, group_size > 0 ? Granularity::kGroup : Granularity::kPerChannel,
                   Dynamic::kStatic);
    if (group_size > 0) s.weight.group_size = group_size;
    s.input = Int(QDType::kINT8, Granularity::kPerToken, Dynamic::kDynamic);
  } else if (n == "W8A8_MXFP8") {
    s.weight = Mx(QDType::kMXFP8, Dynamic::kStatic);
    s.input = Mx(QDType::kMXFP8, Dynamic::kDynamic);
  } else if (n == "W4A8_MXFP") {
    s.weight = Mx(QDType::kMXFP4, Dynamic::kStatic);
    s.input = Mx(QDType::kMXFP8, Dynamic::kDynamic);
  } else if (n == "W4A4_MXFP4") {
    s.weight = Mx(QDType::kMXFP4, Dynamic::kStatic);
    s.input = Mx(QDType::kMXFP4, Dynamic::kDynamic);
  }
  s.weight.load.layout = SourceLayout::kModelSlim;
  return s;
}

std::string TypeList() {
  std::vector<std::string> names;
  for (const TypeInfo& t : kTypes) names.emplace_back(t.name);
  return Join(names, ", ");
}

const WeightKey* Description::Find(std::string_view path) const {
  for (const WeightKey& k : weights) {
    if (k.path == path) return &k;
  }
  return nullptr;
}

const Mapping* Description::SectionFor(std::string_view prefix) const {
  std::string_view key = "model";
  if (prefix.find("vision_model") != std::string_view::npos) {
    key = "vision_model";
  } else if (prefix.find("visual") != std::string_view::npos) {
    key = "visual";
  }
  for (const auto& [name, section] : mapping) {
    if (name == key) return &section;
  }
  return nullptr;
}

std::string ReplaceAll(std::string_view path, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(path);
  std::string out;
  size_t start = 0;
  while (true) {
    size_t pos = path.find(from, start);
    if (pos == std::string_view::npos) break;
    out.append(path.substr(start, pos - start));
    out.append(to);
    start = pos + from.size();
  }
  out.append(path.substr(start));
  return out;
}

Result<Description> ReadDescription(const SourceFile& file) {
  const Json& root = file.root;
  Description d;
  d.where = {file.name, ""};
  if (!root.is_object()) {
    return InvalidInput(
        fmt::format("{}: expected an object, found {}", file.name, root.TypeName()));
  }
  std::vector<std::string> other;
  for (const auto& [key, value] : root.members()) {
    if (key.ends_with(".weight")) {
      if (!value.is_string()) {
        return InvalidInput(fmt::format("{}: expected a quantization type (string), found {}",
                                        Where(file.name, value), value.TypeName()));
      }
      d.weights.push_back(
          {key.substr(0, key.size() - 7), value.string_value(), ProvenanceOf(file.name, value)});
    } else if (key.find("norm.bias") != std::string::npos) {
      other.push_back(key);
    }
  }
  QP_ASSIGN_OR_RETURN(std::optional<std::vector<ListEntry>> ignore,
                      ReadEntryList(root, "ignore", file.name));
  d.ignore = ignore.value_or(std::vector<ListEntry>{});
  if (const Json* pmm = root.FindNonNull("packed_modules_mapping")) {
    if (!pmm->is_object()) {
      return InvalidInput(fmt::format("{}: packed_modules_mapping must be an object, found {}",
                                      Where(file.name, *pmm), pmm->TypeName()));
    }
    bool nested = !pmm->members().empty();
    for (const auto& [key, value] : pmm->members()) nested = nested && value.is_object();
    if (nested) {
      for (const auto& [key, value] : pmm->members()) {
        QP_ASSIGN_OR_RETURN(Mapping section, ReadMapping(value, file.name));
        d.mapping.emplace_back(key, std::move(section));
        if (std::find(std::begin(kSections), std::end(kSections), key) == std::end(kSections)) {
          d.notes.push_back(
              fmt::format("{}: section \"{}\" is not one of model, visual, "
                          "vision_model, so no layer looks it up",
                          Where(file.name, value), key));
        }
      }
    } else {
      QP_ASSIGN_OR_RETURN(Mapping flat, ReadMapping(*pmm, file.name));
      d.mapping.emplace_back("", std::move(flat));
      d.flat_mapping = true;
    }
  }
  QP_ASSIGN_OR_RETURN(std::optional<int64_t> group_size,
                      OptionalInt(root, "group_size", file.name));
  d.group_size = group_size.value_or(0);
  if (const Json* type = root.FindNonNull("model_quant_type")) {
    d.notes.push_back(fmt::format("{}: model_quant_type {} (each layer follows its own key)",
                                  Where(file.name, *type), ToJson(*type)));
  }
  if (!other.empty()) {
    d.notes.push_back(
        fmt::format("{}: norm.bias keys ({} of them, e.g. {}): RMSNorm carries a "
                    "bias for static W8A8 activations",
                    file.name, other.size(), other.front()));
  }
  return d;
}

Status AddExact(std::vector<Rule>* rules, std::set<std::string>* seen, const std::string& path,
                SiteKindSet kinds, Action action, const Provenance& where) {
  if (!seen->insert(path).second) return {};
  QP_ASSIGN_OR_RETURN(Rule rule, MakeRule(MatchKind::kExact, path, RegexFlavor::kPythonRe, kinds,
                                          std::move(action), where));
  rules->push_back(std::move(rule));
  return {};
}

}  // namespace quantpath::modelslim
