// ModelSlim's mixed int4 specs (W4A4_DYNAMIC, W4A8_DYNAMIC: int4_channel with int4 / int8
// dynamic per-token activations) on the checkpoints written from the documentation
// (tests/data/documented/modelslim_llama_w4a*, no producer), in both 4-bit packings:
//   1. the fp64 reference equals the script's own dequantization exactly (fp32: an int4 code
//      times a bf16 scale is exact);
//   2. a seeded run of every dense and fused layer is within the family's tolerance, and within
//      1e-6 of the reference, which quantizes X with the kernel's own fp32 arithmetic;
//   3. errors: a weight in the other packing's shape names both packings, a non-zero weight
//      offset and an out-of-range code name the tensor and the layer;
//   4. tensor-parallel slices of one small layer: a rank holds exactly its rows (column split,
//      whole row pairs in the paired packing) or its columns with every row's scale (row split);
//      an odd count of rows per rank in the paired packing is an error naming the layer, the
//      dimension and the rows. (tp_shards_test.cc runs the fixtures' ranks against the reference.)
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "quantpath/cpu_features.h"
#include "quantpath/pipeline.h"
#include "src/specs/int_family.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kData = std::string(QUANTPATH_TEST_DATA) + "/documented/";

using testing::Rounded;
using testing::SavedValue;

Result<Model> Open(const std::string& dir, std::string_view packing) {
  Result<OpenOptions> options = OpenOptions::Parse("native", "", "cpu");
  if (!options.ok()) return options.status();
  QP_RETURN_IF_ERROR(options->SetFormatOption("modelslim-packing", packing));
  return OpenModel(dir, *options);
}

struct Fixture {
  std::string folder;
  std::string packing;  // --modelslim-packing
  QDType activations;
};

void PrintTo(const Fixture& f, std::ostream* os) { *os << f.folder; }

class W4aFixturesTest : public ::testing::TestWithParam<Fixture> {};

TEST_P(W4aFixturesTest, MatchesTheDequantizationAndRuns) {
  const Fixture& f = GetParam();
  const std::string dir = kData + f.folder;
  Result<Model> model = Open(dir, f.packing);
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
        decision.spec->family != kIntChannelFamily) {
      continue;
    }
    const std::string& path = decision.site->path;
    SCOPED_TRACE(path);
    EXPECT_EQ(decision.spec->ToId(), "int4_channel");
    EXPECT_TRUE(decision.kernel_available);
    EXPECT_EQ(decision.spec_note, "");
    Result<LoadedLayer> loaded = LoadLayer(*model, path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->activation.mode, ActMode::kDynamicPerToken);
    EXPECT_EQ(loaded->activation.dtype, f.activations);
    EXPECT_TRUE(loaded->activation.symmetric);
    Result<ReferenceLayer> ref = LoadReference(*loaded);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const int64_t k = ref->cols;

    int64_t row = 0;
    for (const std::string& prefix : loaded->leg_prefixes) {
      const TensorInfo* info = (*saved)->Find(prefix + ".weight");
      ASSERT_NE(info, nullptr) << prefix;
      ASSERT_EQ(info->shape.size(), 2u);
      ASSERT_EQ(info->shape[1], k);
      const TensorView view = (*saved)->View(*info);
      int64_t mismatches = 0;
      for (int64_t i = 0; i < info->shape[0] * k; ++i) {
        if (Rounded(info->dtype, ref->weight[row * k + i]) != SavedValue(view, i)) ++mismatches;
      }
      EXPECT_EQ(mismatches, 0) << prefix << " of " << info->shape[0] * k;
      row += info->shape[0];
    }
    EXPECT_EQ(row, ref->rows);
    if (loaded->leg_prefixes.size() > 1) ++fused;

    for (uint64_t seed : {3u, 11u}) {
      Result<LayerRun> run = RunSeeded(*loaded, 7, seed);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_TRUE(run->pass()) << "rel " << run->rel << " tol " << run->tol;
      EXPECT_EQ(run->tol, 1e-2);
      EXPECT_LT(run->rel, 1e-6) << "the kernel and the reference round X alike";
      // The dispatcher's pick on this CPU: the fast kernel of its best level.
      const CpuLevel best = BestCpuLevel(DetectCpuFeatures());
      EXPECT_EQ(run->kernel, best >= CpuLevel::kAvx512Vnni ? "GemmW4A4A8Quads_Avx512Vnni"
                             : best >= CpuLevel::kAvx2     ? "GemmW4A4A8Nibbles_Avx2"
                                                           : "GemmW4A4A8Int_Ref");
    }
    ++checked;
  }
  EXPECT_EQ(checked, 4);  // qkv, o, gate_up, down
  EXPECT_EQ(fused, 2);    // qkv, gate_up
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, W4aFixturesTest,
    ::testing::Values(Fixture{"modelslim_llama_w4a4_dynamic", "", QDType::kINT4},
                      Fixture{"modelslim_llama_w4a4_dynamic", "old", QDType::kINT4},
                      Fixture{"modelslim_llama_w4a4_dynamic_new", "new", QDType::kINT4},
                      Fixture{"modelslim_llama_w4a8_dynamic", "old", QDType::kINT8},
                      Fixture{"modelslim_llama_w4a8_dynamic_new", "new", QDType::kINT8}),
    [](const ::testing::TestParamInfo<Fixture>& info) {
      return info.param.folder + "_" +
             (info.param.packing.empty() ? "default" : info.param.packing);
    });

// The same codes in both packings: one folder's weights are the other's.
TEST(W4aPackings, BothPackingsHoldTheSameWeights) {
  const std::string path = "model.layers.0.mlp.gate_up_proj";
  Result<Model> old_model = Open(kData + "modelslim_llama_w4a4_dynamic", "old");
  Result<Model> new_model = Open(kData + "modelslim_llama_w4a4_dynamic_new", "new");
  ASSERT_TRUE(old_model.ok() && new_model.ok());
  Result<LoadedLayer> a = LoadLayer(*old_model, path);
  Result<LoadedLayer> b = LoadLayer(*new_model, path);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  const ParamTensor& wa = a->linear.params().tensor(Slot::kWeight);
  const ParamTensor& wb = b->linear.params().tensor(Slot::kWeight);
  ASSERT_EQ(wa.bytes(), wb.bytes());
  EXPECT_EQ(std::memcmp(wa.data<uint8_t>(), wb.data<uint8_t>(), wa.bytes()), 0);
}

std::string LoadError(const std::string& dir, std::string_view packing, const std::string& layer) {
  Result<Model> model = Open(dir, packing);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<LoadedLayer> loaded = LoadLayer(*model, layer);
  EXPECT_FALSE(loaded.ok());
  return loaded.ok() ? "" : std::string(loaded.status().message());
}

// The files do not say their packing; a shape that is the other packing's names both.
TEST(W4aPackings, AShapeThatContradictsTheOptionNamesBoth) {
  const std::string qkv = "model.layers.0.self_attn.qkv_proj";
  const std::string q_weight = "model.layers.0.self_attn.q_proj.weight";
  {
    const std::string message = LoadError(kData + "modelslim_llama_w4a4_dynamic_new", "", qkv);
    EXPECT_NE(message.find(qkv), std::string::npos) << message;
    EXPECT_NE(message.find(q_weight + " has shape [32, 64], the shape of --modelslim-packing new"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("--modelslim-packing old expects [64, 64]"), std::string::npos)
        << message;
  }
  {
    const std::string message = LoadError(kData + "modelslim_llama_w4a8_dynamic", "new", qkv);
    EXPECT_NE(message.find(q_weight + " has shape [64, 64], the shape of --modelslim-packing old"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("--modelslim-packing new expects [32, 64]"), std::string::npos)
        << message;
  }
}

TEST(W4aPackings, TheOptionAcceptsOldAndNewOnly) {
  OpenOptions options;
  EXPECT_TRUE(options.SetFormatOption("modelslim-packing", "new").ok());
  EXPECT_EQ(options.format_options, (FormatOptions{{"modelslim-packing", "new"}}));
  EXPECT_TRUE(options.SetFormatOption("modelslim-packing", "old").ok());
  EXPECT_EQ(options.format_options, (FormatOptions{{"modelslim-packing", "old"}}));
  EXPECT_TRUE(options.SetFormatOption("modelslim-packing", "").ok());
  EXPECT_EQ(options.format_options.size(), 1u);
  const Status bad = options.SetFormatOption("modelslim-packing", "newer");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("--modelslim-packing: expected old or new, got newer"),
            std::string::npos)
      << bad.message();
  const Status unknown = options.SetFormatOption("gptq-packing", "new");
  EXPECT_FALSE(unknown.ok());
  EXPECT_NE(unknown.message().find("--gptq-packing: no importer reads this option"),
            std::string::npos)
      << unknown.message();
}

// One [4, 8] ModelSlim layer straight through the spec.
Status LoadTiny(const std::vector<int8_t>& codes, float offset) {
  SpecKey key{kIntChannelFamily};
  key.bits = 4;
  ActivationQuant act;
  act.mode = ActMode::kDynamicPerToken;
  act.dtype = QDType::kINT4;
  LoadFacts facts;
  facts.layout = SourceLayout::kModelSlim;
  Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(key, act, facts);
  if (!spec.ok()) return spec.status();
  std::vector<uint8_t> bytes(codes.begin(), codes.end());
  const Checkpoint checkpoint = testing::OpenTestCheckpoint({
      {"m.weight", "I8", {4, 8}, bytes},
      testing::Bf16Tensor("m.weight_scale", {4, 1}, {0.5f, 0.25f, 1.0f, 2.0f}),
      testing::Bf16Tensor("m.weight_offset", {4, 1}, {0.0f, 0.0f, offset, 0.0f}),
  });
  AllocationRequest request;
  request.layer = "m";
  request.shape = {4, 8};
  QP_ASSIGN_OR_RETURN(LinearParams params, (*spec)->Allocate(request));
  return (*spec)->Load(checkpoint, {"m"}, &params);
}

TEST(W4aErrors, OffsetsAndCodesAreChecked) {
  std::vector<int8_t> codes(32, 3);
  EXPECT_TRUE(LoadTiny(codes, 0.0f).ok());
  const Status offset = LoadTiny(codes, 1.0f);
  EXPECT_NE(offset.message().find("m: tensor m.weight_offset holds weight offset 1 at row 2"),
            std::string::npos)
      << offset.message();
  codes[9] = 9;
  const Status code = LoadTiny(codes, 0.0f);
  EXPECT_NE(code.message().find("m: tensor m.weight holds 9 at [1, 1], not an int4 code"),
            std::string::npos)
      << code.message();
}

// Codes q[r][c] = (r * 8 + c) % 16 − 8 of one [rows, 8] layer `m`, in the packing `pairs` names,
// with row scales 0.5 · (r + 1), loaded through the spec on rank `rank` of `tp`.
Result<LinearParams> LoadSlice(bool pairs, int64_t rows, Parallel parallel, int tp, int rank) {
  SpecKey key{kIntChannelFamily};
  key.bits = 4;
  ActivationQuant act;
  act.mode = ActMode::kDynamicPerToken;
  act.dtype = QDType::kINT8;
  LoadFacts facts;
  facts.layout = SourceLayout::kModelSlim;
  facts.int4_pairs = pairs;
  QP_ASSIGN_OR_RETURN(std::unique_ptr<WeightSpec> spec, MakeSpec(key, act, facts));
  constexpr int64_t kCols = 8;
  std::vector<uint8_t> bytes(static_cast<size_t>((pairs ? rows / 2 : rows) * kCols), 0);
  std::vector<float> scales;
  for (int64_t r = 0; r < rows; ++r) {
    scales.push_back(0.5f * static_cast<float>(r + 1));
    for (int64_t c = 0; c < kCols; ++c) {
      const int code = static_cast<int>((r * 8 + c) % 16) - 8;
      if (!pairs) {
        bytes[r * kCols + c] = static_cast<uint8_t>(static_cast<int8_t>(code));
      } else {
        bytes[(r / 2) * kCols + c] |= static_cast<uint8_t>((code & 0xF) << (r % 2 == 0 ? 0 : 4));
      }
    }
  }
  const Checkpoint checkpoint = testing::OpenTestCheckpoint({
      {"m.weight", "I8", {pairs ? rows / 2 : rows, kCols}, bytes},
      testing::Bf16Tensor("m.weight_scale", {rows, 1}, scales),
  });
  AllocationRequest request;
  request.layer = "m";
  request.shape = {rows, kCols};
  request.parallel = parallel;
  request.tp_size = tp;
  request.tp_rank = rank;
  QP_ASSIGN_OR_RETURN(LinearParams params, spec->Allocate(request));
  QP_RETURN_IF_ERROR(spec->Load(checkpoint, {"m"}, &params));
  return params;
}

// Whether `params` hold rows [row0, + rows) and columns [col0, + cols) of LoadSlice's layer.
void ExpectSlice(const LinearParams& params, int64_t row0, int64_t rows, int64_t col0,
                 int64_t cols) {
  const ParamTensor& w = params.tensor(Slot::kWeight);
  const ParamTensor& s = params.tensor(Slot::kWeightScale);
  ASSERT_EQ(w.rows(), rows);
  ASSERT_EQ(w.cols(), cols);
  for (int64_t i = 0; i < rows; ++i) {
    EXPECT_EQ(LoadFloat(s, i), 0.5f * static_cast<float>(row0 + i + 1)) << "row " << i;
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t want = ((row0 + i) * 8 + col0 + j) % 16;  // q + 8
      EXPECT_EQ(ReadCode(w.data<uint8_t>() + i * w.row_bytes(), j, 4), want) << i << ", " << j;
    }
  }
}

TEST(W4aTensorParallel, EachRankHoldsItsRowsOrColumns) {
  for (bool pairs : {false, true}) {
    SCOPED_TRACE(pairs ? "new" : "old");
    for (int rank = 0; rank < 2; ++rank) {
      Result<LinearParams> column = LoadSlice(pairs, 8, Parallel::kColumn, 2, rank);
      ASSERT_TRUE(column.ok()) << column.status().message();
      ExpectSlice(*column, 4 * rank, 4, 0, 8);
      Result<LinearParams> row = LoadSlice(pairs, 8, Parallel::kRow, 2, rank);
      ASSERT_TRUE(row.ok()) << row.status().message();
      ExpectSlice(*row, 0, 8, 4 * rank, 4);
    }
  }
}

TEST(W4aTensorParallel, PairedRowsMustStayWholeOnEachRank) {
  // 12 rows at --tp 4: 3 per rank, half a byte row. The old packing splits them; a row split
  // keeps every row.
  EXPECT_TRUE(LoadSlice(false, 12, Parallel::kColumn, 4, 1).ok());
  EXPECT_TRUE(LoadSlice(true, 12, Parallel::kRow, 4, 1).ok());
  EXPECT_TRUE(LoadSlice(true, 12, Parallel::kColumn, 2, 1).ok());
  const Result<LinearParams> odd = LoadSlice(true, 12, Parallel::kColumn, 4, 1);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().message(),
            "m: int4_channel with tensor-parallel size 4 gives N = 12 of the weight 3 rows per "
            "rank; --modelslim-packing new stores two rows per int8, so each rank needs an even "
            "count");
}

}  // namespace
}  // namespace quantpath
