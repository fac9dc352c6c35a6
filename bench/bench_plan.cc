// Planning speed: decisions per site for every dialect on three published-size inputs.
//
//   DeepSeek-R1 with its NVFP4 hf_quant_config.json (489 exclusion patterns, ~560 sites);
//   Kimi-K2 (fp8 block, no exclusions); a Llama with a GPTQ `dynamic` config of 200 rules.
//
// BM_Decide* time DecideSites over an opened model (parsing excluded) and report the user counter
// `us_per_decision`; BM_Plan* time OpenModel + DecideAll, as `plan` runs them. The folders are
// assembled in a temporary directory from tests/data, so the inputs are the published files.
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/pipeline.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(QUANTPATH_SOURCE_DIR) / "tests/data/corpus";

std::vector<fs::path>& ScratchDirs() {
  static std::vector<fs::path> dirs;
  return dirs;
}

fs::path Scratch(std::string_view name) {
  fs::path dir = fs::temp_directory_path() / fmt::format("quantpath_bench_{}_{}", getpid(), name);
  fs::create_directories(dir);
  ScratchDirs().push_back(dir);
  return dir;
}

void RemoveScratch() {
  for (const fs::path& dir : ScratchDirs()) fs::remove_all(dir);
}

void Write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Json Parse(const fs::path& path) {
  Result<Json> json = ParseJson(Read(path), path.string());
  if (!json.ok()) {
    fmt::print(stderr, "bench_plan: {}\n", json.status().message());
    std::exit(2);
  }
  return *std::move(json);
}

fs::path DeepSeekNvfp4() {
  static const fs::path dir = [] {
    // The NVFP4 export's config.json is DeepSeek-R1's without the fp8 quantization_config.
    fs::path d = Scratch("r1_nvfp4");
    Json config = Parse(kCorpus / "deepseek-ai__DeepSeek-R1/config.json");
    std::erase_if(config.mutable_members(),
                  [](const Json::Member& m) { return m.first == "quantization_config"; });
    Write(d / "config.json", ToJson(config, 1));
    fs::copy_file(kCorpus / "peaceh-nv__TensorRT-LLM__DeepSeek-R1-NVFP4/hf_quant_config.json",
                  d / "hf_quant_config.json", fs::copy_options::overwrite_existing);
    return d;
  }();
  return dir;
}

fs::path KimiK2() { return kCorpus / "moonshotai__Kimi-K2-Instruct"; }

// A Llama-2-13B (40 blocks) whose GPTQ config has 200 `dynamic` rules: per-block negative
// exclusions of down_proj and positive overrides of attention, as GPTQModel writes them.
fs::path GptqDynamic() {
  static const fs::path dir = [] {
    fs::path d = Scratch("gptq_dynamic");
    std::string config = Read(kCorpus / "TheBloke__Llama-2-13B-chat-GPTQ/config.json");
    std::string rules;
    for (int i = 0; i < 100; ++i) {
      rules += fmt::format(R"("-:model\\.layers\\.{}\\.mlp\\.down_proj": {{}},)", i);
      rules += fmt::format(R"("+:model\\.layers\\.{}\\.self_attn\\..*": {{"bits": 8}}{})", i,
                           i == 99 ? "" : ",");
    }
    const std::string key = "\"quant_method\": \"gptq\"";
    const size_t at = config.find(key);
    if (at != std::string::npos) {
      config.insert(at + key.size(), fmt::format(",\n    \"dynamic\": {{{}}}", rules));
    }
    Write(d / "config.json", config);
    return d;
  }();
  return dir;
}

Model Open(const fs::path& dir, std::string_view engine) {
  Result<OpenOptions> options = OpenOptions::Parse(engine, "", "cpu");
  Result<Model> model = OpenModel(dir.string(), *options);
  if (!model.ok()) {
    fmt::print(stderr, "bench_plan: {}\n", model.status().message());
    std::exit(2);
  }
  return *std::move(model);
}

// This thread's CPU time in µs: the machines these run on are shared, and planning is
// single-threaded, so CPU time is what a decision costs.
double ThreadCpuMicros() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

void SetPerDecision(benchmark::State& state, double cpu_us, size_t sites) {
  state.counters["us_per_decision"] =
      cpu_us / static_cast<double>(state.iterations()) / static_cast<double>(sites);
  state.counters["sites"] = static_cast<double>(sites);
}

void Decide(benchmark::State& state, const fs::path& dir, std::string_view engine) {
  const Model model = Open(dir, engine);
  const double start = ThreadCpuMicros();
  for (auto _ : state) {
    std::vector<Decision> decisions = DecideSites(model.plan, model.sites.sites);
    benchmark::DoNotOptimize(decisions);
  }
  SetPerDecision(state, ThreadCpuMicros() - start, model.sites.sites.size());
}

void PlanWithParsing(benchmark::State& state, const fs::path& dir, std::string_view engine) {
  size_t sites = 0;
  const double start = ThreadCpuMicros();
  for (auto _ : state) {
    Model model = Open(dir, engine);
    std::vector<LayerDecision> layers = DecideAll(model).value();
    sites = layers.size();
    benchmark::DoNotOptimize(layers);
  }
  SetPerDecision(state, ThreadCpuMicros() - start, sites);
}

void RegisterAll() {
  struct Input {
    const char* name;
    fs::path (*dir)();
  };
  static const Input kInputs[] = {
      {"DeepSeekR1_NVFP4", DeepSeekNvfp4}, {"KimiK2", KimiK2}, {"GptqDynamic200", GptqDynamic}};
  for (const Input& input : kInputs) {
    for (std::string_view engine : DialectNames()) {
      const std::string suffix = fmt::format("{}/{}", input.name, engine);
      benchmark::RegisterBenchmark(("BM_Decide/" + suffix).c_str(), [input,
                                                                     engine](benchmark::State& s) {
        Decide(s, input.dir(), engine);
      })->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("BM_Plan/" + suffix).c_str(), [input,
                                                                   engine](benchmark::State& s) {
        PlanWithParsing(s, input.dir(), engine);
      })->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace
}  // namespace quantpath

int main(int argc, char** argv) {
  quantpath::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  quantpath::RemoveScratch();
  return 0;
}
