// `convert` between layouts that differ in more than names: GPTQ / AWQ repacked as
// compressed-tensors pack-quantized, NVFP4 between ModelOpt and compressed-tensors, and the
// ModelOpt output of `quantize`. Each output dequantizes (quantpath's fp64 reference, which
// decodes every layout on its own) to exactly the input's weights, or within the one fp32 ulp the
// inverted NVFP4 global allows, and loads with the same decisions in both engines.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "quantpath/checkpoint_writer.h"
#include "quantpath/export.h"
#include "quantpath/materialize.h"
#include "tests/export/export_test_util.h"

namespace quantpath {
namespace {

using testing::Convert;
using testing::Decisions;
using testing::ExpectCheckClean;
using testing::FreshDir;
using testing::Producer;
using testing::ReadAll;

// The sites `decisions` quantizes, and how (the engines differ in which unquantized sites they
// build: routers, embeddings).
std::map<std::string, std::string> QuantizedSites(std::map<std::string, std::string> decisions) {
  std::erase_if(decisions, [](const auto& d) { return d.second == "unquantized"; });
  return decisions;
}

// The largest |a − b| / |b| over every projection; both hold the same projections.
double WorstRelative(const std::map<std::string, std::vector<double>>& a,
                     const std::map<std::string, std::vector<double>>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (const auto& [prefix, values] : b) {
    auto it = a.find(prefix);
    EXPECT_NE(it, a.end()) << prefix;
    if (it == a.end()) continue;
    EXPECT_EQ(it->second.size(), values.size()) << prefix;
    for (size_t i = 0; i < values.size() && i < it->second.size(); ++i) {
      const double diff = std::abs(it->second[i] - values[i]);
      if (diff != 0) worst = std::max(worst, diff / std::abs(values[i]));
    }
  }
  return worst;
}

TEST(Relayout, GptqAndAwqToCompressedTensorsKeepEveryWeight) {
  for (const std::string folder :
       {"gm_llama_gptq_w4g64_sym_desc_act", "gm_qwen3moe_gptq_w4g64_sym_desc_act",
        "ar_llama_auto_gptq_w4g64_sym", "ar_llama_auto_gptq_w4g64_asym",
        "ar_llama_auto_gptq_w3g64_sym", "ar_llama_auto_awq_w4g64_asym"}) {
    SCOPED_TRACE(folder);
    const std::filesystem::path out = FreshDir("." + folder) / "ct";
    Result<ExportReport> report =
        Convert(Producer(folder), out, CheckpointFormat::kCompressedTensors);
    ASSERT_TRUE(report.ok()) << report.status().message();
    EXPECT_GT(report->layers_written, 0);
    const auto written = ReadAll(out);
    int packed = 0;
    for (const auto& [name, t] : written) {
      EXPECT_FALSE(name.ends_with(".qweight") || name.ends_with(".qzeros")) << name;
      packed += name.ends_with(".weight_packed") ? 1 : 0;
    }
    EXPECT_GT(packed, 0);
    EXPECT_EQ(WorstRelative(testing::Dequantized(out, "native"),
                            testing::Dequantized(Producer(folder), "native")),
              0.0);
    // Both engines load every layer as the file means it, including the act-order and
    // asymmetric GPTQ layers that vLLM 0.33 and SGLang 0.5.23 refuse in their GPTQ form.
    for (const std::string engine : {"vllm@0.33", "sglang@0.5.23"}) {
      ExpectCheckClean(out, engine);
      EXPECT_EQ(QuantizedSites(Decisions(out, engine)),
                QuantizedSites(Decisions(Producer(folder), "native")))
          << engine;
    }
  }
}

TEST(Relayout, Nvfp4BetweenModelOptAndCompressedTensorsInvertsOnlyTheGlobals) {
  for (const auto& [folder, to] :
       {std::pair{"mo_llama_nvfp4", CheckpointFormat::kCompressedTensors},
        std::pair{"mo_qwen3moe_nvfp4", CheckpointFormat::kCompressedTensors},
        std::pair{"ct_llama_nvfp4", CheckpointFormat::kModelOpt},
        std::pair{"ct_llama_nvfp4a16", CheckpointFormat::kModelOpt},
        std::pair{"ct_qwen3moe_nvfp4", CheckpointFormat::kModelOpt}}) {
    SCOPED_TRACE(folder);
    const std::filesystem::path dir = FreshDir(std::string(".") + folder);
    const CheckpointFormat back = to == CheckpointFormat::kModelOpt
                                      ? CheckpointFormat::kCompressedTensors
                                      : CheckpointFormat::kModelOpt;
    Result<ExportReport> there = Convert(Producer(folder), dir / "there", to);
    ASSERT_TRUE(there.ok()) << there.status().message();
    EXPECT_NE(Join(there->notes, "\n").find("within one fp32 ulp"), std::string::npos);
    Result<ExportReport> returned = Convert(dir / "there", dir / "back", back);
    ASSERT_TRUE(returned.ok()) << returned.status().message();
    EXPECT_EQ(std::filesystem::exists(dir / "there" / "hf_quant_config.json"),
              to == CheckpointFormat::kModelOpt);
    // Back again: every tensor as stored, but the second-level scales, within one ulp.
    const auto original = ReadAll(Producer(folder));
    const auto round_trip = ReadAll(dir / "back");
    ASSERT_EQ(original.size(), round_trip.size());
    int inverted = 0;
    for (const auto& [name, t] : original) {
      auto it = round_trip.find(name);
      ASSERT_NE(it, round_trip.end()) << name;
      EXPECT_EQ(it->second.dtype, t.dtype) << name;
      EXPECT_EQ(it->second.shape, t.shape) << name;
      if (name.ends_with("global_scale") || name.ends_with("scale_2") ||
          name.ends_with("input_scale")) {
        ASSERT_EQ(t.bytes.size(), 4u) << name;
        int32_t a, b;
        std::memcpy(&a, t.bytes.data(), 4);
        std::memcpy(&b, it->second.bytes.data(), 4);
        EXPECT_LE(std::abs(a - b), 1) << name;
        ++inverted;
        continue;
      }
      EXPECT_EQ(it->second.bytes, t.bytes) << name;
    }
    EXPECT_GT(inverted, 0);
    // The weights dequantize within the one fp32 ulp the inverted global moves them.
    for (const std::string engine : {"vllm@0.33", "sglang@0.5.23"}) {
      ExpectCheckClean(dir / "there", engine);
      EXPECT_EQ(Decisions(dir / "there", engine), Decisions(Producer(folder), engine)) << engine;
    }
    EXPECT_LE(WorstRelative(testing::Dequantized(dir / "there", "vllm@0.33"),
                            testing::Dequantized(Producer(folder), "vllm@0.33")),
              0x1p-23);
  }
}

// fp8 per tensor (static activations) and per channel (dynamic per-token activations): the
// same bytes, the scales 0-d / [N] in ModelOpt and [1] / [N, 1] in compressed-tensors.
TEST(Relayout, ModelOptFp8ToCompressedTensorsAndBackKeepsEveryTensor) {
  for (const auto& [folder, algo] :
       {std::pair{"mo_llama_fp8", "FP8"},
        std::pair{"mo_llama_fp8_per_channel_per_token", "FP8_PER_CHANNEL_PER_TOKEN"}}) {
    SCOPED_TRACE(folder);
    const std::filesystem::path dir = FreshDir(std::string(".") + folder);
    const std::filesystem::path source = Producer(folder);
    ASSERT_TRUE(Convert(source, dir / "ct", CheckpointFormat::kCompressedTensors).ok());
    Result<ExportReport> back = Convert(dir / "ct", dir / "mo", CheckpointFormat::kModelOpt);
    ASSERT_TRUE(back.ok()) << back.status().message();
    const auto original = ReadAll(source);
    const auto in_ct = ReadAll(dir / "ct");
    const auto returned = ReadAll(dir / "mo");
    ASSERT_EQ(original.size(), returned.size());
    for (const auto& [name, t] : original) {
      auto it = returned.find(name);
      ASSERT_NE(it, returned.end()) << name;
      EXPECT_EQ(it->second.shape, t.shape) << name;
      EXPECT_EQ(it->second.bytes, t.bytes) << name;
      EXPECT_EQ(in_ct.at(name).bytes, t.bytes) << name;
    }
    const std::string scale = "model.layers.0.self_attn.k_proj.weight_scale";
    EXPECT_EQ(in_ct.at(scale).shape.size(), original.at(scale).shape.size() + 1) << scale;
    Result<Json> description = ReadJsonFile(dir / "mo" / "hf_quant_config.json");
    ASSERT_TRUE(description.ok()) << description.status().message();
    EXPECT_EQ(description->Find("quantization")->Find("quant_algo")->string_value(), algo);
    // SGLang 0.5.23's ModelOpt reads no FP8_PER_CHANNEL_PER_TOKEN, the producer's folder included.
    const bool per_channel = std::string(algo) != "FP8";
    for (const std::string engine : {"vllm@0.33", "sglang@0.5.23"}) {
      ExpectCheckClean(dir / "ct", engine);
      EXPECT_EQ(QuantizedSites(Decisions(dir / "ct", engine)),
                QuantizedSites(Decisions(source, "native")))
          << engine;
      if (per_channel && engine.starts_with("sglang")) continue;
      ExpectCheckClean(dir / "mo", engine);
      EXPECT_EQ(QuantizedSites(Decisions(dir / "mo", engine)),
                QuantizedSites(Decisions(source, engine)))
          << engine;
    }
  }
}

// The bf16 Llama quantized with `scheme` into dir / "mo" (ModelOpt) and dir / "ct"
// (compressed-tensors): the two reports.
std::pair<Result<ExportReport>, Result<ExportReport>> QuantizeToBoth(
    const std::string& scheme, const std::filesystem::path& dir) {
  QuantizeOptions options;
  options.scheme = scheme;
  options.format = CheckpointFormat::kModelOpt;
  Result<ExportReport> mo =
      QuantizeCheckpoint(Producer("bf16_llama").string(), (dir / "mo").string(), options);
  options.format = CheckpointFormat::kCompressedTensors;
  Result<ExportReport> ct =
      QuantizeCheckpoint(Producer("bf16_llama").string(), (dir / "ct").string(), options);
  return {std::move(mo), std::move(ct)};
}

// quantize --format modelopt of fp8 per channel: FP8_PER_CHANNEL_PER_TOKEN, the codes and scales
// of the compressed-tensors output with the scales as [N].
TEST(Relayout, QuantizeWritesModelOptFp8PerChannel) {
  const std::filesystem::path dir = FreshDir();
  const auto [mo, ct] = QuantizeToBoth("w8a8-fp8-channel-dyn", dir);
  ASSERT_TRUE(mo.ok()) << mo.status().message();
  ASSERT_TRUE(ct.ok()) << ct.status().message();
  const auto mo_tensors = ReadAll(dir / "mo");
  const auto ct_tensors = ReadAll(dir / "ct");
  ASSERT_EQ(mo_tensors.size(), ct_tensors.size());
  for (const auto& [name, t] : ct_tensors) {
    ASSERT_TRUE(mo_tensors.contains(name)) << name;
    EXPECT_EQ(mo_tensors.at(name).bytes, t.bytes) << name;
    if (name.ends_with(".weight_scale")) {
      EXPECT_EQ(mo_tensors.at(name).shape, std::vector<int64_t>{t.shape[0]}) << name;
    }
  }
  // ModelOpt 0.47's own FP8_PER_CHANNEL_PER_TOKEN export of the same weights: the same tensors,
  // byte for byte (its round to nearest is compressed-tensors', in fp32).
  const auto producer = ReadAll(Producer("mo_llama_fp8_per_channel_per_token"));
  ASSERT_EQ(producer.size(), mo_tensors.size());
  for (const auto& [name, t] : producer) {
    ASSERT_TRUE(mo_tensors.contains(name)) << name;
    EXPECT_EQ(mo_tensors.at(name).dtype, t.dtype) << name;
    EXPECT_EQ(mo_tensors.at(name).shape, t.shape) << name;
    EXPECT_EQ(mo_tensors.at(name).bytes, t.bytes) << name;
  }
  ExpectCheckClean(dir / "mo", "vllm@0.33");
  EXPECT_EQ(Decisions(dir / "mo", "vllm@0.33"), Decisions(dir / "ct", "vllm@0.33"));
  EXPECT_NE(Join(mo->notes, "\n").find("sglang@0.5.23: the folder cannot be checked"),
            std::string::npos)
      << Join(mo->notes, "\n");
}

TEST(Relayout, QuantizeWritesModelOptNvfp4WithItsDescriptionFile) {
  const std::filesystem::path dir = FreshDir();
  const auto [mo, ct] = QuantizeToBoth("w4a16-nvfp4", dir);
  ASSERT_TRUE(mo.ok()) << mo.status().message();
  ASSERT_TRUE(ct.ok()) << ct.status().message();
  Result<Json> description = ReadJsonFile(dir / "mo" / "hf_quant_config.json");
  ASSERT_TRUE(description.ok()) << description.status().message();
  EXPECT_EQ(description->Find("quantization")->Find("quant_algo")->string_value(), "W4A16_NVFP4");
  EXPECT_EQ(description->Find("producer")->Find("name")->string_value(), "modelopt");
  // The same codes and block scales as the compressed-tensors output, under ModelOpt's names.
  const auto mo_tensors = ReadAll(dir / "mo");
  const auto ct_tensors = ReadAll(dir / "ct");
  const std::string k = "model.layers.0.self_attn.k_proj";
  EXPECT_EQ(mo_tensors.at(k + ".weight").bytes, ct_tensors.at(k + ".weight_packed").bytes);
  EXPECT_EQ(mo_tensors.at(k + ".weight_scale").bytes, ct_tensors.at(k + ".weight_scale").bytes);
  EXPECT_TRUE(mo_tensors.at(k + ".weight_scale_2").shape.empty());
  for (const std::string engine : {"vllm@0.33", "sglang@0.5.23"}) {
    ExpectCheckClean(dir / "mo", engine);
    EXPECT_EQ(Decisions(dir / "mo", engine), Decisions(dir / "ct", engine)) << engine;
  }
  EXPECT_LE(WorstRelative(testing::Dequantized(dir / "mo", "vllm@0.33"),
                          testing::Dequantized(dir / "ct", "vllm@0.33")),
            0x1p-23);
  // The report speaks for the newest release of each engine, and both read the folder.
  const std::string notes = Join(mo->notes, "\n");
  EXPECT_EQ(notes.find("cannot be checked"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("would not load"), std::string::npos) << notes;
}

// A symmetric GPTQ layer whose stored zero point is not 2^(b-1): compressed-tensors' symmetric
// layout has no place for it, so convert refuses, and --lossy writes the weights the engines
// compute (which ignore it).
TEST(Relayout, ASymmetricLayerWithAnotherZeroPointNeedsLossy) {
  const std::filesystem::path dir = FreshDir();
  const std::filesystem::path in = dir / "in";
  std::filesystem::create_directories(in);
  const std::filesystem::path source = Producer("ar_llama_auto_gptq_w4g64_sym");
  for (const auto& entry : std::filesystem::directory_iterator(source)) {
    if (entry.path().extension() != ".safetensors") {
      std::filesystem::copy_file(entry.path(), in / entry.path().filename());
    }
  }
  auto tensors = ReadAll(source);
  auto& qzeros = tensors.at("model.layers.0.mlp.down_proj.qzeros");
  qzeros.bytes[0] ^= std::byte{0x01};  // row 0, group 0: stored 7 (z = 8) becomes 6 (z = 7)
  std::vector<TensorToWrite> write;
  for (const auto& [name, t] : tensors) write.push_back({name, t.dtype, t.shape, t.bytes});
  ASSERT_TRUE(WriteSafetensors(in / "model.safetensors", write).ok());

  Result<ExportReport> refused = Convert(in, dir / "out", CheckpointFormat::kCompressedTensors);
  ASSERT_FALSE(refused.ok());
  const std::string message(refused.status().message());
  EXPECT_NE(message.find("model.layers.0.mlp.down_proj"), std::string::npos) << message;
  EXPECT_NE(message.find("zero point 7"), std::string::npos) << message;
  EXPECT_NE(message.find("--lossy"), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));

  Result<ExportReport> lossy = Convert(in, dir / "out", CheckpointFormat::kCompressedTensors, true);
  ASSERT_TRUE(lossy.ok()) << lossy.status().message();
  ExpectCheckClean(dir / "out", "vllm@0.33");
  EXPECT_EQ(Decisions(dir / "out", "vllm@0.33"), Decisions(source, "vllm@0.33"));
}

}  // namespace
}  // namespace quantpath
