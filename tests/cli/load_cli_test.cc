// `quantpath load` on producer-written and hand-written dense checkpoints, and on copies with one
// tensor removed, one shape changed or one tensor added; `run --input/--output` against the
// seeded run. MoE fixtures (tests/data/producers/*qwen3moe*) are not loadable in this build.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "cli_test_util.h"
#include "fmt/format.h"
#include "quantpath/checkpoint.h"
#include "tests/checkpoint/st_test_util.h"

namespace quantpath {
namespace {

using quantpath::testing::ParseOrDie;
using quantpath::testing::RunCli;
namespace fs = std::filesystem;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The tensors of one safetensors file, bytes included, in file order.
std::vector<st_test::RawTensor> ReadTensors(const fs::path& path) {
  const std::string bytes = ReadAll(path);
  uint64_t data_start = 0;
  auto infos =
      ParseSafetensorsHeader(st_test::AsBytes(bytes), bytes.size(), path.string(), &data_start);
  EXPECT_TRUE(infos.ok()) << infos.status().message();
  std::vector<st_test::RawTensor> tensors;
  if (!infos.ok()) return tensors;
  for (const TensorInfo& info : *infos) {
    tensors.push_back({info.name, std::string(StDtypeName(info.dtype)), info.shape,
                       bytes.substr(data_start + info.begin, info.end - info.begin)});
  }
  return tensors;
}

// The checkpoint files of a fixture folder (the producers' dequant.safetensors and
// online_ref.safetensors are not).
std::vector<fs::path> WeightFiles(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".safetensors" &&
        entry.path().filename() != "dequant.safetensors" &&
        entry.path().filename() != "online_ref.safetensors") {
      files.push_back(entry.path());
    }
  }
  return files;
}

struct CheckpointFacts {
  int64_t tensors = 0;
  int64_t data_bytes = 0;
};
CheckpointFacts FactsOf(const fs::path& dir) {
  CheckpointFacts facts;
  for (const fs::path& file : WeightFiles(dir)) {
    for (const auto& t : ReadTensors(file)) {
      ++facts.tensors;
      facts.data_bytes += static_cast<int64_t>(t.data.size());
    }
  }
  return facts;
}

// The fixtures whose every layer this build loads, dense and MoE. Not here: llama-tiny-gptq
// (headers only: its values are not a valid symmetric GPTQ checkpoint; see
// ALayerThatCannotBeLoadedIsAnErrorNamingIt).
const char* const kLoadableFixtures[] = {
    "producers/bf16_llama",
    "producers/bf16_qwen3moe",
    "producers/ct_llama_fp8_dynamic",
    "producers/ct_llama_w4a16_channel",
    "producers/ct_llama_w4a16_g64_asym",
    "producers/ct_llama_w4a16_g64_sym",
    "producers/ct_llama_w8a16_g64_sym",
    "producers/ar_llama_auto_awq_w4g64_asym",
    "producers/ar_llama_auto_gptq_w4g64_asym",
    "producers/ar_llama_auto_gptq_w4g64_sym",
    "producers/ar_llama_auto_gptq_w3g64_sym",
    "producers/ar_llama_auto_round_w4g64_asym",
    "producers/ar_llama_auto_round_w4g64_sym",
    "producers/gm_llama_gptq_w4g64_sym_desc_act",
    "producers/mo_llama_fp8",
    "producers/mo_llama_fp8_per_channel_per_token",
    "producers/ct_llama_fp8_block",
    "producers/mo_llama_fp8_pb_wo",
    "producers/ct_llama_w8a8_int8_dynamic",
    "producers/ct_llama_w8a8_int8_static",
    "producers/ct_llama_w8a8_int8_static_asym",
    "producers/ct_llama_w8a8_int8_dynamic_asym",
    "producers/ct_llama_w8a8_int8_tensor",
    "producers/ct_llama_nvfp4a16",
    "producers/ct_llama_nvfp4",
    "producers/mo_llama_nvfp4",
    "producers/mo_llama_w4a8_awq",
    "producers/ct_llama_mxfp4a16",
    "producers/ct_llama_mxfp4",
    "producers/ct_llama_mxfp8a16",
    "producers/ct_llama_mxfp8",
    "producers/bnb_llama_nf4_dq",
    "producers/bnb_llama_fp4",
    "producers/bnb_llama_nf4_b128",
    "producers/bnb_qwen3moe_nf4",
    "producers/bnb_qwen3moe_fp4_dq",
    "producers/bnb_qwen3moe_int8",
    "producers/bnb_llama_int8",
    "documented/modelslim_llama_w8a8",
    "documented/modelslim_llama_w8a8_fp16",
    "documented/modelslim_llama_w8a8_dynamic",
    "documented/sglang_llama_w8a8_fp8",  // SGLang's own method: loaded with --engine sglang
    "documented/modelslim_llama_w4a4_dynamic",
    "documented/modelslim_llama_w4a8_dynamic",
    "documented/modelslim_llama_w4a4_mxfp4",
    "documented/modelslim_llama_w4a8_mxfp",
    "documented/modelslim_llama_w8a8_mxfp8",
    "documented/modelslim_qwen3moe_w4a4_mxfp4",
    "documented/modelslim_qwen3moe_w4a8_mxfp",
    "documented/modelslim_qwen3moe_w8a8_mxfp8",
    "documented/modelslim_llama_w4a4_dynamic_new",  // the paired packing: --modelslim-packing new
    "documented/modelslim_llama_w4a8_dynamic_new",
    "documented/modelslim_qwen3moe_w8a8",
    "documented/modelslim_qwen3moe_w8a8_dynamic",
    "documented/modelslim_qwen3moe_w4a4_dynamic",
    "documented/modelslim_qwen3moe_w4a8_dynamic_new",
    "documented/modelopt_qwen3moe_w4a8_awq",
    "documented/gptoss_mxfp4",  // every expert of a layer stacked: *_blocks, *_scales, *_bias
    "producers/ct_qwen3moe_w4a16_g64_sym",
    "producers/ct_qwen3moe_fp8_dynamic",
    "producers/ct_qwen3moe_fp8_block",
    "producers/ct_qwen3moe_w8a8_int8_dynamic",
    "producers/ar_qwen3moe_auto_round_w4g64_sym",
    "producers/gm_qwen3moe_gptq_w4g64_sym_desc_act",
    "producers/ct_qwen3moe_nvfp4a16",
    "producers/ct_qwen3moe_nvfp4",
    "producers/ct_qwen3moe_mxfp4",
    "producers/ct_qwen3moe_mxfp8",
    "producers/mo_qwen3moe_nvfp4",
    "checkpoints/llama-tiny-fp8-sharded",
    "checkpoints/llama-tiny-fp8-static",
};

std::string DataDir(const std::string& fixture) {
  return std::string(QUANTPATH_TEST_DATA) + "/" + fixture;
}

TEST(LoadCli, LoadsEveryFixtureAndAccountsForEveryTensor) {
  for (const char* fixture : kLoadableFixtures) {
    SCOPED_TRACE(fixture);
    const std::string dir = DataDir(fixture);
    std::string engine =
        std::string(fixture).find("/sglang_") != std::string::npos ? " --engine sglang" : "";
    if (std::string_view(fixture).ends_with("_new")) engine += " --modelslim-packing new";
    auto result = RunCli("load " + dir + engine + " --json");
    ASSERT_EQ(result.exit_code, 0) << RunCli("load " + dir + engine, true).out;
    const Json load = ParseOrDie(result.out);
    // Every tensor of the files read exactly once: the sum of their data sections.
    const CheckpointFacts facts = FactsOf(dir);
    EXPECT_EQ(load.Find("tensors")->int_value(), facts.tensors);
    EXPECT_EQ(load.Find("bytes_read")->int_value(), facts.data_bytes);
    // The plan's sites: every one but attention is loaded, with the spec plan names, and what
    // each layer holds is what plan says the spec stores.
    const Json plan = ParseOrDie(RunCli("plan " + dir + engine + " --json").out);
    const auto& planned = plan.Find("layers")->items();
    const auto& sites = load.Find("sites")->items();
    ASSERT_EQ(sites.size(), planned.size());
    int64_t attention = 0;
    for (size_t i = 0; i < sites.size(); ++i) {
      const Json& site = sites[i];
      const Json& layer = planned[i];
      SCOPED_TRACE(layer.Find("path")->string_value());
      EXPECT_EQ(site.Find("path")->string_value(), layer.Find("path")->string_value());
      if (layer.Find("kind")->string_value() == "attention") {
        ++attention;
        EXPECT_FALSE(site.Find("loaded")->bool_value());
        EXPECT_TRUE(site.Find("note")->is_string());
        continue;
      }
      EXPECT_TRUE(site.Find("loaded")->bool_value());
      EXPECT_EQ(site.Find("spec_id")->string_value(), layer.Find("spec_id")->string_value());
      EXPECT_EQ(site.Find("bytes_held")->int_value(), layer.Find("bytes")->int_value());
      EXPECT_GT(site.Find("bytes_read")->int_value(), 0);
    }
    EXPECT_GT(attention, 0);
    EXPECT_EQ(load.Find("not_loaded")->int_value(), attention);
    EXPECT_EQ(load.Find("layers_loaded")->int_value(),
              static_cast<int64_t>(sites.size()) - attention);
    // Norms are the only other tensors of these checkpoints: 2 per layer (Llama) or 4 (Qwen3-MoE
    // adds q_norm and k_norm), and the final one; gpt-oss adds its attention sinks.
    const std::string_view name = fixture;
    const int64_t norms_per_layer = name.find("qwen3moe") != std::string_view::npos ? 4
                                    : name.find("gptoss") != std::string_view::npos ? 3
                                                                                    : 2;
    EXPECT_EQ(load.Find("other_tensors")->int_value(), norms_per_layer * attention + 1);
    // Held: the layers' storage and the plain tensors at the model's dtype, as plan counts them.
    const Json& summary = *plan.Find("summary");
    EXPECT_EQ(load.Find("bytes_held")->int_value(),
              summary.Find("bytes")->int_value() + summary.Find("other_bytes")->int_value());
    EXPECT_GT(load.Find("peak_rss_bytes")->int_value(),
              load.Find("largest_layer_bytes")->int_value());
    EXPECT_GT(load.Find("seconds")->number_value(), 0);
  }
}

// ModelSlim's new 4-bit packing is not in the files: load takes it from --modelslim-packing, and
// without it the weight's shape contradicts the default (old) packing, naming both.
TEST(LoadCli, ModelSlimPackingComesFromTheOption) {
  for (const char* fixture : {"documented/modelslim_llama_w4a4_dynamic_new",
                              "documented/modelslim_llama_w4a8_dynamic_new"}) {
    SCOPED_TRACE(fixture);
    const std::string dir = DataDir(fixture);
    auto result = RunCli("load " + dir + " --modelslim-packing new --json");
    ASSERT_EQ(result.exit_code, 0) << RunCli("load " + dir + " --modelslim-packing new", true).out;
    const Json load = ParseOrDie(result.out);
    const CheckpointFacts facts = FactsOf(dir);
    EXPECT_EQ(load.Find("tensors")->int_value(), facts.tensors);
    EXPECT_EQ(load.Find("bytes_read")->int_value(), facts.data_bytes);
    const auto contradicted = RunCli("load " + dir, true);
    EXPECT_EQ(contradicted.exit_code, 2);
    EXPECT_NE(contradicted.out.find("model.layers.0.self_attn.q_proj.weight has shape [32, 64], "
                                    "the shape of --modelslim-packing new"),
              std::string::npos)
        << contradicted.out;
    EXPECT_NE(contradicted.out.find("--modelslim-packing old expects [64, 64]"), std::string::npos)
        << contradicted.out;
    const auto typo = RunCli("load " + dir + " --modelslim-packing newer", true);
    EXPECT_EQ(typo.exit_code, 2);
    EXPECT_NE(typo.out.find("--modelslim-packing: expected old or new, got newer"),
              std::string::npos)
        << typo.out;
  }
}

TEST(LoadCli, PrintsProgressAndASummary) {
  const std::string dir = DataDir("producers/ct_llama_w4a16_g64_sym");
  auto result = RunCli("load " + dir, true);
  ASSERT_EQ(result.exit_code, 0) << result.out;
  // stderr is not a terminal here: one line, at the end.
  EXPECT_NE(result.out.find("load: 100% (12/12 sites"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("load: 0%"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("load: 50%"), std::string::npos) << result.out;
  // 2 layers × (qkv, o, gate_up, down) + embedding + lm_head; attention reported, not loaded.
  EXPECT_NE(result.out.find("loaded 10 layers (8 linear, 1 lm_head, 1 embedding)"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("not loaded: 2 sites: attention"), std::string::npos) << result.out;
  for (const char* figure :
       {" GB/s", "peak RSS ", " MB", " s CPU)\n", "other tensors (norms): 5, "}) {
    EXPECT_NE(result.out.find(figure), std::string::npos) << figure << "\n" << result.out;
  }
}

// A copy of a single-file fixture whose model.safetensors went through `edit`.
class EditedFixture {
 public:
  EditedFixture(const std::string& name, const std::string& fixture,
                const std::function<void(std::vector<st_test::RawTensor>&)>& edit,
                const std::function<void(std::string&)>& edit_config = {})
      : dir_(name) {
    const fs::path source = DataDir(fixture);
    for (const auto& entry : fs::directory_iterator(source)) {
      if (entry.path().extension() != ".safetensors") {
        fs::copy_file(entry.path(), dir_.path() / entry.path().filename());
      }
    }
    if (edit_config) {
      std::string config = ReadAll(source / "config.json");
      edit_config(config);
      st_test::WriteFile(dir_.path() / "config.json", config);
    }
    std::vector<st_test::RawTensor> tensors = ReadTensors(source / "model.safetensors");
    edit(tensors);
    st_test::WriteFile(dir_.path() / "model.safetensors", st_test::FileFor(tensors));
  }
  std::string path() const { return dir_.path().string(); }

 private:
  st_test::TempFolder dir_;
};

void Remove(std::vector<st_test::RawTensor>& tensors, const std::string& name) {
  const size_t before = tensors.size();
  std::erase_if(tensors, [&](const st_test::RawTensor& t) { return t.name == name; });
  ASSERT_EQ(tensors.size(), before - 1) << name;
}

st_test::RawTensor& Find(std::vector<st_test::RawTensor>& tensors, const std::string& name) {
  for (st_test::RawTensor& t : tensors) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << name;
  return tensors.front();
}

void ExpectBadInputNaming(const std::string& dir, const std::vector<std::string>& names) {
  auto result = RunCli("load " + dir, true);
  EXPECT_EQ(result.exit_code, 2) << result.out;
  for (const std::string& name : names) {
    EXPECT_NE(result.out.find(name), std::string::npos) << name << "\n" << result.out;
  }
}

TEST(LoadCli, AMissingTensorIsAnErrorNamingItAndItsLayer) {
  EditedFixture scale("load_missing_scale", "producers/ct_llama_w4a16_g64_sym",
                      [](auto& t) { Remove(t, "model.layers.1.mlp.down_proj.weight_scale"); });
  ExpectBadInputNaming(
      scale.path(), {"model.layers.1.mlp.down_proj.weight_scale", "model.layers.1.mlp.down_proj"});
  EditedFixture leg("load_missing_leg", "producers/ar_llama_auto_gptq_w4g64_sym",
                    [](auto& t) { Remove(t, "model.layers.0.self_attn.k_proj.qweight"); });
  ExpectBadInputNaming(
      leg.path(), {"model.layers.0.self_attn.k_proj.qweight", "model.layers.0.self_attn.qkv_proj"});
  EditedFixture embedding("load_missing_embedding", "producers/mo_llama_fp8",
                          [](auto& t) { Remove(t, "model.embed_tokens.weight"); });
  ExpectBadInputNaming(embedding.path(), {"model.embed_tokens.weight", "model.embed_tokens"});
  // Norms are named by the architecture (ModelSites::other_tensors): a missing one is named with
  // the shape config.json gives it, in a decoder block or not.
  EditedFixture block_norm("load_missing_block_norm", "producers/mo_llama_fp8", [](auto& t) {
    Remove(t, "model.layers.1.post_attention_layernorm.weight");
  });
  ExpectBadInputNaming(block_norm.path(),
                       {"tensor model.layers.1.post_attention_layernorm.weight is not in the "
                        "checkpoint",
                        "shape [128]"});
  EditedFixture final_norm("load_missing_final_norm", "producers/ct_llama_w4a16_g64_sym",
                           [](auto& t) { Remove(t, "model.norm.weight"); });
  ExpectBadInputNaming(final_norm.path(),
                       {"tensor model.norm.weight is not in the checkpoint", "LlamaForCausalLM"});
}

TEST(LoadCli, AChangedShapeIsAnErrorNamingTheTensorAndTheLayer) {
  // Same bytes, another shape: only the header says what is wrong.
  EditedFixture packed("load_shape_packed", "producers/ct_llama_w4a16_g64_asym", [](auto& t) {
    Find(t, "model.layers.0.mlp.down_proj.weight_packed").shape = {64, 64};
  });
  ExpectBadInputNaming(
      packed.path(), {"model.layers.0.mlp.down_proj.weight_packed", "model.layers.0.mlp.down_proj",
                      packed.path() + "/model.safetensors"});
  EditedFixture fp8("load_shape_fp8", "producers/mo_llama_fp8", [](auto& t) {
    Find(t, "model.layers.1.self_attn.o_proj.weight").shape = {64, 256};
  });
  ExpectBadInputNaming(
      fp8.path(), {"model.layers.1.self_attn.o_proj.weight", "model.layers.1.self_attn.o_proj"});
  EditedFixture embedding("load_shape_embedding", "producers/mo_llama_fp8", [](auto& t) {
    Find(t, "model.embed_tokens.weight").shape = {64, 256};
  });
  ExpectBadInputNaming(embedding.path(), {"model.embed_tokens.weight", "[64, 256]"});
  // A norm's shape is config.json's (hidden 128), not merely its element count.
  EditedFixture norm("load_shape_norm", "producers/mo_llama_fp8", [](auto& t) {
    Find(t, "model.layers.0.input_layernorm.weight").shape = {2, 64};
  });
  ExpectBadInputNaming(norm.path(),
                       {norm.path() + "/model.safetensors",
                        "tensor model.layers.0.input_layernorm.weight: shape [2, 64], expected "
                        "[128]"});
}

TEST(LoadCli, ATiedHeadIsReportedNotLoaded) {
  const auto tie = [](std::string& config) {
    const std::string untied = "\"tie_word_embeddings\": false";
    ASSERT_NE(config.find(untied), std::string::npos);
    config.replace(config.find(untied), untied.size(), "\"tie_word_embeddings\": true");
  };
  EditedFixture tied(
      "load_tied", "producers/ct_llama_w4a16_g64_sym", [](auto& t) { Remove(t, "lm_head.weight"); },
      tie);
  auto result = RunCli("load " + tied.path() + " --json");
  ASSERT_EQ(result.exit_code, 0) << RunCli("load " + tied.path(), true).out;
  const Json load = ParseOrDie(result.out);
  EXPECT_EQ(load.Find("loaded_per_kind")->Find("lm_head")->int_value(), 0);
  EXPECT_EQ(load.Find("not_loaded")->int_value(), 3);  // two attention sites and the head
  const Json& head = load.Find("sites")->items().back();
  EXPECT_EQ(head.Find("path")->string_value(), "lm_head");
  EXPECT_FALSE(head.Find("loaded")->bool_value());
  EXPECT_NE(head.Find("note")->string_value().find("tied"), std::string::npos);
  // A copy the checkpoint still stores is read and skipped, as the engines do.
  EditedFixture stored(
      "load_tied_stored", "producers/ct_llama_w4a16_g64_sym", [](auto&) {}, tie);
  const Json with_copy = ParseOrDie(RunCli("load " + stored.path() + " --json").out);
  EXPECT_EQ(with_copy.Find("bytes_read")->int_value() - load.Find("bytes_read")->int_value(),
            128 * 128 * 2);
  EXPECT_EQ(with_copy.Find("bytes_held")->int_value(), load.Find("bytes_held")->int_value());
}

TEST(LoadCli, ALayerThatCannotBeLoadedIsAnErrorNamingIt) {
  // A symmetric GPTQ checkpoint whose qzeros are not the symmetric zero point.
  auto result = RunCli("load " + DataDir("checkpoints/llama-tiny-gptq"), true);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.out.find("model.layers.0.self_attn.qkv_proj"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("model.layers.0.self_attn.q_proj.qzeros"), std::string::npos)
      << result.out;
}

TEST(LoadCli, ATensorNothingConsumesIsAnError) {
  const std::string four(4, '\0');
  // A zero point on a symmetric layer is a tensor of the layout that the spec has no use for.
  EditedFixture extra("load_extra", "producers/ct_llama_w4a16_g64_sym", [&](auto& t) {
    t.push_back({"model.layers.0.mlp.down_proj.weight_zero_point", "I32", {1}, four});
    t.push_back({"model.layers.0.mlp.adapter.weight", "F32", {1}, four});
  });
  ExpectBadInputNaming(
      extra.path(),
      {"2 checkpoint tensors consumed by no layer", "model.layers.0.mlp.adapter.weight",
       "model.layers.0.mlp.down_proj.weight_zero_point", "model.safetensors"});
}

// Rank R's shard (tests/pipeline/load_tp_test.cc checks every fixture's bytes): the summary
// names the rank, and the JSON's embedding holds half the vocabulary's rows.
TEST(LoadCli, TensorParallelRankHoldsItsShard) {
  const std::string dir = DataDir("producers/ct_llama_w4a16_g64_sym");
  auto rank = RunCli("load " + dir + " --tp 2 --rank 2", true);
  EXPECT_EQ(rank.exit_code, 2);
  EXPECT_NE(rank.out.find("--rank 2"), std::string::npos) << rank.out;
  auto text = RunCli("load " + dir + " --tp 2 --rank 1");
  EXPECT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("tensor parallel: rank 1 of 2"), std::string::npos) << text.out;
  auto whole = RunCli("load " + dir + " --tp 1 --rank 0 --json");
  ASSERT_EQ(whole.exit_code, 0);
  auto shard = RunCli("load " + dir + " --tp 2 --rank 1 --json");
  ASSERT_EQ(shard.exit_code, 0);
  const Json w = ParseOrDie(whole.out);
  const Json s = ParseOrDie(shard.out);
  EXPECT_EQ(s.Find("tp_size")->int_value(), 2);
  EXPECT_EQ(s.Find("tp_rank")->int_value(), 1);
  EXPECT_EQ(s.Find("bytes_read")->int_value(), w.Find("bytes_read")->int_value());
  EXPECT_LT(s.Find("bytes_held")->int_value(), w.Find("bytes_held")->int_value());
  // vocab 128 × hidden 128 in bf16: 64 rows per rank.
  EXPECT_EQ(w.Find("sites")->items()[0].Find("bytes_held")->int_value(), 128 * 128 * 2);
  EXPECT_EQ(s.Find("sites")->items()[0].Find("bytes_held")->int_value(), 64 * 128 * 2);
  // Block fp8: q's 64 rows per rank are half a 128-row block.
  auto block = RunCli("load " + DataDir("producers/ct_llama_fp8_block") + " --tp 2 --rank 0", true);
  EXPECT_EQ(block.exit_code, 2);
  EXPECT_NE(block.out.find("legal --tp: 1"), std::string::npos) << block.out;
}

// ---------------------------------------------------------------------------------------------
// run --input / --output

// The seeded input as pipeline.h documents it, written independently: X[i] = bf16(2u − 1),
// u = (mt19937_64(seed)() >> 11) · 2^-53, rounded to nearest even.
std::string SeededInputBf16(uint64_t seed, int64_t count) {
  std::mt19937_64 rng(seed);
  std::string bytes;
  for (int64_t i = 0; i < count; ++i) {
    const double u = static_cast<double>(rng() >> 11) * 0x1p-53;
    const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(2.0 * u - 1.0));
    const uint16_t bf16 = static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
    bytes += static_cast<char>(bf16 & 0xFF);
    bytes += static_cast<char>(bf16 >> 8);
  }
  return bytes;
}

std::string Bf16ToF32Bytes(const std::string& bf16) {
  std::string out;
  for (size_t i = 0; i < bf16.size(); i += 2) {
    out += std::string(2, '\0');
    out += bf16.substr(i, 2);
  }
  return out;
}

struct RunCase {
  const char* fixture;
  const char* layer;
  int64_t k;
  int64_t n;
};

TEST(RunCli, GivenInputReproducesTheSeededRunAndWritesY) {
  for (const RunCase& c :
       {RunCase{"producers/ct_llama_w4a16_g64_sym", "model.layers.0.self_attn.qkv_proj", 128, 256},
        RunCase{"producers/mo_llama_fp8", "model.layers.1.mlp.down_proj", 256, 128}}) {
    SCOPED_TRACE(c.layer);
    st_test::TempFolder tmp("run_input");
    const std::string dir = DataDir(c.fixture);
    const int64_t m = 3;
    const uint64_t seed = 11;
    const std::string x = SeededInputBf16(seed, m * c.k);
    const fs::path x_path = tmp.path() / "x.safetensors";
    st_test::WriteFile(x_path, st_test::FileFor({{"x", "BF16", {m, c.k}, x}}));
    const fs::path y_seeded = tmp.path() / "y_seeded.safetensors";
    const fs::path y_given = tmp.path() / "y_given.safetensors";
    auto seeded = RunCli(fmt::format("run {} --layer {} --m {} --seed {} --output {} --json", dir,
                                     c.layer, m, seed, y_seeded.string()));
    ASSERT_EQ(seeded.exit_code, 0) << seeded.out;
    auto given = RunCli(fmt::format("run {} --layer {} --input {} --output {} --json", dir, c.layer,
                                    x_path.string(), y_given.string()));
    ASSERT_EQ(given.exit_code, 0) << given.out;
    const auto ys = ReadTensors(y_seeded);
    const auto yg = ReadTensors(y_given);
    ASSERT_EQ(ys.size(), 1u);
    ASSERT_EQ(yg.size(), 1u);
    EXPECT_EQ(yg[0].name, "y");
    EXPECT_EQ(yg[0].dtype, "F32");
    EXPECT_EQ(yg[0].shape, (std::vector<int64_t>{m, c.n}));
    EXPECT_EQ(yg[0].data, ys[0].data);  // bit for bit
    // The same figures against the fp64 reference; the input file is named, the seed is not.
    const Json js = ParseOrDie(seeded.out);
    const Json jg = ParseOrDie(given.out);
    EXPECT_EQ(jg.Find("max_abs")->number_value(), js.Find("max_abs")->number_value());
    EXPECT_EQ(jg.Find("rel")->number_value(), js.Find("rel")->number_value());
    EXPECT_TRUE(jg.Find("seed")->is_null());
    EXPECT_EQ(jg.Find("input")->string_value(), x_path.string());
    EXPECT_EQ(jg.Find("output")->string_value(), y_given.string());
    EXPECT_TRUE(js.Find("input")->is_null());
    // fp32 holding the same values runs within tolerance too (exit 0), on the fp32 kernel path.
    const fs::path x32 = tmp.path() / "x32.safetensors";
    st_test::WriteFile(x32, st_test::FileFor({{"x", "F32", {m, c.k}, Bf16ToF32Bytes(x)}}));
    auto wide =
        RunCli(fmt::format("run {} --layer {} --input {} --json", dir, c.layer, x32.string()));
    EXPECT_EQ(wide.exit_code, 0) << wide.out;
    EXPECT_EQ(ParseOrDie(wide.out).Find("m")->int_value(), m);
  }
}

TEST(RunCli, RejectsAnInputOfTheWrongShapeOrDtypeAndNeverOverwritesIt) {
  st_test::TempFolder tmp("run_bad_input");
  const std::string run = "run " + DataDir("producers/ct_llama_w4a16_g64_sym") +
                          " --layer model.layers.0.self_attn.o_proj --input ";
  const auto write = [&](const std::string& file, st_test::RawTensor t) {
    const fs::path path = tmp.path() / file;
    st_test::WriteFile(path, st_test::FileFor({t}));
    return path.string();
  };
  const std::string wrong_k =
      write("k.safetensors", {"x", "BF16", {2, 64}, std::string(256, '\0')});
  auto r = RunCli(run + wrong_k, true);
  EXPECT_EQ(r.exit_code, 2);
  for (const char* s : {"k.safetensors", "tensor x", "[2, 64]", "expected [M, 128]"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
  const std::string i8 = write("i8.safetensors", {"x", "I8", {2, 128}, std::string(256, '\0')});
  r = RunCli(run + i8, true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("dtype I8"), std::string::npos) << r.out;
  const std::string named =
      write("named.safetensors", {"h", "BF16", {2, 128}, std::string(512, '\0')});
  r = RunCli(run + named, true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("no tensor x"), std::string::npos) << r.out;
  const std::string good = write("x.safetensors", {"x", "BF16", {2, 128}, std::string(512, '\0')});
  const std::string before = ReadAll(good);
  r = RunCli(run + good + " --output " + good, true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("is the input file"), std::string::npos) << r.out;
  EXPECT_EQ(ReadAll(good), before);
}

TEST(RunCli, TakesEngineAndQuantization) {
  const std::string dir = DataDir("producers/ct_llama_w4a16_g64_sym");
  auto ok = RunCli("run " + dir +
                   " --layer model.layers.0.mlp.down_proj --engine vllm --quantization "
                   "compressed-tensors --json");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  auto bad =
      RunCli("run " + dir + " --layer model.layers.0.mlp.down_proj --quantization gptq", true);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("gptq"), std::string::npos) << bad.out;
}

// `--quantization fp8` on the bf16 Llama: vLLM quantizes every linear layer at load per tensor;
// load says so with the weights' error, run measures against the unquantized layer.
TEST(LoadCli, QuantizationFp8QuantizesABf16CheckpointAtLoad) {
  const std::string dir = DataDir("producers/bf16_llama") + " --engine vllm --quantization fp8";
  auto text = RunCli("load " + dir);
  ASSERT_EQ(text.exit_code, 0) << RunCli("load " + dir, true).out;
  EXPECT_NE(text.out.find("quantized at load: 8 layers to w8a8-fp8-tensor-dyn-online, weights "
                          "max |W' - W| / max |W| up to"),
            std::string::npos)
      << text.out;
  const Json load = ParseOrDie(RunCli("load " + dir + " --json").out);
  EXPECT_EQ(load.Find("quantized_at_load")->int_value(), 8);
  for (const Json& site : load.Find("sites")->items()) {
    const bool linear = site.Find("kind")->string_value() == "linear";
    EXPECT_EQ(site.Find("quantization_error")->is_number(), linear)
        << site.Find("path")->string_value();
  }
  auto run = RunCli("run " + dir + " --layer model.layers.0.self_attn.qkv_proj --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const Json json = ParseOrDie(run.out);
  EXPECT_EQ(json.Find("spec_id")->string_value(), "fp8_per_tensor");
  EXPECT_TRUE(json.Find("quantized_at_load")->bool_value());
  EXPECT_TRUE(json.Find("tol")->is_null());
  EXPECT_TRUE(json.Find("pass")->bool_value());
  EXPECT_GT(json.Find("rel")->number_value(), 0.0);
  EXPECT_GT(json.Find("weight_error")->number_value(), 0.0);
}

// A scheme no quantizer writes, and one whose spec does not load on the device: exit 2 naming
// the scheme and the device.
TEST(LoadCli, AnOnlineTargetThatCannotBeQuantizedNamesTheSchemeAndTheDevice) {
  const std::string dir = DataDir("producers/bf16_llama");
  auto int4 = RunCli("run " + dir +
                         " --layer model.layers.0.mlp.down_proj --online "
                         "w4a16-int4-channel",
                     true);
  EXPECT_EQ(int4.exit_code, 2);
  EXPECT_NE(int4.out.find("--online w4a16-int4-channel on cpu: no quantizer in this build"),
            std::string::npos)
      << int4.out;
  auto sm100 = RunCli("plan " + dir + " --online w8a8-fp8-tensor-static --device sm100", true);
  EXPECT_EQ(sm100.exit_code, 2);
  EXPECT_NE(sm100.out.find("--online w8a8-fp8-tensor-static on sm100"), std::string::npos)
      << sm100.out;
  EXPECT_NE(sm100.out.find("calibration"), std::string::npos) << sm100.out;
  auto help = RunCli("plan --help");
  EXPECT_NE(help.out.find("w8a16-int8-channel"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace quantpath
