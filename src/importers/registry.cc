// The importer registry: an explicit detection order, and the --quantization override.
#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/importer_list.h"

namespace quantpath {
namespace {

// A folder with no quantization description: every site keeps the checkpoint dtype.
QuantPlan UnquantizedPlan(const Dialect& dialect) {
  QuantPlan plan;
  plan.quant_method = "none";
  plan.importer = "none";
  plan.dialect = dialect;
  plan.default_action = {ActionKind::kSkip, std::nullopt, "the model has no quantization config",
                         ""};
  plan.linear = KindPolicy::kUnquantized;
  plan.moe = KindPolicy::kUnquantized;
  return plan;
}

}  // namespace

const std::vector<const Importer*>& Importers() {
  // Detection order matters where files could satisfy two importers: the formats that key on a
  // dedicated file or an explicit quant_method come before those that infer from field shapes.
  static const std::vector<const Importer*> importers = MakeImporterList();
  return importers;
}

const Importer* FindImporter(std::string_view name) {
  for (const Importer* importer : Importers()) {
    if (importer->name() == name) return importer;
    for (std::string_view alias : importer->aliases()) {
      if (alias == name) return importer;
    }
  }
  return nullptr;
}

Result<QuantPlan> ImportPlan(const ConfigSources& sources, const Dialect& dialect,
                             const std::optional<std::string>& forced) {
  const Importer* detected = nullptr;
  for (const Importer* importer : Importers()) {
    if (importer->Detect(sources)) {
      detected = importer;
      break;
    }
  }
  if (forced) {
    const Importer* chosen = FindImporter(*forced);
    if (chosen == nullptr) {
      std::vector<std::string> names;
      for (const Importer* importer : Importers()) names.emplace_back(importer->name());
      return InvalidInput(fmt::format("--quantization {}: unknown format (known: {})", *forced,
                                      Join(names, ", ")));
    }
    if (detected != nullptr && detected != chosen) {
      return InvalidInput(fmt::format(
          "--quantization {} disagrees with the model's files, which describe {} ({})", *forced,
          detected->name(), Join(sources.FileNames(), ", ")));
    }
    if (detected == nullptr && !chosen->Detect(sources)) {
      return InvalidInput(fmt::format(
          "--quantization {}: the model's files ({}) hold no {} description", *forced,
          Join(sources.FileNames(), ", "), chosen->name()));
    }
    detected = chosen;
  }
  if (detected == nullptr) {
    // A description no importer recognises is an error, never a silent "unquantized".
    if (std::optional<Located> embedded = sources.Embedded()) {
      const Json* method = embedded->value->Find("quant_method");
      std::vector<std::string> names;
      for (const Importer* importer : Importers()) names.emplace_back(importer->name());
      return Unsupported(fmt::format(
          "{}: quantization method {} is not known to quantpath (known: {})",
          embedded->where.ToString(),
          method && method->is_string() ? "\"" + method->string_value() + "\""
                                        : std::string("(no quant_method)"),
          Join(names, ", ")));
    }
    for (std::string_view name : kStandaloneConfigFiles) {
      if (sources.File(name) != nullptr) {
        return Unsupported(fmt::format("{}: no quantpath importer recognises this file", name));
      }
    }
    return UnquantizedPlan(dialect);
  }
  QP_ASSIGN_OR_RETURN(QuantPlan plan, detected->BuildPlan(sources, dialect));
  plan.importer = std::string(detected->name());
  plan.dialect = dialect;
  return plan;
}

}  // namespace quantpath
