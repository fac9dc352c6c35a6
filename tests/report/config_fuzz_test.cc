// Fuzz-style test: seeded mutations of real quantization configs go through the whole decision
// path (sources → importer → sites → planner) under every dialect, and must end in a decision or
// an error with a message — never a crash or a hang. The sanitize preset adds ASan + UBSan.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "quantpath/report.h"

namespace quantpath {
namespace {

// Corpus folders whose quantization description is mutated, with the file that holds it.
struct Seed {
  const char* folder;
  const char* file;
};
constexpr Seed kSeeds[] = {
    {"deepseek-ai__DeepSeek-R1", "config.json"},
    {"TheBloke__Llama-2-13B-chat-GPTQ", "quantize_config.json"},
    {"Weni__ZeroShot-Agents-Llama3-4.0.24-DPO-AWQ", "quant_config.json"},
    {"peaceh-nv__TensorRT-LLM__DeepSeek-R1-NVFP4", "hf_quant_config.json"},
    {"fantasylord__Qwen36", "config.json"},
    {"reubzdubz__Molmo7B_D_NF4Quant", "config.json"},
    {"openai__gpt-oss-20b", "config.json"},
    {"hualayn__ai-articles__Qwen3.6-27B-AutoRound-AWQ", "quantization_config.json"},
};

// A small Llama so that thousands of plans stay fast; the mutated description is what is tested.
constexpr const char* kTinyLlama = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
  "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
  "num_hidden_layers": 2, "vocab_size": 128, "torch_dtype": "bfloat16"})";

std::string ReadText(const std::filesystem::path& path) {
  Result<std::string> text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? *text : std::string();
}

// Replaces a random scalar or container of `value` with something of another shape.
void MutateTree(Json* value, std::mt19937& rng, int depth = 0) {
  std::uniform_int_distribution<int> pick(0, 9);
  if ((value->is_object() || value->is_array()) && depth < 6 && pick(rng) < 7) {
    size_t n = value->is_object() ? value->members().size() : value->items().size();
    if (n == 0) return;
    size_t i = std::uniform_int_distribution<size_t>(0, n - 1)(rng);
    Json* child =
        value->is_object() ? &value->mutable_members()[i].second : &value->mutable_items()[i];
    if (pick(rng) == 0 && value->is_object()) {
      value->mutable_members().erase(value->mutable_members().begin() + static_cast<long>(i));
      return;
    }
    MutateTree(child, rng, depth + 1);
    return;
  }
  static const std::vector<Json> kReplacements = {
      Json::Null(),
      Json::Bool(true),
      Json::Int(-1),
      Json::Int(0),
      Json::Int(3),
      Json::Int(int64_t{1} << 62),
      Json::Double(1e308),
      Json::Double(-0.5),
      Json::String(""),
      Json::String("re:(a+)+$"),
      Json::String("re:(?P<x>.*)\\Z"),
      Json::String("re:[unclosed"),
      Json::String("-:.*"),
      Json::String("*"),
      Json::String("float"),
      Json::String("group"),
      Json::String("NVFP4"),
      Json::Array({Json::Int(128)}),
      Json::Array({Json::Int(0), Json::Int(-128)}),
      Json::Array({Json::String("model.layers.0.self_attn.q_proj")}),
      Json::Object(),
      Json::Object({{"+:.*down.*", Json::Object({{"bits", Json::Int(3)}})}})};
  *value = kReplacements[std::uniform_int_distribution<size_t>(0, kReplacements.size() - 1)(rng)];
}

// Byte-level damage to the text: flips, truncation, insertions of JSON punctuation.
void MutateText(std::string* text, std::mt19937& rng) {
  if (text->empty()) return;
  std::uniform_int_distribution<size_t> pos(0, text->size() - 1);
  switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
    case 0:
      (*text)[pos(rng)] ^= static_cast<char>(1 << (rng() % 8));
      break;
    case 1:
      text->resize(pos(rng));
      break;
    case 2:
      text->insert(pos(rng), std::string(1, "{}[],:\"\\"[rng() % 8]));
      break;
    default:
      text->insert(pos(rng), "NaN");
      break;
  }
}

// Traces are recorded on some runs only: with hundreds of exclusion rules they dominate the time.
void DecideEverything(const ConfigSources& sources, bool record_trace) {
  for (std::string_view name : {"native", "vllm@helpers", "sglang@helpers"}) {
    Dialect dialect = *ParseDialect(name);
    Result<QuantPlan> plan = ImportPlan(sources, dialect);
    if (!plan.ok()) {
      EXPECT_FALSE(plan.status().message().empty());
      continue;
    }
    Result<ModelSites> sites = BuildModelSites(sources, dialect);
    if (!sites.ok()) {
      EXPECT_FALSE(sites.status().message().empty());
      continue;
    }
    for (const LayerSite& site : sites->sites) {
      Decision d = DecideSite(*plan, site, record_trace);
      if (d.kind == DecisionKind::kError) {
        EXPECT_FALSE(d.detail.empty()) << site.path;
      }
    }
  }
}

TEST(ConfigFuzz, SeededMutationsOfRealConfigsNeverCrash) {
  const std::filesystem::path corpus = std::filesystem::path(QUANTPATH_TEST_DATA) / "corpus";
  std::mt19937 rng(20261129);
  int runs = 0;
  for (const Seed& seed : kSeeds) {
    std::string text = ReadText(corpus / seed.folder / seed.file);
    Result<Json> original = ParseJson(text, seed.file);
    ASSERT_TRUE(original.ok()) << seed.folder;
    for (int i = 0; i < 160; ++i, ++runs) {
      std::string mutated;
      if (i % 2 == 0) {
        Json tree = *original;
        for (int k = 0; k <= i % 3; ++k) MutateTree(&tree, rng);
        mutated = ToJson(tree);
      } else {
        mutated = text;
        MutateText(&mutated, rng);
      }
      Result<Json> root = ParseJson(mutated, seed.file);
      if (!root.ok() || !root->is_object()) continue;
      std::vector<SourceFile> files;
      if (std::string_view(seed.file) == "config.json") {
        // Keep the description but use the small architecture, so the test stays fast.
        Json config = *ParseJson(kTinyLlama, "config.json");
        for (const char* key : {"quantization_config", "compression_config", "text_config"}) {
          if (const Json* q = root->Find(key)) config.mutable_members().emplace_back(key, *q);
        }
        Result<Json> reparsed = ParseJson(ToJson(config), "config.json");
        ASSERT_TRUE(reparsed.ok());
        files.push_back({"config.json", {}, *reparsed});
      } else {
        files.push_back({"config.json", {}, *ParseJson(kTinyLlama, "config.json")});
        files.push_back({seed.file, {}, *root});
      }
      DecideEverything(ConfigSources::FromMemory(std::move(files)), i % 16 == 0);
    }
  }
  EXPECT_GE(runs, 1000);
}

}  // namespace
}  // namespace quantpath
