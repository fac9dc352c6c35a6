// CheckFolder's values pass on copies of producer- and documentation-written fixtures with one
// value patched each: every finding names the file, the tensor, the layer and the first bad
// index; the integer layouts' zero points and g_idx are refused by `check` with the message
// `load` refuses them with; --headers-only reads nothing and finds nothing there; --deep also
// finds fp8 NaN codes and all-zero weight rows, which the default leaves to it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>

#include "quantpath/pipeline.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kData = std::string(QUANTPATH_TEST_DATA) + "/";
const std::string kO = "model.layers.0.self_attn.o_proj";
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The bit pattern of `value` in a 16-bit or 8-bit float dtype, for the values the tests write
// (written out from the formats' definitions rather than with quantpath's encoders).
uint16_t Half(double value) {
  if (std::isnan(value)) return 0x7E00;
  if (std::isinf(value)) return 0x7C00;
  if (value == 0) return 0;
  if (value == -1) return 0xBC00;
  ADD_FAILURE() << "no fp16 pattern for " << value;
  return 0;
}
uint8_t E4m3(double value) {
  if (std::isnan(value)) return 0x7F;
  if (value == 0) return 0;
  if (value == -1) return 0xB8;
  ADD_FAILURE() << "no e4m3 pattern for " << value;
  return 0;
}

// Element i of `t` set to `value` in its dtype (U8: the raw byte; integers: the value).
void Set(testing::TestTensor* t, int64_t i, double value) {
  const auto put = [&](auto v) { std::memcpy(t->bytes.data() + i * sizeof(v), &v, sizeof(v)); };
  if (t->dtype == "F32") {
    put(static_cast<float>(value));
  } else if (t->dtype == "BF16") {
    const float f = static_cast<float>(value);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    put(static_cast<uint16_t>(bits >> 16));  // exact for NaN, ±inf, 0, -1 and small integers
  } else if (t->dtype == "F16") {
    put(Half(value));
  } else if (t->dtype == "F8_E4M3") {
    put(E4m3(value));
  } else if (t->dtype == "U8") {
    put(static_cast<uint8_t>(value));
  } else if (t->dtype == "I32") {
    put(static_cast<int32_t>(value));
  } else if (t->dtype == "I64") {
    put(static_cast<int64_t>(value));
  } else {
    ADD_FAILURE() << t->name << ": no writer for " << t->dtype;
  }
}

// A copy of `folder` where `edit` changes the tensor `tensor`.
std::filesystem::path Patched(const std::string& folder, const std::string& tensor,
                              const std::function<void(testing::TestTensor*)>& edit) {
  bool found = false;
  std::filesystem::path dir = testing::MutatedFixture(kData + folder, [&](testing::TestTensor* t) {
    if (t->name == tensor) {
      edit(t);
      found = true;
    }
    return true;
  });
  EXPECT_TRUE(found) << folder << " has no " << tensor;
  return dir;
}

Result<CheckReport> Check(const std::filesystem::path& dir, const std::string& folder,
                          CheckReads reads = CheckReads::kValues) {
  QP_ASSIGN_OR_RETURN(OpenOptions options, testing::FixtureOptions(folder));
  CheckReading reading;
  reading.reads = reads;
  return CheckFolder(dir.string(), options, reading);
}

std::string Describe(const CheckReport& report) {
  std::string text;
  for (const Finding& f : report.findings) text += "\n  " + f.message;
  return text;
}

// The one error of checking `dir`, of `kind`, naming the file, `tensor` and `layer`, and saying
// `says`.
Finding OnlyError(const std::filesystem::path& dir, const std::string& folder, FindingKind kind,
                  const std::string& tensor, const std::string& layer, const std::string& says,
                  CheckReads reads = CheckReads::kValues) {
  Result<CheckReport> report = Check(dir, folder, reads);
  EXPECT_TRUE(report.ok()) << report.status().message();
  if (!report.ok()) return {};
  EXPECT_EQ(report->errors, 1) << Describe(*report);
  for (const Finding& f : report->findings) {
    if (!f.error) continue;
    EXPECT_EQ(FindingKindName(f.kind), FindingKindName(kind)) << f.message;
    EXPECT_EQ(f.tensor, tensor);
    EXPECT_EQ(f.layer, layer);
    EXPECT_NE(f.message.find(".safetensors"), std::string::npos) << f.message;
    EXPECT_NE(f.message.find(tensor), std::string::npos) << f.message;
    EXPECT_NE(f.message.find(layer), std::string::npos) << f.message;
    EXPECT_NE(f.message.find(says), std::string::npos) << f.message;
    return f;
  }
  return {};
}

struct ValueCase {
  std::string folder;
  std::string tensor;
  int64_t index;
  double value;
  FindingKind kind;
  std::string says;  // the message's words for the defect, with the first bad index
};

void ExpectCases(const std::vector<ValueCase>& cases, const std::string& layer = kO) {
  for (const ValueCase& c : cases) {
    SCOPED_TRACE(c.folder + " " + c.tensor);
    const std::filesystem::path dir =
        Patched(c.folder, c.tensor, [&](testing::TestTensor* t) { Set(t, c.index, c.value); });
    OnlyError(dir, c.folder, c.kind, c.tensor, layer, c.says);
    // --headers-only reads no value, so it finds nothing.
    Result<CheckReport> headers = Check(dir, c.folder, CheckReads::kHeaders);
    ASSERT_TRUE(headers.ok()) << headers.status().message();
    EXPECT_EQ(headers->errors, 0) << Describe(*headers);
    EXPECT_EQ(headers->bytes_read, 0u);
  }
}

TEST(CheckValuesTest, ScalesThatAreNotFiniteOrAreNegative) {
  ExpectCases({
      {"producers/gm_llama_gptq_w4g64_sym_desc_act", kO + ".scales", 5, kNaN,
       FindingKind::kBadValue, "holds nan at index 5"},
      {"producers/ct_llama_w4a16_g64_sym", kO + ".weight_scale", 7, kInf, FindingKind::kBadValue,
       "holds inf at index 7"},
      {"producers/bnb_llama_nf4_dq", kO + ".weight.nested_absmax", 0, -1, FindingKind::kBadValue,
       "negative scale -1 at index 0"},
      {"producers/bnb_llama_int8", kO + ".SCB", 3, kNaN, FindingKind::kBadValue,
       "holds nan at index 3"},
      {"producers/ct_llama_fp8_dynamic", kO + ".weight_scale", 2, -1, FindingKind::kBadValue,
       "negative scale -1 at index 2"},
  });
  // auto-round's symmetric GPTQ export stores negative group scales: they are the format's.
  const std::string gptq = "producers/ar_llama_auto_gptq_w4g64_sym";
  const std::filesystem::path dir =
      Patched(gptq, kO + ".scales", [](testing::TestTensor* t) { Set(t, 130, -1); });
  Result<CheckReport> negative = Check(dir, gptq);
  ASSERT_TRUE(negative.ok()) << negative.status().message();
  EXPECT_EQ(negative->errors, 0) << Describe(*negative);
}

// NVFP4's E4M3 block scales (0x7F is NaN) and MX's E8M0 exponents (0xFF is NaN): out of their
// types' range; the global and input scales divide, so zero is refused there too.
TEST(CheckValuesTest, Nvfp4AndMxScalesOutOfTheirTypesAndZeroDivisors) {
  ExpectCases({
      {"producers/ct_llama_nvfp4", kO + ".weight_scale", 9, kNaN, FindingKind::kBadValue,
       "holds nan at index 9"},
      {"producers/mo_llama_nvfp4", kO + ".weight_scale", 0, -1, FindingKind::kBadValue,
       "negative scale -1 at index 0"},
      {"producers/ct_llama_nvfp4", kO + ".weight_global_scale", 0, 0, FindingKind::kBadValue,
       "holds 0 at index 0, and the layer divides by it"},
      {"producers/ct_llama_nvfp4", kO + ".input_global_scale", 0, -1, FindingKind::kBadValue,
       "holds -1 at index 0"},
      {"producers/mo_llama_nvfp4", kO + ".weight_scale_2", 0, kInf, FindingKind::kBadValue,
       "holds inf at index 0"},
      {"producers/mo_llama_fp8", kO + ".input_scale", 0, 0, FindingKind::kBadValue,
       "the layer divides by it"},
      {"producers/ct_llama_mxfp4", kO + ".weight_scale", 6, 255, FindingKind::kBadValue,
       "holds nan at index 6"},
  });
}

// A scale tensor of zeros, or a row of one: the layer (or those rows) computes zeros.
TEST(CheckValuesTest, AllZeroScalesAreADeadLayer) {
  ExpectCases({{"producers/mo_llama_fp8", kO + ".weight_scale", 0, 0, FindingKind::kDeadRows,
                "has only zero scales (1 of them)"}});
  const auto zero_row = [](int64_t first, int64_t count, int64_t stride) {
    return [=](testing::TestTensor* t) {
      for (int64_t i = 0; i < count; ++i) Set(t, first + i * stride, 0);
    };
  };
  {
    SCOPED_TRACE("compressed-tensors [N, groups]: row 5");
    const std::string folder = "producers/ct_llama_w4a16_g64_sym";
    const std::filesystem::path dir = Patched(folder, kO + ".weight_scale", zero_row(10, 2, 1));
    OnlyError(dir, folder, FindingKind::kDeadRows, kO + ".weight_scale", kO,
              "has only zero scales in row 5");
  }
  {
    SCOPED_TRACE("GPTQ [groups, N]: output row 3 is a column");
    const std::string folder = "producers/ar_llama_auto_gptq_w4g64_sym";
    const std::filesystem::path dir = Patched(folder, kO + ".scales", zero_row(3, 2, 128));
    OnlyError(dir, folder, FindingKind::kDeadRows, kO + ".scales", kO,
              "has only zero scales in column 3");
  }
  {
    SCOPED_TRACE("a whole tensor");
    const std::string folder = "producers/ct_llama_nvfp4";
    const std::filesystem::path dir = Patched(folder, kO + ".weight_scale", [](auto* t) {
      std::fill(t->bytes.begin(), t->bytes.end(), 0);
    });
    OnlyError(dir, folder, FindingKind::kDeadRows, kO + ".weight_scale", kO,
              "has only zero scales (1024 of them)");
  }
}

// compressed-tensors' KV-cache scales (llmcompressor's k_scale and v_scale on each attention
// module) are the attention layer's under every release: read, and held positive. Renamed as
// ModelOpt stores them on a fused qkv_proj, SGLang 0.5.23 looks them up elsewhere: a warning
// naming each, under that release only.
TEST(CheckValuesTest, KvCacheScalesAreTheAttentionLayers) {
  const std::string folder = "producers/ct_llama_fp8_dynamic_kv";
  const std::string k = "model.layers.0.self_attn.k_scale";
  const auto skipped = [](const std::filesystem::path& dir, const std::string& engine) {
    Result<OpenOptions> options = OpenOptions::Parse(engine, "", "cpu");
    EXPECT_TRUE(options.ok());
    Result<CheckReport> report = CheckFolder(dir.string(), *options);
    EXPECT_TRUE(report.ok()) << report.status().message();
    std::vector<std::string> tensors;
    if (!report.ok()) return tensors;
    EXPECT_EQ(report->errors, 0) << engine << Describe(*report);
    for (const Finding& f : report->findings) {
      if (f.kind == FindingKind::kSkipped) tensors.push_back(f.tensor);
    }
    return tensors;
  };
  const std::filesystem::path as_written = kData + folder;
  for (const std::string engine : {"native", "vllm@0.33", "vllm@0.34", "sglang@0.5.23"}) {
    EXPECT_EQ(skipped(as_written, engine), std::vector<std::string>()) << engine;
  }
  ExpectCases({{folder, k, 0, 0, FindingKind::kBadValue, "holds 0 at index 0"}},
              "model.layers.0.self_attn.attn");
  const std::filesystem::path fused =
      testing::MutatedFixture(as_written, [](testing::TestTensor* t) {
        for (const std::string scale : {".self_attn.k_scale", ".self_attn.v_scale"}) {
          if (t->name.ends_with(scale)) {
            t->name = t->name.substr(0, t->name.size() - 7) + "qkv_proj." + scale.substr(11);
          }
        }
        return true;
      });
  EXPECT_EQ(skipped(fused, "vllm@0.34"), std::vector<std::string>());
  EXPECT_EQ(skipped(fused, "sglang@0.5.23"),
            (std::vector<std::string>{"model.layers.0.self_attn.qkv_proj.k_scale",
                                      "model.layers.0.self_attn.qkv_proj.v_scale",
                                      "model.layers.1.self_attn.qkv_proj.k_scale",
                                      "model.layers.1.self_attn.qkv_proj.v_scale"}));
}

// Zero points and activation offsets stored unpacked (ModelSlim): symmetric means 0.
TEST(CheckValuesTest, UnpackedZeroPointsAndOffsets) {
  ExpectCases({
      {"documented/modelslim_llama_w8a8", kO + ".weight_offset", 4, -1, FindingKind::kZeroPoint,
       "the scheme is symmetric, but it holds zero point -1 at index 4, not 0"},
      {"documented/modelslim_llama_w8a8", kO + ".input_offset", 0, kNaN, FindingKind::kZeroPoint,
       "holds the activation zero point nan at index 0"},
  });
}

// The integer layouts' packed zero points and g_idx: `check` says what `load` says.
TEST(CheckValuesTest, PackedZeroPointsAndGIdxAgreeWithLoad) {
  struct Case {
    std::string folder;
    std::string tensor;
    std::function<void(testing::TestTensor*)> edit;
    FindingKind kind;
    std::string says;
  };
  const Case kCases[] = {
      // Symmetric GPTQ stores the midpoint in every zero point; column 0's of group 0 cleared.
      {"producers/ar_llama_auto_gptq_w4g64_sym", kO + ".qzeros",
       [](testing::TestTensor* t) { t->bytes[0] &= 0xF0; }, FindingKind::kZeroPoint,
       "the scheme is symmetric, but tensor " + kO + ".qzeros holds zero point"},
      {"producers/gm_llama_gptq_w4g64_sym_desc_act", kO + ".g_idx",
       [](testing::TestTensor* t) { Set(t, 0, 7); }, FindingKind::kGroupMap,
       "maps input column 0 to group 7"},
      {"producers/gm_llama_gptq_w4g64_sym_desc_act", kO + ".g_idx",
       [](testing::TestTensor* t) { Set(t, 0, 1 - static_cast<int32_t>(t->bytes[0])); },
       FindingKind::kGroupMap, "input columns in group"},
  };
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.folder + " " + c.tensor);
    const std::filesystem::path dir = Patched(c.folder, c.tensor, c.edit);
    const Finding f = OnlyError(dir, c.folder, c.kind, c.tensor, kO, c.says);
    Result<OpenOptions> options = testing::FixtureOptions(c.folder);
    ASSERT_TRUE(options.ok());
    Result<Model> model = OpenModel(dir.string(), *options);
    ASSERT_TRUE(model.ok()) << model.status().message();
    Result<LoadedLayer> layer = LoadLayer(*model, kO);
    ASSERT_FALSE(layer.ok());
    // The finding is "<file>: <the loader's message>".
    EXPECT_TRUE(f.message.ends_with(layer.status().message()))
        << f.message << "\n  load: " << layer.status().message();
  }
}

TEST(CheckValuesTest, AWeightShapeThatIsNotTheLayers) {
  const std::string folder = "producers/ct_llama_w4a16_g64_sym";
  const std::filesystem::path dir =
      Patched(folder, kO + ".weight_shape", [](testing::TestTensor* t) { Set(t, 1, 64); });
  const Finding f = OnlyError(dir, folder, FindingKind::kStoredShape, kO + ".weight_shape", kO,
                              "says the weight is [128, 64], but the layer's is [128, 128]");
  EXPECT_EQ(f.expected, "[128, 128]");
  EXPECT_EQ(f.found, "[128, 64]");
}

// The codes themselves: only --deep reads them.
TEST(CheckValuesTest, DeepFindsNanCodesAndZeroRows) {
  struct Case {
    std::string folder;
    std::string tensor;
    std::string layer;
    std::function<void(testing::TestTensor*)> edit;
    FindingKind kind;
    std::string says;
  };
  const std::string down = "model.layers.1.mlp.down_proj";
  const Case kCases[] = {
      {"producers/mo_llama_fp8", kO + ".weight", kO,
       [](testing::TestTensor* t) { t->bytes[300] = 0xFF; }, FindingKind::kBadValue,
       "holds the NaN or infinity code 0xFF at index 300"},
      {"producers/bf16_llama", down + ".weight", down,
       [](testing::TestTensor* t) {
         const size_t row = t->bytes.size() / static_cast<size_t>(t->shape[0]);
         std::fill(t->bytes.begin() + 2 * row, t->bytes.begin() + 3 * row, 0);
       },
       FindingKind::kDeadRows, "row 2 is all zeros"},
  };
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.folder + " " + c.tensor);
    const std::filesystem::path dir = Patched(c.folder, c.tensor, c.edit);
    Result<CheckReport> values = Check(dir, c.folder);
    ASSERT_TRUE(values.ok()) << values.status().message();
    EXPECT_EQ(values->errors, 0) << Describe(*values);
    OnlyError(dir, c.folder, c.kind, c.tensor, c.layer, c.says, CheckReads::kEveryByte);
  }
}

// What each mode read: --deep every tensor's bytes, the default fewer, each stretch once.
TEST(CheckValuesTest, EachModeReadsWhatItSays) {
  const std::string folder = "producers/ct_llama_w4a16_g64_sym";
  Result<CheckReport> deep = Check(kData + folder, folder, CheckReads::kEveryByte);
  Result<CheckReport> values = Check(kData + folder, folder);
  ASSERT_TRUE(deep.ok() && values.ok());
  const uint64_t file_bytes = std::filesystem::file_size(kData + folder + "/model.safetensors");
  uint64_t header = 0;
  std::ifstream in(kData + folder + "/model.safetensors", std::ios::binary);
  in.read(reinterpret_cast<char*>(&header), 8);
  EXPECT_EQ(deep->bytes_read, file_bytes - 8 - header);
  EXPECT_GT(values->bytes_read, 0u);
  EXPECT_LT(values->bytes_read * 4, deep->bytes_read);  // the 4-bit codes are most of it
  for (const CheckReport* report : {&*deep, &*values}) {
    uint64_t sum = 0;
    for (const ReadStretch& s : report->read_stretches) sum += s.length;
    EXPECT_EQ(sum, report->bytes_read);
  }
}

TEST(CheckValuesTest, EveryFixtureReadsCleanToTheLastByte) {
  for (const std::string& fixture : testing::FixtureFolders()) {
    SCOPED_TRACE(fixture);
    Result<CheckReport> report = Check(kData + fixture, fixture, CheckReads::kEveryByte);
    ASSERT_TRUE(report.ok()) << report.status().message();
    EXPECT_EQ(report->errors, 0) << Describe(*report);
    EXPECT_GT(report->bytes_read, 0u);
  }
}

}  // namespace
}  // namespace quantpath
