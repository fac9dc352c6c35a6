// `quantize` against compressed-tensors' own functions (the producers' online_ref.safetensors
// beside the unquantized fixtures), and the folders it writes as the engines' dialects read them.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "quantpath/checkpoint_writer.h"
#include "quantpath/export.h"
#include "tests/export/export_test_util.h"

namespace quantpath {
namespace {

using testing::Decisions;
using testing::ExpectCheckClean;
using testing::FreshDir;
using testing::Producer;
using testing::ReadAll;
using testing::ReadFile;

struct Case {
  std::string scheme;
  std::string format;  // "" for the default
};

class QuantizeScheme : public ::testing::TestWithParam<Case> {};

// Every reference tensor `<scheme>/<module>.<tensor>` of `folder`'s online_ref equals the written
// tensor `<module>.<tensor>` (int8: the reference's signed codes are the written pack's bytes
// minus 128; native fp8 names the block scale weight_scale_inv).
void ExpectReferenceTensors(const std::string& folder, const std::string& scheme,
                            const std::filesystem::path& out, bool native) {
  const auto reference = ReadFile(Producer(folder) / "online_ref.safetensors");
  const auto written = ReadAll(out);
  int compared = 0;
  for (const auto& [key, ref] : reference) {
    if (!key.starts_with(scheme + "/") || key.ends_with(".dequant")) continue;
    std::string name = key.substr(scheme.size() + 1);
    if (native && name.ends_with(".weight_scale") && scheme.find("block") != std::string::npos) {
      name += "_inv";
    }
    std::vector<std::byte> expected = ref.bytes;
    if (scheme == "w8a16-int8-channel" && name.ends_with(".weight")) {
      name = name.substr(0, name.size() - 7) + ".weight_packed";
      for (std::byte& b : expected) b ^= std::byte{0x80};
    }
    auto it = written.find(name);
    ASSERT_NE(it, written.end()) << name;
    EXPECT_EQ(it->second.bytes, expected) << folder << " " << scheme << " " << name;
    ++compared;
  }
  EXPECT_GE(compared, 6) << folder << " " << scheme;
}

TEST_P(QuantizeScheme, EqualsCompressedTensorsAndLoadsInEveryEngine) {
  const Case& c = GetParam();
  const bool native = c.format == "native-fp8";
  for (const std::string folder : {"bf16_llama", "bf16_qwen3moe"}) {
    const std::filesystem::path out = FreshDir("." + folder) / "out";
    QuantizeOptions options;
    options.scheme = c.scheme;
    if (!c.format.empty()) options.format = *ParseCheckpointFormat(c.format);
    Result<ExportReport> report =
        QuantizeCheckpoint(Producer(folder).string(), out.string(), options);
    ASSERT_TRUE(report.ok()) << report.status().message();
    EXPECT_EQ(report->scheme, c.scheme);
    ExpectReferenceTensors(folder, c.scheme, out, native);
    // Where an engine refuses a layer of these tiny models, the refusal is the engine's (vLLM's and
    // SGLang's CT MoE take no MXFP4 weights without MX activations; SGLang's fp8 blocks need
    // whole 128-row blocks per leg, and k/v have 64 rows) and the report says so.
    bool refused = false;
    for (const std::string engine : {"vllm@0.33", "sglang@0.5.23"}) {
      int quantized = 0;
      bool errors = false;
      for (const auto& [path, decision] : Decisions(out, engine)) {
        const bool kept = path.ends_with("lm_head") || path.ends_with("embed_tokens") ||
                          path.ends_with("mlp.gate");
        if (decision == "error") {
          const bool known = (c.scheme == "w4a16-mxfp4" && path.ends_with("mlp.experts")) ||
                             (native && c.scheme.find("block") != std::string::npos &&
                              engine.starts_with("sglang") && path.ends_with("qkv_proj"));
          EXPECT_TRUE(known) << engine << " " << path;
          errors = true;
          continue;
        }
        EXPECT_EQ(decision, kept ? "unquantized" : c.scheme) << engine << " " << path;
        quantized += kept ? 0 : 1;
      }
      EXPECT_GE(quantized, 2) << engine;
      if (!errors) ExpectCheckClean(out, engine);
      refused = refused || errors;
    }
    EXPECT_EQ(Join(report->notes, "\n").find("would not load") != std::string::npos, refused)
        << Join(report->notes, "\n");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Schemes, QuantizeScheme,
    ::testing::Values(Case{"w8a8-fp8-tensor-dyn", ""}, Case{"w8a8-fp8-channel-dyn", ""},
                      Case{"w8a8-fp8-block128x128-dyn", ""}, Case{"w8a16-int8-channel", ""},
                      Case{"w8a8-int8-channel-dyn", ""}, Case{"w4a16-int4-g128", ""},
                      Case{"w4a16-int4-g128-asym", ""}, Case{"w4a16-nvfp4", ""},
                      Case{"w4a16-mxfp4", ""}, Case{"w8a8-fp8-block128x128-dyn", "native-fp8"},
                      Case{"w8a8-fp8-tensor-dyn", "native-fp8"}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name = info.param.scheme + (info.param.format.empty() ? "" : "_native");
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

// The text an engine release was recorded failing with on `layer` of case `id`
// (tests/data/oracle/releases/<release>/cases/<file>), without the stage the recorder names.
std::string RecordedError(const std::string& release, const std::string& file,
                          const std::string& id, const std::string& layer) {
  const std::filesystem::path path =
      std::filesystem::path(QUANTPATH_TEST_DATA) / "oracle/releases" / release / "cases" / file;
  Result<Json> cases = ReadJsonFile(path);
  EXPECT_TRUE(cases.ok()) << cases.status().message();
  if (!cases.ok()) return "";
  for (const Json& c : cases->items()) {
    if (c.Find("id")->string_value() != id) continue;
    for (const Json& d : c.Find("expected")->items()) {
      if (d.Find("prefix")->string_value() != layer ||
          d.Find("decision")->string_value() != "error")
        continue;
      std::string text = d.Find("detail")->string_value();
      if (text.starts_with("from_config ")) text = text.substr(12);
      return text;
    }
  }
  ADD_FAILURE() << "no recorded error for " << layer << " in " << id << " (" << path << ")";
  return "";
}

// Plans, checks clean (values read), loads and runs two layers of `out` as `engine` reads it.
void ExpectPlansChecksAndRuns(const std::filesystem::path& out, const std::string& engine) {
  ExpectCheckClean(out, engine);
  Result<OpenOptions> options = OpenOptions::Parse(engine, "", "cpu");
  ASSERT_TRUE(options.ok());
  Result<Model> model = OpenModel(out.string(), *options);
  ASSERT_TRUE(model.ok()) << engine << ": " << model.status().message();
  for (const std::string layer :
       {"model.layers.0.self_attn.qkv_proj", "model.layers.1.mlp.down_proj"}) {
    Result<LoadedLayer> loaded = LoadLayer(*model, layer);
    ASSERT_TRUE(loaded.ok()) << engine << " " << layer << ": " << loaded.status().message();
    Result<LayerRun> run = RunSeeded(*loaded, 4, 1);
    ASSERT_TRUE(run.ok()) << engine << " " << layer << ": " << run.status().message();
    EXPECT_TRUE(run->pass()) << engine << " " << layer << ": rel " << run->rel << " tol "
                             << run->tol;
  }
}

// Every (scheme, format) pair `quantize` writes is a folder quantpath itself plans, checks clean
// (values read) and runs natively; ModelOpt's W4A16_NVFP4 among them. Under every engine release
// it does the same, except where that release was recorded refusing the folder: there quantpath
// refuses it with the recorded text. A pair the format cannot express is refused before anything
// is written.
TEST(Quantize, EveryPairItWritesRunsNativelyAndInEveryReleaseOrFailsAsRecorded) {
  // SGLang's ModelOptFp8Config takes quant_algo FP8 only (recorded on the config quantize
  // writes); its fp8 block check wants whole 128-row blocks per leg, and k_proj / v_proj of the
  // tiny model have 64 rows (recorded with 48 rows, sglang-qwen36-fp8 in models/).
  const std::map<std::string, std::pair<std::string, std::string>> refused = {
      {"modelopt w8a8-fp8-channel-dyn sglang@0.5.23",
       {"", RecordedError("sglang-0.5.23", "sglang-modelopt.json",
                          "sglang-modelopt-fp8-per-channel-written",
                          "model.layers.0.self_attn.qkv_proj")}},
      {"native-fp8 w8a8-fp8-block128x128-dyn sglang@0.5.23",
       {".self_attn.qkv_proj",
        "ValueError: Weight output_partition_size = 64 is not divisible by weight quantization "
        "block_n = 128."}},
  };
  std::set<std::string> written, refusals;
  for (const std::string& format : CheckpointFormatNames()) {
    if (format == "bf16") continue;
    for (const OnlineTarget& target : OnlineTargets()) {
      if (!target.refusal.empty()) continue;
      SCOPED_TRACE(format + " " + target.name);
      const std::filesystem::path out = FreshDir("." + format + "." + target.name) / "out";
      QuantizeOptions options;
      options.scheme = target.name;
      options.format = *ParseCheckpointFormat(format);
      Result<ExportReport> report =
          QuantizeCheckpoint(Producer("bf16_llama").string(), out.string(), options);
      if (!report.ok()) {
        EXPECT_FALSE(std::filesystem::exists(out)) << report.status().message();
        continue;
      }
      written.insert(format + " " + target.name);
      ExpectPlansChecksAndRuns(out, "native");
      for (const std::string_view engine : DialectNames()) {
        if (engine == "native" || engine.ends_with("@helpers")) continue;
        const std::string key = format + " " + target.name + " " + std::string(engine);
        const auto expected = refused.find(key);
        if (expected == refused.end()) {
          ExpectPlansChecksAndRuns(out, std::string(engine));
          continue;
        }
        refusals.insert(key);
        const auto& [layer, text] = expected->second;
        Result<OpenOptions> engine_options = OpenOptions::Parse(engine, "", "cpu");
        ASSERT_TRUE(engine_options.ok());
        Result<Model> model = OpenModel(out.string(), *engine_options);
        if (layer.empty()) {  // the whole model, else every layer whose name ends so
          ASSERT_FALSE(model.ok()) << key;
          EXPECT_EQ(model.status().message(), text) << key;
          continue;
        }
        ASSERT_TRUE(model.ok()) << key << ": " << model.status().message();
        Result<std::vector<LayerDecision>> layers = DecideAll(*model);
        ASSERT_TRUE(layers.ok()) << layers.status().message();
        for (const LayerDecision& d : *layers) {
          const bool refused_here = d.site->checkpoint_path.ends_with(layer);
          EXPECT_EQ(d.decision.kind == DecisionKind::kError, refused_here)
              << key << " " << d.site->checkpoint_path << ": " << d.decision.detail.str();
          if (refused_here) {
            EXPECT_EQ(d.decision.detail.str(), text) << key;
          }
        }
      }
    }
  }
  EXPECT_TRUE(written.contains("modelopt w4a16-nvfp4"));
  EXPECT_TRUE(written.contains("modelopt w8a8-fp8-channel-dyn"));
  EXPECT_TRUE(written.contains("compressed-tensors w4a16-int4-g128"));
  EXPECT_GE(written.size(), 13u);
  EXPECT_EQ(refusals.size(), refused.size());
}

TEST(Quantize, CopiesTheOtherTensorsAsStored) {
  const std::filesystem::path out = FreshDir() / "out";
  QuantizeOptions options;
  options.scheme = "w8a8-fp8-block128x128-dyn";
  ASSERT_TRUE(QuantizeCheckpoint(Producer("bf16_llama").string(), out.string(), options).ok());
  const auto input = ReadAll(Producer("bf16_llama"));
  const auto written = ReadAll(out);
  int copied = 0;
  for (const auto& [name, t] : input) {
    if (name.ends_with("_proj.weight")) continue;  // quantized
    auto it = written.find(name);
    ASSERT_NE(it, written.end()) << name;
    EXPECT_EQ(it->second.bytes, t.bytes) << name;
    EXPECT_EQ(it->second.dtype, t.dtype) << name;
    ++copied;
  }
  EXPECT_GE(copied, 7);  // embeddings, norms, lm_head
}

TEST(Quantize, IgnoreLeavesLayersUnquantizedAndWritesThePattern) {
  const std::filesystem::path out = FreshDir() / "out";
  QuantizeOptions options;
  options.scheme = "w8a8-fp8-channel-dyn";
  options.ignore = {"re:.*down_proj", "model.layers.9.mlp.up_proj"};
  Result<ExportReport> report =
      QuantizeCheckpoint(Producer("bf16_llama").string(), out.string(), options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_NE(Join(report->notes, "\n").find("model.layers.9.mlp.up_proj matches no"),
            std::string::npos);
  const auto decisions = Decisions(out, "vllm@0.33");
  EXPECT_EQ(decisions.at("model.layers.1.mlp.down_proj"), "unquantized");
  EXPECT_EQ(decisions.at("model.layers.1.mlp.gate_up_proj"), "w8a8-fp8-channel-dyn");
  const auto written = ReadAll(out);
  EXPECT_EQ(written.at("model.layers.0.mlp.down_proj.weight").dtype, StDtype::kBF16);
  Result<Json> config = ReadJsonFile(out / "config.json");
  ASSERT_TRUE(config.ok());
  const std::string text = ToJson(*config->Find("quantization_config")->Find("ignore"));
  EXPECT_NE(text.find("re:.*down_proj"), std::string::npos) << text;
  EXPECT_NE(text.find("lm_head"), std::string::npos) << text;
  ExpectCheckClean(out, "vllm@0.33");
}

TEST(Quantize, RefusesAnIgnoreThatSplitsAFusedLayer) {
  const std::filesystem::path out = FreshDir() / "out";
  QuantizeOptions options;
  options.scheme = "w8a8-fp8-channel-dyn";
  options.ignore = {"model.layers.0.self_attn.q_proj"};
  Result<ExportReport> report =
      QuantizeCheckpoint(Producer("bf16_llama").string(), out.string(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("qkv_proj"), std::string::npos)
      << report.status().message();
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(Quantize, RefusesWhatTheFormatCannotStoreOrTheInputIsAlreadyQuantized) {
  const std::filesystem::path out = FreshDir() / "out";
  QuantizeOptions options;
  options.scheme = "w4a4-nvfp4";
  Result<ExportReport> report =
      QuantizeCheckpoint(Producer("bf16_llama").string(), out.string(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("input_global_scale"), std::string::npos);
  options.scheme = "w8a8-fp8-channel-dyn";
  options.format = CheckpointFormat::kNativeFp8;
  report = QuantizeCheckpoint(Producer("bf16_llama").string(), out.string(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("per-channel"), std::string::npos);
  options.format.reset();
  report = QuantizeCheckpoint(Producer("ct_llama_fp8_block").string(), out.string(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("already quantized"), std::string::npos);
  options.scheme = "w9a9-nothing";
  report = QuantizeCheckpoint(Producer("bf16_llama").string(), out.string(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(Quantize, ShardsWithAnIndexAsTransformersDoes) {
  const std::filesystem::path out = FreshDir() / "out";
  QuantizeOptions options;
  options.scheme = "w4a16-mxfp4";
  options.max_shard_bytes = 200'000;
  Result<ExportReport> report =
      QuantizeCheckpoint(Producer("bf16_llama").string(), out.string(), options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  Result<Json> index = ReadJsonFile(out / "model.safetensors.index.json");
  ASSERT_TRUE(index.ok()) << index.status().message();
  int64_t total = 0;
  std::set<std::string> shards;
  for (const auto& [name, t] : ReadAll(out)) total += static_cast<int64_t>(t.bytes.size());
  for (const Json::Member& m : index->Find("weight_map")->members()) {
    shards.insert(m.second.string_value());
  }
  EXPECT_GE(shards.size(), 2u);
  EXPECT_EQ(index->Find("metadata")->Find("total_size")->int_value(), total);
  for (const std::string& shard : shards) {
    EXPECT_LE(std::filesystem::file_size(out / shard), 200'000u + 4096u) << shard;
  }
  Result<Checkpoint> checkpoint = Checkpoint::Open(out);
  ASSERT_TRUE(checkpoint.ok());
  EXPECT_TRUE(checkpoint->Validate().ok());
  EXPECT_TRUE(checkpoint->warnings().empty());
  ExpectCheckClean(out, "sglang@0.5.23");
}

// A weight of the wrong rank or shape in the input is an error naming the tensor and the layer,
// before anything is written, in every format.
TEST(Quantize, AMalformedWeightIsAnErrorNamingIt) {
  const std::filesystem::path dir = FreshDir();
  const std::filesystem::path in = dir / "in";
  std::filesystem::create_directories(in);
  std::filesystem::copy_file(Producer("bf16_llama") / "config.json", in / "config.json");
  auto tensors = ReadAll(Producer("bf16_llama"));
  auto& q = tensors.at("model.layers.0.self_attn.q_proj.weight");
  q.shape = {q.shape[0] * q.shape[1]};  // the same bytes, flattened
  std::vector<TensorToWrite> write;
  for (const auto& [name, t] : tensors) write.push_back({name, t.dtype, t.shape, t.bytes});
  ASSERT_TRUE(WriteSafetensors(in / "model.safetensors", write).ok());
  for (const std::string format : {"compressed-tensors", "modelopt"}) {
    QuantizeOptions options;
    options.scheme = "w4a16-nvfp4";
    options.format = *ParseCheckpointFormat(format);
    Result<ExportReport> report = QuantizeCheckpoint(in.string(), (dir / format).string(), options);
    ASSERT_FALSE(report.ok()) << format;
    const std::string message(report.status().message());
    EXPECT_NE(message.find("model.layers.0.self_attn.q_proj.weight"), std::string::npos) << message;
    EXPECT_NE(message.find("model.layers.0.self_attn.qkv_proj"), std::string::npos) << message;
    EXPECT_NE(message.find("1-dimensional"), std::string::npos) << message;
    EXPECT_FALSE(std::filesystem::exists(dir / format)) << format;
  }
}

}  // namespace
}  // namespace quantpath
