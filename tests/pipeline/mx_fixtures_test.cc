// The MX specs (mxfp4_block_32, mxfp8_block_32) on checkpoints written by llmcompressor
// (compressed-tensors MXFP4A16 / MXFP4 / MXFP8A16 / MXFP8 presets,
// tests/data/producers/ct_llama_mx*), by auto-round (its MXFP4 / MXFP8 schemes exported with
// packing auto_round:llm_compressor, tests/data/producers/ar_llama_auto_round_mx*) and from
// ModelSlim's documentation (W4A4_MXFP4, W4A8_MXFP,
// W8A8_MXFP8, tests/data/documented/modelslim_llama_*mxfp*), through the pipeline:
//   1. the fp64 reference, rounded to the saved dequantization's dtype, equals the writer's own
//      dequantization exactly, and the loaded parameters are the checkpoint's bytes;
//   2. seeded runs of the dense (o, down) and fused (qkv, gate_up) layers are within tolerance,
//      with the activations each scheme names;
//   3. errors name the tensor and the layer; a row-parallel slice that cuts a 32-block names the
//      layer and the legal sizes.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "quantpath/pipeline.h"
#include "src/specs/mx_family.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kData = std::string(QUANTPATH_TEST_DATA) + "/";

using testing::Rounded;
using testing::SavedValue;

Result<Model> Open(const std::string& dir, int64_t tp = 1) {
  Result<OpenOptions> options = OpenOptions::Parse("native", "", "cpu", "auto", tp);
  if (!options.ok()) return options.status();
  return OpenModel(dir, *options);
}

struct Fixture {
  std::string folder;
  std::string spec_id;
  SourceLayout layout;
  QDType activations;  // kBF16: weight-only
  int layers;          // linear sites: 4 per decoder layer
};

void PrintTo(const Fixture& f, std::ostream* os) { *os << f.folder; }

class MxFixturesTest : public ::testing::TestWithParam<Fixture> {};

TEST_P(MxFixturesTest, MatchesTheDequantizationAndRuns) {
  const Fixture& f = GetParam();
  const std::string dir = kData + f.folder;
  Result<testing::ProducerFolder> folder = testing::OpenProducerFolder(dir);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  const Model& model = *folder->model;
  const bool fp4 = f.spec_id.starts_with("mxfp4");

  int checked = 0;
  int fused = 0;
  for (const LayerDecision& decision : folder->layers) {
    if (decision.site->kind != SiteKind::kLinear) continue;
    const std::string& path = decision.site->path;
    SCOPED_TRACE(path);
    ASSERT_TRUE(decision.spec.has_value());
    EXPECT_EQ(decision.spec->ToId(), f.spec_id);
    EXPECT_TRUE(decision.kernel_available);
    Result<LoadedLayer> loaded = LoadLayer(model, path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->scheme.weight.load.layout, f.layout);
    if (f.activations == QDType::kBF16) {
      EXPECT_EQ(loaded->activation.mode, ActMode::kNone);
    } else {
      EXPECT_EQ(loaded->activation.mode, ActMode::kDynamicGroup);
      EXPECT_EQ(loaded->activation.dtype, f.activations);
      EXPECT_EQ(loaded->activation.group_size, kMxGroup);
    }
    Result<ReferenceLayer> ref = LoadReference(*loaded);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    testing::ExpectLegsMatchSaved(*folder->saved, loaded->leg_prefixes, *ref);
    // Most weights are not zero: a decoder that read nothing would match a zero tensor.
    int64_t nonzero = 0;
    for (double v : ref->weight) nonzero += v != 0.0;
    EXPECT_GT(nonzero, static_cast<int64_t>(ref->weight.size()) / 2);

    // The canonical layout holds the checkpoint's bytes: codes and scales of the last leg.
    const LinearParams& params = loaded->linear.params();
    const std::string& last = loaded->leg_prefixes.back();
    const bool packed_name = f.layout == SourceLayout::kCtMxfp4PackQuantized;
    Result<TensorView> codes =
        loaded->checkpoint.Get(last + (packed_name ? ".weight_packed" : ".weight"));
    ASSERT_TRUE(codes.ok());
    Result<TensorView> scales = loaded->checkpoint.Get(last + ".weight_scale");
    ASSERT_TRUE(scales.ok());
    const int64_t last_rows = codes->info->shape[0];
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& s = params.tensor(Slot::kWeightScale);
    EXPECT_EQ(w.row_bytes(), fp4 ? ref->cols / 2 : ref->cols);
    EXPECT_EQ(s.cols(), ref->cols / kMxGroup);
    EXPECT_EQ(std::memcmp(w.raw() + (params.rows - last_rows) * w.row_bytes(), codes->bytes.data(),
                          codes->bytes.size()),
              0);
    EXPECT_EQ(std::memcmp(s.raw() + (params.rows - last_rows) * s.row_bytes(), scales->bytes.data(),
                          scales->bytes.size()),
              0);

    for (uint64_t seed : {3u, 11u}) {
      Result<LayerRun> run = RunSeeded(*loaded, 7, seed);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_TRUE(run->pass()) << "rel " << run->rel << " tol " << run->tol;
      EXPECT_EQ(run->tol, 1e-4);
      EXPECT_EQ(run->kernel.rfind("GemmMx", 0), 0u) << run->kernel;
      std::printf("%s %s seed %llu: rel %.3g (tol %.3g)\n", f.folder.c_str(), path.c_str(),
                  static_cast<unsigned long long>(seed), run->rel, run->tol);
    }
    if (loaded->leg_prefixes.size() > 1) ++fused;
    ++checked;
  }
  EXPECT_EQ(checked, f.layers);
  EXPECT_EQ(fused, f.layers / 2);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, MxFixturesTest,
    ::testing::Values(Fixture{"producers/ct_llama_mxfp4a16", "mxfp4_block_32",
                              SourceLayout::kCtMxfp4PackQuantized, QDType::kBF16, 8},
                      Fixture{"producers/ct_llama_mxfp4", "mxfp4_block_32",
                              SourceLayout::kCtMxfp4PackQuantized, QDType::kMXFP4, 8},
                      Fixture{"producers/ct_llama_mxfp8a16", "mxfp8_block_32",
                              SourceLayout::kCtFloatQuantized, QDType::kBF16, 8},
                      Fixture{"producers/ct_llama_mxfp8", "mxfp8_block_32",
                              SourceLayout::kCtFloatQuantized, QDType::kMXFP8, 8},
                      Fixture{"producers/ar_llama_auto_round_mxfp4", "mxfp4_block_32",
                              SourceLayout::kCtMxfp4PackQuantized, QDType::kMXFP4, 8},
                      Fixture{"producers/ar_llama_auto_round_mxfp8", "mxfp8_block_32",
                              SourceLayout::kCtFloatQuantized, QDType::kMXFP8, 8},
                      Fixture{"documented/modelslim_llama_w4a4_mxfp4", "mxfp4_block_32",
                              SourceLayout::kModelSlim, QDType::kMXFP4, 4},
                      Fixture{"documented/modelslim_llama_w4a8_mxfp", "mxfp4_block_32",
                              SourceLayout::kModelSlim, QDType::kMXFP8, 4},
                      Fixture{"documented/modelslim_llama_w8a8_mxfp8", "mxfp8_block_32",
                              SourceLayout::kModelSlim, QDType::kMXFP8, 4}),
    [](const ::testing::TestParamInfo<Fixture>& info) {
      return info.param.folder.substr(info.param.folder.find('/') + 1);
    });

std::string LoadError(const std::filesystem::path& dir, const std::string& layer, int64_t tp = 1) {
  return testing::LayerLoadError(Open(dir.string(), tp), layer);
}

TEST(MxErrors, NameTheTensorAndTheLayer) {
  const std::string qkv = "model.layers.0.self_attn.qkv_proj";
  const std::string k_proj = "model.layers.0.self_attn.k_proj";
  struct Case {
    std::string folder;
    std::string tensor;
    std::string what;  // "drop", "dtype", "shape", "nan"
    std::string expect;
  };
  for (const Case& c : {
           Case{"producers/ct_llama_mxfp4", k_proj + ".weight_scale", "drop",
                "is not in the checkpoint"},
           Case{"producers/ct_llama_mxfp4", k_proj + ".weight_packed", "dtype", "expects U8"},
           Case{"producers/ct_llama_mxfp8", k_proj + ".weight", "dtype", "expects F8_E4M3"},
           Case{"producers/ct_llama_mxfp4a16", k_proj + ".weight_scale", "shape",
                "expected [64, 4]"},
           Case{"producers/ct_llama_mxfp8a16", k_proj + ".weight_scale", "nan", "E8M0 NaN"},
           Case{"documented/modelslim_llama_w4a4_mxfp4", k_proj + ".weight", "shape",
                "expected [32, 32]"},
           Case{"documented/modelslim_llama_w8a8_mxfp8", k_proj + ".weight_scale", "nan",
                "E8M0 NaN (0xFF) at row 0, block 1"},
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
          } else {
            t->bytes[1] = kE8M0Nan;
          }
          return true;
        });
    const std::string message = LoadError(dir, qkv);
    EXPECT_NE(message.find(qkv), std::string::npos) << message;
    EXPECT_NE(message.find(c.tensor), std::string::npos) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
}

// o_proj's K = 128 is four 32-blocks: --tp 8 would give each rank 16 columns, half a block.
TEST(MxErrors, ARowSliceThatCutsABlockNamesTheLayerAndTheLegalSizes) {
  const std::string o_proj = "model.layers.1.self_attn.o_proj";
  for (const char* folder : {"producers/ct_llama_mxfp4", "producers/ct_llama_mxfp8a16"}) {
    SCOPED_TRACE(folder);
    const std::string message = LoadError(kData + folder, o_proj, 8);
    const std::string id = std::string(folder).find("mxfp4") != std::string::npos
                               ? "mxfp4_block_32"
                               : "mxfp8_block_32";
    EXPECT_EQ(message, o_proj + ": " + id +
                           " with tensor-parallel size 8 splits K = 128 into slices of 16 "
                           "columns, which is not a multiple of the 32-column scale block; "
                           "legal --tp: 1, 2, 4");
  }
}

}  // namespace
}  // namespace quantpath
