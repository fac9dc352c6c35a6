// Quantizing at load (scheme.online) on the bf16 Llama of the producer fixtures
// (tests/data/producers/bf16_llama), against compressed-tensors' own quantization of the same
// weights and vLLM's scaled_fp8_quant written in torch (online_ref.safetensors there, SOURCES.md):
//   1. every --online target's codes and scales equal the library's bit for bit, for the fused
//      q/k/v and down_proj of layer 0, and the kernels' k_proj (X = I) equals the library's
//      dequantization;
//   2. `run`'s error is the quantization's: against the unquantized layer, the error the
//      library's weights make (with X rounded as the kernel rounds it);
//   3. at tp 2 a rank holds its slice of the whole layer's codes, or the split is refused naming
//      the layer; the whole model loads, every linear layer quantized;
//   3b. MoE experts (tests/data/producers/bf16_qwen3moe) quantize per projection, to the
//      library's codes of each projection on its own;
//   4. --quantization fp8 gives each engine's scheme; targets without a quantizer or a spec on
//      the device, quantized folders and non-finite weights are errors naming them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "quantpath/numeric.h"
#include "quantpath/pipeline.h"
#include "src/specs/nvfp4_family.h"
#include "tests/pipeline/producer_values.h"

namespace quantpath {
namespace {

const std::string kDir = std::string(QUANTPATH_TEST_DATA) + "/producers/bf16_llama";
const std::string kQkv = "model.layers.0.self_attn.qkv_proj";
const std::string kDown = "model.layers.0.mlp.down_proj";
const std::string kK = "model.layers.0.self_attn.k_proj";

Result<Model> Open(const std::string& online, int64_t tp = 1, const std::string& dir = kDir) {
  QP_ASSIGN_OR_RETURN(OpenOptions options, OpenOptions::Parse("native", "", "cpu", "auto", tp));
  QP_RETURN_IF_ERROR(options.SetOnline(online));
  return OpenModel(dir, options);
}

const std::string kMoeDir = std::string(QUANTPATH_TEST_DATA) + "/producers/bf16_qwen3moe";

std::shared_ptr<const SafetensorsFile> OpenReference(const std::string& dir) {
  Result<std::shared_ptr<const SafetensorsFile>> opened =
      SafetensorsFile::Open(dir + "/online_ref.safetensors");
  EXPECT_TRUE(opened.ok()) << opened.status().message();
  return opened.ok() ? *opened : nullptr;
}

// The library's quantization of each folder's reference modules.
const SafetensorsFile& Reference() {
  static const std::shared_ptr<const SafetensorsFile> file = OpenReference(kDir);
  return *file;
}
const SafetensorsFile& MoeReference() {
  static const std::shared_ptr<const SafetensorsFile> file = OpenReference(kMoeDir);
  return *file;
}

// The bytes of the library's `<target>/<prefix><suffix>` for every leg prefix, concatenated.
std::vector<uint8_t> ReferenceBytes(const SafetensorsFile& reference, const std::string& target,
                                    const std::vector<std::string>& prefixes,
                                    const std::string& suffix) {
  std::vector<uint8_t> bytes;
  for (const std::string& prefix : prefixes) {
    const TensorInfo* info = reference.Find(target + "/" + prefix + suffix);
    EXPECT_NE(info, nullptr) << target << "/" << prefix << suffix;
    if (info == nullptr) continue;
    const TensorView view = reference.View(*info);
    const auto* data = reinterpret_cast<const uint8_t*>(view.bytes.data());
    bytes.insert(bytes.end(), data, data + view.bytes.size());
  }
  return bytes;
}

std::vector<uint8_t> SlotBytes(const LinearParams& params, Slot slot) {
  const ParamTensor& t = params.tensor(slot);
  const auto* data = t.data<uint8_t>();
  return {data, data + t.bytes()};
}

// How a family keeps the library's tensors after loading.
enum class Kept : uint8_t {
  kAsStored,       // the slot's bytes are the legs' tensors, concatenated
  kPerRow,         // one fp32 per leg, broadcast to its rows (fp8_per_tensor)
  kOffsetCodes,    // int8: the signed codes + 128 (int_family.h)
  kInverseGlobal,  // NVFP4: the multiplier 1 / weight_global_scale (nvfp4_family.h)
  kZeroColumns,    // int4 zero points: packed along N as stored, along each row's groups kept
};

struct SlotCheck {
  Slot slot;
  std::string suffix;
  Kept kept;
};

struct Target {
  std::string name;
  std::string spec_id;
  std::vector<SlotCheck> slots;
  std::string weights_of = name;  // the library's quantization whose tensors the target's equal
};

void PrintTo(const Target& t, std::ostream* os) { *os << t.name; }

const Target kTargets[] = {
    {"w8a8-fp8-tensor-dyn",
     "fp8_per_tensor",
     {{Slot::kWeight, ".weight", Kept::kAsStored},
      {Slot::kWeightScale, ".weight_scale", Kept::kPerRow}}},
    {"w8a8-fp8-channel-dyn",
     "fp8_per_channel",
     {{Slot::kWeight, ".weight", Kept::kAsStored},
      {Slot::kWeightScale, ".weight_scale", Kept::kAsStored}}},
    {"w8a8-fp8-block128x128-dyn",
     "fp8_block_128_128",
     {{Slot::kWeight, ".weight", Kept::kAsStored},
      {Slot::kWeightScale, ".weight_scale", Kept::kAsStored}}},
    {"w8a16-int8-channel",
     "int8_channel",
     {{Slot::kWeight, ".weight", Kept::kOffsetCodes},
      {Slot::kWeightScale, ".weight_scale", Kept::kAsStored}}},
    {"w4a16-nvfp4",
     "nvfp4_block_16_linear",
     {{Slot::kWeight, ".weight_packed", Kept::kAsStored},
      {Slot::kWeightScale, ".weight_scale", Kept::kAsStored},
      {Slot::kWeightGlobalScale, ".weight_global_scale", Kept::kInverseGlobal}}},
    // The same weights as w4a16-nvfp4; X rounded to NVFP4 with each row's own global.
    {"w4a4-nvfp4",
     "nvfp4_block_16_linear",
     {{Slot::kWeight, ".weight_packed", Kept::kAsStored},
      {Slot::kWeightScale, ".weight_scale", Kept::kAsStored},
      {Slot::kWeightGlobalScale, ".weight_global_scale", Kept::kInverseGlobal}},
     "w4a16-nvfp4"},
    {"w4a16-mxfp4",
     "mxfp4_block_32",
     {{Slot::kWeight, ".weight_packed", Kept::kAsStored},
      {Slot::kWeightScale, ".weight_scale", Kept::kAsStored}}},
    {"w8a8-int8-channel-dyn",
     "int8_channel",
     {{Slot::kWeight, ".weight", Kept::kOffsetCodes},
      {Slot::kWeightScale, ".weight_scale", Kept::kAsStored}}},
    {"w4a16-int4-g128",
     "int4_group_128",
     {{Slot::kWeight, ".weight_packed", Kept::kAsStored},
      {Slot::kWeightScale, ".weight_scale", Kept::kAsStored}}},
    {"w4a16-int4-g128-asym",
     "int4_group_128_zp",
     {{Slot::kWeight, ".weight_packed", Kept::kAsStored},
      {Slot::kWeightScale, ".weight_scale", Kept::kAsStored},
      {Slot::kWeightZero, ".weight_zero_point", Kept::kZeroColumns}}},
};

// The slot of `params` (loaded from the legs `prefixes`) against the library's tensors.
void ExpectSlotMatches(const SafetensorsFile& reference, const Target& target,
                       const LinearParams& params, const std::vector<std::string>& prefixes,
                       const SlotCheck& check) {
  SCOPED_TRACE(SlotName(check.slot));
  std::vector<uint8_t> want = ReferenceBytes(reference, target.weights_of, prefixes, check.suffix);
  std::vector<uint8_t> have = SlotBytes(params, check.slot);
  switch (check.kept) {
    case Kept::kAsStored:
      break;
    case Kept::kOffsetCodes:
      for (uint8_t& b : want) b ^= 0x80;  // int8 s as the unsigned code s + 128
      break;
    case Kept::kPerRow: {
      std::vector<uint8_t> rows;
      for (size_t leg = 0; leg < params.leg_rows.size(); ++leg) {
        for (int64_t r = 0; r < params.leg_rows[leg]; ++r) {
          rows.insert(rows.end(), want.begin() + 4 * leg, want.begin() + 4 * leg + 4);
        }
      }
      want = rows;
      break;
    }
    case Kept::kInverseGlobal: {
      float global;
      ASSERT_GE(want.size(), 4u);
      std::memcpy(&global, want.data(), 4);
      const float multiplier = 1.0f / global;
      want.assign(4, 0);
      std::memcpy(want.data(), &multiplier, 4);
      break;
    }
    case Kept::kZeroColumns: {
      // Each leg's [ceil(rows / 8), groups] int32 words, code r of a group's column in bits
      // 4·(r % 8) of word r / 8, as canonical rows of `groups` nibbles.
      const int64_t groups = params.tensor(check.slot).cols();
      std::vector<uint8_t> rows;
      size_t leg_start = 0;
      for (int64_t leg_rows : params.leg_rows) {
        for (int64_t r = 0; r < leg_rows; ++r) {
          std::vector<uint8_t> row(static_cast<size_t>((groups + 1) / 2), 0);
          for (int64_t g = 0; g < groups; ++g) {
            uint32_t word;
            std::memcpy(&word, want.data() + leg_start + 4 * ((r / 8) * groups + g), 4);
            const uint32_t code = (word >> (4 * (r % 8))) & 0xF;
            row[g / 2] = static_cast<uint8_t>(row[g / 2] | (g % 2 == 0 ? code : code << 4));
          }
          rows.insert(rows.end(), row.begin(), row.end());
        }
        leg_start += static_cast<size_t>(4 * ((leg_rows + 7) / 8) * groups);
      }
      want = rows;
      break;
    }
  }
  ASSERT_EQ(have.size(), want.size());
  int64_t differ = 0;
  for (size_t i = 0; i < want.size(); ++i) differ += have[i] != want[i];
  EXPECT_EQ(differ, 0) << "of " << want.size() << " bytes";
}

// W' as the kernels see it: Y = I · W'ᵀ, each column of Y one input column of W'.
std::vector<double> KernelWeights(const Linear& linear) {
  const int64_t k = linear.in_features();
  const int64_t n = linear.out_features();
  std::vector<float> eye(static_cast<size_t>(k * k), 0.0f);
  for (int64_t i = 0; i < k; ++i) eye[i * k + i] = 1.0f;
  Result<std::vector<float>> y = linear.Forward(eye, k);
  EXPECT_TRUE(y.ok()) << y.status().message();
  std::vector<double> w(static_cast<size_t>(n * k));
  if (!y.ok()) return w;
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t r = 0; r < n; ++r) w[r * k + c] = (*y)[c * n + r];
  }
  return w;
}

class OnlineTest : public ::testing::TestWithParam<Target> {};

TEST_P(OnlineTest, CodesAndScalesAreTheLibrarysAndRunMeasuresTheQuantization) {
  const Target& target = GetParam();
  Result<Model> model = Open(target.name);
  ASSERT_TRUE(model.ok()) << model.status().message();
  for (const std::string& path : {kQkv, kDown}) {
    SCOPED_TRACE(path);
    Result<LoadedLayer> layer = LoadLayer(*model, path);
    ASSERT_TRUE(layer.ok()) << layer.status().message();
    EXPECT_EQ(layer->key.ToId(), target.spec_id);
    EXPECT_TRUE(layer->scheme.online);
    EXPECT_EQ(layer->scheme.CanonicalName(), target.name + "-online");
    for (const SlotCheck& check : target.slots) {
      ExpectSlotMatches(Reference(), target, layer->linear.params(), layer->leg_prefixes, check);
    }
    const std::vector<double> w_q = KernelWeights(layer->linear);
    Result<ReferenceLayer> dense = LoadReference(*layer);  // the checkpoint's bf16 weights
    ASSERT_TRUE(dense.ok()) << dense.status().message();
    ASSERT_EQ(dense->weight.size(), w_q.size());

    // The library's dequantized k_proj (rows 128 … 191 of q/k/v), to a few fp32 roundings: the
    // kernels multiply code, scale and global in their own order.
    if (path == kQkv) {
      const TensorInfo* info = Reference().Find(target.weights_of + "/" + kK + ".dequant");
      ASSERT_NE(info, nullptr);
      const TensorView view = Reference().View(*info);
      double worst = 0;
      double largest = 0;
      for (int64_t i = 0; i < 64 * 128; ++i) {
        const double want = testing::SavedValue(view, i);
        worst = std::max(worst, std::abs(w_q[128 * 128 + i] - want));
        largest = std::max(largest, std::abs(want));
      }
      EXPECT_LE(worst, 1e-6 * largest);
    }

    // run: the error against the unquantized layer, and no tolerance.
    constexpr int64_t kM = 8;
    Result<LayerRun> run = RunSeeded(*layer, kM, 1);
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_TRUE(run->quantized_at_load);
    EXPECT_TRUE(std::isnan(run->tol));
    EXPECT_TRUE(run->pass());
    ASSERT_TRUE(run->weight_error.has_value());
    // Independently: Y' = X' · W'ᵀ with X' rounded as the kernel's mode says, against X · Wᵀ.
    const int64_t n = dense->rows;
    const int64_t k = dense->cols;
    std::vector<double> x;
    for (uint16_t bits : SeededInput(*layer, kM, 1)) x.push_back(Bf16ToFloat(bits));
    const std::vector<double> xq =
        QuantizeActivationsReference(x, kM, k, layer->activation, std::nullopt);
    double err = 0;
    double ref = 0;
    double w_err = 0;
    double w_max = 0;
    for (int64_t i = 0; i < n * k; ++i) {
      w_err = std::max(w_err, std::abs(w_q[i] - dense->weight[i]));
      w_max = std::max(w_max, std::abs(dense->weight[i]));
    }
    for (int64_t i = 0; i < kM; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double y = 0;
        double y_q = 0;
        for (int64_t c = 0; c < k; ++c) {
          y += x[i * k + c] * dense->weight[j * k + c];
          y_q += xq[i * k + c] * w_q[j * k + c];
        }
        err = std::max(err, std::abs(y_q - y));
        ref = std::max(ref, std::abs(y));
      }
    }
    const double expected = err / ref;
    std::printf("%s %s: rel %.3e (expected %.3e), weights %.3e\n", target.name.c_str(),
                path.c_str(), run->rel, expected, *run->weight_error);
    EXPECT_GT(run->rel, 0.0);
    // fp32 accumulation, and activations whose fp8 rounding the kernel may take on the other
    // side of a tie (fp8_spec.cc's tolerance note).
    const double slack = layer->activation.mode == ActMode::kNone ? 1e-4 : 5e-2;
    EXPECT_NEAR(run->rel, expected, slack * expected);
    EXPECT_NEAR(*run->weight_error, w_err / w_max, 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, OnlineTest, ::testing::ValuesIn(kTargets));

// MoE experts quantize per projection (bf16_qwen3moe): experts 0 and 3 of layer 0 hold the
// library's codes and scales of each projection on its own, and their runs measure the
// quantization against the unquantized experts.
TEST_P(OnlineTest, ExpertsHoldTheLibrarysCodesPerProjection) {
  const Target& target = GetParam();
  Result<Model> model = Open(target.name, 1, kMoeDir);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<LoadedExperts> loaded = LoadExperts(*model, "model.layers.0.mlp.experts");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->key.ToId(), target.spec_id);
  EXPECT_TRUE(loaded->scheme.online);
  ASSERT_EQ(loaded->experts.size(), 4u);
  for (size_t e : {0u, 3u}) {
    const LoadedExpert& expert = loaded->experts[e];
    ASSERT_EQ(expert.projections.size(), 3u);
    for (size_t p = 0; p < 3; ++p) {
      SCOPED_TRACE(expert.prefixes[p]);
      EXPECT_TRUE(expert.projections[p].params().quantization_error.has_value());
      for (const SlotCheck& check : target.slots) {
        ExpectSlotMatches(MoeReference(), target, expert.projections[p].params(),
                          {expert.prefixes[p]}, check);
      }
    }
  }
  Result<ExpertsRun> run = RunExpertsSeeded(*loaded, 5, 11, std::nullopt);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->experts, 4);
  EXPECT_TRUE(run->w13.quantized_at_load);
  EXPECT_GT(run->w13.rel, 0.0);
  EXPECT_GT(run->w2.rel, 0.0);
  std::printf("%s experts: w13 rel %.3e, w2 rel %.3e\n", target.name.c_str(), run->w13.rel,
              run->w2.rel);
}

// Element (row, col) of a weight slot: a byte, or a nibble of two-per-byte E2M1 / int4 codes.
uint8_t Code(const ParamTensor& w, int64_t row, int64_t col) {
  const uint8_t* bytes = w.data<uint8_t>() + row * w.row_bytes();
  if (w.dtype() != QDType::kNVFP4 && w.dtype() != QDType::kMXFP4 && w.dtype() != QDType::kINT4) {
    return bytes[col];
  }
  return col % 2 == 0 ? bytes[col / 2] & 0xF : bytes[col / 2] >> 4;
}

// At tp 2 each rank's codes are its slice of the whole layer's (every rank quantizes the whole
// layer); column ranks compute exactly the whole layer's rows. A split the layout cannot hold is
// refused naming the layer.
TEST_P(OnlineTest, TensorParallelRanksHoldTheirSliceOfTheWholeLayer) {
  const Target& target = GetParam();
  Result<Model> whole_model = Open(target.name);
  Result<Model> model = Open(target.name, 2);
  ASSERT_TRUE(whole_model.ok()) << whole_model.status().message();
  ASSERT_TRUE(model.ok()) << model.status().message();
  for (const std::string& path : {kQkv, kDown}) {
    SCOPED_TRACE(path);
    Result<LoadedLayer> whole = LoadLayer(*whole_model, path);
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    Result<LayerRun> whole_run = RunSeeded(*whole, 4, 2);
    ASSERT_TRUE(whole_run.ok()) << whole_run.status().message();
    for (int rank = 0; rank < 2; ++rank) {
      Result<LoadedLayer> layer = LoadLayer(*model, path, rank);
      // q's 64 rows of a rank cut its 128-row block.
      const bool cuts_block = target.spec_id.starts_with("fp8_block") && path == kQkv;
      if (cuts_block) {
        ASSERT_FALSE(layer.ok());
        const std::string message(layer.status().message());
        EXPECT_NE(message.find(path), std::string::npos) << message;
        EXPECT_NE(message.find("legal --tp: 1"), std::string::npos) << message;
        continue;
      }
      ASSERT_TRUE(layer.ok()) << layer.status().message();
      const ParamTensor& w = layer->linear.params().tensor(Slot::kWeight);
      const ParamTensor& all = whole->linear.params().tensor(Slot::kWeight);
      int64_t differ = 0;
      for (int64_t r = 0; r < w.rows(); ++r) {
        for (int64_t c = 0; c < w.cols(); ++c) {
          differ += Code(w, r, c) != Code(all, layer->slice.rows[r], layer->slice.first_col + c);
        }
      }
      EXPECT_EQ(differ, 0) << "rank " << rank;
      if (path != kQkv) continue;
      Result<LayerRun> run = RunSeeded(*layer, 4, 2);
      ASSERT_TRUE(run.ok()) << run.status().message();
      const int64_t n = layer->linear.out_features();
      const int64_t full_n = whole->linear.out_features();
      int64_t outputs_differ = 0;
      for (int64_t i = 0; i < 4; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          outputs_differ += run->y[i * n + j] != whole_run->y[i * full_n + layer->slice.rows[j]];
        }
      }
      EXPECT_EQ(outputs_differ, 0) << "rank " << rank;
    }
  }
}

// W4A4 quantized at load divides each row of X by its own global: a row's output does not depend
// on the rows batched with it, and a row scaled by 2^10 (which would saturate against one global
// for the batch) gives the output scaled by 2^10, bit for bit.
TEST(OnlineW4A4, EachRowOfXTakesItsOwnGlobal) {
  Result<Model> model = Open("w4a4-nvfp4");
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<LoadedLayer> layer = LoadLayer(*model, kDown);
  ASSERT_TRUE(layer.ok()) << layer.status().message();
  EXPECT_EQ(layer->activation.kind, kNvfp4PerTokenGlobal);
  EXPECT_EQ(layer->activation.ToString(), "nvfp4 dynamic group 16, per-token global");
  EXPECT_TRUE(layer->linear.params().tensor(Slot::kInputScale).empty());
  const Linear& linear = layer->linear;
  const int64_t k = linear.in_features();
  const int64_t n = linear.out_features();
  std::vector<float> x(static_cast<size_t>(3 * k));
  for (int64_t c = 0; c < k; ++c) {
    x[c] = std::sin(0.37f * static_cast<float>(c));
    x[k + c] = 1024.0f * x[c];
    x[2 * k + c] = std::cos(0.11f * static_cast<float>(c)) * 1e-3f;
  }
  Result<std::vector<float>> batch = linear.Forward(x, 3);
  ASSERT_TRUE(batch.ok()) << batch.status().message();
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<float> row(x.begin() + i * k, x.begin() + (i + 1) * k);
    Result<std::vector<float>> alone = linear.Forward(row, 1);
    ASSERT_TRUE(alone.ok()) << alone.status().message();
    int64_t differ = 0;
    for (int64_t j = 0; j < n; ++j) differ += (*alone)[j] != (*batch)[i * n + j];
    EXPECT_EQ(differ, 0) << "row " << i;
  }
  int64_t not_scaled = 0;
  for (int64_t j = 0; j < n; ++j) not_scaled += (*batch)[n + j] != 1024.0f * (*batch)[j];
  EXPECT_EQ(not_scaled, 0);
}

// A weight near bf16's largest (0x7F7F, 3.39e38) rounds its block's amax past fp32's largest power
// of two: MXFP4 takes E8M0's largest scale, 254 (2^127), not a wrapped exponent.
TEST(OnlineMx, AWeightNearTheLargestTakesTheLargestScale) {
  const std::filesystem::path dir = testing::MutatedFixture(kDir, [](testing::TestTensor* t) {
    if (t->name == kK + ".weight") std::memcpy(t->bytes.data() + 2 * 70, "\x7F\x7F", 2);
    return true;
  });
  Result<Model> model = Open("w4a16-mxfp4", 1, dir.string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<LoadedLayer> layer = LoadLayer(*model, kQkv);
  ASSERT_TRUE(layer.ok()) << layer.status().message();
  // k_proj's rows follow q_proj's 128; element 70 of its row 0 is in block 2.
  const ParamTensor& scales = layer->linear.params().tensor(Slot::kWeightScale);
  EXPECT_EQ(scales.data<uint8_t>()[128 * scales.cols() + 2], 254);
}

TEST(OnlineLoad, EveryLinearLayerIsQuantizedAndEveryTensorConsumed) {
  Result<Model> model = Open("w8a8-fp8-channel-dyn");
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<ModelLoad> load = LoadModel(*model);
  ASSERT_TRUE(load.ok()) << load.status().message();
  EXPECT_EQ(load->quantized_at_load, 8);  // q/k/v, o, gate/up and down of two layers
  for (const SiteLoad& site : load->sites) {
    SCOPED_TRACE(site.site->path);
    const bool linear = site.site->kind == SiteKind::kLinear;
    EXPECT_EQ(site.quantization_error.has_value(), linear);
    if (linear) {
      EXPECT_EQ(site.spec_id, "fp8_per_channel");
    } else if (site.site->kind == SiteKind::kLmHead) {
      EXPECT_EQ(site.spec_id, "bf16");
    }
  }
}

// `--quantization fp8` on a folder without a description: what each engine quantizes at load.
TEST(OnlinePlan, QuantizationFp8IsEachEnginesOnlineScheme) {
  const std::pair<std::string, std::string> kEngines[] = {
      {"native", "w8a8-fp8-block128x128-dyn-online"},
      {"vllm@helpers", "w8a8-fp8-tensor-dyn-online"},
      {"vllm@0.33", "w8a8-fp8-tensor-dyn-online"},
      {"sglang@helpers", "w8a8-fp8-channel-dyn-online"},
      {"sglang@0.5.23", "w8a8-fp8-channel-dyn-online"}};
  for (const auto& [engine, scheme] : kEngines) {
    SCOPED_TRACE(engine);
    Result<OpenOptions> options = OpenOptions::Parse(engine, "fp8", "cpu");
    ASSERT_TRUE(options.ok()) << options.status().message();
    Result<Model> model = OpenModel(kDir, *options);
    ASSERT_TRUE(model.ok()) << model.status().message();
    Result<std::vector<LayerDecision>> layers = DecideAll(*model);
    ASSERT_TRUE(layers.ok()) << layers.status().message();
    int quantized = 0;
    for (const LayerDecision& layer : *layers) {
      const SiteKind kind = layer.site->kind;
      if (kind == SiteKind::kLinear) {
        ASSERT_TRUE(layer.decision.scheme.has_value()) << layer.site->path;
        EXPECT_EQ(layer.decision.scheme->CanonicalName(), scheme) << layer.site->path;
        EXPECT_EQ(layer.kernel_available, true) << layer.site->path;
        ++quantized;
      } else if (kind == SiteKind::kLmHead || kind == SiteKind::kEmbedding) {
        EXPECT_EQ(layer.decision.kind, DecisionKind::kUnquantized) << layer.site->path;
      } else if (kind == SiteKind::kAttention) {
        // The fp8 KV-cache method, except vLLM 0.33's online config, which attaches none.
        ASSERT_TRUE(layer.kv.has_value());
        EXPECT_EQ(layer.kv->engine_method, engine != "native" && engine != "vllm@0.33");
      }
    }
    EXPECT_EQ(quantized, 8);
  }
  // SGLang's own w8a8_fp8 without a description: per channel at load, as its fp8.
  Result<OpenOptions> w8a8 = OpenOptions::Parse("sglang@0.5.23", "w8a8_fp8", "cpu");
  ASSERT_TRUE(w8a8.ok()) << w8a8.status().message();
  Result<Model> model = OpenModel(kDir, *w8a8);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<ExplainedLayer> qkv = DecideLayer(*model, kQkv);
  ASSERT_TRUE(qkv.ok()) << qkv.status().message();
  ASSERT_TRUE(qkv->layer.decision.scheme.has_value());
  EXPECT_EQ(qkv->layer.decision.scheme->CanonicalName(), "w8a8-fp8-channel-dyn-online");
}

std::string SetOnlineError(const std::string& name, const std::string& device = "cpu") {
  Result<OpenOptions> options = OpenOptions::Parse("native", "", device);
  EXPECT_TRUE(options.ok()) << options.status().message();
  if (!options.ok()) return "";
  const Status status = options->SetOnline(name);
  EXPECT_FALSE(status.ok()) << name;
  return std::string(status.message());
}

TEST(OnlineErrors, NameTheSchemeTheDeviceAndWhy) {
  // No quantizer: the message lists the targets.
  const std::string int4 = SetOnlineError("w4a16-int4-channel");
  EXPECT_NE(int4.find("--online w4a16-int4-channel on cpu"), std::string::npos) << int4;
  EXPECT_NE(int4.find("w8a16-int8-channel"), std::string::npos) << int4;
  // Known and refused.
  const std::string static_fp8 = SetOnlineError("w8a8-fp8-tensor-static");
  EXPECT_NE(static_fp8.find("calibration"), std::string::npos) << static_fp8;
  // On sm100 NVFP4 is quantized into the linear layout's tensors, which its loader then tiles.
  Result<OpenOptions> sm100 = OpenOptions::Parse("native", "", "sm100");
  ASSERT_TRUE(sm100.ok()) << sm100.status().message();
  ASSERT_TRUE(sm100->SetOnline("w4a16-nvfp4").ok());
  Result<Model> tiled = OpenModel(kDir, *sm100);
  ASSERT_TRUE(tiled.ok()) << tiled.status().message();
  Result<LoadedLayer> qkv = LoadLayer(*tiled, kQkv);
  ASSERT_TRUE(qkv.ok()) << qkv.status().message();
  EXPECT_EQ(qkv->key.ToId(), "nvfp4_block_16_128x4");

  // A quantized checkpoint, and --online with --quantization.
  Result<Model> quantized =
      Open("w8a8-fp8-channel-dyn", 1,
           std::string(QUANTPATH_TEST_DATA) + "/producers/ct_llama_fp8_dynamic");
  ASSERT_FALSE(quantized.ok());
  EXPECT_NE(quantized.status().message().find("compressed-tensors"), std::string::npos)
      << quantized.status().message();
  Result<OpenOptions> both = OpenOptions::Parse("native", "fp8", "cpu");
  ASSERT_TRUE(both.ok());
  ASSERT_TRUE(both->SetOnline("w8a8-fp8-channel-dyn").ok());
  Result<Model> model = OpenModel(kDir, *both);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("give one of them"), std::string::npos)
      << model.status().message();

  // A weight that is not finite, named with the layer.
  const std::filesystem::path nan = testing::MutatedFixture(kDir, [](testing::TestTensor* t) {
    if (t->name == kK + ".weight") std::memcpy(t->bytes.data() + 2 * 70, "\xC0\x7F", 2);
    return true;
  });
  const std::string message = testing::LayerLoadError(Open("w4a16-mxfp4", 1, nan.string()), kQkv);
  EXPECT_NE(message.find(kK + ".weight"), std::string::npos) << message;
  EXPECT_NE(message.find("finite"), std::string::npos) << message;
  EXPECT_NE(message.find("row 0, column 70"), std::string::npos) << message;
}

}  // namespace
}  // namespace quantpath
