// MoE experts split across tensor-parallel ranks, on the Qwen3-MoE checkpoints written by the
// producers (tests/data/producers, SOURCES.md: 2 layers × 4 experts, gate, up and down [128, 128],
// so I = 128). At --tp 2, as vLLM's FusedMoE shards them, for both moe sites of each folder:
//   1. each rank's seeded run of every expert is within its family's tolerance of its slice of
//      the fp64 reference (RunExpertsSeeded);
//   2. the ranks put together give the whole expert's (tp 1) output on the same X: gate and up
//      rows, placed at the rows RankSlice names, are the whole projection's; down's partial sums
//      (each rank on its own columns of X) add up to it;
// The same for ModelSlim's experts (tests/data/documented) and unquantized (bf16) experts,
// written here.
//   3. block fp8 (128 × 128 blocks) cannot split I = 128: an error naming the projection, the
//      dimension and the legal sizes (1 only).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>

#include "fmt/format.h"
#include "quantpath/numeric.h"
#include "quantpath/pipeline.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

constexpr int kTp = 2;
constexpr int64_t kM = 3;
constexpr uint64_t kSeed = 11;

const std::string kProducers = std::string(QUANTPATH_TEST_DATA) + "/producers/";

Result<Model> Open(const std::string& dir, int tp) {
  QP_ASSIGN_OR_RETURN(OpenOptions options, OpenOptions::Parse("native", "", "cpu", "auto", tp));
  // ModelSlim's folders in the paired 4-bit packing say so by name; the files cannot.
  if (dir.ends_with("_new"))
    QP_RETURN_IF_ERROR(options.SetFormatOption("modelslim-packing", "new"));
  return OpenModel(dir, options);
}

// Seeded bf16 X [kM, k] in fp32.
std::vector<float> SeededX(int64_t k, uint64_t seed) {
  std::vector<float> x(static_cast<size_t>(kM * k));
  uint64_t state = seed;
  for (float& v : x) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = Bf16ToFloat(FloatToBf16(static_cast<float>((state >> 40) * 0x1p-24 * 2.0 - 1.0)));
  }
  return x;
}

// Checks 1 and 2 on the `moe_sites` moe sites of the folder `dir`.
void CheckRanksAddUp(const std::string& dir, int moe_sites = 2) {
  Result<Model> whole_model = Open(dir, 1);
  ASSERT_TRUE(whole_model.ok()) << whole_model.status().message();
  Result<Model> model = Open(dir, kTp);
  ASSERT_TRUE(model.ok()) << model.status().message();
  int sites = 0;
  for (const LayerSite& site : model->sites.sites) {
    if (site.kind != SiteKind::kMoe) continue;
    SCOPED_TRACE(site.path);
    ++sites;
    Result<LoadedExperts> whole = LoadExperts(*whole_model, site.path);
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    std::vector<LoadedExperts> ranks;
    for (int rank = 0; rank < kTp; ++rank) {
      Result<LoadedExperts> layer = LoadExperts(*model, site.path, rank);
      ASSERT_TRUE(layer.ok()) << layer.status().message();
      Result<ExpertsRun> run = RunExpertsSeeded(*layer, kM, kSeed, std::nullopt);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_TRUE(run->w13.pass()) << "rank " << rank << " w13 rel " << run->w13.rel;
      EXPECT_TRUE(run->w2.pass()) << "rank " << rank << " w2 rel " << run->w2.rel;
      std::cout << dir << " " << site.path << " " << layer->key.ToId() << " rank " << rank
                << ": w13 rel " << run->w13.rel << ", w2 rel " << run->w2.rel << " (tol "
                << run->w13.tol << ")\n";
      ranks.push_back(std::move(*layer));
    }
    double max_diff = 0;
    double max_ref = 0;
    for (size_t e = 0; e < whole->experts.size(); ++e) {
      for (size_t leg = 0; leg < 3; ++leg) {
        const Linear& full = whole->experts[e].projections[leg];
        const int64_t n = full.out_features();
        const int64_t k = full.in_features();
        const std::vector<float> x = SeededX(k, kSeed + leg);
        Result<std::vector<float>> y_whole = full.Forward(x, kM);
        ASSERT_TRUE(y_whole.ok()) << y_whole.status().message();
        std::vector<double> sum(static_cast<size_t>(kM * n), 0.0);
        std::vector<int> covered(static_cast<size_t>(n), 0);
        for (int rank = 0; rank < kTp; ++rank) {
          const Linear& part = ranks[rank].experts[e].projections[leg];
          const RankSlice& slice = ranks[rank].experts[e].slices[leg];
          const int64_t rows = part.out_features();
          const int64_t cols = part.in_features();
          ASSERT_EQ(static_cast<int64_t>(slice.rows.size()), rows);
          // gate and up: half the rows, all of K; down: all rows, half of K.
          ASSERT_EQ(leg == 2 ? cols * kTp : rows * kTp, leg == 2 ? k : n);
          std::vector<float> xr(static_cast<size_t>(kM * cols));
          for (int64_t i = 0; i < kM; ++i) {
            for (int64_t j = 0; j < cols; ++j) xr[i * cols + j] = x[i * k + slice.first_col + j];
          }
          Result<std::vector<float>> y = part.Forward(xr, kM);
          ASSERT_TRUE(y.ok()) << y.status().message();
          for (int64_t r = 0; r < rows; ++r) {
            ++covered[slice.rows[r]];
            for (int64_t i = 0; i < kM; ++i) sum[i * n + slice.rows[r]] += (*y)[i * rows + r];
          }
        }
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_EQ(covered[j], leg == 2 ? kTp : 1) << "expert " << e << " leg " << leg;
          for (int64_t i = 0; i < kM; ++i) {
            max_diff = std::max(max_diff, std::fabs(sum[i * n + j] - (*y_whole)[i * n + j]));
            max_ref = std::max(max_ref, std::fabs(static_cast<double>((*y_whole)[i * n + j])));
          }
        }
      }
    }
    // Column ranks see all of X; a down rank quantizing its columns per token takes their own
    // absmax (as vLLM's ranks do), so its X rounds differently: bounded as tp_shards_test does.
    const ActMode mode = whole->activation.mode;
    // int4 activations (ModelSlim W4A4_DYNAMIC) round to 16 levels: measured up to 4.9e-2,
    // bounded at 2e-1 as tp_shards_test does.
    const bool requantized = mode == ActMode::kDynamicPerToken;
    const bool int4_act = whole->activation.dtype == QDType::kINT4;
    const double bound =
        requantized ? (int4_act ? 2e-1 : 1e-1) : ToleranceFor(whole->key, ActMode::kNone);
    const double rel = max_diff / max_ref;
    EXPECT_LE(rel, bound);
    std::cout << dir << " " << site.path << ": ranks' sum vs tp 1 rel " << rel << " (bound "
              << bound << ")\n";
  }
  EXPECT_EQ(sites, moe_sites);
}

class MoeTpTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeTpTest, RanksAddUpToTheWholeExperts) {
  CheckRanksAddUp(std::string(QUANTPATH_TEST_DATA) + "/" + GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Folders, MoeTpTest,
    ::testing::Values("producers/ct_qwen3moe_w4a16_g64_sym", "producers/ct_qwen3moe_fp8_dynamic",
                      "producers/ct_qwen3moe_w8a8_int8_dynamic",
                      "producers/ar_qwen3moe_auto_round_w4g64_sym",
                      "producers/gm_qwen3moe_gptq_w4g64_sym_desc_act",
                      "producers/ct_qwen3moe_nvfp4a16", "producers/ct_qwen3moe_nvfp4",
                      "producers/ct_qwen3moe_mxfp4", "producers/ct_qwen3moe_mxfp8",
                      "producers/mo_qwen3moe_nvfp4"));

// ModelSlim's experts (tests/data/documented, SOURCES.md: the same Qwen3-MoE shape), read per
// expert into the w13 / w2 view: W8A8 static (each expert its own input_scale and quant_bias,
// added by rank 0 of down only), W8A8_DYNAMIC, W4A4_DYNAMIC and W4A8_DYNAMIC in the paired
// packing (two rows per byte: each rank's 64 gate and up rows are 32 whole byte rows). ModelOpt's
// W4A8_AWQ experts (written from its export layout, I = 256): each rank keeps 128 of gate's and
// up's rows and down's 128 columns, one whole group of 128, with their pre_quant_scale columns.
INSTANTIATE_TEST_SUITE_P(Documented, MoeTpTest,
                         ::testing::Values("documented/modelslim_qwen3moe_w8a8",
                                           "documented/modelslim_qwen3moe_w8a8_dynamic",
                                           "documented/modelslim_qwen3moe_w4a4_dynamic",
                                           "documented/modelslim_qwen3moe_w4a8_dynamic_new",
                                           "documented/modelopt_qwen3moe_w4a8_awq",
                                           "documented/modelslim_qwen3moe_w4a4_mxfp4",
                                           "documented/modelslim_qwen3moe_w4a8_mxfp",
                                           "documented/modelslim_qwen3moe_w8a8_mxfp8"));

// Unquantized (bf16) experts: the producers' Qwen3-MoE config without its quantization_config,
// and bf16 expert weights written here.
TEST(MoeTpBf16Test, RanksAddUpToTheWholeExperts) {
  const std::filesystem::path dir = testing::FreshDir();
  const std::string config_file = kProducers + "ct_qwen3moe_w4a16_g64_sym/config.json";
  std::ifstream in(config_file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Result<Json> config = ParseJson(text, config_file);
  ASSERT_TRUE(config.ok()) << config.status().message();
  std::vector<Json::Member> members;
  for (const auto& member : config->members()) {
    if (member.first != "quantization_config") members.push_back(member);
  }
  std::ofstream(dir / "config.json") << ToJson(Json::Object(std::move(members)));
  std::mt19937 rng(7);
  std::vector<testing::TestTensor> tensors;
  for (int layer = 0; layer < 2; ++layer) {
    for (int e = 0; e < 4; ++e) {
      for (const char* name : {"gate_proj", "up_proj", "down_proj"}) {
        tensors.push_back(testing::Bf16Tensor(
            fmt::format("model.layers.{}.mlp.experts.{}.{}.weight", layer, e, name), {128, 128},
            testing::RandomBf16Values(&rng, 128 * 128)));
      }
    }
  }
  testing::WriteSafetensors(dir / "model.safetensors", tensors);
  CheckRanksAddUp(dir.string());
}

// Why the experts of `layer` do not load on rank `rank` of `tp` ("" and a failure when they do).
std::string ExpertsLoadError(const std::string& dir, int tp, const std::string& layer, int rank) {
  Result<Model> model = Open(dir, tp);
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return "";
  Result<LoadedExperts> loaded = LoadExperts(*model, layer, rank);
  EXPECT_FALSE(loaded.ok());
  return loaded.ok() ? "" : std::string(loaded.status().message());
}

// gpt-oss's stacked MXFP4 experts (documented/gptoss_mxfp4, one layer, I = 64): each rank holds
// one 32-block of every expert's gate and up rows (the interleaved rows 2i and 2i + 1 of
// gate_up_proj) and those columns of down; its biases on every rank (gate, up) or rank 0 (down).
// At tp 4 a rank would be left without a block.
TEST(MoeTpGptOssTest, RanksAddUpToTheWholeExperts) {
  const std::string dir = std::string(QUANTPATH_TEST_DATA) + "/documented/gptoss_mxfp4";
  CheckRanksAddUp(dir, 1);
  EXPECT_EQ(ExpertsLoadError(dir, 4, "model.layers.0.mlp.experts", 0),
            "model.layers.0.mlp.experts (gate_up_proj[0::2]): N of leg gate_up_proj = 64 is 2 "
            "blocks of 32; ⌈2 / 4⌉ = 1 per tensor-parallel rank leaves rank 3 without one; legal "
            "--tp: 1, 2");
}

TEST(MoeTpErrorsTest, NameTheProjectionTheDimensionAndTheLegalSizes) {
  const std::string block = kProducers + "ct_qwen3moe_fp8_block";
  EXPECT_EQ(ExpertsLoadError(block, kTp, "model.layers.0.mlp.experts", 1),
            "model.layers.0.mlp.experts (gate_proj): fp8_block_128_128 with tensor-parallel size 2 "
            "gives each rank slices of the weight (gate_proj = 64), and gate_proj is not a "
            "multiple of the block's 128 rows; legal --tp: 1");
  // int4 groups of 64: down's K = 128 splits in two, not in four.
  EXPECT_EQ(ExpertsLoadError(kProducers + "ct_qwen3moe_w4a16_g64_sym", 4,
                             "model.layers.1.mlp.experts", 0),
            "model.layers.1.mlp.experts (down_proj): int4_group_64 with tensor-parallel size 4 "
            "splits K = 128 into slices of 32 columns, which is not a multiple of the group size "
            "64; legal --tp: 1, 2");
  EXPECT_EQ(ExpertsLoadError(block, kTp, "model.layers.0.mlp.experts", 2),
            "model.layers.0.mlp.experts: rank 2 is not one of the 2 tensor-parallel ranks");
}

}  // namespace
}  // namespace quantpath
