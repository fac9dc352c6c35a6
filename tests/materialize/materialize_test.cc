// Materialize: the candidate list, activation modes, storage bytes without weights, and the
// allocation request of a site.
#include <gtest/gtest.h>

#include "quantpath/materialize.h"

namespace quantpath {
namespace {

TensorQuant Fp8(Granularity granularity) {
  TensorQuant t;
  t.dtype = QDType::kFP8E4M3;
  t.granularity = granularity;
  return t;
}

QuantScheme BlockScheme() {
  QuantScheme s;
  s.weight = Fp8(Granularity::kBlock);
  s.weight.block_shape = std::array<int64_t, 2>{128, 128};
  s.input = Fp8(Granularity::kGroup);
  s.input->group_size = 128;
  s.input->dynamic = Dynamic::kDynamic;
  return s;
}

const DeviceCaps kCpu;

TEST(MaterializeTest, PicksTheSpecOfEachScheme) {
  EXPECT_EQ(KeyFor(QuantScheme{}, kCpu)->ToId(), "bf16");
  QuantScheme fp16;
  fp16.weight.dtype = QDType::kFP16;
  EXPECT_EQ(KeyFor(fp16, kCpu)->ToId(), "bf16");

  QuantScheme tensor;
  tensor.weight = Fp8(Granularity::kPerTensor);
  tensor.input = Fp8(Granularity::kPerTensor);
  Result<std::shared_ptr<const WeightSpec>> spec = Materialize(tensor, kCpu);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ((*spec)->key().ToId(), "fp8_per_tensor");
  EXPECT_EQ((*spec)->activation().mode, ActMode::kStaticPerTensor);

  QuantScheme channel;
  channel.weight = Fp8(Granularity::kPerChannel);
  channel.input = Fp8(Granularity::kPerToken);
  channel.input->dynamic = Dynamic::kDynamic;
  spec = Materialize(channel, *ParseDevice("sm90"));
  EXPECT_EQ((*spec)->key().ToId(), "fp8_per_channel");
  EXPECT_EQ((*spec)->activation().mode, ActMode::kDynamicPerToken);

  spec = Materialize(BlockScheme(), kCpu);
  EXPECT_EQ((*spec)->key().ToId(), "fp8_block_128_128");
  EXPECT_EQ((*spec)->activation(), (ActivationQuant{ActMode::kDynamicGroup, 128}));

  QuantScheme weight_only = BlockScheme();
  weight_only.input.reset();
  weight_only.weight.block_shape = std::array<int64_t, 2>{64, 32};
  spec = Materialize(weight_only, kCpu);
  EXPECT_EQ((*spec)->key().ToId(), "fp8_block_64_32");
  EXPECT_EQ((*spec)->activation().mode, ActMode::kNone);
}

TEST(MaterializeTest, NoSpecSaysWhy) {
  QuantScheme int4;
  int4.weight.dtype = QDType::kINT4;
  int4.weight.granularity = Granularity::kGroup;
  int4.weight.group_size = 128;
  int4.weight.symmetric = false;
  // The layout exists (plan reports it and its bytes); its loader is not in this build.
  EXPECT_EQ(KeyFor(int4, kCpu)->ToId(), "int4_group_128_zp");
  EXPECT_EQ(Materialize(int4, kCpu).status().code(), ErrorCode::kUnsupported);

  QuantScheme e4m3_group = BlockScheme();
  e4m3_group.weight.granularity = Granularity::kPerToken;
  Result<SpecKey> id = KeyFor(e4m3_group, kCpu);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(id.status().message().find("no physical spec stores fp8_e4m3 weights with token "
                                       "scales"),
            std::string::npos)
      << id.status().message();
  EXPECT_NE(id.status().message().find("fp8_block_<bn>_<bk>"), std::string::npos);

  QuantScheme fp8_group = BlockScheme();
  fp8_group.weight.granularity = Granularity::kGroup;
  EXPECT_EQ(KeyFor(fp8_group, kCpu).status().code(), ErrorCode::kUnsupported);

  QuantScheme e5m2 = BlockScheme();
  e5m2.weight.dtype = QDType::kFP8E5M2;
  EXPECT_FALSE(KeyFor(e5m2, kCpu).ok());

  QuantScheme no_block = BlockScheme();
  no_block.weight.block_shape.reset();
  Result<SpecKey> missing = KeyFor(no_block, kCpu);
  EXPECT_EQ(missing.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(missing.status().message().find("block_shape"), std::string::npos);

  // Quantizing at load needs a quantizer for the key: block fp8 has one, int4 channels none.
  QuantScheme online = BlockScheme();
  online.online = true;
  online.weight.load.layout = SourceLayout::kDense;
  Result<std::shared_ptr<const WeightSpec>> block_at_load = Materialize(online, kCpu);
  ASSERT_TRUE(block_at_load.ok()) << block_at_load.status().message();
  EXPECT_EQ((*block_at_load)->key().ToId(), "fp8_block_128_128");
  EXPECT_EQ((*block_at_load)->facts().layout, SourceLayout::kDense);
  QuantScheme int4_online = online;
  int4_online.weight = TensorQuant{};
  int4_online.weight.dtype = QDType::kINT4;
  int4_online.weight.granularity = Granularity::kPerChannel;
  int4_online.input.reset();
  Result<SpecKey> at_load = KeyFor(int4_online, kCpu);
  EXPECT_EQ(at_load.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(at_load.status().message().find("into int4_channel at load is not implemented"),
            std::string::npos)
      << at_load.status().message();

  QuantScheme int8_act = BlockScheme();
  int8_act.input->dtype = QDType::kINT8;
  // The key stores the weight only; the spec refuses activations its kernels cannot quantize.
  EXPECT_TRUE(KeyFor(int8_act, kCpu).ok());
  Result<std::shared_ptr<const WeightSpec>> int8_spec = Materialize(int8_act, kCpu);
  ASSERT_FALSE(int8_spec.ok());
  EXPECT_NE(int8_spec.status().message().find("int8 dynamic group 128 activations"),
            std::string::npos)
      << int8_spec.status().message();
}

// A spec that ignored a rotation of the input would compute another product; LUT-B codes have
// no family yet. Both are said, never mapped onto a near spec.
TEST(MaterializeTest, RotatedInputsAndLutBHaveNoSpecYet) {
  QuantScheme rotated = BlockScheme();
  rotated.input_hadamard = 32;
  Result<SpecKey> id = KeyFor(rotated, kCpu);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(id.status().message().find("rotates the input by a block Hadamard (width 32)"),
            std::string::npos)
      << id.status().message();
  EXPECT_TRUE(KeyFor(BlockScheme(), kCpu).ok());

  QuantScheme lut;
  lut.weight.dtype = QDType::kLUTB;
  lut.weight.granularity = Granularity::kBlock;
  lut.weight.block_shape = std::array<int64_t, 2>{8, 64};
  id = KeyFor(lut, kCpu);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("no physical spec stores lut_b weights"), std::string::npos)
      << id.status().message();
}

TEST(ActivationQuantForTest, Modes) {
  QuantScheme s = BlockScheme();
  s.input = Fp8(Granularity::kPerTensor);
  s.input->dynamic = Dynamic::kDynamic;
  EXPECT_EQ(ActivationQuantFor(s)->mode, ActMode::kDynamicPerTensor);
  s.input = Fp8(Granularity::kBlock);
  s.input->block_shape = std::array<int64_t, 2>{1, 64};
  s.input->dynamic = Dynamic::kDynamic;
  EXPECT_EQ(*ActivationQuantFor(s), (ActivationQuant{ActMode::kDynamicGroup, 64}));
  s.input = Fp8(Granularity::kPerToken);  // static per-token scales cannot exist
  EXPECT_FALSE(ActivationQuantFor(s).ok());
  s.input = Fp8(Granularity::kPerTensor);
  s.input->dynamic = Dynamic::kLocal;
  EXPECT_FALSE(ActivationQuantFor(s).ok());
  // "local" is NVFP4's: per-16 scales at run time against the checkpoint's global.
  s.input->dtype = QDType::kNVFP4;
  s.input->granularity = Granularity::kTensorGroup;
  s.input->group_size = 16;
  EXPECT_EQ(*ActivationQuantFor(s),
            (ActivationQuant{ActMode::kDynamicGroup, 16, QDType::kNVFP4, true}));
  s.input->group_size.reset();
  EXPECT_FALSE(ActivationQuantFor(s).ok());
  // Asymmetric and integer activations are modes too (W8A8 int8 with an input offset); which
  // specs accept them is each family's answer.
  s.input = Fp8(Granularity::kPerTensor);
  s.input->symmetric = false;
  EXPECT_FALSE(ActivationQuantFor(s)->symmetric);
  EXPECT_FALSE(Materialize(s, kCpu).ok());
  s.input = Fp8(Granularity::kPerToken);
  s.input->dtype = QDType::kINT8;
  s.input->dynamic = Dynamic::kDynamic;
  EXPECT_EQ(*ActivationQuantFor(s),
            (ActivationQuant{ActMode::kDynamicPerToken, 0, QDType::kINT8, true}));
}

AllocationRequest Request(std::array<int64_t, 2> shape, std::vector<int64_t> legs = {}) {
  AllocationRequest r;
  r.layer = "l";
  r.shape = shape;
  r.leg_rows = std::move(legs);
  return r;
}

TEST(StorageBytesTest, DesignExamples) {
  // fused_qkv_a_proj of DESIGN.md's deepseek-tiny plan.
  EXPECT_EQ(*StorageBytes(*ParseSpecId("fp8_block_128_128"), Request({168, 256}, {128, 40})),
            43024);
  EXPECT_EQ(*StorageBytes(*ParseSpecId("bf16"), Request({512, 256})), 262144);
}

TEST(StorageBytesTest, EachSpec) {
  AllocationRequest r = Request({512, 256}, {256, 128, 128});
  EXPECT_EQ(*StorageBytes(*ParseSpecId("fp8_per_tensor"), r), 512 * 256 + 512 * 4);
  EXPECT_EQ(*StorageBytes(*ParseSpecId("fp8_per_channel"), r), 512 * 256 + 512 * 4);
  EXPECT_EQ(*StorageBytes(*ParseSpecId("fp8_block_128_128"), r), 512 * 256 + 4 * 2 * 4);
  r.params_dtype = QDType::kFP32;
  EXPECT_EQ(*StorageBytes(*ParseSpecId("bf16"), r), 512 * 256 * 4);
  r.bias = true;
  EXPECT_EQ(*StorageBytes(*ParseSpecId("bf16"), r), 512 * 256 * 4 + 512 * 4);
  r.params_dtype = QDType::kBF16;
  EXPECT_EQ(*StorageBytes(*ParseSpecId("fp8_per_channel"), r), 512 * 256 + 512 * 4 + 512 * 2);
  r.tp_size = 2;
  r.tp_rank = 1;
  r.parallel = Parallel::kColumn;
  EXPECT_EQ(*StorageBytes(*ParseSpecId("fp8_per_channel"), r), 256 * 256 + 256 * 4 + 256 * 2);
  // Split in two, k_proj and v_proj have 64 rows per rank: not whole 128-row blocks.
  EXPECT_FALSE(StorageBytes(*ParseSpecId("fp8_block_128_128"), r).ok());
}

TEST(StorageBytesTest, MoeCountsEveryExpertsProjections) {
  AllocationRequest moe = Request({64, 256});
  moe.experts = 8;
  // gate and up [64, 256] and down [256, 64], each with its own 128 × 128 grid.
  const int64_t per_expert = 2 * (64 * 256 + 1 * 2 * 4) + (256 * 64 + 2 * 1 * 4);
  EXPECT_EQ(*StorageBytes(*ParseSpecId("fp8_block_128_128"), moe), 8 * per_expert);
  EXPECT_EQ(*StorageBytes(*ParseSpecId("bf16"), moe), 8 * 3 * 64 * 256 * 2);
}

TEST(StorageBytesTest, Errors) {
  EXPECT_FALSE(StorageBytes(SpecKey{SpecFamily("no_such_family")}, Request({8, 8})).ok());
  EXPECT_FALSE(
      StorageBytes(*ParseSpecId("fp8_block_128_128"), Request({8, 8}, {4, 3})).ok());  // legs ≠ N
  // A column split that cuts a block of a leg.
  AllocationRequest split = Request({512, 256}, {256, 256});
  split.parallel = Parallel::kColumn;
  split.tp_size = 4;
  Result<int64_t> legs = StorageBytes(*ParseSpecId("fp8_block_128_128"), split);
  ASSERT_FALSE(legs.ok());
  EXPECT_NE(legs.status().message().find("multiple of the block's 128 rows"), std::string::npos);
}

TEST(StorageBytesTest, BlockGridsPerFusedLeg) {
  // 256 + 64 + 192 rows: grids of 2, 1 and 2 rows (a shared grid would have 4), 2 columns each.
  EXPECT_EQ(*StorageBytes(*ParseSpecId("fp8_block_128_128"), Request({512, 256}, {256, 64, 192})),
            512 * 256 + (2 + 1 + 2) * 2 * 4);
}

LayerSite QkvSite() {
  LayerSite site;
  site.path = "model.layers.0.self_attn.qkv_proj";
  site.kind = SiteKind::kLinear;
  site.shape = std::array<int64_t, 2>{512, 256};
  site.legs = {{"q_proj", 256}, {"k_proj", 128}, {"v_proj", 128}};
  site.bias = true;
  return site;
}

TEST(SiteTest, RequestAndPrefixes) {
  const AllocationRequest r = RequestForSite(QkvSite(), QDType::kFP16, kCpu);
  EXPECT_EQ(r.layer, "model.layers.0.self_attn.qkv_proj");
  EXPECT_EQ(r.shape, (std::array<int64_t, 2>{512, 256}));
  EXPECT_EQ(r.leg_rows, (std::vector<int64_t>{256, 128, 128}));
  EXPECT_EQ(r.leg_names, (std::vector<std::string>{"q_proj", "k_proj", "v_proj"}));
  EXPECT_EQ(r.params_dtype, QDType::kFP16);
  EXPECT_TRUE(r.bias);
  EXPECT_EQ(LegPrefixes(QkvSite()), (std::vector<std::string>{"model.layers.0.self_attn.q_proj",
                                                              "model.layers.0.self_attn.k_proj",
                                                              "model.layers.0.self_attn.v_proj"}));
  LayerSite dense = QkvSite();
  dense.path = "model.layers.0.self_attn.o_proj";
  dense.legs.clear();
  EXPECT_EQ(LegPrefixes(dense), (std::vector<std::string>{"model.layers.0.self_attn.o_proj"}));
  LayerSite moe = QkvSite();
  moe.kind = SiteKind::kMoe;
  moe.experts = 8;
  moe.legs = {{"gate_proj", 64}, {"up_proj", 64}, {"down_proj", 256}};
  const AllocationRequest m = RequestForSite(moe, QDType::kBF16, kCpu);
  EXPECT_TRUE(m.leg_rows.empty());
  EXPECT_EQ(m.experts, 8);
}

}  // namespace
}  // namespace quantpath

namespace quantpath {
namespace {

// The same scheme has different layouts on different devices: NVFP4 scales are swizzled into
// 128 × 4 tiles for Blackwell's block-scaled GEMMs and kept linear elsewhere.
TEST(MaterializeTest, DeviceChoosesTheLayout) {
  QuantScheme nvfp4;
  nvfp4.weight.dtype = QDType::kNVFP4;
  nvfp4.weight.granularity = Granularity::kTensorGroup;
  nvfp4.weight.group_size = 16;
  EXPECT_EQ(KeyFor(nvfp4, kCpu)->ToId(), "nvfp4_block_16_linear");
  EXPECT_EQ(KeyFor(nvfp4, *ParseDevice("sm90"))->ToId(), "nvfp4_block_16_linear");
  EXPECT_EQ(KeyFor(nvfp4, *ParseDevice("sm100"))->ToId(), "nvfp4_block_16_128x4");
  // Both layouts load from an NVFP4 source layout, each on its device.
  nvfp4.weight.load.layout = SourceLayout::kModelOptNvfp4;
  Result<std::shared_ptr<const WeightSpec>> linear = Materialize(nvfp4, kCpu);
  ASSERT_TRUE(linear.ok()) << linear.status().message();
  EXPECT_EQ((*linear)->key().ToId(), "nvfp4_block_16_linear");
  Result<std::shared_ptr<const WeightSpec>> tiled = Materialize(nvfp4, *ParseDevice("sm100"));
  ASSERT_TRUE(tiled.ok()) << tiled.status().message();
  EXPECT_EQ((*tiled)->key().ToId(), "nvfp4_block_16_128x4");
  // A device without kernels does not change the key (the registry answers that separately).
  EXPECT_EQ(KeyFor(BlockScheme(), *ParseDevice("sm90"))->ToId(), "fp8_block_128_128");
}

}  // namespace
}  // namespace quantpath
