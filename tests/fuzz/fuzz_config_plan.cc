// libFuzzer target: config files → every importer and dialect → the model's sites → decisions.
// The input is config.json, optionally followed by NUL-separated hf_quant_config.json,
// quantize_config.json and quant_model_description.json (seeds are real config.json files).
// seeds: tests/data/corpus/*/config.json tests/data/corpus/*/hf_quant_config.json
// seeds: tests/data/models/*/config.json examples/*/config.json
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/importers.h"
#include "quantpath/models.h"
#include "quantpath/planner.h"
#include "quantpath/sources.h"

namespace {

constexpr std::string_view kFiles[] = {"config.json", "hf_quant_config.json",
                                       "quantize_config.json", "quant_model_description.json"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace quantpath;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<SourceFile> files;
  for (std::string_view name : kFiles) {
    const size_t end = input.find('\0');
    const std::string_view text = input.substr(0, end);
    Result<Json> root = ParseJson(text, name);
    if (root.ok() && root->is_object()) files.push_back({std::string(name), {}, *std::move(root)});
    if (end == std::string_view::npos) break;
    input.remove_prefix(end + 1);
  }
  if (files.empty()) return 0;
  const ConfigSources sources = ConfigSources::FromMemory(std::move(files));
  for (std::string_view name : DialectNames()) {
    const Dialect dialect = *ParseDialect(name);
    Result<QuantPlan> plan = ImportPlan(sources, dialect);
    if (!plan.ok()) continue;
    Result<ModelSites> sites = BuildModelSites(sources, dialect);
    if (!sites.ok()) continue;
    (void)DecideSites(*plan, sites->sites);
  }
  return 0;
}
