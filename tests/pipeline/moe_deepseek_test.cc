// DeepSeek-V3-style experts (the bundled examples/deepseek-tiny config: 8 experts of [64, 256],
// block fp8 128 × 128 with `weight_scale_inv`) from a checkpoint written here: the prefixes come
// from the DeepSeek site (`mlp.experts.N.{gate,up,down}_proj`), every expert loads even though
// I = 64 is not a multiple of the block (each projection keeps its own scale grid), the bytes held
// are the plan's, and the experts run within tolerance, one by one and grouped (MoeLayerOf).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "fmt/format.h"
#include "quantpath/pipeline.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

TEST(MoeDeepseek, ExpertsLoadFromTheSitesPrefixes) {
  const std::filesystem::path dir = testing::FreshDir();
  std::filesystem::copy_file(
      std::filesystem::path(QUANTPATH_SOURCE_DIR) / "examples/deepseek-tiny/config.json",
      dir / "config.json");
  std::mt19937 rng(5);
  std::vector<testing::TestTensor> tensors;
  for (int e = 0; e < 8; ++e) {
    for (const auto& [name, rows, cols] :
         {std::tuple<std::string, int64_t, int64_t>{"gate_proj", 64, 256},
          {"up_proj", 64, 256},
          {"down_proj", 256, 64}}) {
      const std::string prefix = fmt::format("model.layers.1.mlp.experts.{}.{}", e, name);
      tensors.push_back(testing::Fp8Tensor(prefix + ".weight", {rows, cols},
                                           testing::RandomFp8(&rng, rows * cols)));
      const int64_t grid_rows = (rows + 127) / 128;
      const int64_t grid_cols = (cols + 127) / 128;
      tensors.push_back(testing::F32Tensor(prefix + ".weight_scale_inv", {grid_rows, grid_cols},
                                           testing::RandomScales(&rng, grid_rows * grid_cols)));
    }
  }
  testing::WriteSafetensors(dir / "model.safetensors", tensors);

  Result<OpenOptions> options = OpenOptions::Parse("native", "", "cpu");
  ASSERT_TRUE(options.ok());
  Result<Model> model = OpenModel(dir.string(), *options);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<std::vector<LayerDecision>> layers = DecideAll(*model);
  ASSERT_TRUE(layers.ok()) << layers.status().message();
  const LayerDecision* plan = nullptr;
  for (const LayerDecision& d : *layers) {
    if (d.site->path == "model.layers.1.mlp.experts") plan = &d;
  }
  ASSERT_NE(plan, nullptr);
  ASSERT_TRUE(plan->bytes.has_value()) << plan->spec_note;

  Result<LoadedExperts> loaded = LoadExperts(*model, "model.layers.1.mlp.experts");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->key.ToId(), "fp8_block_128_128");
  ASSERT_EQ(loaded->experts.size(), 8u);
  EXPECT_EQ(loaded->experts[7].prefixes.back(), "model.layers.1.mlp.experts.7.down_proj");
  int64_t held = 0;
  for (const LoadedExpert& expert : loaded->experts) {
    for (const Linear& linear : expert.projections) held += linear.params().WeightBytes();
  }
  // 8 experts × (gate + up [64, 256] + down [256, 64]), one row of two fp32 blocks each.
  EXPECT_EQ(held, 8 * (3 * 64 * 256 + 3 * 2 * 4));
  EXPECT_EQ(held, *plan->bytes);
  // One spec for every projection of every expert, the one the plan's decision materialized.
  Result<LoadedExperts> decided = LoadExperts(*model, *plan);
  ASSERT_TRUE(decided.ok()) << decided.status().message();
  for (const LoadedExpert& expert : decided->experts) {
    for (const Linear& linear : expert.projections) {
      EXPECT_EQ(&linear.spec(), plan->weight_spec.get());
    }
  }
  Result<ExpertsRun> run = RunExpertsSeeded(*loaded, 4, 1, std::nullopt);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(run->pass()) << run->w13.rel << " " << run->w2.rel;
  EXPECT_EQ(run->experts, 8);

  // The grouped forward of the loaded experts on a seeded top-2 routing, against its reference
  // from each expert's checkpoint tensors.
  const MoeLayer layer = MoeLayerOf(*loaded);
  EXPECT_EQ(layer.name, "model.layers.1.mlp.experts");
  const RoutingTable routing = SeededRouting(2, 6, 2, 8);
  const std::vector<float> x = testing::RandomBf16Values(&rng, 6 * 256);
  std::vector<float> y(x.size());
  Result<MoeCall> call = MoeForward(layer, routing.View(), {QDType::kFP32, x.data(), 6, 256},
                                    {QDType::kFP32, y.data(), 6, 256});
  ASSERT_TRUE(call.ok()) << call.status().message();
  std::vector<MoeExpertReference> refs;
  for (const LoadedExpert& expert : loaded->experts) {
    Result<ReferenceLayer> w13 =
        DequantizeReference(loaded->checkpoint, loaded->scheme, layer.name,
                            {expert.prefixes[0], expert.prefixes[1]}, false);
    Result<ReferenceLayer> w2 = DequantizeReference(loaded->checkpoint, loaded->scheme, layer.name,
                                                    {expert.prefixes[2]}, false);
    ASSERT_TRUE(w13.ok() && w2.ok());
    refs.push_back({std::move(*w13), std::move(*w2)});
  }
  Result<std::vector<double>> ref =
      MoeReference(refs, layer.activation, loaded->activation, routing.View(),
                   std::vector<double>(x.begin(), x.end()), layer.name);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  double max_abs = 0, max_ref = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(y[i] - (*ref)[i]));
    max_ref = std::max(max_ref, std::fabs((*ref)[i]));
  }
  EXPECT_GT(max_ref, 0);
  EXPECT_LE(max_abs / max_ref, MoeTolerance(loaded->key, loaded->activation.mode));

  // Layer 2's experts are not in this checkpoint: the first missing tensor is named.
  Result<LoadedExperts> missing = LoadExperts(*model, "model.layers.2.mlp.experts");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(
                "model.layers.2.mlp.experts, expert 0 (gate_proj): tensor "
                "model.layers.2.mlp.experts.0.gate_proj.weight is not in the checkpoint"),
            std::string::npos)
      << missing.status().message();
}

}  // namespace
}  // namespace quantpath
