// The NVFP4 spec (nvfp4_block_16_linear, and nvfp4_block_16_128x4 on --device sm100) on
// checkpoints written by llmcompressor (NVFP4A16 and NVFP4 presets, compressed-tensors
// nvfp4-pack-quantized) and by ModelOpt (NVFP4_DEFAULT_CFG),
// tests/data/producers/{ct,mo}_llama_nvfp4*, through the pipeline:
//   1. the fp64 reference, rounded to the saved dequantization's dtype, equals the producer's own
//      dequantization exactly, and the loaded parameters are the checkpoint's bytes;
//   2. seeded runs of the dense (o, down) and fused (qkv, gate_up) layers are within tolerance;
//   3. fused legs with different global scales get one, the engines' choice, and the error that
//      adds is what the ratio of the globals predicts;
//   4. on sm100 every layer holds plan's bytes in the 128x4 layout and runs to the linear
//      layout's outputs bit for bit;
//   5. errors name the tensor and the layer; a row split that cuts a 16-block names the legal
//      sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "quantpath/pipeline.h"
#include "src/specs/nvfp4_family.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kData = std::string(QUANTPATH_TEST_DATA) + "/";

using testing::Rounded;
using testing::SavedValue;

Result<Model> Open(const std::string& dir, int64_t tp = 1, std::string_view device = "cpu") {
  Result<OpenOptions> options = OpenOptions::Parse("native", "", device, "auto", tp);
  if (!options.ok()) return options.status();
  return OpenModel(dir, *options);
}

struct Fixture {
  std::string folder;
  SourceLayout layout;
  bool w4a4;
};

void PrintTo(const Fixture& f, std::ostream* os) { *os << f.folder; }

class Nvfp4FixturesTest : public ::testing::TestWithParam<Fixture> {};

TEST_P(Nvfp4FixturesTest, MatchesTheProducerAndRuns) {
  const Fixture& f = GetParam();
  const std::string dir = kData + f.folder;
  Result<Model> model = Open(dir);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<std::vector<LayerDecision>> layers = DecideAll(*model);
  ASSERT_TRUE(layers.ok()) << layers.status().message();
  Result<std::shared_ptr<const SafetensorsFile>> saved =
      SafetensorsFile::Open(std::filesystem::path(dir) / "dequant.safetensors");
  ASSERT_TRUE(saved.ok()) << saved.status().message();

  int checked = 0;
  int fused = 0;
  for (const LayerDecision& decision : *layers) {
    if (decision.site->kind != SiteKind::kLinear || !decision.spec ||
        decision.spec->family != kNvfp4Family) {
      continue;
    }
    const std::string& path = decision.site->path;
    SCOPED_TRACE(path);
    EXPECT_EQ(decision.spec->ToId(), "nvfp4_block_16_linear");
    EXPECT_TRUE(decision.kernel_available);
    Result<LoadedLayer> loaded = LoadLayer(*model, path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->scheme.weight.load.layout, f.layout);
    EXPECT_EQ(loaded->activation.mode, f.w4a4 ? ActMode::kDynamicGroup : ActMode::kNone);
    Result<ReferenceLayer> ref = LoadReference(*loaded);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const int64_t k = ref->cols;

    int64_t row = 0;
    for (const std::string& prefix : loaded->leg_prefixes) {
      const TensorInfo* info = (*saved)->Find(prefix + ".weight");
      ASSERT_NE(info, nullptr) << prefix;
      ASSERT_EQ(info->shape, (std::vector<int64_t>{info->shape[0], k}));
      const TensorView view = (*saved)->View(*info);
      int64_t mismatches = 0;
      int64_t nonzero = 0;
      for (int64_t i = 0; i < info->shape[0] * k; ++i) {
        if (Rounded(info->dtype, ref->weight[row * k + i]) != SavedValue(view, i)) ++mismatches;
        if (SavedValue(view, i) != 0.0f) ++nonzero;
      }
      EXPECT_EQ(mismatches, 0) << prefix << " of " << info->shape[0] * k;
      EXPECT_GT(nonzero, info->shape[0] * k / 2) << prefix;
      row += info->shape[0];
    }
    EXPECT_EQ(row, ref->rows);
    EXPECT_EQ(ref->input_scale.has_value(), f.w4a4);

    // The canonical layout holds the checkpoint's bytes: codes and block scales of the last leg.
    const LinearParams& params = loaded->linear.params();
    const std::string& last = loaded->leg_prefixes.back();
    const bool modelopt = f.layout == SourceLayout::kModelOptNvfp4;
    Result<TensorView> codes =
        loaded->checkpoint.Get(last + (modelopt ? ".weight" : ".weight_packed"));
    ASSERT_TRUE(codes.ok());
    const int64_t last_rows = codes->info->shape[0];
    EXPECT_EQ(std::memcmp(params.tensor(Slot::kWeight).raw() +
                              (params.rows - last_rows) * params.tensor(Slot::kWeight).row_bytes(),
                          codes->bytes.data(), codes->bytes.size()),
              0);
    EXPECT_EQ(params.tensor(Slot::kWeightScale).cols(), k / 16);

    for (uint64_t seed : {3u, 11u}) {
      Result<LayerRun> run = RunSeeded(*loaded, 7, seed);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_TRUE(run->pass()) << "rel " << run->rel << " tol " << run->tol;
      EXPECT_EQ(run->tol, f.w4a4 ? 5e-2 : 1e-4);
      EXPECT_EQ(run->kernel.rfind("GemmNvfp4", 0), 0u) << run->kernel;
      std::printf("%s %s seed %llu: rel %.3g (tol %.3g)\n", f.folder.c_str(), path.c_str(),
                  static_cast<unsigned long long>(seed), run->rel, run->tol);
    }
    if (loaded->leg_prefixes.size() > 1) ++fused;
    ++checked;
  }
  EXPECT_EQ(checked, 8);  // qkv, o, gate_up, down in each of the two layers
  EXPECT_EQ(fused, 4);
}

// Blackwell's layout on the host: same codes, scales swizzled (each rank its own rows), same
// products, at tp 1 and on both ranks of tp 2.
TEST_P(Nvfp4FixturesTest, Sm100LoadsTheTiledLayoutWithTheLinearOutputs) {
  const std::string dir = kData + GetParam().folder;
  for (int64_t tp : {1, 2}) {
    Result<Model> cpu = Open(dir, tp);
    Result<Model> sm100 = Open(dir, tp, "sm100");
    ASSERT_TRUE(cpu.ok() && sm100.ok());
    Result<std::vector<LayerDecision>> layers = DecideAll(*sm100);
    ASSERT_TRUE(layers.ok()) << layers.status().message();
    int checked = 0;
    for (const LayerDecision& decision : *layers) {
      if (!decision.spec || decision.spec->family != kNvfp4Family) continue;
      const std::string& path = decision.site->path;
      SCOPED_TRACE(path + " tp " + std::to_string(tp));
      EXPECT_EQ(decision.spec->ToId(), "nvfp4_block_16_128x4");
      EXPECT_TRUE(decision.kernel_available);
      ASSERT_TRUE(decision.bytes.has_value());
      for (int rank = 0; rank < tp; ++rank) {
        Result<LoadedLayer> tiled = LoadLayer(*sm100, path, rank);
        ASSERT_TRUE(tiled.ok()) << tiled.status().message();
        // What the rank holds is what its spec says it stores; plan's bytes are tp 1's.
        const LinearParams& params = tiled->linear.params();
        EXPECT_EQ(params.WeightBytes(), *tiled->linear.spec().StorageBytes(params.request));
        if (tp == 1) {
          EXPECT_EQ(params.WeightBytes(), *decision.bytes);
        }
        Result<LoadedLayer> linear = LoadLayer(*cpu, path, rank);
        ASSERT_TRUE(linear.ok()) << linear.status().message();
        Result<LayerRun> a = RunSeeded(*linear, 5, 3);
        Result<LayerRun> b = RunSeeded(*tiled, 5, 3);
        ASSERT_TRUE(a.ok() && b.ok());
        // The host runs the tiled layout on the reference kernel and the linear one on the
        // fastest here: the same products summed in another order (one kernel gives the same bits
        // for both layouts: nvfp4_tiled_test).
        ASSERT_EQ(a->y.size(), b->y.size());
        double max_diff = 0, max_y = 0;
        for (size_t i = 0; i < a->y.size(); ++i) {
          max_diff = std::max(max_diff, std::fabs(double{a->y[i]} - b->y[i]));
          max_y = std::max(max_y, std::fabs(double{a->y[i]}));
        }
        EXPECT_LE(max_diff, 1e-5 * max_y);
        EXPECT_TRUE(b->pass()) << "rel " << b->rel << " tol " << b->tol;
      }
      ++checked;
    }
    EXPECT_EQ(checked, 8);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Nvfp4FixturesTest,
                         ::testing::Values(Fixture{"producers/ct_llama_nvfp4a16",
                                                   SourceLayout::kCtNvfp4PackQuantized, false},
                                           Fixture{"producers/ct_llama_nvfp4",
                                                   SourceLayout::kCtNvfp4PackQuantized, true},
                                           Fixture{"producers/mo_llama_nvfp4",
                                                   SourceLayout::kModelOptNvfp4, true}),
                         [](const ::testing::TestParamInfo<Fixture>& info) {
                           return info.param.folder.substr(info.param.folder.find('/') + 1);
                         });

void Scale(testing::TestTensor* t, float factor) {
  float v;
  std::memcpy(&v, t->bytes.data(), 4);
  v *= factor;
  std::memcpy(t->bytes.data(), &v, 4);
}

// ModelOpt: k_proj's weight_scale_2 doubled. The engines keep the legs' max (k's) and leave the
// block scales alone, so every leg comes out twice the original, while the truth (each leg with
// its own global, the reference) is twice the original for k only. compressed-tensors: k_proj's
// weight_global_scale (a divisor) doubled; the engines keep the max divisor (k's), so every leg
// comes out half the original. The error that adds on q and v is |factor - 1| of their outputs.
TEST(Nvfp4FusedGlobals, HarmonisedAsTheEnginesDoAndTheErrorItAdds) {
  const std::string k_proj = "model.layers.0.self_attn.k_proj";
  const std::string qkv = "model.layers.0.self_attn.qkv_proj";
  constexpr int64_t kM = 5;
  struct Case {
    std::string folder;
    std::string tensor;
    double factor;  // the kernel's output over the unmutated one, on every row
  };
  for (const Case& c :
       {Case{"producers/mo_llama_nvfp4", k_proj + ".weight_scale_2", 2.0},
        Case{"producers/ct_llama_nvfp4a16", k_proj + ".weight_global_scale", 0.5}}) {
    SCOPED_TRACE(c.folder);
    Result<Model> original = Open(kData + c.folder);
    ASSERT_TRUE(original.ok()) << original.status().message();
    Result<LoadedLayer> before = LoadLayer(*original, qkv);
    ASSERT_TRUE(before.ok()) << before.status().message();
    Result<LayerRun> base = RunSeeded(*before, kM, 1);
    ASSERT_TRUE(base.ok() && base->pass());

    const std::filesystem::path dir =
        testing::MutatedFixture(kData + c.folder, [&](testing::TestTensor* t) {
          if (t->name == c.tensor) Scale(t, 2.0f);
          return true;
        });
    Result<Model> model = Open(dir.string());
    ASSERT_TRUE(model.ok()) << model.status().message();
    Result<LoadedLayer> loaded = LoadLayer(*model, qkv);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    Result<TensorView> stored = loaded->checkpoint.Get(c.tensor);
    ASSERT_TRUE(stored.ok());
    float k_stored;
    std::memcpy(&k_stored, stored->bytes.data(), 4);
    EXPECT_EQ(LoadFloat(loaded->linear.params().tensor(Slot::kWeightGlobalScale), 0),
              c.factor > 1 ? k_stored : 1.0f / k_stored);
    Result<LayerRun> run = RunSeeded(*loaded, kM, 1);
    ASSERT_TRUE(run.ok()) << run.status().message();
    ASSERT_EQ(run->y.size(), base->y.size());
    const int64_t n = static_cast<int64_t>(run->y.size()) / kM;
    ASSERT_EQ(n, 256);
    double qv_error = 0, truth_max = 0;
    for (int64_t i = 0; i < kM * n; ++i) {
      // A power-of-two global scales every product exactly.
      EXPECT_NEAR(run->y[i], c.factor * base->y[i], 1e-6 * std::fabs(base->y[i]) + 1e-9) << i;
      const bool is_k = i % n >= 128 && i % n < 192;
      const double truth = is_k ? c.factor * base->y[i] : base->y[i];
      truth_max = std::max(truth_max, std::fabs(truth));
      if (!is_k) qv_error = std::max(qv_error, std::fabs(c.factor - 1) * std::fabs(base->y[i]));
    }
    const double predicted = qv_error / truth_max;
    EXPECT_FALSE(run->pass());
    EXPECT_NEAR(run->rel, predicted, 0.05 * predicted) << "measured " << run->rel;
    std::printf("%s: k_proj's global doubled, rel %.3g (predicted %.3g, tol %.3g)\n",
                c.folder.c_str(), run->rel, predicted, run->tol);
  }
}

std::string LoadError(const std::filesystem::path& dir, const std::string& layer, int64_t tp = 1) {
  return testing::LayerLoadError(Open(dir.string(), tp), layer);
}

TEST(Nvfp4Errors, NameTheTensorAndTheLayer) {
  const std::string qkv = "model.layers.0.self_attn.qkv_proj";
  const std::string k_proj = "model.layers.0.self_attn.k_proj";
  struct Case {
    std::string folder;
    std::string tensor;
    std::string what;  // "drop", "dtype", "shape", "nan", "zero"
    std::string expect;
  };
  for (const Case& c : {
           Case{"producers/mo_llama_nvfp4", k_proj + ".weight_scale_2", "drop",
                "is not in the checkpoint"},
           Case{"producers/mo_llama_nvfp4", k_proj + ".input_scale", "drop",
                "is not in the checkpoint"},
           Case{"producers/ct_llama_nvfp4", k_proj + ".weight_packed", "dtype", "expects U8"},
           Case{"producers/ct_llama_nvfp4", k_proj + ".weight_scale", "shape", "expected [64, 8]"},
           Case{"producers/ct_llama_nvfp4a16", k_proj + ".weight_scale", "nan", "fp8 NaN"},
           Case{"producers/ct_llama_nvfp4a16", k_proj + ".weight_global_scale", "zero",
                "must be positive"},
       }) {
    SCOPED_TRACE(c.folder + " " + c.tensor + " " + c.what);
    const std::filesystem::path dir =
        testing::MutatedFixture(kData + c.folder, [&](testing::TestTensor* t) {
          if (t->name != c.tensor) return true;
          if (c.what == "drop") return false;
          if (c.what == "dtype") {
            t->dtype = "I8";
          } else if (c.what == "shape") {
            t->shape[0] /= 2;
            t->bytes.resize(t->bytes.size() / 2);
          } else if (c.what == "nan") {
            t->bytes[5] = 0x7F;
          } else {
            std::fill(t->bytes.begin(), t->bytes.end(), 0);
          }
          return true;
        });
    const std::string message = LoadError(dir, qkv);
    EXPECT_NE(message.find(qkv), std::string::npos) << message;
    EXPECT_NE(message.find(c.tensor), std::string::npos) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
}

// o_proj's K of 128 splits into 8 whole 16-blocks at most.
TEST(Nvfp4Errors, ARowSplitThatCutsABlockNamesTheLegalSizes) {
  const std::string o_proj = "model.layers.1.self_attn.o_proj";
  EXPECT_EQ(
      LoadError(kData + "producers/mo_llama_nvfp4", o_proj, 16),
      o_proj +
          ": nvfp4_block_16_linear with tensor-parallel size 16 splits K = 128 into slices of "
          "8 columns, which is not a multiple of the 16-column scale block; legal --tp: 1, "
          "2, 4, 8");
}

}  // namespace
}  // namespace quantpath
