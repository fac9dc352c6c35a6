// libFuzzer target: the model.safetensors of a fixed one-layer, two-expert Qwen3-MoE folder
// (hidden 64, moe_intermediate 32, compressed-tensors int4 group 32) → OpenModel, LoadExperts of
// model.layers.0.mlp.experts (every expert's gate, up and down projections) and one seeded run of
// every expert against the fp64 reference. Nothing may crash; errors are fine.
// seeds: tests/fuzz/seeds/moe_experts/*
#include "quantpath/pipeline.h"
#include "tests/fuzz/loader_fuzz.h"

namespace {

using namespace quantpath;

constexpr char kConfig[] = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "dtype": "bfloat16",
  "hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 32, "head_dim": 32,
  "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1,
  "num_experts": 2, "num_experts_per_tok": 1, "decoder_sparse_step": 1, "mlp_only_layers": [],
  "vocab_size": 32, "tie_word_embeddings": false,
  "quantization_config": {
    "quant_method": "compressed-tensors", "format": "pack-quantized",
    "quantization_status": "compressed",
    "config_groups": {"group_0": {"targets": ["Linear"], "format": "pack-quantized",
      "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group",
                  "group_size": 32, "dynamic": false}}},
    "ignore": ["lm_head", "re:.*mlp.gate$"]}})";

const std::filesystem::path& ModelFolder() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path d = fuzz::Folder("moe_experts");
    std::ofstream(d / "config.json") << kConfig;
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path& dir = ModelFolder();
  fuzz::WriteCheckpoint(dir, data, size);
  Result<OpenOptions> options = OpenOptions::Parse("native", "", "cpu");
  if (!options.ok()) return 0;
  Result<Model> model = OpenModel(dir.string(), *options);
  if (!model.ok()) return 0;
  Result<LoadedExperts> experts = LoadExperts(*model, "model.layers.0.mlp.experts");
  if (!experts.ok()) return 0;
  (void)RunExpertsSeeded(*experts, 2, 1, std::nullopt);
  return 0;
}
