// The bitsandbytes specs (nf4_block_64, fp4_block_64, int8_rowwise_bnb) on checkpoints written by
// bitsandbytes 0.50.2 through transformers' BitsAndBytesConfig on CPU (NF4 with double quant, FP4
// without, LLM.int8; tests/data/producers/bnb_llama_*), through the pipeline:
//   1. the fp64 reference, rounded to fp32, equals bitsandbytes' own dequantization bit for bit;
//      the loaded parameters are the checkpoint's codes (nibbles swapped into the canonical
//      order) and absmax (double quant resolved);
//   2. seeded runs of the dense (o, down) and fused (qkv, gate_up) layers are within tolerance;
//   3. the quant_state's block size is read, not assumed (bnb_llama_nf4_b128 quantizes in blocks of
//      128, bitsandbytes' own argument, and plans as nf4_block_128), and every malformed tensor or
//      quant_state field is an error naming the tensor and the layer;
//   4. a shard that would cut a block is an error (tensor-parallel runs: tp_shards_test.cc).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "quantpath/pipeline.h"
#include "src/specs/bnb_family.h"
#include "tests/pipeline/producer_values.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

const std::string kData = std::string(QUANTPATH_TEST_DATA) + "/";

Result<Model> Open(const std::string& dir) {
  Result<OpenOptions> options = OpenOptions::Parse("native", "", "cpu");
  if (!options.ok()) return options.status();
  return OpenModel(dir, *options);
}

struct Fixture {
  std::string folder;
  std::string spec_id;
};

void PrintTo(const Fixture& f, std::ostream* os) { *os << f.folder; }

class BnbFixturesTest : public ::testing::TestWithParam<Fixture> {};

TEST_P(BnbFixturesTest, MatchesTheProducerAndRuns) {
  const Fixture& f = GetParam();
  Result<testing::ProducerFolder> folder = testing::OpenProducerFolder(kData + f.folder);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  const bool four_bit = f.spec_id != "int8_rowwise_bnb";
  int checked = 0;
  int fused = 0;
  for (const LayerDecision& decision : folder->layers) {
    if (decision.site->kind != SiteKind::kLinear) continue;
    const std::string& path = decision.site->path;
    SCOPED_TRACE(path);
    ASSERT_TRUE(decision.spec.has_value());
    EXPECT_EQ(decision.spec->ToId(), f.spec_id);
    EXPECT_TRUE(decision.kernel_available);
    Result<LoadedLayer> loaded = LoadLayer(*folder->model, path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    Result<ReferenceLayer> ref = LoadReference(*loaded);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    testing::ExpectLegsMatchSaved(*folder->saved, loaded->leg_prefixes, *ref);

    // The canonical layout holds the checkpoint's codes: the first leg's bytes, nibbles swapped
    // (4-bit) or as they are (int8).
    const LinearParams& params = loaded->linear.params();
    Result<TensorView> codes = loaded->checkpoint.Get(loaded->leg_prefixes[0] + ".weight");
    ASSERT_TRUE(codes.ok());
    const auto* held = params.tensor(Slot::kWeight).data<uint8_t>();
    int64_t differ = 0;
    for (size_t i = 0; i < codes->bytes.size(); ++i) {
      const auto byte = static_cast<uint8_t>(codes->bytes[i]);
      const uint8_t canonical = four_bit ? static_cast<uint8_t>(byte << 4 | byte >> 4) : byte;
      if (held[i] != canonical) ++differ;
    }
    EXPECT_EQ(differ, 0);
    if (four_bit) {
      EXPECT_EQ(params.tensor(Slot::kWeightScale).cols(),
                params.rows * params.cols / decision.spec->group);
    }

    for (uint64_t seed : {3u, 11u}) {
      Result<LayerRun> run = RunSeeded(*loaded, 7, seed);
      ASSERT_TRUE(run.ok()) << run.status().message();
      EXPECT_TRUE(run->pass()) << "rel " << run->rel << " tol " << run->tol;
      // The 4-bit weights reach the AVX-512 BF16 kernel in bf16 (bnb4_spec.cc says why).
      EXPECT_EQ(run->tol, four_bit ? 4e-3 : 1e-4);
      EXPECT_EQ(run->kernel.rfind(four_bit ? "GemmBnb4" : "GemmBnbInt8_", 0), 0u) << run->kernel;
      std::printf("%s %s seed %llu: rel %.3g (tol %.3g)\n", f.folder.c_str(), path.c_str(),
                  static_cast<unsigned long long>(seed), run->rel, run->tol);
    }
    if (loaded->leg_prefixes.size() > 1) ++fused;
    ++checked;
  }
  EXPECT_EQ(checked, 8);  // qkv, o, gate_up, down in each of the two layers
  EXPECT_EQ(fused, 4);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BnbFixturesTest,
                         ::testing::Values(Fixture{"producers/bnb_llama_nf4_dq", "nf4_block_64"},
                                           Fixture{"producers/bnb_llama_fp4", "fp4_block_64"},
                                           Fixture{"producers/bnb_llama_nf4_b128", "nf4_block_128"},
                                           Fixture{"producers/bnb_llama_int8", "int8_rowwise_bnb"}),
                         [](const ::testing::TestParamInfo<Fixture>& info) {
                           return info.param.folder.substr(info.param.folder.find('/') + 1);
                         });

// Replaces `from` by `to` in a quant_state tensor's JSON text.
void EditJson(testing::TestTensor* t, const std::string& from, const std::string& to) {
  std::string text(t->bytes.begin(), t->bytes.end());
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, from.size(), to);
  t->bytes.assign(text.begin(), text.end());
  t->shape = {static_cast<int64_t>(text.size())};
}

std::string LoadError(const std::filesystem::path& dir, const std::string& layer) {
  return testing::LayerLoadError(Open(dir.string()), layer);
}

TEST(BnbErrors, NameTheTensorAndTheLayer) {
  const std::string qkv = "model.layers.0.self_attn.qkv_proj";
  const std::string k_proj = "model.layers.0.self_attn.k_proj";
  const std::string nf4 = "producers/bnb_llama_nf4_dq";
  const std::string nf4_state = k_proj + ".weight.quant_state.bitsandbytes__nf4";
  const std::string fp4 = "producers/bnb_llama_fp4";
  const std::string int8 = "producers/bnb_llama_int8";
  struct Case {
    std::string folder;
    std::string tensor;
    std::string what;  // "drop", "json:FROM>TO", "byte:I=V", "dtype:D" (the same bytes)
    std::string expect;
  };
  for (const Case& c : {
           Case{nf4, nf4_state, "json:\"blocksize\": 64>\"blocksize\": 128",
                "quant_state says blocksize 128, but the plan chose nf4_block_64"},
           Case{nf4, nf4_state, "json:\"quant_type\": \"nf4\">\"quant_type\": \"fp4\"",
                "quant_type must be \"nf4\""},
           Case{nf4, nf4_state, "json:\"shape\": [64, 128]>\"shape\": [128, 64]",
                "quant_state shape is [128, 64], expected [64, 128]"},
           Case{nf4, nf4_state, "json:\"nested_dtype\">\"nested_type\"",
                "unknown quant_state key \"nested_type\""},
           Case{nf4, nf4_state, "json:{>[", "not valid JSON"},
           Case{nf4, nf4_state, "json:\"nested_blocksize\": 256>\"nested_blocksize\": -256",
                "\"nested_blocksize\" must be a positive integer"},
           Case{nf4, nf4_state, "drop", "expected exactly one of"},
           Case{nf4, k_proj + ".weight.nested_absmax", "drop", "no tensor"},
           Case{nf4, k_proj + ".weight.absmax", "dtype:F32", "expected 128 U8 codes"},
           Case{nf4, k_proj + ".weight.quant_map", "byte:4=1", "entry 1 is"},
           Case{fp4, k_proj + ".weight.absmax", "drop", "no tensor"},
           Case{fp4, k_proj + ".weight", "dtype:I8", "expected 4096 U8 bytes"},
           Case{int8, k_proj + ".SCB", "dtype:I32", "expected F32"},
           Case{int8, k_proj + ".weight_format", "byte:0=1", "\"row\" weight format"},
           Case{int8, k_proj + ".weight", "dtype:U8", "expects I8"},
       }) {
    SCOPED_TRACE(c.folder + " " + c.tensor + " " + c.what);
    const std::filesystem::path dir =
        testing::MutatedFixture(kData + c.folder, [&](testing::TestTensor* t) {
          if (t->name != c.tensor) return true;
          if (c.what == "drop") return false;
          const std::string arg = c.what.substr(c.what.find(':') + 1);
          if (c.what.starts_with("json:")) {
            EditJson(t, arg.substr(0, arg.find('>')), arg.substr(arg.find('>') + 1));
          } else if (c.what.starts_with("byte:")) {
            t->bytes[std::stoul(arg.substr(0, arg.find('=')))] =
                static_cast<uint8_t>(std::stoul(arg.substr(arg.find('=') + 1)));
          } else {
            t->dtype = arg;  // the same bytes, as elements of the new dtype
            t->shape = {static_cast<int64_t>(t->bytes.size()) /
                        (arg == "U8" || arg == "I8" ? 1 : 4)};
          }
          return true;
        });
    const std::string message = LoadError(dir, qkv);
    EXPECT_NE(message.find(qkv), std::string::npos) << message;
    EXPECT_NE(message.find(k_proj), std::string::npos) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
}

// bitsandbytes blocks run over the flattened weight: a [4, 48] layer's 192 values are three
// blocks of 64, so a column rank of 2 rows (96 values) would start mid-block; a row rank needs K
// and its K in whole blocks. The whole layer, a short tail block included, is fine.
TEST(BnbGeometry, ShardsKeepWholeBlocks) {
  LoadFacts facts;
  facts.layout = SourceLayout::kBnb4bit;
  Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(*ParseSpecId("nf4_block_64"), {}, facts);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  AllocationRequest request;
  request.layer = "layer";
  request.shape = {4, 48};
  EXPECT_EQ(*(*spec)->StorageBytes(request), 4 * 24 + 3 * 4);
  request.shape = {5, 48};  // 240 values: three blocks and a tail of 48
  EXPECT_EQ(*(*spec)->StorageBytes(request), 5 * 24 + 4 * 4);
  request.shape = {4, 48};
  request.tp_size = 2;
  request.parallel = Parallel::kColumn;
  Result<int64_t> column = (*spec)->StorageBytes(request);
  ASSERT_FALSE(column.ok());
  EXPECT_NE(column.status().message().find("rows [0, 2) of K = 48 are not whole blocks"),
            std::string::npos)
      << column.status().message();
  request.shape = {4, 128};
  EXPECT_EQ(*(*spec)->StorageBytes(request), 2 * 64 + 4 * 4);
  request.parallel = Parallel::kRow;
  EXPECT_EQ(*(*spec)->StorageBytes(request), 4 * 32 + 4 * 4);
  request.tp_size = 4;
  Result<int64_t> row = (*spec)->StorageBytes(request);
  ASSERT_FALSE(row.ok());
  EXPECT_NE(row.status().message().find("a row-parallel rank's 32 of K = 128 columns"),
            std::string::npos)
      << row.status().message();
  // Fused legs stack whole blocks only: [1 + 3, 32] puts a 32-value leg before the next.
  request.tp_size = 1;
  request.parallel = Parallel::kColumn;
  request.shape = {4, 32};
  request.leg_rows = {1, 3};
  Result<int64_t> legs = (*spec)->StorageBytes(request);
  ASSERT_FALSE(legs.ok());
  EXPECT_NE(legs.status().message().find("stacked with the next leg"), std::string::npos)
      << legs.status().message();
}

}  // namespace
}  // namespace quantpath
