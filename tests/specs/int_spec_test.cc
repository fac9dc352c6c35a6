// IntSpec: allocation and bytes, loading GPTQ v1 / v2 (3-bit packing across words included), AWQ
// gemm and compressed-tensors pack-quantized legs written by the producers' packing loops
// (int_writers.h) into the canonical layout, act-order permutations, the fp64 reference of each
// layout, and errors naming the tensor and the layer.
#include <gtest/gtest.h>

#include <random>

#include "quantpath/specs.h"
#include "src/specs/int_family.h"
#include "tests/specs/int_writers.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

using testing::AwqTensors;
using testing::CtTensors;
using testing::GptqTensors;
using testing::IntLeg;
using testing::IntScheme;
using testing::OpenTestCheckpoint;
using testing::RandomIntLeg;
using testing::TestTensor;

SpecKey Key(std::string_view id) {
  Result<SpecKey> key = ParseSpecId(id);
  EXPECT_TRUE(key.ok()) << key.status().message();
  return *key;
}

std::unique_ptr<WeightSpec> Spec(std::string_view id, SourceLayout layout,
                                 ZeroPointConvention zeros = ZeroPointConvention::kStored) {
  LoadFacts facts;
  facts.layout = layout;
  facts.zero_point = zeros;
  Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(Key(id), {}, facts);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return spec.ok() ? std::move(*spec) : nullptr;
}

AllocationRequest Request(std::string layer, int64_t k, std::vector<int64_t> legs) {
  AllocationRequest r;
  r.layer = std::move(layer);
  int64_t n = 0;
  for (int64_t rows : legs) n += rows;
  r.shape = {n, k};
  if (legs.size() > 1) r.leg_rows = std::move(legs);
  return r;
}

// Bit b of the canonical row, counted from bit 0 of its first byte.
int Bit(const uint8_t* row, int64_t b) { return (row[b / 8] >> (b % 8)) & 1; }
int64_t Code(const ParamTensor& t, int64_t row, int64_t i, int bits) {
  int64_t v = 0;
  for (int b = 0; b < bits; ++b)
    v |= int64_t{Bit(t.data<uint8_t>() + row * t.row_bytes(), i * bits + b)} << b;
  return v;
}

// The canonical layout read back bit by bit: W[n][perm[j]] = (q − z) · s.
std::vector<double> Canonical(const LinearParams& p) {
  const int bits = p.key.bits;
  const int64_t k = p.cols;
  const int64_t g = IntGroupOf(p.key, k);
  const ParamTensor& s = p.tensor(Slot::kWeightScale);
  const ParamTensor& z = p.tensor(Slot::kWeightZero);
  const ParamTensor& perm = p.tensor(Slot::kGIdx);
  std::vector<double> w(static_cast<size_t>(p.rows * k));
  for (int64_t n = 0; n < p.rows; ++n) {
    for (int64_t j = 0; j < k; ++j) {
      int64_t zero = int64_t{1} << (bits - 1);
      if (!z.empty()) {
        zero = p.key.family == kIntGroupFamily ? Code(z, n, j / g, bits) : Code(z, 0, n, bits);
      }
      const double scale =
          p.key.family == kIntTensorFamily ? LoadFloat(s, 0) : LoadFloat(s, n * s.cols() + j / g);
      const int64_t col = perm.empty() ? j : perm.data<int32_t>()[j];
      w[n * k + col] =
          static_cast<double>(Code(p.tensor(Slot::kWeight), n, j, bits) - zero) * scale;
    }
  }
  return w;
}

Result<LinearParams> LoadLegs(const WeightSpec& spec, const Checkpoint& checkpoint,
                              const AllocationRequest& request,
                              const std::vector<std::string>& prefixes) {
  QP_ASSIGN_OR_RETURN(LinearParams params, spec.Allocate(request));
  QP_RETURN_IF_ERROR(spec.Load(checkpoint, prefixes, &params));
  QP_RETURN_IF_ERROR(spec.ProcessAfterLoading(&params));
  return params;
}

std::vector<double> Stack(const std::vector<IntLeg>& legs) {
  std::vector<double> w;
  for (const IntLeg& leg : legs) {
    const std::vector<double> d = leg.Dequantized();
    w.insert(w.end(), d.begin(), d.end());
  }
  return w;
}

TEST(IntSpecTest, StorageBytesMatchAllocation) {
  std::vector<AllocationRequest> requests = {Request("a", 256, {96}), Request("b", 200, {64, 40}),
                                             Request("c", 100, {24, 8, 8})};
  requests[1].bias = true;
  for (std::string_view id :
       {"int4_group_128", "int4_group_32_zp", "int3_group_32_zp_actorder", "int8_group_64",
        "int4_channel", "int4_channel_zp", "int8_channel", "int4_tensor", "int2_group_16_zp"}) {
    const auto spec = Spec(id, SourceLayout::kCtPackQuantized);
    for (const AllocationRequest& request : requests) {
      Result<LinearParams> params = spec->Allocate(request);
      Result<int64_t> bytes = spec->StorageBytes(request);
      ASSERT_TRUE(params.ok()) << id << " " << params.status().message();
      ASSERT_TRUE(bytes.ok());
      EXPECT_EQ(*bytes, params->WeightBytes()) << id << " " << request.layer;
      Result<int64_t> plan = LayoutStorageBytes(Key(id), request);
      ASSERT_TRUE(plan.ok());
      EXPECT_EQ(*plan, *bytes) << id;
    }
  }
  // int4 g128 of [96, 256]: 96 · 128 code bytes + 96 · 2 · 2 scale bytes.
  EXPECT_EQ(*Spec("int4_group_128", SourceLayout::kGptqV1)->StorageBytes(Request("a", 256, {96})),
            96 * 128 + 96 * 2 * 2);
}

TEST(IntSpecTest, GptqV1ThreeBitCrossesWords) {
  std::mt19937 rng(3);
  const IntLeg a = RandomIntLeg(&rng, 3, 64, 128, 32, false);
  const IntLeg b = RandomIntLeg(&rng, 3, 32, 128, 32, false);
  std::vector<TestTensor> tensors = GptqTensors(a, "l.q_proj", true);
  for (TestTensor& t : GptqTensors(b, "l.k_proj", true)) tensors.push_back(t);
  const Checkpoint checkpoint = OpenTestCheckpoint(tensors);
  const auto spec =
      Spec("int3_group_32_zp", SourceLayout::kGptqV1, ZeroPointConvention::kStoredMinusOne);
  Result<LinearParams> p =
      LoadLegs(*spec, checkpoint, Request("l.qkv", 128, {64, 32}), {"l.q_proj", "l.k_proj"});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->tensor(Slot::kWeightScale).dtype(), QDType::kFP16);  // as stored
  EXPECT_EQ(Canonical(*p), Stack({a, b}));
  Result<ReferenceLayer> ref = DequantizeReference(
      checkpoint,
      IntScheme(3, 32, false, SourceLayout::kGptqV1, ZeroPointConvention::kStoredMinusOne), "l.qkv",
      {"l.q_proj", "l.k_proj"}, false);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_EQ(ref->weight, Stack({a, b}));
}

TEST(IntSpecTest, GptqV1ZeroPointWrapsAsAutoGptqDecodesIt) {
  // v1 stores z − 1: a zero point of 0 is stored as 15 and read back as (15 + 1) mod 16.
  std::mt19937 rng(4);
  IntLeg leg = RandomIntLeg(&rng, 4, 16, 64, 32, false);
  leg.zeros[0] = 0;
  const Checkpoint checkpoint = OpenTestCheckpoint(GptqTensors(leg, "m", true));
  Result<LinearParams> p = LoadLegs(
      *Spec("int4_group_32_zp", SourceLayout::kGptqV1, ZeroPointConvention::kStoredMinusOne),
      checkpoint, Request("m", 64, {16}), {"m"});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(Canonical(*p), leg.Dequantized());
}

TEST(IntSpecTest, GptqV2AndActOrder) {
  std::mt19937 rng(5);
  const IntLeg leg = RandomIntLeg(&rng, 4, 16, 64, 16, true, /*act_order=*/true);
  const Checkpoint checkpoint = OpenTestCheckpoint(GptqTensors(leg, "m", false));
  Result<LinearParams> p = LoadLegs(*Spec("int4_group_16_actorder", SourceLayout::kGptqV2),
                                    checkpoint, Request("m", 64, {16}), {"m"});
  ASSERT_TRUE(p.ok()) << p.status().message();
  // Canonical columns are sorted by group: column j of the layout is in group j / 16.
  const int32_t* perm = p->tensor(Slot::kGIdx).data<int32_t>();
  for (int64_t j = 0; j < 64; ++j) EXPECT_EQ(leg.g_idx[perm[j]], j / 16) << j;
  EXPECT_EQ(Canonical(*p), leg.Dequantized());
  Result<ReferenceLayer> ref = DequantizeReference(
      checkpoint, IntScheme(4, 16, true, SourceLayout::kGptqV2, ZeroPointConvention::kStored, true),
      "m", {"m"}, false);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_EQ(ref->weight, leg.Dequantized());
}

TEST(IntSpecTest, AwqGemmNibbleOrder) {
  std::mt19937 rng(6);
  const IntLeg leg = RandomIntLeg(&rng, 4, 24, 64, 32, false);
  const Checkpoint checkpoint = OpenTestCheckpoint(AwqTensors(leg, "m"));
  Result<LinearParams> p = LoadLegs(*Spec("int4_group_32_zp", SourceLayout::kAwqGemm), checkpoint,
                                    Request("m", 64, {24}), {"m"});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(Canonical(*p), leg.Dequantized());
  Result<ReferenceLayer> ref = DequantizeReference(
      checkpoint, IntScheme(4, 32, false, SourceLayout::kAwqGemm, ZeroPointConvention::kStored),
      "m", {"m"}, false);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_EQ(ref->weight, leg.Dequantized());
}

TEST(IntSpecTest, CompressedTensorsGroupChannelAndActOrder) {
  std::mt19937 rng(7);
  struct Case {
    std::string id;
    int bits;
    int64_t n, k, group;
    bool symmetric, act_order;
  };
  for (const Case& c : {Case{"int4_group_32_zp", 4, 12, 80, 32, false, false},
                        Case{"int4_group_32", 4, 16, 64, 32, true, false},
                        Case{"int8_channel_zp", 8, 20, 36, 36, false, false},
                        Case{"int2_group_16_zp", 2, 40, 48, 16, false, false},
                        Case{"int4_group_16_zp_actorder", 4, 8, 64, 16, false, true}}) {
    SCOPED_TRACE(c.id);
    const IntLeg leg = RandomIntLeg(&rng, c.bits, c.n, c.k, c.group, c.symmetric, c.act_order);
    const Checkpoint checkpoint = OpenTestCheckpoint(CtTensors(leg, "m", c.symmetric, c.act_order));
    Result<LinearParams> p = LoadLegs(*Spec(c.id, SourceLayout::kCtPackQuantized), checkpoint,
                                      Request("m", c.k, {c.n}), {"m"});
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(Canonical(*p), leg.Dequantized());
    const bool channel = c.id.find("channel") != std::string::npos;
    Result<ReferenceLayer> ref = DequantizeReference(
        checkpoint,
        IntScheme(c.bits, channel ? 0 : c.group, c.symmetric, SourceLayout::kCtPackQuantized,
                  ZeroPointConvention::kStored, c.act_order),
        "m", {"m"}, false);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    EXPECT_EQ(ref->weight, leg.Dequantized());
  }
}

// compressed-tensors "tensor" strategy: one scale per leg; fused legs must agree on it.
TEST(IntSpecTest, CompressedTensorsTensorScale) {
  std::mt19937 rng(11);
  auto leg_with_scale = [&](int64_t n, float scale) {
    IntLeg leg = RandomIntLeg(&rng, 8, n, 32, 32, true);
    for (float& s : leg.scales) s = scale;
    std::vector<TestTensor> t = CtTensors(leg, "l.p" + std::to_string(n), true, false);
    t[1] = testing::F16Tensor("l.p" + std::to_string(n) + ".weight_scale", {1}, {scale});
    return std::make_pair(leg, t);
  };
  auto [a, ta] = leg_with_scale(8, 0.0625f);
  auto [b, tb] = leg_with_scale(4, 0.0625f);
  std::vector<TestTensor> tensors = ta;
  tensors.insert(tensors.end(), tb.begin(), tb.end());
  const auto spec = Spec("int8_tensor", SourceLayout::kCtPackQuantized);
  Result<LinearParams> p =
      LoadLegs(*spec, OpenTestCheckpoint(tensors), Request("l", 32, {8, 4}), {"l.p8", "l.p4"});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(Canonical(*p), Stack({a, b}));
  QuantScheme scheme =
      IntScheme(8, 0, true, SourceLayout::kCtPackQuantized, ZeroPointConvention::kStored);
  scheme.weight.granularity = Granularity::kPerTensor;
  Result<ReferenceLayer> ref =
      DequantizeReference(OpenTestCheckpoint(tensors), scheme, "l", {"l.p8", "l.p4"}, false);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_EQ(ref->weight, Stack({a, b}));

  auto [c, tc] = leg_with_scale(4, 0.125f);
  tensors = ta;
  tensors.insert(tensors.end(), tc.begin(), tc.end());
  Result<LinearParams> differ =
      LoadLegs(*spec, OpenTestCheckpoint(tensors), Request("l", 32, {8, 4}), {"l.p8", "l.p4"});
  ASSERT_FALSE(differ.ok());
  EXPECT_NE(differ.status().message().find("l.p4.weight_scale"), std::string::npos)
      << differ.status().message();
}

// Loads `tensors` as one leg "x.proj" of layer "layer.x" and returns the error.
Status LoadError(std::string_view id, SourceLayout layout, const std::vector<TestTensor>& tensors,
                 int64_t n, int64_t k) {
  const Checkpoint checkpoint = OpenTestCheckpoint(tensors);
  Result<LinearParams> p = LoadLegs(*Spec(id, layout, ZeroPointConvention::kStoredMinusOne),
                                    checkpoint, Request("layer.x", k, {n}), {"x.proj"});
  EXPECT_FALSE(p.ok());
  return p.ok() ? Status() : p.status();
}

TEST(IntSpecTest, ErrorsNameTheTensorAndTheLayer) {
  std::mt19937 rng(8);
  const IntLeg leg = RandomIntLeg(&rng, 4, 16, 64, 32, true);
  auto expect = [](const Status& s, std::string_view tensor, std::string_view what) {
    EXPECT_NE(s.message().find("layer.x"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(tensor), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  };
  std::vector<TestTensor> t = GptqTensors(leg, "x.proj", true);
  // Missing qzeros.
  std::vector<TestTensor> missing = {t[0], t[2], t[3]};
  const Status s1 = LoadError("int4_group_32", SourceLayout::kGptqV1, missing, 16, 64);
  EXPECT_EQ(s1.code(), ErrorCode::kNotFound);
  expect(s1, "x.proj.qzeros", "not in the checkpoint");
  // qweight of the wrong shape.
  std::vector<TestTensor> shape = t;
  shape[0].shape = {16, 8};
  expect(LoadError("int4_group_32", SourceLayout::kGptqV1, shape, 16, 64), "x.proj.qweight",
         "expected [8, 16]");
  // Scales as I16.
  std::vector<TestTensor> dtype = t;
  dtype[2].dtype = "I16";
  expect(LoadError("int4_group_32", SourceLayout::kGptqV1, dtype, 16, 64), "x.proj.scales",
         "F16, BF16 or F32");
  // Scales written transposed ([N, G] instead of GPTQ's [G, N]).
  std::vector<TestTensor> transposed = t;
  transposed[2].shape = {16, 2};
  expect(LoadError("int4_group_32", SourceLayout::kGptqV1, transposed, 16, 64), "x.proj.scales",
         "expected [2, 16]");
  // A symmetric key with zero points that are not 8.
  IntLeg skewed = leg;
  skewed.zeros[5] = 3;
  expect(LoadError("int4_group_32", SourceLayout::kGptqV1, GptqTensors(skewed, "x.proj", true), 16,
                   64),
         "x.proj.qzeros", "holds zero point 3");
  // Act-order groups that do not hold g columns each.
  IntLeg ragged = leg;
  ragged.g_idx[0] = 1;
  expect(LoadError("int4_group_32_actorder", SourceLayout::kGptqV1,
                   GptqTensors(ragged, "x.proj", true), 16, 64),
         "x.proj.g_idx", "the act-order layout needs 32");
  // compressed-tensors weight_shape that disagrees with the layer.
  expect(LoadError("int4_group_32", SourceLayout::kCtPackQuantized,
                   CtTensors(leg, "x.proj", true, false), 16, 128),
         "x.proj.weight_shape", "says [16, 64]");
}

TEST(IntSpecTest, FusedLegsMustShareTheirActOrder) {
  std::mt19937 rng(9);
  const IntLeg a = RandomIntLeg(&rng, 4, 16, 64, 16, true, true);
  const IntLeg b = RandomIntLeg(&rng, 4, 16, 64, 16, true, true);
  std::vector<TestTensor> tensors = GptqTensors(a, "l.gate_proj", true);
  for (TestTensor& t : GptqTensors(b, "l.up_proj", true)) tensors.push_back(t);
  Result<LinearParams> p = LoadLegs(
      *Spec("int4_group_16_actorder", SourceLayout::kGptqV1, ZeroPointConvention::kStoredMinusOne),
      OpenTestCheckpoint(tensors), Request("l.gate_up", 64, {16, 16}),
      {"l.gate_proj", "l.up_proj"});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("l.up_proj.g_idx"), std::string::npos);
}

TEST(IntSpecTest, RefusesWhatItCannotLoad) {
  LoadFacts gemv;
  gemv.layout = SourceLayout::kAwqGemv;
  Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(Key("int4_group_128_zp"), {}, gemv);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(spec.status().message().find("gemv"), std::string::npos);
  LoadFacts ct;
  ct.layout = SourceLayout::kCtPackQuantized;
  EXPECT_FALSE(
      MakeSpec(Key("int8_channel"), {ActMode::kDynamicPerToken, 0, QDType::kINT8}, ct).ok());
  // Tensor-parallel slices that cut a group: tests/specs/tp_int_test.cc.
  AllocationRequest tp = Request("layer.x", 64, {16});
  tp.tp_size = 4;
  tp.parallel = Parallel::kRow;
  Result<LinearParams> p = Spec("int4_group_32", SourceLayout::kCtPackQuantized)->Allocate(tp);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kInvalidInput);
  // 3-bit compressed-tensors packing differs across releases.
  std::mt19937 rng(10);
  const IntLeg leg = RandomIntLeg(&rng, 3, 16, 64, 32, true);
  const Status s = LoadError("int3_group_32", SourceLayout::kCtPackQuantized,
                             CtTensors(leg, "x.proj", true, false), 16, 64);
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
}

// int4 weights of the weight-only layouts take int8 activations per token (compressed-tensors'
// W4A8, --int8-activations), and nothing else; act-order and the tensor scale are refused too.
TEST(IntSpecTest, Int4WeightsTakeInt8ActivationsPerTokenOnly) {
  LoadFacts facts;
  facts.layout = SourceLayout::kCtPackQuantized;
  const ActivationQuant int8{ActMode::kDynamicPerToken, 0, QDType::kINT8};
  for (const char* id : {"int4_group_128", "int4_group_64_zp", "int4_channel_zp"}) {
    Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(Key(id), int8, facts);
    ASSERT_TRUE(spec.ok()) << id << ": " << spec.status().message();
    EXPECT_EQ((*spec)->activation(), int8);
  }
  const ActivationQuant fp8{ActMode::kDynamicPerToken, 0, QDType::kFP8E4M3};
  const ActivationQuant int8_static{ActMode::kStaticPerTensor, 0, QDType::kINT8};
  const std::vector<std::pair<const char*, ActivationQuant>> refused = {
      {"int4_group_128", fp8},
      {"int4_group_128", int8_static},
      {"int4_group_128_actorder", int8},
      {"int4_tensor", int8}};
  for (const auto& [id, act] : refused) {
    Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(Key(id), act, facts);
    ASSERT_FALSE(spec.ok()) << id;
    EXPECT_EQ(spec.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(spec.status().message().find(id), std::string::npos) << spec.status().message();
    EXPECT_NE(spec.status().message().find("int8 activations dynamic per token"), std::string::npos)
        << spec.status().message();
  }
}

}  // namespace
}  // namespace quantpath
