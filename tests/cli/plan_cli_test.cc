// `quantpath plan` and `explain` end to end: exit codes, the JSON contract of DESIGN.md, and the
// published sizes of real configs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "fmt/format.h"
#include "tests/cli/cli_test_util.h"

namespace quantpath {
namespace {

using testing::ParseOrDie;
using testing::RunCli;

const Json* FindLayer(const Json& plan, std::string_view path) {
  for (const Json& layer : plan.Find("layers")->items()) {
    if (layer.Find("path")->string_value() == path) return &layer;
  }
  return nullptr;
}

TEST(PlanCli, BundledExampleWithoutArguments) {
  auto r = RunCli("plan");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("qkv_proj"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("summary:"), std::string::npos);
}

TEST(PlanCli, JsonFollowsTheDesignExample) {
  auto r = RunCli("plan examples/deepseek-tiny --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  Json plan = ParseOrDie(r.out);
  std::vector<std::string> keys;
  for (const auto& m : plan.members()) keys.push_back(m.first);
  std::vector<std::string> expected_prefix = {"model",    "architecture", "engine",
                                              "platform", "quant_method", "quant_sources",
                                              "device",   "layers",       "summary"};
  ASSERT_GE(keys.size(), expected_prefix.size());
  EXPECT_TRUE(std::equal(expected_prefix.begin(), expected_prefix.end(), keys.begin()));
  EXPECT_EQ(plan.Find("architecture")->string_value(), "DeepseekV3ForCausalLM");
  EXPECT_EQ(plan.Find("quant_method")->string_value(), "fp8");
  EXPECT_EQ(plan.Find("quant_sources")->items()[0].string_value(),
            "config.json#/quantization_config");

  const Json* embed = FindLayer(plan, "model.embed_tokens");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->Find("decision")->string_value(), "unquantized");
  EXPECT_EQ(embed->Find("params")->int_value(), 131072);
  EXPECT_EQ(embed->Find("bytes")->int_value(), 262144);
  EXPECT_EQ(embed->Find("spec_id")->string_value(), "bf16");

  const Json* qkv_a = FindLayer(plan, "model.layers.0.self_attn.fused_qkv_a_proj");
  ASSERT_NE(qkv_a, nullptr);
  EXPECT_EQ(ToJson(*qkv_a->Find("shape")), "[168, 256]");
  EXPECT_EQ(ToJson(*qkv_a->Find("legs")), R"(["q_a_proj", "kv_a_proj_with_mqa"])");
  EXPECT_EQ(qkv_a->Find("decision")->string_value(), "quantized");
  EXPECT_EQ(ToJson(*qkv_a->Find("scheme")),
            R"({"name": "w8a8-fp8-block128x128-dyn", "weight": {"dtype": "fp8_e4m3", )"
            R"("granularity": "block", "group_size": null, "block_shape": [128, 128], )"
            R"("symmetric": true, "dynamic": false}, "input": {"dtype": "fp8_e4m3", )"
            R"("granularity": "group", "group_size": 128, "block_shape": null, )"
            R"("symmetric": true, "dynamic": true}, "input_hadamard": null})");
  EXPECT_EQ(qkv_a->Find("spec_id")->string_value(), "fp8_block_128_128");
  EXPECT_EQ(qkv_a->Find("params")->int_value(), 43008);
  EXPECT_EQ(qkv_a->Find("bytes")->int_value(), 43024);

  const Json* gate = FindLayer(plan, "model.layers.1.mlp.gate");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->Find("kind")->string_value(), "router");
  EXPECT_EQ(gate->Find("decision")->string_value(), "unquantized");

  const Json* experts = FindLayer(plan, "model.layers.1.mlp.experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->Find("kind")->string_value(), "moe");
  EXPECT_EQ(ToJson(*experts->Find("shape")), "[8, 64, 256]");  // [E, N, K]
  EXPECT_EQ(experts->Find("experts")->int_value(), 8);
  EXPECT_EQ(experts->Find("params")->int_value(), 8 * 3 * 256 * 64);
  EXPECT_EQ(experts->Find("decision")->string_value(), "quantized");

  const Json* attn = FindLayer(plan, "model.layers.0.self_attn.attn");
  ASSERT_NE(attn, nullptr);
  EXPECT_TRUE(attn->Find("shape")->is_null());
  EXPECT_EQ(attn->Find("params")->int_value(), 0);
  EXPECT_EQ(attn->Find("decision")->string_value(), "unquantized");
  EXPECT_EQ(ToJson(*attn->Find("kv_cache")),
            R"({"dtype": "bf16", "scheme": null, "engine_method": null})");

  const Json* head = FindLayer(plan, "lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->Find("decision")->string_value(), "unquantized");

  const Json& summary = *plan.Find("summary");
  int64_t layers = 0, quantized = 0, params = 0, bytes = 0;
  for (const Json& layer : plan.Find("layers")->items()) {
    ++layers;
    quantized += layer.Find("decision")->string_value() == "quantized";
    params += layer.Find("params")->int_value();
    bytes += layer.Find("bytes")->int_value();
  }
  EXPECT_EQ(summary.Find("layers")->int_value(), layers);
  EXPECT_EQ(summary.Find("quantized")->int_value(), quantized);
  EXPECT_EQ(summary.Find("params")->int_value(), params);
  EXPECT_EQ(summary.Find("bytes")->int_value(), bytes);  // the same sites as params
  // The other tensors (norms) are stored in the checkpoint's bfloat16.
  EXPECT_EQ(summary.Find("other_bytes")->int_value(),
            summary.Find("other_params")->int_value() * 2);
  EXPECT_EQ(summary.Find("errors")->int_value(), 0);
}

// Every row carries every field, in one order, null where it does not apply (docs/json/plan.md).
TEST(PlanCli, EveryRowHasEveryField) {
  for (const char* args :
       {"plan examples/deepseek-tiny --json", "plan examples/deepseek-tiny --json --engine sglang",
        "plan tests/data/corpus/TheBloke__Llama-2-13B-chat-GPTQ --json",
        "plan tests/data/corpus/openai__gpt-oss-20b --json"}) {
    auto r = RunCli(args);
    ASSERT_LE(r.exit_code, 1) << args;
    Json plan = ParseOrDie(r.out);
    for (const Json& layer : plan.Find("layers")->items()) {
      std::vector<std::string> keys;
      for (const auto& m : layer.members()) keys.push_back(m.first);
      EXPECT_EQ(Join(keys, ","),
                "path,checkpoint_path,kind,shape,legs,experts,decision,scheme,kv_cache,spec_id,"
                "dtype,kernel_available,spec_note,params,bytes,rule,error")
          << args;
      // The stored element type: the scheme's weight dtype, the model's for an unquantized row.
      const std::string decision = layer.Find("decision")->string_value();
      const Json* dtype = layer.Find("dtype");
      if (decision == "quantized" && layer.Find("kind")->string_value() != "attention") {
        EXPECT_EQ(dtype->string_value(),
                  layer.Find("scheme")->Find("weight")->Find("dtype")->string_value());
      }
      if (decision == "error" || layer.Find("kind")->string_value() == "attention") {
        EXPECT_TRUE(dtype->is_null()) << args;
      } else if (decision == "unquantized" &&
                 std::string(args).find("Llama-2") != std::string::npos) {
        EXPECT_EQ(dtype->string_value(), "fp16");  // a float16 checkpoint, spec_id "bf16" family
      }
      const std::string kind = layer.Find("kind")->string_value();
      const Json* shape = layer.Find("shape");
      if (kind == "attention") {
        EXPECT_TRUE(shape->is_null());
        EXPECT_TRUE(layer.Find("kv_cache")->is_object());
      } else {
        EXPECT_EQ(shape->items().size(), kind == "moe" ? 3u : 2u) << args;
        EXPECT_TRUE(layer.Find("kv_cache")->is_null());
      }
      EXPECT_EQ(layer.Find("experts")->is_null(), kind != "moe");
      // A quantized row always names its scheme; an error row its message.
      if (decision == "quantized") {
        EXPECT_TRUE(layer.Find("scheme")->is_object());
      }
      EXPECT_EQ(layer.Find("error")->is_string(), decision == "error");
      EXPECT_EQ(layer.Find("kernel_available")->is_null(), layer.Find("spec_id")->is_null());
    }
    std::vector<std::string> summary;
    for (const auto& m : plan.Find("summary")->members()) summary.push_back(m.first);
    EXPECT_EQ(Join(summary, ","),
              "layers,quantized,unquantized,errors,params,bytes,other_params,other_bytes,"
              "index_total_size");
  }
}

// vLLM attaches Fp8KVCacheMethod to attention under fp8; the cache still stores bf16 (auto).
TEST(PlanCli, AnAttachedKvMethodWithoutASchemeIsABf16Cache) {
  auto r = RunCli("plan examples/deepseek-tiny --json --engine vllm@helpers");
  ASSERT_EQ(r.exit_code, 0);
  Json plan = ParseOrDie(r.out);
  const Json* attn = FindLayer(plan, "model.layers.0.self_attn.attn");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->Find("decision")->string_value(), "unquantized");
  EXPECT_TRUE(attn->Find("scheme")->is_null());
  EXPECT_EQ(ToJson(*attn->Find("kv_cache")),
            R"({"dtype": "bf16", "scheme": null, "engine_method": "Fp8KVCacheMethod"})");
}

// The spec_id names the storage; kernel_available says whether this build can run it there.
TEST(PlanCli, KernelAvailabilityBesideTheSpec) {
  auto cpu = RunCli("plan examples/deepseek-tiny --json");
  auto gpu = RunCli("plan examples/deepseek-tiny --json --device sm90");
  ASSERT_EQ(gpu.exit_code, 0);
  Json cpu_plan = ParseOrDie(cpu.out);
  Json gpu_plan = ParseOrDie(gpu.out);
  const Json* on_cpu = FindLayer(cpu_plan, "model.layers.0.self_attn.o_proj");
  const Json* on_gpu = FindLayer(gpu_plan, "model.layers.0.self_attn.o_proj");
  ASSERT_NE(on_cpu, nullptr);
  ASSERT_NE(on_gpu, nullptr);
  EXPECT_EQ(gpu_plan.Find("device")->string_value(), "sm90");
  EXPECT_EQ(on_cpu->Find("spec_id")->string_value(), "fp8_block_128_128");
  EXPECT_EQ(on_gpu->Find("spec_id")->string_value(), "fp8_block_128_128");
  EXPECT_TRUE(on_cpu->Find("kernel_available")->bool_value());
  EXPECT_TRUE(on_gpu->Find("kernel_available")->is_bool());
  EXPECT_TRUE(on_gpu->Find("spec_note")->is_null());
}

TEST(PlanCli, ConfigOnlyFoldersReportPublishedSizes) {
  struct Case {
    const char* dir;
    double published;
  };
  for (Case c : {Case{"tests/data/corpus/deepseek-ai__DeepSeek-R1", 685e9},
                 Case{"tests/data/corpus/moonshotai__Kimi-K2-Instruct", 1.03e12}}) {
    auto r = RunCli(std::string("plan ") + c.dir + " --json");
    ASSERT_EQ(r.exit_code, 0) << c.dir;
    Json plan = ParseOrDie(r.out);
    const Json& summary = *plan.Find("summary");
    double total =
        summary.Find("params")->number_value() + summary.Find("other_params")->number_value();
    EXPECT_LT(std::fabs(total / c.published - 1), 0.005) << c.dir << " total " << total;
    EXPECT_GT(summary.Find("quantized")->int_value(), 0);
  }
}

// An integer layout's bytes come from its family's row: 4-bit weights plus one fp16 scale per
// group of 128 (Llama-2-13B GPTQ, symmetric, so no zero points), with a kernel in this build.
TEST(PlanCli, BytesOfAnIntegerLayoutCountScales) {
  auto r = RunCli("plan tests/data/corpus/TheBloke__Llama-2-13B-chat-GPTQ --json");
  ASSERT_EQ(r.exit_code, 0);
  Json plan = ParseOrDie(r.out);
  const Json* down = FindLayer(plan, "model.layers.0.mlp.down_proj");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->Find("spec_id")->string_value(), "int4_group_128");
  EXPECT_TRUE(down->Find("kernel_available")->bool_value());
  EXPECT_TRUE(down->Find("spec_note")->is_null()) << down->Find("spec_note")->string_value();
  const int64_t n = 5120, k = 13824;
  EXPECT_EQ(down->Find("bytes")->int_value(), n * k / 2 + n * k / 128 * 2);
}

// SGLang 0.5.23 on a CPU (recorded: tests/data/oracle/releases/sglang-0.5.23/platforms/): the
// plain GPTQ config with the platform's kernel path, the AMX gate, and the platforms and formats
// quantpath does not reproduce named in the error.
TEST(PlanCli, ThePlatformTheEngineRunsOn) {
  const std::string gptq = "tests/data/corpus/TheBloke__Llama-2-13B-chat-GPTQ";
  auto detail = [&](const std::string& options) {
    auto r = RunCli("explain " + gptq + " model.layers.0.mlp.down_proj --json " + options);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    Json j = ParseOrDie(r.out);
    return j.Find("decision")->Find("detail")->string_value();
  };
  EXPECT_EQ(detail("--engine sglang"),
            "GPTQMarlinLinearMethod[bits=4 group_size=128 desc_act=False sym=True]");
  EXPECT_EQ(detail("--engine sglang --platform cpu-amx"),
            "GPTQLinearMethod[bits=4 group_size=128 desc_act=False "
            "scheme=GPTQIntelAMXLinearScheme]");
  EXPECT_EQ(detail("--engine sglang --platform npu"),
            "GPTQLinearMethod[bits=4 group_size=128 desc_act=False "
            "scheme=GPTQAscendLinearScheme]");
  auto mps = RunCli("plan " + gptq + " --engine sglang --platform mps", true);
  EXPECT_EQ(mps.exit_code, 2);
  EXPECT_NE(mps.out.find("Unknown quantization method: gptq. Must be one of ['fp8'"),
            std::string::npos)
      << mps.out;
  EXPECT_NE(mps.out.find("'mlx_q4', 'mlx_q8']"), std::string::npos) << mps.out;
  EXPECT_EQ(detail("--engine sglang --platform mps --quantization gptq_marlin"),
            "GPTQMarlinLinearMethod[bits=4 group_size=128 desc_act=False sym=True]");
  auto amx = RunCli("plan " + gptq + " --engine sglang --platform cpu-amx --json");
  ASSERT_EQ(amx.exit_code, 0) << amx.out;
  EXPECT_EQ(ParseOrDie(amx.out).Find("platform")->string_value(), "cpu-amx");

  // fp8 is among the methods SGLang accepts on a CPU with AMX: the example's per-rank block
  // errors stay what they are on cuda.
  auto fp8 = RunCli("plan examples/deepseek-tiny --engine sglang --platform cpu-amx --json");
  EXPECT_EQ(fp8.exit_code, RunCli("plan examples/deepseek-tiny --engine sglang --json").exit_code);
  EXPECT_EQ(fp8.out.find("Invalid quantization method on CPU"), std::string::npos) << fp8.out;
  auto bnb = RunCli(
      "plan tests/data/corpus/DocWobble__Orpheus_3B_Quantized-bnb-nf4 --engine sglang "
      "--platform cpu-amx --json");
  EXPECT_EQ(bnb.exit_code, 1);
  EXPECT_NE(bnb.out.find("Invalid quantization method on CPU: bitsandbytes"), std::string::npos)
      << bnb.out;

  auto old = RunCli("plan " + gptq + " --engine vllm@0.33 --platform cpu", true);
  EXPECT_EQ(old.exit_code, 2);
  EXPECT_NE(old.out.find("--platform cpu: quantpath reproduces vllm@0.33 on cuda only"),
            std::string::npos)
      << old.out;
  auto npu = RunCli(
      "plan tests/data/producers/ct_llama_w4a16_g64_asym --engine sglang --platform npu", true);
  EXPECT_EQ(npu.exit_code, 2);
  EXPECT_NE(npu.out.find("(the formats recorded there); not compressed-tensors"), std::string::npos)
      << npu.out;
  EXPECT_EQ(RunCli("plan examples/deepseek-tiny --platform tpu").exit_code, 2);
}

// vLLM 0.34 on a CPU (recorded: tests/data/oracle/releases/vllm-0.34.0/platforms/): int4 experts
// have a kernel only with AMX, NVFP4 experts none at all; linear layers keep their methods.
TEST(PlanCli, VllmOnACpuRefusesExpertsItHasNoKernelFor) {
  auto experts = [](const std::string& folder, const std::string& platform) {
    auto r = RunCli("explain tests/data/producers/" + folder +
                    " model.layers.0.mlp.experts --engine vllm --json --platform " + platform);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out;  // 1: the layer is an error
    Json d = *ParseOrDie(r.out).Find("decision");
    return d.Find("kind")->string_value() + " " + d.Find("detail")->string_value();
  };
  const std::string wna16 = "ct_qwen3moe_w4a16_g64_sym";
  EXPECT_EQ(experts(wna16, "cpu"),
            "error NotImplementedError: No WNA16 MoE backend supports the deployment "
            "configuration.");
  EXPECT_EQ(experts(wna16, "cpu-amx").rfind("quantized CompressedTensorsWNA16MoEMethod", 0), 0u)
      << experts(wna16, "cpu-amx");
  EXPECT_EQ(experts("mo_qwen3moe_nvfp4", "cuda"), "quantized ModelOptNvFp4FusedMoE");
  EXPECT_EQ(experts("mo_qwen3moe_nvfp4", "cpu-amx"),
            "error NotImplementedError: No NvFp4 MoE backend supports the deployment "
            "configuration.");
}

// The linear kernel vLLM 0.34 picks on a CPU joins the detail; without one the layer fails.
TEST(PlanCli, VllmOnACpuNamesTheLinearKernel) {
  auto linear = [](const std::string& folder, const std::string& layer,
                   const std::string& platform) {
    auto r =
        RunCli("explain " + folder + " " + layer + " --engine vllm --json --platform " + platform);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out;
    Json d = *ParseOrDie(r.out).Find("decision");
    return d.Find("kind")->string_value() + " " + d.Find("detail")->string_value();
  };
  const std::string fp8 = "examples/deepseek-tiny", o_proj = "model.layers.0.self_attn.o_proj";
  EXPECT_EQ(linear(fp8, o_proj, "cpu-amx")
                .rfind("quantized Fp8LinearMethod[kernel=CPUFp8Block"
                       "ScaledMMKernel]",
                       0),
            0u);
  EXPECT_EQ(linear(fp8, o_proj, "cpu"),
            "error ValueError: Failed to find a kernel that can implement the ScaledMM linear "
            "layer. Reasons: \nCPUFp8W8A8BlockScaledMMKernel requires AMX tile support (Sapphire "
            "Rapids or newer)..\nCPUFp8BlockScaledMMKernel requires AMX tile support (Sapphire "
            "Rapids or newer)..");
  EXPECT_EQ(linear("tests/data/corpus/TheBloke__Llama-2-13B-chat-GPTQ",
                   "model.layers.0.mlp.down_proj", "cpu"),
            "quantized AutoGPTQLinearMethod[bits=4 group_size=128 desc_act=False sym=True "
            "kernel=CPUWNA16LinearKernel]");
  EXPECT_EQ(linear(fp8, o_proj, "cuda"), "quantized Fp8LinearMethod (Fp8MoEMethod for experts)");
}

TEST(PlanCli, ExitCodes) {
  EXPECT_EQ(RunCli("plan /nonexistent/folder").exit_code, 2);
  EXPECT_EQ(RunCli("plan --no-such-flag").exit_code, 2);
  EXPECT_EQ(RunCli("plan examples/deepseek-tiny --engine tensorrt").exit_code, 2);
  EXPECT_EQ(RunCli("plan examples/deepseek-tiny --quantization gptq").exit_code, 2);
  EXPECT_EQ(RunCli("").exit_code, 2);
}

// An error row is no layer an engine builds: the byte total leaves it out and the text says how
// many were left out. Native says once that it checks no tensor-parallel shapes.
TEST(PlanCli, ErrorRowsAreLeftOutOfTheBytesAndNativeSaysItDoesNotShard) {
  const std::string r1 = "tests/data/reconstructed/peaceh-nv__TensorRT-LLM__DeepSeek-R1-NVFP4";
  auto r = RunCli("plan " + r1 + " --json");
  ASSERT_EQ(r.exit_code, 1) << r.out;
  Json plan = ParseOrDie(r.out);
  int64_t bytes = 0, errors = 0;
  for (const Json& layer : plan.Find("layers")->items()) {
    if (layer.Find("decision")->string_value() == "error") {
      ++errors;
    } else if (layer.Find("bytes")->is_int()) {
      bytes += layer.Find("bytes")->int_value();
    }
  }
  ASSERT_GT(errors, 0);
  EXPECT_EQ(plan.Find("summary")->Find("errors")->int_value(), errors);
  EXPECT_EQ(plan.Find("summary")->Find("bytes")->int_value(), bytes);
  auto text = RunCli("plan " + r1);
  EXPECT_NE(text.out.find(fmt::format(" in layers ({} error layers left out) + ", errors)),
            std::string::npos)
      << text.out;

  const auto notes = [](const std::string& options) {
    auto run = RunCli("plan examples/llama-tiny-fp8 --json " + options);
    EXPECT_EQ(run.exit_code, 0) << run.out;
    return ToJson(*ParseOrDie(run.out).Find("notes"));
  };
  EXPECT_NE(notes("--tp 2").find("--tp 2: the native reference decides each layer whole and "
                                 "checks no tensor-parallel shapes"),
            std::string::npos);
  EXPECT_EQ(notes("--tp 2 --engine vllm").find("native reference"), std::string::npos);
  EXPECT_EQ(notes("").find("native reference"), std::string::npos);
}

// With --json an unusable input is also one JSON object on stdout, naming the file and key where
// the message does; stderr keeps the line. A JSON syntax error names its line and column.
TEST(PlanCli, AnUnusableInputIsAJsonObjectToo) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("quantpath_json_error_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream config(dir / "config.json");
    config << "{\"architectures\": [\"LlamaForCausalLM\"],\n  \"hidden_size\": 64,,\n}\n";
  }
  auto broken = RunCli("plan " + dir.string() + " --json");
  EXPECT_EQ(broken.exit_code, 2);
  Json error = ParseOrDie(broken.out);
  const Json* e = error.Find("error");
  ASSERT_NE(e, nullptr) << broken.out;
  // The file as the folder's loader names it, as every config message does.
  EXPECT_EQ(e->Find("message")->string_value(),
            "config.json:2:21: not valid JSON: expected a key in double quotes (found ',')");
  EXPECT_EQ(e->Find("file")->string_value(), "config.json");
  EXPECT_TRUE(e->Find("key")->is_null());
  EXPECT_TRUE(e->Find("tensor")->is_null());
  EXPECT_TRUE(e->Find("layer")->is_null());
  // The text line stays on stderr, and without --json stdout stays empty.
  auto text = RunCli("plan " + dir.string(), true);
  EXPECT_EQ(text.out.rfind("quantpath: config.json:2:21:", 0), 0u) << text.out;
  EXPECT_EQ(RunCli("plan " + dir.string()).out, "");
  std::filesystem::remove_all(dir);

  auto layer = RunCli("explain examples/llama-tiny-fp8 model.layers.0.mlp.down_prj --json");
  EXPECT_EQ(layer.exit_code, 2);
  EXPECT_EQ(ParseOrDie(layer.out).Find("error")->Find("layer")->string_value(),
            "model.layers.0.mlp.down_prj");
}

TEST(ExplainCli, OneObjectWithTheDecisionAndTheTrace) {
  auto r = RunCli("explain examples/deepseek-tiny model.layers.0.self_attn.q_a_proj --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  Json explained = ParseOrDie(r.out);
  std::vector<std::string> keys;
  for (const auto& m : explained.members()) keys.push_back(m.first);
  EXPECT_EQ(Join(keys, ","),
            "model,engine,layer,path,checkpoint_path,kind,resolved,decision,decided_by,kv_cache,"
            "spec_id,kernel_available,trace");
  EXPECT_EQ(explained.Find("layer")->string_value(), "model.layers.0.self_attn.q_a_proj");
  EXPECT_EQ(explained.Find("path")->string_value(), "model.layers.0.self_attn.fused_qkv_a_proj");
  EXPECT_TRUE(explained.Find("resolved")->is_string());
  const Json& decision = *explained.Find("decision");
  EXPECT_EQ(decision.Find("kind")->string_value(), "quantized");
  EXPECT_EQ(decision.Find("scheme")->Find("name")->string_value(), "w8a8-fp8-block128x128-dyn");
  EXPECT_EQ(decision.Find("rule")->string_value(),
            "config.json#/quantization_config: fp8 applies to every linear layer");
  EXPECT_TRUE(explained.Find("decided_by")->is_null());  // the default action, not a rule
  EXPECT_EQ(explained.Find("spec_id")->string_value(), "fp8_block_128_128");

  auto text = RunCli("explain examples/deepseek-tiny model.layers.0.self_attn.q_a_proj");
  EXPECT_NE(text.out.find("fused_qkv_a_proj"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("decision: quantized"), std::string::npos) << text.out;
  EXPECT_EQ(RunCli("explain examples/deepseek-tiny model.layers.9.nothing").exit_code, 2);
}

// A miss names the layers nearest what was typed, and nothing when none is near.
TEST(ExplainCli, AMissSuggestsTheNearestLayers) {
  auto typo = RunCli("explain examples/llama-tiny-fp8 model.layers.0.mlp.down_prj", true);
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.out.find("no layer \"model.layers.0.mlp.down_prj\" in this LlamaForCausalLM "
                          "model (layers are named as `quantpath plan` lists them); nearest: "
                          "model.layers.0.mlp.down_proj"),
            std::string::npos)
      << typo.out;
  auto far = RunCli("explain examples/llama-tiny-fp8 vision_tower.blocks.3.attn.proj", true);
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_EQ(far.out.find("nearest"), std::string::npos) << far.out;
}

// A rule hitting one leg: Orpheus' bnb config skips "model.layers.0.self_attn" by prefix, which
// every leg of qkv_proj matches; the first leg's hit is the one reported.
TEST(ExplainCli, TheLegThatDecided) {
  auto r = RunCli(
      "explain tests/data/corpus/DocWobble__Orpheus_3B_Quantized-bnb-nf4 "
      "model.layers.0.self_attn.qkv_proj --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  Json explained = ParseOrDie(r.out);
  EXPECT_EQ(explained.Find("decision")->Find("kind")->string_value(), "unquantized");
  const Json& by = *explained.Find("decided_by");
  ASSERT_TRUE(by.is_object()) << r.out;
  EXPECT_EQ(by.Find("matched")->string_value(), "model.layers.0.self_attn.q_proj");
  EXPECT_EQ(by.Find("leg")->string_value(), "q_proj");
  EXPECT_TRUE(by.Find("expert")->is_null());
  const Json& trace = *explained.Find("trace");
  ASSERT_TRUE(trace.is_array());
  ASSERT_FALSE(trace.items().empty());
  for (const Json& step : trace.items()) {
    std::vector<std::string> keys;
    for (const auto& m : step.members()) keys.push_back(m.first);
    EXPECT_EQ(Join(keys, ","), "matcher,pattern,file,pointer,result,reason");
  }
}

}  // namespace
}  // namespace quantpath
