// `quantpath diff`: the divergences ENGINES.md predicts between native, vLLM and SGLang, and none
// where the dialects only name a module differently or attach a KV-cache method without a scheme.
#include <gtest/gtest.h>

#include <cstdlib>

#include "quantpath/base.h"
#include "tests/cli/cli_test_util.h"

namespace quantpath {
namespace {

using testing::ParseOrDie;
using testing::RunCli;

// A member of a JSON object; null when absent.
const Json& Get(const Json& object, std::string_view key) {
  static const Json kNull;
  const Json* value = object.Find(key);
  return value != nullptr ? *value : kNull;
}

// The block of `diff` output for one aligned key.
std::string Block(const std::string& out, const std::string& key) {
  size_t start = out.find(key + "\n");
  if (start == std::string::npos) return "";
  size_t end = out.find("\nmodel.", start + key.size());
  size_t summary = out.find(" layers decided differently", start);
  return out.substr(start, std::min(end, summary) - start);
}

// The decision column of `dialect`'s line in a block ("error", "quantized w8a8-…"), "" if none.
std::string DecisionOf(const std::string& block, const std::string& dialect) {
  const std::string head = "\n  " + dialect + " ";
  size_t start = block.find(head);
  if (start == std::string::npos) return "";
  start = block.find_first_not_of(' ', start + head.size());
  size_t end = block.find("  ", start);  // the column ends with the padding before the path
  return block.substr(start, end - start);
}

std::vector<std::string> NoteLines(const std::string& out) {
  std::vector<std::string> notes;
  for (const std::string& line : Split(out, '\n')) {
    if (line.starts_with("note: ")) notes.push_back(line);
  }
  return notes;
}

// DeepSeek-R1 NVFP4 excludes kv_a_proj_with_mqa in every layer but names `self_attn.q_proj` (a
// module DeepSeek-R1 does not have) instead of q_a_proj. Native and vLLM see a fused layer with one
// leg excluded (an error); SGLang's config carries no packed mapping and its MLA-tail rule excludes
// every fused_qkv_a_proj_with_mqa through any layer's entry, so it loads. The fused site is found
// under both execution names by its legs' checkpoint names.
TEST(DiffCli, DeepSeekR1Nvfp4MlaTailRule) {
  auto r = RunCli("diff tests/data/diff/deepseek-r1-nvfp4 --engines vllm@helpers,sglang@helpers");
  ASSERT_EQ(r.exit_code, 1) << r.out;
  std::string layer5 = Block(r.out, "model.layers.5.self_attn.{q_a_proj+kv_a_proj_with_mqa}");
  ASSERT_FALSE(layer5.empty()) << r.out.substr(0, 3000);
  EXPECT_EQ(DecisionOf(layer5, "native"), "error") << layer5;
  EXPECT_EQ(DecisionOf(layer5, "vllm@helpers"), "error") << layer5;
  EXPECT_EQ(DecisionOf(layer5, "sglang@helpers"), "unquantized") << layer5;
  EXPECT_NE(layer5.find("Detected some but not all shards of "
                        "model.layers.5.self_attn.fused_qkv_a_proj are quantized"),
            std::string::npos)
      << layer5;
  EXPECT_NE(layer5.find("model.layers.5.self_attn.fused_qkv_a_proj_with_mqa"), std::string::npos);
  // Native's reason: ModelOpt itself never splits legs that share an input (its DeepSeek recipe
  // sets wq_a and wkv_a alike, its exporter asserts they agree), and every engine fuses them.
  EXPECT_NE(layer5.find("one fused layer cannot hold both precisions (ModelOpt quantizes the legs "
                        "that share an input together, and vLLM, SGLang and TensorRT-LLM build "
                        "them as one layer)"),
            std::string::npos)
      << layer5;
  // The entry that decided layer 5 under SGLang belongs to layer 0: the index is ignored.
  EXPECT_NE(layer5.find("exclude_modules \"model.layers.0.self_attn.kv_a_proj_with_mqa\""),
            std::string::npos)
      << layer5;
  EXPECT_NE(
      r.out.find("vllm@helpers: errors at model.layers.0.self_attn.fused_qkv_a_proj: ValueError"),
      std::string::npos);
  EXPECT_NE(r.out.find("\nsglang@helpers: loads\n"), std::string::npos);
  // Routed experts are NVFP4 in every dialect: no divergence reported for them.
  EXPECT_EQ(r.out.find("model.layers.5.mlp.experts\n"), std::string::npos);
  // Every main layer's fused MLA projection, and nothing else (the MTP layer 61's is excluded
  // whole).
  EXPECT_NE(r.out.find("\n61 layers decided differently\n"), std::string::npos);
}

// On a terminal (COLUMNS stands for one) the fused MLA layers that differ alike are one block
// under "layers 1–60", each layer's own exclude entry one rule (its list index as *); layer 0,
// whose entry SGLang applies to every layer, keeps its own; --wide and a pipe list each layer.
TEST(DiffCli, ATerminalGroupsTheBlocksThatDifferAlike) {
  const std::string args =
      "diff tests/data/diff/deepseek-r1-nvfp4 --engines vllm@helpers,sglang@helpers";
  setenv("COLUMNS", "120", 1);
  auto grouped = RunCli(args);
  auto wide = RunCli(args + " --wide");
  unsetenv("COLUMNS");
  auto piped = RunCli(args);
  ASSERT_EQ(grouped.exit_code, 1) << grouped.out;
  EXPECT_TRUE(grouped.out.starts_with("model.layers.0.self_attn.{q_a_proj+kv_a_proj_with_mqa}\n"))
      << grouped.out.substr(0, 600);
  const std::string block =
      Block(grouped.out, "model.layers.N.self_attn.{q_a_proj+kv_a_proj_with_mqa}");
  EXPECT_NE(grouped.out.find("\nlayers 1\u201360 (60 layers):\nmodel.layers.N.self_attn."),
            std::string::npos)
      << grouped.out.substr(0, 3000);
  EXPECT_NE(block.find("glob \"model.layers.N.self_attn.kv_a_proj_with_mqa\" "
                       "(hf_quant_config.json#/quantization/exclude_modules/*)"),
            std::string::npos)
      << block;
  EXPECT_EQ(grouped.out.find("model.layers.5."), std::string::npos) << grouped.out;
  EXPECT_NE(grouped.out.find("\n61 layers decided differently\n"), std::string::npos);
  EXPECT_EQ(wide.out, piped.out);
  EXPECT_NE(piped.out.find("model.layers.5.self_attn.{q_a_proj+kv_a_proj_with_mqa}\n"),
            std::string::npos);
  EXPECT_GT(piped.out.size(), 10 * grouped.out.size());
}

// ENGINES.md section 4: a ModelOpt `mlp.gate` entry is a substring of `mlp.gate_up_proj` for vLLM,
// but neither a whole segment for SGLang nor an fnmatch of the full path for ModelOpt itself. The
// default compares native with the newest release of each engine.
TEST(DiffCli, SubstringVersusSegmentExclusion) {
  auto r = RunCli("diff tests/data/diff/llama-modelopt-fp8-gate");
  ASSERT_EQ(r.exit_code, 1) << r.out;
  std::string block = Block(r.out, "model.layers.0.mlp.{gate_proj+up_proj}");
  ASSERT_FALSE(block.empty()) << r.out;
  EXPECT_EQ(DecisionOf(block, "native"), "quantized w8a8-fp8-tensor-static") << block;
  EXPECT_EQ(DecisionOf(block, "vllm@0.34"), "unquantized") << block;
  EXPECT_EQ(DecisionOf(block, "sglang@0.5.23"), "quantized w8a8-fp8-tensor-static") << block;
  EXPECT_NE(
      r.out.find("vllm@0.34: loads with 2 layers unquantized that the file meant to quantize"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nnative: loads\n"), std::string::npos);
  EXPECT_NE(r.out.find("\nsglang@0.5.23: loads\n"), std::string::npos);
  // Both layers' gate_up_proj, nothing else: the attention KV-cache methods are notes.
  EXPECT_NE(r.out.find("\n2 layers decided differently\n"), std::string::npos) << r.out;
}

// The real DeepSeek-R1 config (fp8, 128×128 blocks): every dialect stores and computes the same
// thing. Before alignment by checkpoint names this listed 62 attention layers, where the engines
// attach Fp8KVCacheMethod without a KV-cache scheme; SGLang's other MLA names are notes too.
// vLLM 0.33.0 attaches none to MLAAttention (recorded: vllm-fp8-kv-per-attention-class), so
// vllm@0.33 and vllm@0.34 have no KV note.
TEST(DiffCli, DeepSeekR1HasOnlyNotes) {
  auto r = RunCli("diff tests/data/corpus/deepseek-ai__DeepSeek-R1 --engines all");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(r.out.starts_with("0 layers decided differently\n")) << r.out;
  const std::vector<std::string> notes = NoteLines(r.out);
  // 61 layers (the engines build the MTP layer only with --speculative): SGLang's
  // fused_qkv_a_proj_with_mqa and attn_mqa + attn_mha for each.
  const std::string naming =
      "names 122 sites differently (aligned by checkpoint name), e.g. "
      "model.layers.0.self_attn.fused_qkv_a_proj_with_mqa for native's "
      "model.layers.0.self_attn.fused_qkv_a_proj";
  const std::string kv = "attaches a KV-cache method without a KV-cache scheme to 61 attention";
  // Without a call: vLLM's 58 routers and the 12 sites of the MTP layer; SGLang's too, its
  // embedding, and the 58 × 2 shared-expert projections it fuses into the routed experts.
  const std::string vllm_missing = "makes no get_quant_method call for 70 modules";
  const std::string sglang_missing = "makes no get_quant_method call for 187 modules";
  std::vector<std::string> expected_starts = {"note: vllm@helpers " + kv,
                                              "note: vllm@helpers " + vllm_missing,
                                              "note: sglang@helpers " + sglang_missing,
                                              "note: sglang@helpers " + naming,
                                              "note: sglang@helpers " + kv,
                                              "note: vllm@0.33 " + vllm_missing,
                                              "note: sglang@0.5.23 " + sglang_missing,
                                              "note: sglang@0.5.23 " + naming,
                                              "note: sglang@0.5.23 " + kv,
                                              "note: vllm@0.34 " + vllm_missing};
  ASSERT_EQ(notes.size(), expected_starts.size()) << r.out;
  for (size_t i = 0; i < notes.size(); ++i) {
    EXPECT_TRUE(notes[i].starts_with(expected_starts[i])) << notes[i];
  }
  for (const char* line :
       {"\nnative: loads\n", "\nvllm@helpers: loads\n", "\nsglang@helpers: loads\n",
        "\nvllm@0.33: loads\n", "\nsglang@0.5.23: loads\n", "\nvllm@0.34: loads\n"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line;
  }
}

// gpt-oss-20b (mxfp4 experts, everything else bf16): vLLM builds the attention block as `attn`;
// neither engine gives the embedding, routers or head a quantization config, and SGLang gives
// only the experts one. Aligned by checkpoint names, no dialect decides a layer differently.
TEST(DiffCli, GptOssHasOnlyNotes) {
  auto r = RunCli("diff tests/data/corpus/openai__gpt-oss-20b");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(r.out.starts_with("0 layers decided differently\n")) << r.out;
  const std::string naming =
      "names 72 sites differently (aligned by checkpoint name), e.g. model.layers.0.attn.qkv_proj "
      "for native's model.layers.0.self_attn.qkv_proj (and 71 more)";
  const std::string tail =
      " modules that another dialect lists (built without a quantization config, or not built), "
      "e.g. model.embed_tokens (model.embed_tokens)";
  const std::string vllm = "makes no get_quant_method call for 26" + tail + " (and 25 more)";
  const std::string sglang = "makes no get_quant_method call for 98" + tail + " (and 97 more)";
  EXPECT_EQ(NoteLines(r.out),
            (std::vector<std::string>{"note: vllm@0.34 " + vllm, "note: vllm@0.34 " + naming,
                                      "note: sglang@0.5.23 " + sglang}));
}

// A quantization config that only some dialects import is a real difference, with no layer to
// show: vLLM's GPTQ rejects 3 bits (every release), SGLang 0.5.23 knows no `gptq` method; the
// helper recording of SGLang's GPTQ reads it.
TEST(DiffCli, ConfigThatOnlySomeDialectsImport) {
  auto r = RunCli("diff tests/data/corpus/TheBloke__Genz-70b-GPTQ --engines vllm,sglang@helpers");
  ASSERT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("0 layers decided differently\n"
                       "the quantization config does not import under vllm@0.34\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("vllm@0.34: errors at config: config.json#/quantization_config/bits: "
                       "ValueError: Unsupported quantization config: bits=3"),
            std::string::npos)
      << r.out;
}

TEST(DiffCli, Json) {
  auto r =
      RunCli("diff tests/data/diff/deepseek-r1-nvfp4 --json --engines sglang@helpers,vllm@helpers");
  ASSERT_EQ(r.exit_code, 1) << r.out;
  auto parsed = ParseJson(r.out, "diff --json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const Json& j = *parsed;
  std::vector<std::string> keys;
  for (const auto& member : j.members()) keys.push_back(member.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"model", "architecture", "dialects", "difference_count",
                                            "differences", "notes", "summaries"}));
  EXPECT_EQ(Get(j, "architecture").string_value(), "DeepseekV3ForCausalLM");
  // Native first, then the engines in the order given.
  ASSERT_EQ(Get(j, "dialects").items().size(), 3u);
  EXPECT_EQ(Get(j, "dialects").items()[0].string_value(), "native");
  EXPECT_EQ(Get(j, "dialects").items()[1].string_value(), "sglang@helpers");
  EXPECT_EQ(Get(j, "dialects").items()[2].string_value(), "vllm@helpers");
  EXPECT_EQ(Get(j, "difference_count").int_value(), 61);
  ASSERT_EQ(Get(j, "differences").items().size(), 61u);

  const Json& layer0 = Get(j, "differences").items()[0];
  EXPECT_EQ(Get(layer0, "key").string_value(),
            "model.layers.0.self_attn.{q_a_proj+kv_a_proj_with_mqa}");
  EXPECT_EQ(Get(layer0, "kind").string_value(), "linear");
  EXPECT_EQ(Get(layer0, "reference").string_value(), "native");
  const auto& decisions = Get(layer0, "decisions").items();
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_EQ(Get(decisions[0], "dialect").string_value(), "native");
  EXPECT_EQ(Get(decisions[0], "decision").string_value(), "error");
  EXPECT_FALSE(Get(decisions[0], "differs").bool_value());
  EXPECT_EQ(Get(decisions[1], "paths").items()[0].string_value(),
            "model.layers.0.self_attn.fused_qkv_a_proj_with_mqa");
  EXPECT_EQ(Get(decisions[1], "decision").string_value(), "unquantized");
  EXPECT_TRUE(Get(decisions[1], "scheme").is_null());
  EXPECT_TRUE(Get(decisions[1], "differs").bool_value());
  ASSERT_FALSE(Get(decisions[1], "hits").items().empty());
  EXPECT_EQ(Get(Get(decisions[1], "hits").items()[0], "file").string_value(),
            "hf_quant_config.json");
  EXPECT_EQ(Get(Get(decisions[1], "hits").items()[0], "pointer").string_value(),
            "/quantization/exclude_modules/4");
  EXPECT_EQ(Get(decisions[2], "decision").string_value(), "error");
  EXPECT_FALSE(Get(decisions[2], "differs").bool_value());  // an error as native's, in other words
  EXPECT_TRUE(Get(decisions[2], "detail").string_value().starts_with("ValueError: Detected some"));

  // SGLang's names are a note; so is vLLM's error text, which is not native's.
  auto note_count = [&](std::string_view dialect, std::string_view kind) -> int64_t {
    for (const Json& note : Get(j, "notes").items()) {
      if (Get(note, "dialect").string_value() == dialect &&
          Get(note, "kind").string_value() == kind) {
        return Get(note, "count").int_value();
      }
    }
    return -1;
  };
  EXPECT_EQ(note_count("sglang@helpers", "naming"), 122);
  EXPECT_EQ(note_count("vllm@helpers", "error_text"), 61);
  EXPECT_EQ(note_count("native", "naming"), -1);

  const auto& summaries = Get(j, "summaries").items();
  ASSERT_EQ(summaries.size(), 3u);
  EXPECT_TRUE(Get(summaries[1], "loads").bool_value());
  EXPECT_TRUE(Get(summaries[1], "first_error").is_null());
  EXPECT_FALSE(Get(summaries[2], "loads").bool_value());
  EXPECT_EQ(Get(Get(summaries[2], "first_error"), "layer").string_value(),
            "model.layers.0.self_attn.fused_qkv_a_proj");
  EXPECT_TRUE(Get(summaries[2], "config_error").is_null());
  // Main layers' fused MLA projections all error under vLLM; SGLang leaves them unquantized.
  EXPECT_EQ(Get(summaries[2], "errors").int_value(), 61);
  EXPECT_EQ(Get(summaries[1], "errors").int_value(), 0);
}

TEST(DiffCli, JsonWithoutDifferences) {
  auto r = RunCli("diff tests/data/corpus/openai__gpt-oss-20b --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto parsed = ParseJson(r.out, "diff --json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(Get(*parsed, "difference_count").int_value(), 0);
  EXPECT_TRUE(Get(*parsed, "differences").items().empty());
  ASSERT_EQ(Get(*parsed, "summaries").items().size(), 3u);
  // 24 layers of mxfp4 experts. Native lists the embedding, 48 attention projections, 24
  // attention layers, 24 routers and the head as bf16; vLLM only the attention block (the rest
  // gets no quantization config), SGLang nothing but the experts.
  const std::vector<int64_t> unquantized = {98, 72, 0};
  for (size_t i = 0; i < unquantized.size(); ++i) {
    const Json& s = Get(*parsed, "summaries").items()[i];
    EXPECT_EQ(Get(s, "line").string_value(), "loads");
    EXPECT_EQ(Get(s, "quantized").int_value(), 24);
    EXPECT_EQ(Get(s, "unquantized").int_value(), unquantized[i]) << i;
  }
}

TEST(DiffCli, EnginesOption) {
  auto r = RunCli("diff tests/data/diff/llama-modelopt-fp8-gate --engines sglang,native");
  ASSERT_EQ(r.exit_code, 0) << r.out;  // native and SGLang agree
  EXPECT_EQ(r.out, "0 layers decided differently\nnative: loads\nsglang@0.5.23: loads\n");
  EXPECT_EQ(RunCli("diff tests/data/diff/llama-modelopt-fp8-gate --engines vllm@0.33").exit_code,
            1);
  auto unknown = RunCli("diff tests/data/diff/llama-modelopt-fp8-gate --engines vllm,tgi", true);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.out.find("\"tgi\""), std::string::npos) << unknown.out;
  auto twice = RunCli("diff tests/data/diff/llama-modelopt-fp8-gate --engines vllm,vllm", true);
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.out.find("\"vllm\" is named twice"), std::string::npos) << twice.out;
  auto all = RunCli("diff tests/data/diff/llama-modelopt-fp8-gate --engines all --json");
  EXPECT_EQ(ToJson(Get(ParseOrDie(all.out), "dialects")),
            R"(["native", "vllm@helpers", "sglang@helpers", "vllm@0.33", "sglang@0.5.23", )"
            R"("vllm@0.34"])");
}

TEST(DiffCli, UnusableInput) {
  EXPECT_EQ(RunCli("diff /nonexistent").exit_code, 2);
  EXPECT_EQ(RunCli("diff").exit_code, 2);
  EXPECT_EQ(RunCli("diff tests/data/diff/llama-modelopt-fp8-gate --quantization awq").exit_code, 2);
}

}  // namespace
}  // namespace quantpath
