// gpt-oss's MXFP4 experts on the checkpoint written from the published layout
// (tests/data/documented/gptoss_mxfp4, SOURCES.md: hidden 256, 4 experts of intermediate 64,
// every expert of the layer in `mlp.experts.gate_up_proj_blocks` / `_scales` / `_bias` and
// `down_proj_*`, gate and up rows interleaved). Through the pipeline:
//   1. plan: mxfp4_block_32 with a kernel and no note, its bytes what the loaded experts hold;
//   2. every expert's gate (rows 0::2 of gate_up_proj), up (rows 1::2) and down: the fp64
//      reference equals the writer's dequantization, which is in transformers' layout ([E, in,
//      out], as convert_moe_packed_tensors returns it, and checked against it), the Linear's
//      canonical weight equals the reference, and the biases are the checkpoint's rows;
//   3. seeded runs of w13 and w2 are within tolerance;
//   4. on given input, the whole expert with gpt-oss's clamped SwiGLU, against a double
//      computation from the saved dequantization and the checkpoint's biases, written here from
//      transformers' GptOssExperts; SiLU(gate) · up would be far off;
//   5. errors name the tensor, the expert and the layer; the stacked layout on a site whose
//      experts are per module is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fmt/format.h"
#include "quantpath/numeric.h"
#include "quantpath/pipeline.h"
#include "src/specs/mx_family.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kDir = std::string(QUANTPATH_TEST_DATA) + "/documented/gptoss_mxfp4";
const std::string kExperts = "model.layers.0.mlp.experts";
constexpr int64_t kHidden = 256;
constexpr int64_t kInter = 64;
constexpr int64_t kE = 4;

Result<Model> Open(const std::string& dir) {
  QP_ASSIGN_OR_RETURN(OpenOptions options, OpenOptions::Parse("native", "", "cpu"));
  return OpenModel(dir, options);
}

// Element [e][i][j] of a saved [E, rows, cols] tensor, or of a checkpoint [E, cols] bias (i = 0).
double At(const TensorView& view, int64_t e, int64_t i, int64_t j) {
  const std::vector<int64_t>& shape = view.info->shape;
  const int64_t rows = shape.size() == 3 ? shape[1] : 1;
  return testing::SavedValue(view, (e * rows + i) * shape.back() + j);
}

// The saved dequantization of projection `leg` of expert `e` as [N, K]: gate_up_proj is
// [E, H, 2I] (gate columns 0::2, up 1::2), down_proj [E, I, H].
double SavedWeight(const TensorView& gate_up, const TensorView& down, int64_t e, size_t leg,
                   int64_t n, int64_t k) {
  if (leg == 2) return At(down, e, k, n);
  return At(gate_up, e, k, 2 * n + static_cast<int64_t>(leg));
}

TEST(GptOssExpertsTest, MatchTheDequantizationAndRun) {
  Result<testing::ProducerFolder> folder = testing::OpenProducerFolder(kDir);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  const Model& model = *folder->model;
  const LayerDecision* decision = nullptr;
  for (const LayerDecision& d : folder->layers) {
    if (d.site->path == kExperts) decision = &d;
  }
  ASSERT_NE(decision, nullptr);
  ASSERT_TRUE(decision->spec.has_value()) << decision->spec_note;
  EXPECT_EQ(decision->spec->ToId(), "mxfp4_block_32");
  EXPECT_EQ(decision->kernel_available, true);
  EXPECT_EQ(decision->spec_note, "");
  ASSERT_TRUE(decision->bytes.has_value());

  Result<LoadedExperts> loaded = LoadExperts(model, kExperts);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->experts.size(), static_cast<size_t>(kE));
  const TensorView gate_up = folder->saved->View(*folder->saved->Find(kExperts + ".gate_up_proj"));
  const TensorView down = folder->saved->View(*folder->saved->Find(kExperts + ".down_proj"));
  Result<TensorView> gate_up_bias = loaded->checkpoint.Get(kExperts + ".gate_up_proj_bias");
  Result<TensorView> down_bias = loaded->checkpoint.Get(kExperts + ".down_proj_bias");
  ASSERT_TRUE(gate_up_bias.ok() && down_bias.ok());
  int64_t held = 0;
  for (int64_t e = 0; e < kE; ++e) {
    SCOPED_TRACE(e);
    const LoadedExpert& expert = loaded->experts[static_cast<size_t>(e)];
    EXPECT_EQ(expert.prefixes,
              (std::vector<std::string>{kExperts + ".gate_up_proj", kExperts + ".gate_up_proj",
                                        kExperts + ".down_proj"}));
    EXPECT_EQ(expert.names,
              (std::vector<std::string>{"gate_up_proj[0::2]", "gate_up_proj[1::2]", "down_proj"}));
    for (size_t leg = 0; leg < 3; ++leg) {
      SCOPED_TRACE(leg);
      const Linear& linear = expert.projections[leg];
      const int64_t n = leg == 2 ? kHidden : kInter;
      const int64_t k = leg == 2 ? kInter : kHidden;
      ASSERT_EQ(linear.out_features(), n);
      ASSERT_EQ(linear.in_features(), k);
      held += linear.params().WeightBytes();
      const AllocationRequest& request = linear.params().request;
      Result<ReferenceLayer> ref =
          DequantizeReference(loaded->checkpoint, loaded->scheme, "test", {expert.prefixes[leg]},
                              true, request.stacked);
      ASSERT_TRUE(ref.ok()) << ref.status().message();
      ASSERT_EQ(ref->rows, n);
      ASSERT_EQ(ref->cols, k);
      int64_t differ = 0;
      int64_t nonzero = 0;
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < k; ++c) {
          const double w = ref->weight[r * k + c];
          differ += w != SavedWeight(gate_up, down, e, leg, r, c);
          nonzero += w != 0.0;
        }
      }
      EXPECT_EQ(differ, 0);
      EXPECT_GT(nonzero, n * k / 2);
      // The bias rows: gate_up_proj_bias [E, 2I] interleaved as the weight rows.
      ASSERT_EQ(ref->bias.size(), static_cast<size_t>(n));
      for (int64_t r = 0; r < n; ++r) {
        const double b = leg == 2 ? At(*down_bias, e, 0, r)
                                  : At(*gate_up_bias, e, 0, 2 * r + static_cast<int64_t>(leg));
        ASSERT_EQ(ref->bias[r], b) << r;
      }
      // Linear(I) = Wᵀ + bias: the canonical weight is the reference's, exactly.
      std::vector<float> identity(static_cast<size_t>(k * k), 0.0f);
      for (int64_t i = 0; i < k; ++i) identity[i * k + i] = 1.0f;
      Result<std::vector<float>> wt = linear.Forward(identity, k);
      ASSERT_TRUE(wt.ok()) << wt.status().message();
      int64_t wrong = 0;
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < k; ++c) {
          const double bias = ref->bias[r];
          wrong += static_cast<double>((*wt)[c * n + r]) !=
                   static_cast<double>(static_cast<float>(ref->weight[r * k + c] + bias));
        }
      }
      EXPECT_EQ(wrong, 0);
    }
  }
  EXPECT_EQ(held, *decision->bytes);

  for (std::optional<int64_t> which : {std::optional<int64_t>(1), std::optional<int64_t>()}) {
    Result<ExpertsRun> run = RunExpertsSeeded(*loaded, 5, 11, which);
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_EQ(run->experts, which ? 1 : kE);
    EXPECT_TRUE(run->w13.pass()) << "w13 rel " << run->w13.rel << " tol " << run->w13.tol;
    EXPECT_TRUE(run->w2.pass()) << "w2 rel " << run->w2.rel << " tol " << run->w2.tol;
    EXPECT_EQ(run->w13.tol, 1e-4);
    std::printf("gptoss_mxfp4 experts %s: w13 rel %.3g, w2 rel %.3g (tol %.3g)\n",
                which ? "1" : "all", run->w13.rel, run->w2.rel, run->w13.tol);
  }
}

// transformers' GptOssExperts: gate = min(gate, limit), up = clamp(up, ±limit),
// (up + 1) · gate · sigmoid(1.702 · gate).
double SwigluOai(double gate, double up) {
  const double g = std::min(gate, 7.0);
  const double u = std::max(-7.0, std::min(up, 7.0));
  return (u + 1.0) * g / (1.0 + std::exp(-1.702 * g));
}
double SiluMul(double gate, double up) { return gate / (1.0 + std::exp(-gate)) * up; }

TEST(GptOssExpertsTest, GivenInputRunsTheClampedSwiglu) {
  Result<Model> model = Open(kDir);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<LoadedExperts> loaded = LoadExperts(*model, kExperts);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(model->sites.Find(kExperts)->expert_activation.kind,
            ExpertActivation::Kind::kSwigluOai);
  // X in [-8, 8], so that some gate and up values pass the limit of 7.
  constexpr int64_t kM = 3;
  std::vector<uint16_t> x(kM * kHidden);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = FloatToBf16(static_cast<float>(8.0 * std::sin(0.61 * static_cast<double>(i))));
  }
  Result<ExpertsRun> run =
      RunExpertsOnInput(*loaded, ConstMatrix{QDType::kBF16, x.data(), kM, kHidden}, std::nullopt);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(run->pass()) << run->w13.rel << " " << run->w2.rel;
  ASSERT_EQ(run->w2.y.size(), static_cast<size_t>(kE * kM * kHidden));

  Result<std::shared_ptr<const SafetensorsFile>> saved =
      SafetensorsFile::Open(kDir + "/dequant.safetensors");
  ASSERT_TRUE(saved.ok());
  const TensorView gate_up = (*saved)->View(*(*saved)->Find(kExperts + ".gate_up_proj"));
  const TensorView down = (*saved)->View(*(*saved)->Find(kExperts + ".down_proj"));
  Result<TensorView> gate_up_bias = loaded->checkpoint.Get(kExperts + ".gate_up_proj_bias");
  Result<TensorView> down_bias = loaded->checkpoint.Get(kExperts + ".down_proj_bias");
  ASSERT_TRUE(gate_up_bias.ok() && down_bias.ok());
  double max_diff = 0, max_ref = 0, max_silu_diff = 0;
  int64_t clamped = 0;
  for (int64_t e = 0; e < kE; ++e) {
    for (int64_t m = 0; m < kM; ++m) {
      std::vector<double> h(kInter), h_silu(kInter);
      for (int64_t i = 0; i < kInter; ++i) {
        double gate = At(*gate_up_bias, e, 0, 2 * i);
        double up = At(*gate_up_bias, e, 0, 2 * i + 1);
        for (int64_t c = 0; c < kHidden; ++c) {
          const double xv = Bf16ToFloat(x[m * kHidden + c]);
          gate += xv * At(gate_up, e, c, 2 * i);
          up += xv * At(gate_up, e, c, 2 * i + 1);
        }
        clamped += gate > 7.0 || std::fabs(up) > 7.0;
        h[i] = SwigluOai(gate, up);
        h_silu[i] = SiluMul(gate, up);
      }
      for (int64_t j = 0; j < kHidden; ++j) {
        double y = At(*down_bias, e, 0, j);
        double y_silu = y;
        for (int64_t i = 0; i < kInter; ++i) {
          y += h[i] * At(down, e, i, j);
          y_silu += h_silu[i] * At(down, e, i, j);
        }
        const double got = run->w2.y[(e * kM + m) * kHidden + j];
        max_diff = std::max(max_diff, std::fabs(got - y));
        max_silu_diff = std::max(max_silu_diff, std::fabs(got - y_silu));
        max_ref = std::max(max_ref, std::fabs(y));
      }
    }
  }
  // quantpath rounds h to bf16 (2^-9 relative) before down, as the engines' kernels read it.
  const double rel = max_diff / max_ref;
  std::printf(
      "gptoss_mxfp4 whole experts on [-8, 8] input: rel %.3g against the double "
      "SwiGLU (SiLU · up would be %.3g off); %lld of %lld gate/up pairs clamped\n",
      rel, max_silu_diff / max_ref, static_cast<long long>(clamped),
      static_cast<long long>(kE * kM * kInter));
  EXPECT_LE(rel, 4e-3);
  EXPECT_GT(max_silu_diff / max_ref, 0.1);
  EXPECT_GT(clamped, 0);
}

std::string LoadError(const std::filesystem::path& dir) {
  Result<Model> model = Open(dir.string());
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return "";
  Result<LoadedExperts> loaded = LoadExperts(*model, kExperts);
  EXPECT_FALSE(loaded.ok());
  return loaded.ok() ? "" : std::string(loaded.status().message());
}

TEST(GptOssExpertsTest, ErrorsNameTheTensorTheExpertAndTheLayer) {
  struct Case {
    std::string tensor;
    std::string what;  // "drop", "shape", "nan"
    std::string expect;
  };
  for (const Case& c : {
           Case{kExperts + ".down_proj_scales", "drop",
                kExperts + ", expert 0 (down_proj): tensor " + kExperts +
                    ".down_proj_scales is not in the checkpoint"},
           Case{kExperts + ".gate_up_proj_blocks", "shape",
                kExperts + ", expert 0 (gate_up_proj[0::2]): tensor " + kExperts +
                    ".gate_up_proj_blocks has shape [4, 64, 16, 16], expected [4, 128, 8, 16]"},
           Case{kExperts + ".gate_up_proj_bias", "shape", "expected [4, 128]"},
           // Expert 2's up row 1 is its interleaved row 3.
           Case{kExperts + ".gate_up_proj_scales", "nan",
                kExperts + ", expert 2 (gate_up_proj[1::2]): tensor " + kExperts +
                    ".gate_up_proj_scales holds an E8M0 NaN (0xFF) at expert 2, row 3, block 1"},
       }) {
    SCOPED_TRACE(c.tensor + " " + c.what);
    const std::filesystem::path dir = testing::MutatedFixture(kDir, [&](testing::TestTensor* t) {
      if (t->name != c.tensor) return true;
      if (c.what == "drop") return false;
      if (c.what == "shape") {  // the same bytes in another shape
        t->shape = c.tensor.ends_with("_blocks") ? std::vector<int64_t>{4, 64, 16, 16}
                                                 : std::vector<int64_t>{8, 64};
      } else {
        t->bytes[(2 * 128 + 3) * 8 + 1] = kE8M0Nan;
      }
      return true;
    });
    const std::string message = LoadError(dir);
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
}

// The mxfp4 method names gpt-oss's stacked layout; a Qwen3-MoE keeps every expert under its own
// prefix, so its experts are refused before any tensor is read.
TEST(GptOssExpertsTest, TheStackedLayoutNeedsStackedExperts) {
  const std::filesystem::path dir = testing::FreshDir();
  std::ifstream in(std::string(QUANTPATH_TEST_DATA) +
                   "/producers/ct_qwen3moe_w4a16_g64_sym/config.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Result<Json> config = ParseJson(text, "config.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  std::vector<Json::Member> members;
  for (const auto& member : config->members()) {
    if (member.first != "quantization_config") members.push_back(member);
  }
  members.emplace_back("quantization_config",
                       Json::Object({{"quant_method", Json::String("mxfp4")}}));
  std::ofstream(dir / "config.json") << ToJson(Json::Object(std::move(members)));
  Result<Model> model = Open(dir.string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<LoadedExperts> loaded = LoadExperts(*model, "model.layers.0.mlp.experts");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(),
            "model.layers.0.mlp.experts: Qwen3MoeForCausalLM stores each expert's projections "
            "under its own prefix, but source layout gpt-oss-mxfp4 stacks them");
}

}  // namespace
}  // namespace quantpath
