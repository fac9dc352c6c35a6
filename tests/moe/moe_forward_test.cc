// MoeForward on experts loaded from a checkpoint written here (8 experts, H = 256, I = 128:
// bf16, block fp8 with 1 × 128 fp8 activations, int4 groups of 128 from GPTQ), on seeded routings
// with an expert left without tokens: against MoeReference (the fp64 oracle from
// DequantizeReference) within MoeTolerance, against a per-token loop of Linear::Forward calls,
// with bf16 X and Y, bit for bit the same on one thread and on all, and every malformed input
// refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "fmt/format.h"
#include "quantpath/moe.h"
#include "quantpath/numeric.h"
#include "quantpath/threads.h"
#include "tests/specs/int_writers.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

constexpr int64_t kExperts = 8;
constexpr int64_t kHidden = 256;
constexpr int64_t kInter = 128;
constexpr const char* kLayer = "model.layers.1.mlp.experts";

// One spec family of the cases: its spec and how its checkpoint is written and read.
struct Family {
  std::string name;
  std::string spec_id;
  ActivationQuant act;
  LoadFacts facts;
  QuantScheme scheme;  // for DequantizeReference
};

LoadFacts Facts(SourceLayout layout, ZeroPointConvention zeros = ZeroPointConvention::kNone) {
  LoadFacts facts;
  facts.layout = layout;
  facts.zero_point = zeros;
  return facts;
}

const std::vector<Family>& Families() {
  static const std::vector<Family> families = {
      {"bf16", "bf16", {}, Facts(SourceLayout::kDense), QuantScheme{}},
      {"fp8_block",
       "fp8_block_128_128",
       {ActMode::kDynamicGroup, 128},
       Facts(SourceLayout::kFp8ScaleInv),
       testing::Fp8BlockScheme()},
      {"int4_group",
       "int4_group_128",
       {},
       Facts(SourceLayout::kGptqV1, ZeroPointConvention::kStoredMinusOne),
       testing::IntScheme(4, 128, true, SourceLayout::kGptqV1,
                          ZeroPointConvention::kStoredMinusOne)},
  };
  return families;
}

std::string Prefix(int64_t expert, std::string_view projection) {
  return fmt::format("{}.{}.{}", kLayer, expert, projection);
}

// The tensors of one [rows, cols] projection under `prefix`, as the family's checkpoints store it.
std::vector<testing::TestTensor> ProjectionTensors(const Family& family, const std::string& prefix,
                                                   int64_t rows, int64_t cols, std::mt19937* rng) {
  switch (family.facts.layout) {
    case SourceLayout::kFp8ScaleInv: {
      const int64_t grid_rows = (rows + 127) / 128, grid_cols = (cols + 127) / 128;
      return {testing::Fp8Tensor(prefix + ".weight", {rows, cols},
                                 testing::RandomFp8(rng, rows * cols)),
              testing::F32Tensor(prefix + ".weight_scale_inv", {grid_rows, grid_cols},
                                 testing::RandomScales(rng, grid_rows * grid_cols))};
    }
    case SourceLayout::kGptqV1:
      return testing::GptqTensors(testing::RandomIntLeg(rng, 4, rows, cols, 128, true), prefix,
                                  true);
    default:
      return {testing::Bf16Tensor(prefix + ".weight", {rows, cols},
                                  testing::RandomBf16Values(rng, rows * cols))};
  }
}

// Every expert of one family loaded as Linears (gate, up and down apart, as LoadedExpert holds
// them), with their references.
struct TestExperts {
  const Family* family = nullptr;
  std::vector<Linear> linears;  // expert e's gate, up, down at 3e, 3e + 1, 3e + 2
  std::vector<MoeExpertReference> refs;

  MoeLayer Layer() const {
    MoeLayer layer{kLayer, {}, {}};
    for (int64_t e = 0; e < kExperts; ++e) {
      layer.experts.push_back({{&linears[3 * e], &linears[3 * e + 1]}, &linears[3 * e + 2]});
    }
    return layer;
  }
  const Linear& At(int64_t expert, int projection) const {
    return linears[3 * expert + projection];
  }
};

TestExperts LoadTestExperts(const Family& family) {
  std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>()(family.name)));
  const std::array<std::tuple<const char*, int64_t, int64_t>, 3> projections = {
      {{"gate_proj", kInter, kHidden},
       {"up_proj", kInter, kHidden},
       {"down_proj", kHidden, kInter}}};
  std::vector<testing::TestTensor> tensors;
  for (int64_t e = 0; e < kExperts; ++e) {
    for (const auto& [name, rows, cols] : projections) {
      for (testing::TestTensor& t : ProjectionTensors(family, Prefix(e, name), rows, cols, &rng)) {
        tensors.push_back(std::move(t));
      }
    }
  }
  const Checkpoint checkpoint = testing::OpenTestCheckpoint(tensors);
  Result<std::shared_ptr<Dispatcher>> dispatcher = Dispatcher::Default();
  EXPECT_TRUE(dispatcher.ok());
  TestExperts experts{&family, {}, {}};
  for (int64_t e = 0; e < kExperts; ++e) {
    for (const auto& [name, rows, cols] : projections) {
      Result<std::unique_ptr<WeightSpec>> spec =
          MakeSpec(*ParseSpecId(family.spec_id), family.act, family.facts);
      EXPECT_TRUE(spec.ok()) << spec.status().message();
      AllocationRequest request;
      request.layer = Prefix(e, name);
      request.shape = {rows, cols};
      Result<Linear> linear =
          LoadLinear(std::move(*spec), request, checkpoint, {Prefix(e, name)}, *dispatcher);
      EXPECT_TRUE(linear.ok()) << linear.status().message();
      experts.linears.push_back(std::move(*linear));
    }
    Result<ReferenceLayer> w13 = DequantizeReference(
        checkpoint, family.scheme, kLayer, {Prefix(e, "gate_proj"), Prefix(e, "up_proj")}, false);
    Result<ReferenceLayer> w2 =
        DequantizeReference(checkpoint, family.scheme, kLayer, {Prefix(e, "down_proj")}, false);
    EXPECT_TRUE(w13.ok() && w2.ok());
    experts.refs.push_back({std::move(*w13), std::move(*w2)});
  }
  return experts;
}

// The experts of each family, loaded once.
const TestExperts& ExpertsOf(const Family& family) {
  static std::map<std::string, TestExperts> loaded;
  auto it = loaded.find(family.name);
  if (it == loaded.end()) it = loaded.emplace(family.name, LoadTestExperts(family)).first;
  return it->second;
}

// A seeded routing over every expert but `idle`.
RoutingTable RoutingWithout(int64_t idle, uint64_t seed, int64_t tokens, int64_t top_k) {
  RoutingTable table = SeededRouting(seed, tokens, top_k, kExperts - 1);
  for (int32_t& id : table.ids) id += id >= idle ? 1 : 0;
  return table;
}

struct Compared {
  double max_abs = 0;
  double max_ref = 0;
  double rel() const { return max_ref > 0 ? max_abs / max_ref : max_abs; }
};
template <typename A, typename B>
Compared Compare(const std::vector<A>& y, const std::vector<B>& ref) {
  Compared c;
  for (size_t i = 0; i < y.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(y[i]) - static_cast<double>(ref[i]));
    c.max_abs = std::isnan(diff) ? diff : std::max(c.max_abs, diff);
    c.max_ref = std::max(c.max_ref, std::fabs(static_cast<double>(ref[i])));
  }
  return c;
}

// Token by token, slot by slot: one Forward per projection on one row, as a naive loop would.
std::vector<float> PerTokenLoop(const TestExperts& experts, const ExpertActivation& activation,
                                const MoeRouting& routing, const std::vector<float>& x) {
  std::vector<float> y(static_cast<size_t>(routing.tokens * kHidden), 0.0f);
  for (int64_t t = 0; t < routing.tokens; ++t) {
    const std::span<const float> token(x.data() + t * kHidden, kHidden);
    for (int64_t j = 0; j < routing.top_k; ++j) {
      const int64_t e = routing.ids[t * routing.top_k + j];
      const std::vector<float> gate = *experts.At(e, 0).Forward(token, 1);
      const std::vector<float> up = *experts.At(e, 1).Forward(token, 1);
      std::vector<float> h(kInter);
      for (int64_t i = 0; i < kInter; ++i) h[i] = Bf16ToFloat(activation.ApplyBf16(gate[i], up[i]));
      const std::vector<float> out = *experts.At(e, 2).Forward(h, 1);
      for (int64_t c = 0; c < kHidden; ++c) {
        y[t * kHidden + c] += routing.weights[t * routing.top_k + j] * out[c];
      }
    }
  }
  return y;
}

struct Case {
  const Family* family;
  int64_t tokens;
  int64_t top_k;
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.family->name << ", M = " << c.tokens << ", top-" << c.top_k;
}

class MoeForwardTest : public ::testing::TestWithParam<Case> {};

TEST_P(MoeForwardTest, MatchesTheReferenceAndAPerTokenLoop) {
  const Case& c = GetParam();
  const TestExperts& experts = ExpertsOf(*c.family);
  const MoeLayer layer = experts.Layer();
  const int64_t idle = 5;
  const RoutingTable routing = RoutingWithout(idle, 11 + c.tokens, c.tokens, c.top_k);
  std::mt19937 rng(static_cast<unsigned>(c.tokens * 10 + c.top_k));
  const std::vector<float> x = testing::RandomBf16Values(&rng, c.tokens * kHidden);
  const std::vector<double> xd(x.begin(), x.end());

  std::vector<float> y(x.size());
  Result<MoeCall> call =
      MoeForward(layer, routing.View(), {QDType::kFP32, x.data(), c.tokens, kHidden},
                 {QDType::kFP32, y.data(), c.tokens, kHidden});
  ASSERT_TRUE(call.ok()) << call.status().message();
  const std::set<int32_t> active(routing.ids.begin(), routing.ids.end());
  EXPECT_EQ(call->active_experts, static_cast<int64_t>(active.size()));
  EXPECT_EQ(active.count(static_cast<int32_t>(idle)), 0u);
  int64_t bytes = 0;
  for (int32_t e : active) {
    for (int p = 0; p < 3; ++p) bytes += experts.At(e, p).params().WeightBytes();
  }
  EXPECT_EQ(call->weight_bytes, bytes);
  EXPECT_FALSE(call->kernels.empty());

  Result<std::vector<double>> ref =
      MoeReference(experts.refs, layer.activation, experts.At(0, 0).spec().activation(),
                   routing.View(), xd, kLayer);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  const double tol = MoeTolerance(experts.At(0, 0).spec().key(), c.family->act.mode);
  const Compared vs_ref = Compare(y, *ref);
  EXPECT_LE(vs_ref.rel(), tol) << "max_abs " << vs_ref.max_abs << " of " << vs_ref.max_ref;
  EXPECT_GT(vs_ref.max_ref, 0);

  // One Forward per token and expert computes the same sums in another order and bucket.
  const Compared vs_loop = Compare(y, PerTokenLoop(experts, layer.activation, routing.View(), x));
  EXPECT_LE(vs_loop.rel(), std::ldexp(1.0, -8)) << "max_abs " << vs_loop.max_abs;

  // bf16 X (the same values) and bf16 Y: the fp32 result rounded.
  std::vector<uint16_t> x_bf16(x.size()), y_bf16(x.size());
  FloatsToBf16(x.data(), static_cast<int64_t>(x.size()), x_bf16.data());
  ASSERT_TRUE(MoeForward(layer, routing.View(), {QDType::kBF16, x_bf16.data(), c.tokens, kHidden},
                         {QDType::kBF16, y_bf16.data(), c.tokens, kHidden})
                  .ok());
  std::vector<float> y_rounded(x.size());
  for (size_t i = 0; i < y.size(); ++i) y_rounded[i] = Bf16ToFloat(FloatToBf16(y[i]));
  std::vector<float> y_from_bf16(x.size());
  Bf16ToFloats(y_bf16.data(), static_cast<int64_t>(x.size()), y_from_bf16.data());
  EXPECT_LE(Compare(y_from_bf16, y_rounded).rel(), std::ldexp(1.0, -8));

  // The same bits on one thread as on the default team.
  std::vector<float> y_one(x.size());
  ASSERT_TRUE(MoeForward(layer, routing.View(), {QDType::kFP32, x.data(), c.tokens, kHidden},
                         {QDType::kFP32, y_one.data(), c.tokens, kHidden}, {.threads = 1})
                  .ok());
  EXPECT_EQ(y_one, y) << "at " << DefaultThreads() << " threads and at 1";
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const Family& family : Families()) {
    for (int64_t tokens : {1, 5, 64}) {
      for (int64_t top_k : {2, 3}) cases.push_back({&family, tokens, top_k});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Families, MoeForwardTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return fmt::format("{}_m{}_top{}", info.param.family->name,
                                              info.param.tokens, info.param.top_k);
                         });

// Every malformed input is an error naming the layer and what is wrong, from the forward and from
// the reference alike.
TEST(MoeForwardErrors, NameTheLayerAndTheFault) {
  const TestExperts& experts = ExpertsOf(Families().front());
  const MoeLayer layer = experts.Layer();
  const int64_t tokens = 2;
  std::vector<float> x(tokens * kHidden, 0.25f), y(tokens * kHidden);
  const std::vector<double> xd(x.begin(), x.end());
  const ConstMatrix xm{QDType::kFP32, x.data(), tokens, kHidden};
  const MutableMatrix ym{QDType::kFP32, y.data(), tokens, kHidden};
  auto expect_error = [&](const MoeLayer& l, const MoeRouting& routing, const ConstMatrix& in,
                          const MutableMatrix& out, std::string_view text,
                          MoeOptions options = {}) {
    Result<MoeCall> call = MoeForward(l, routing, in, out, options);
    ASSERT_FALSE(call.ok()) << text;
    EXPECT_NE(call.status().message().find(kLayer), std::string::npos) << call.status().message();
    EXPECT_NE(call.status().message().find(text), std::string::npos) << call.status().message();
  };
  const std::vector<float> weights = {0.5f, 0.5f, 0.5f, 0.5f};
  const std::vector<int32_t> ids = {0, 1, 2, 3};
  const MoeRouting good{tokens, 2, ids, weights};
  ASSERT_TRUE(MoeForward(layer, good, xm, ym).ok());

  const std::vector<int32_t> out_of_range = {0, 1, 8, 3};
  expect_error(layer, {tokens, 2, out_of_range, weights}, xm, ym,
               "token 1, slot 0: expert 8 is out of range (the layer has experts 0 to 7)");
  const std::vector<int32_t> negative = {0, -1, 2, 3};
  expect_error(layer, {tokens, 2, negative, weights}, xm, ym, "token 0, slot 1: expert -1");
  const std::vector<int32_t> twice = {0, 1, 3, 3};
  expect_error(layer, {tokens, 2, twice, weights}, xm, ym,
               "token 1 is routed to expert 3 twice (slots 0 and 1)");
  const std::vector<float> nan = {0.5f, std::numeric_limits<float>::quiet_NaN(), 0.5f, 0.5f};
  expect_error(layer, {tokens, 2, ids, nan}, xm, ym, "token 0, slot 1: routing weight nan");
  expect_error(layer, {tokens, 3, ids, weights}, xm, ym, "has 4 ids and 4 weights: expected 6");
  expect_error(layer, {tokens, 0, {}, {}}, xm, ym, "top-0: expected top-1 to top-8");
  expect_error(layer, {tokens, 9, ids, weights}, xm, ym, "top-9");
  expect_error(layer, good, {QDType::kFP32, x.data(), tokens, 100}, ym,
               "X is fp32 [2, 100]: expected fp32 or bf16 [2, 256]");
  expect_error(layer, good, {QDType::kFP16, x.data(), tokens, kHidden}, ym, "X is fp16");
  expect_error(layer, good, xm, {QDType::kFP32, y.data(), 1, kHidden}, "Y is fp32 [1, 256]");
  expect_error(layer, good, xm, ym, "-1 threads", {.threads = -1});

  MoeLayer swapped = layer;
  swapped.experts[3].w2 = swapped.experts[3].w13[0];  // gate [128, 256] where down belongs
  expect_error(swapped, good, xm, ym,
               "expert 3: w13 [128, 256] + [128, 256], w2 [128, 256]: expected expert 0's");
  MoeLayer first_wrong = layer;
  first_wrong.experts[0].w13.pop_back();
  expect_error(first_wrong, good, xm, ym, "expert 0: w13 [128, 256], w2 [256, 128]: expected gate");
  MoeLayer missing = layer;
  missing.experts[1].w2 = nullptr;
  expect_error(missing, good, xm, ym, "expert 1: w2 (down) is missing");
  expect_error(MoeLayer{kLayer, {}, {}}, good, xm, ym, "no experts");

  // The reference refuses the same routings, and per-tensor dynamic activations.
  Result<std::vector<double>> ref =
      MoeReference(experts.refs, layer.activation, {}, {tokens, 2, twice, weights}, xd, kLayer);
  ASSERT_FALSE(ref.ok());
  EXPECT_NE(ref.status().message().find("routed to expert 3 twice"), std::string::npos);
  ref = MoeReference(experts.refs, layer.activation, {ActMode::kDynamicPerTensor, 0}, good, xd,
                     kLayer);
  ASSERT_FALSE(ref.ok());
  EXPECT_EQ(ref.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(ref.status().message().find("dynamically per tensor"), std::string::npos);
  ref = MoeReference(experts.refs, layer.activation, {}, good, std::span(xd).first(10), kLayer);
  ASSERT_FALSE(ref.ok());
  EXPECT_NE(ref.status().message().find("X has 10 values: expected 2 tokens of 256"),
            std::string::npos);
}

// No tokens is a call that reads nothing.
TEST(MoeForwardErrors, NoTokensReadsNoExpert) {
  const TestExperts& experts = ExpertsOf(Families().front());
  Result<MoeCall> call =
      MoeForward(experts.Layer(), {0, 2, {}, {}}, {QDType::kFP32, nullptr, 0, kHidden},
                 {QDType::kFP32, nullptr, 0, kHidden});
  ASSERT_TRUE(call.ok()) << call.status().message();
  EXPECT_EQ(call->active_experts, 0);
  EXPECT_EQ(call->weight_bytes, 0);
}

// Seeded routings: distinct experts per token, weights summing to 1, the same for the same seed.
TEST(SeededRoutingTest, DistinctExpertsAndNormalizedWeights) {
  const RoutingTable a = SeededRouting(3, 100, 8, 64);
  EXPECT_EQ(a.ids, SeededRouting(3, 100, 8, 64).ids);
  EXPECT_NE(a.ids, SeededRouting(4, 100, 8, 64).ids);
  std::set<int32_t> seen_all;
  for (int64_t t = 0; t < a.tokens; ++t) {
    const std::set<int32_t> ids(a.ids.begin() + t * 8, a.ids.begin() + t * 8 + 8);
    EXPECT_EQ(ids.size(), 8u);
    seen_all.insert(ids.begin(), ids.end());
    float sum = 0;
    for (int64_t j = 0; j < 8; ++j) sum += a.weights[t * 8 + j];
    EXPECT_NEAR(sum, 1.0f, 1e-6f);
  }
  EXPECT_EQ(*seen_all.begin(), 0);
  EXPECT_EQ(*seen_all.rbegin(), 63);
}

}  // namespace
}  // namespace quantpath
