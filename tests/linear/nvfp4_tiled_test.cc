// nvfp4_block_16_128x4, Blackwell's scale layout (nvfp4_family.h):
//   1. the offset of (row, block) follows cuBLASLt's 1D block scaling factors layout: vectors
//      derived by hand from its description, and nvmath-python's documented example;
//   2. a layer whose N is not a multiple of 128 and whose K / 16 is not a multiple of 4 loads as
//      128x4: its scales, read back through the offsets, are the checkpoint's bytes bit for bit,
//      every padding byte is 0, it holds StorageBytes, and its Forward is the linear layout's bit
//      for bit (the reference kernel decodes both layouts).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "quantpath/kernels.h"
#include "quantpath/linear.h"
#include "src/specs/nvfp4_family.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

// Tiles of 128 rows × 4 blocks, 512 bytes, row tile after row tile; inside a tile, row r and
// block b at 16·(r mod 32) + 4·(r div 32) + b. For a [200, 80] weight (5 blocks a row, padded to
// Bp = 8: two tiles per row tile):
TEST(Nvfp4TiledOffsets, FollowTheDocumentedLayout) {
  struct Case {
    int64_t row, block, padded_blocks, offset;
  };
  for (const Case& c : {
           Case{0, 0, 8, 0},
           Case{0, 1, 8, 1},  // blocks of a row are contiguous
           Case{0, 3, 8, 3},
           Case{1, 0, 8, 16},      // the next row: 16 bytes on
           Case{31, 0, 8, 496},    // 31 · 16
           Case{32, 0, 8, 4},      // the second 32-row quarter: 4 bytes in
           Case{33, 0, 8, 20},     // 1 · 16 + 1 · 4
           Case{33, 2, 8, 22},     // 1 · 16 + 1 · 4 + 2
           Case{127, 3, 8, 511},   // 31 · 16 + 3 · 4 + 3: the tile's last byte
           Case{0, 4, 8, 512},     // block 4 opens the second tile of row tile 0
           Case{33, 4, 8, 532},    // 512 + 20
           Case{128, 0, 8, 1024},  // row tile 1 starts after row tile 0's two tiles
           Case{128, 4, 8, 1536},  // its second tile
           Case{199, 4, 8, 1656},  // 1536 + (71 mod 32) · 16 + (71 div 32) · 4 = 1536 + 112 + 8
           Case{127, 0, 4, 508},   // one tile a row tile: 496 + 12
           Case{128, 0, 4, 512},   // then row tile 1
           // nvmath-python's get_block_scale_offset example on a [128, 128] operand.
           Case{5, 2, 8, 82},
           Case{5, 5, 8, 593},
       }) {
    EXPECT_EQ(Nvfp4TiledScaleOffset(c.row, c.block, c.padded_blocks), c.offset)
        << "row " << c.row << " block " << c.block;
  }
  const Nvfp4Layout tiled{kNvfp4Group, true};
  EXPECT_EQ(tiled.StoredScaleRows(200), 256);
  EXPECT_EQ(tiled.StoredScaleCols(80), 8);
  EXPECT_EQ(tiled.StoredScaleRows(128), 128);
  EXPECT_EQ(tiled.StoredScaleCols(64), 4);
}

constexpr int64_t kN = 200;
constexpr int64_t kK = 80;
constexpr int64_t kBlocks = kK / 16;

LoadFacts CtFacts() {
  LoadFacts facts;
  facts.layout = SourceLayout::kCtNvfp4PackQuantized;
  return facts;
}

// On the reference kernel, which reads either layout: the same products, bit for bit.
Result<Linear> LoadAs(ScaleVariant scales, const Checkpoint& checkpoint) {
  SpecKey key = Nvfp4LinearKey();
  key.scales = scales;
  QP_ASSIGN_OR_RETURN(std::unique_ptr<WeightSpec> spec, MakeSpec(key, {}, CtFacts()));
  AllocationRequest request;
  request.layer = "m";
  request.shape = {kN, kK};
  QP_ASSIGN_OR_RETURN(int64_t bytes, spec->StorageBytes(request));
  const auto dispatcher = std::make_shared<Dispatcher>(KernelRegistry::Global(), CpuFeatures{});
  QP_ASSIGN_OR_RETURN(Linear linear,
                      LoadLinear(std::move(spec), request, checkpoint, {"m"}, dispatcher));
  EXPECT_EQ(linear.params().WeightBytes(), bytes);
  return linear;
}

TEST(Nvfp4Tiled, RoundTripsTheLinearScalesOnOddShapes) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> codes(static_cast<size_t>(kN * kK / 2));
  for (uint8_t& b : codes) b = static_cast<uint8_t>(byte(rng));
  // Positive finite E4M3 scales, so that no product is NaN and every one differs.
  std::vector<uint8_t> scales = testing::RandomFp8(&rng, kN * kBlocks);
  for (uint8_t& s : scales) s &= 0x7F;
  const Checkpoint checkpoint = testing::OpenTestCheckpoint(
      {{"m.weight_packed", "U8", {kN, kK / 2}, codes},
       testing::Fp8Tensor("m.weight_scale", {kN, kBlocks}, scales),
       testing::F32Tensor("m.weight_global_scale", {1}, {448.0f * 6.0f})});

  Result<Linear> linear = LoadAs(ScaleVariant::kLinear, checkpoint);
  ASSERT_TRUE(linear.ok()) << linear.status().message();
  Result<Linear> tiled = LoadAs(ScaleVariant::kTiled128x4, checkpoint);
  ASSERT_TRUE(tiled.ok()) << tiled.status().message();
  EXPECT_EQ(tiled->spec().key().ToId(), "nvfp4_block_16_128x4");

  const ParamTensor& swizzled = tiled->params().tensor(Slot::kWeightScale);
  ASSERT_EQ(swizzled.rows(), 256);
  ASSERT_EQ(swizzled.cols(), 8);
  const uint8_t* bytes = swizzled.data<uint8_t>();
  std::vector<bool> used(static_cast<size_t>(swizzled.elements()), false);
  int64_t differ = 0;
  for (int64_t n = 0; n < kN; ++n) {
    for (int64_t j = 0; j < kBlocks; ++j) {
      const int64_t at = Nvfp4TiledScaleOffset(n, j, swizzled.cols());
      ASSERT_LT(at, swizzled.elements());
      EXPECT_FALSE(used[at]) << "two scales at " << at;
      used[at] = true;
      if (bytes[at] != scales[n * kBlocks + j]) ++differ;
    }
  }
  EXPECT_EQ(differ, 0);
  int64_t padding = 0;
  for (int64_t i = 0; i < swizzled.elements(); ++i) {
    if (used[i]) continue;
    ++padding;
    EXPECT_EQ(bytes[i], 0) << "padding byte " << i;
  }
  EXPECT_EQ(padding, 256 * 8 - kN * kBlocks);

  std::vector<float> x(static_cast<size_t>(3 * kK));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (float& v : x) v = value(rng);
  Result<std::vector<float>> y_linear = linear->Forward(x, 3);
  Result<std::vector<float>> y_tiled = tiled->Forward(x, 3);
  ASSERT_TRUE(y_linear.ok() && y_tiled.ok());
  EXPECT_EQ(std::memcmp(y_linear->data(), y_tiled->data(), y_linear->size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace quantpath
