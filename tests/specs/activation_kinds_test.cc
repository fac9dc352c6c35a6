// Activation kinds: every registered kind is the one that claims its scheme inputs, makes an
// ActivationQuant that finds it again and names it; and a kind registered from this file (a toy
// int3 static kind) is found through every generic path — claiming, its name, the fp64 rounding
// and the reference's static inputs — with nothing else in the library naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "fmt/format.h"
#include "quantpath/activation_kinds.h"
#include "src/specs/reference/reference_io.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

using testing::F32Tensor;
using testing::Fp8Tensor;

constexpr ActivationKind kToy{"toy_int3_static"};

// int3 static per-tensor inputs: X rounded to multiples of the static scale (no clamp), the
// scale the smallest of the legs' input_scale.
class ToyInt3Static final : public ActivationKindRow {
 public:
  std::string_view name() const override { return "toy_int3_static"; }
  int priority() const override { return 20; }
  bool Claims(const TensorQuant& in) const override {
    return in.dtype == QDType::kINT3 && in.dynamic == Dynamic::kStatic &&
           in.granularity == Granularity::kPerTensor;
  }
  ActivationQuant Quant(const TensorQuant& in) const override {
    ActivationQuant act = ActivationFields(in, ActMode::kStaticPerTensor);
    act.kind = kToy;
    return act;
  }
  std::string Text(const ActivationQuant&) const override { return "toy int3"; }
  void RoundFloats(std::vector<float>* x, int64_t, int64_t, const ActivationQuant&,
                   const LinearParams& params) const override {
    const float s = params.tensor(Slot::kInputScale).data<float>()[0];
    for (float& v : *x) v = std::nearbyint(v / s) * s;
  }
  std::vector<double> RoundReference(std::span<const double> x, int64_t, int64_t,
                                     const ActivationQuant&, std::optional<double> static_scale,
                                     std::optional<double>) const override {
    std::vector<double> out;
    for (double v : x) out.push_back(std::nearbyint(v / *static_scale) * *static_scale);
    return out;
  }
  std::vector<Slot> StaticSlots(const ActivationQuant&) const override {
    return {Slot::kInputScale};
  }
  Status ReadReferenceInputs(const Checkpoint& checkpoint, const QuantScheme& scheme,
                             std::string_view layer_name,
                             const std::vector<std::string>& leg_prefixes,
                             ReferenceLayer* layer) const override {
    for (const std::string& prefix : leg_prefixes) {
      QP_ASSIGN_OR_RETURN(const std::string name,
                          reference::SlotTensorName(scheme.weight.load.layout, Slot::kInputScale,
                                                    layer_name, prefix, "input scale"));
      TensorInfo info;
      QP_ASSIGN_OR_RETURN(const std::vector<double> s,
                          reference::ReadDoubles(checkpoint, layer_name, name, &info));
      layer->input_scale = std::min(layer->input_scale.value_or(s[0]), s[0]);
    }
    return {};
  }
};

const ActivationKindRegistrar kRegisterToy(std::make_unique<ToyInt3Static>());

TensorQuant Input(QDType dtype, Granularity granularity, Dynamic dynamic,
                  std::optional<int64_t> group = std::nullopt, bool symmetric = true) {
  TensorQuant in;
  in.dtype = dtype;
  in.granularity = granularity;
  in.dynamic = dynamic;
  in.group_size = group;
  in.symmetric = symmetric;
  return in;
}

struct Case {
  TensorQuant in;
  std::string_view kind;
  std::string_view text;
};

std::vector<Case> Cases() {
  using enum Granularity;
  constexpr Dynamic kDyn = Dynamic::kDynamic;
  constexpr Dynamic kStatic = Dynamic::kStatic;
  TensorQuant block = Input(QDType::kFP8E4M3, kBlock, kDyn);
  block.block_shape = std::array<int64_t, 2>{1, 128};
  return {
      {Input(QDType::kFP8E4M3, kPerToken, kDyn), "fp8_per_token", "fp8 dynamic per-token"},
      {Input(QDType::kFP8E4M3, kPerChannel, kDyn), "fp8_per_token", "fp8 dynamic per-token"},
      {Input(QDType::kFP8E4M3, kPerTensor, kDyn), "fp8_per_tensor", "fp8 dynamic per-tensor"},
      {Input(QDType::kFP8E4M3, kPerTensor, kStatic), "fp8_static", "fp8 static per-tensor"},
      {Input(QDType::kFP8E4M3, kPerTensor, kStatic, std::nullopt, false), "fp8_static",
       "fp8 static per-tensor asym"},
      {block, "fp8_group", "fp8 dynamic group 128"},
      {Input(QDType::kINT8, kGroup, kDyn, 128), "fp8_group", "int8 dynamic group 128"},
      {Input(QDType::kINT8, kPerToken, kDyn), "int8_per_token", "int8 dynamic per-token"},
      {Input(QDType::kINT8, kPerChannel, kDyn, std::nullopt, false), "int8_per_token",
       "int8 dynamic per-token asym"},
      {Input(QDType::kINT8, kPerTensor, kStatic), "int8_static", "int8 static per-tensor"},
      {Input(QDType::kINT8, kPerTensor, kStatic, std::nullopt, false), "int8_static",
       "int8 static per-tensor asym"},
      {Input(QDType::kINT4, kPerToken, kDyn), "int4_per_token", "int4 dynamic per-token"},
      {Input(QDType::kINT4, kPerToken, kDyn, std::nullopt, false), "fp8_per_token",
       "int4 dynamic per-token asym"},
      {Input(QDType::kNVFP4, kTensorGroup, Dynamic::kLocal, 16), "nvfp4_local_global",
       "nvfp4 dynamic group 16"},
      {Input(QDType::kNVFP4, kTensorGroup, kDyn, 16), "nvfp4_per_token_global",
       "nvfp4 dynamic group 16, per-token global"},
      {Input(QDType::kMXFP4, kGroup, kDyn, 32), "mx_group", "mxfp4 dynamic group 32"},
      {Input(QDType::kMXFP8, kGroup, kDyn, 32), "mx_group", "mxfp8 dynamic group 32"},
      {Input(QDType::kINT3, kPerTensor, kStatic), "toy_int3_static", "toy int3"},
  };
}

TEST(ActivationKindsTest, EveryKindRoundTripsFromItsInputs) {
  std::set<std::string_view> reached = {"none"};
  for (const Case& c : Cases()) {
    const std::string what = fmt::format("{} ({})", c.text, c.kind);
    const ActivationKindRow* row = ActivationKindClaiming(c.in);
    ASSERT_NE(row, nullptr) << what;
    EXPECT_EQ(row->name(), c.kind) << what;
    const ActivationQuant act = row->Quant(c.in);
    EXPECT_EQ(FindActivationKind(act), row) << what;
    EXPECT_EQ(&ActivationKindOf(act), row) << what;
    EXPECT_EQ(act.ToString(), c.text) << what;
    reached.insert(row->name());
  }
  EXPECT_EQ(FindActivationKind(ActivationQuant{})->name(), "none");
  EXPECT_EQ(ActivationQuant{}.ToString(), "none");
  Result<std::vector<const ActivationKindRow*>> kinds = RegisteredActivationKinds();
  ASSERT_TRUE(kinds.ok()) << kinds.status().message();
  for (const ActivationKindRow* kind : *kinds) {
    EXPECT_TRUE(reached.contains(kind->name())) << kind->name() << " has no case here";
  }
}

TEST(ActivationKindsTest, InputsNoKindClaims) {
  using enum Granularity;
  EXPECT_EQ(ActivationKindClaiming(Input(QDType::kFP8E4M3, kPerToken, Dynamic::kStatic)), nullptr);
  EXPECT_EQ(ActivationKindClaiming(Input(QDType::kFP8E4M3, kPerTensor, Dynamic::kLocal)), nullptr);
  // NVFP4 groups need a global: a plain dynamic group is neither of their kinds, nor fp8's.
  EXPECT_EQ(ActivationKindClaiming(Input(QDType::kNVFP4, kGroup, Dynamic::kDynamic, 16)), nullptr);
  EXPECT_EQ(ActivationKindClaiming(Input(QDType::kNVFP4, kTensorGroup, Dynamic::kLocal)), nullptr);
  EXPECT_EQ(ActivationKindClaiming(Input(QDType::kFP8E4M3, kGroup, Dynamic::kDynamic)), nullptr);
}

TEST(ActivationKindsTest, KindsByFieldsAndById) {
  // Fields name most kinds; an id names the rest, and an unknown id is no kind's.
  EXPECT_EQ(FindActivationKind({ActMode::kDynamicGroup, 16, QDType::kNVFP4})->name(),
            "nvfp4_local_global");
  ActivationQuant per_token{ActMode::kDynamicGroup, 16, QDType::kNVFP4};
  per_token.kind = ActivationKind("nvfp4_per_token_global");
  EXPECT_EQ(FindActivationKind(per_token)->name(), "nvfp4_per_token_global");
  per_token.kind = ActivationKind("no_such_kind");
  EXPECT_EQ(FindActivationKind(per_token), nullptr);
  EXPECT_NE(per_token.ToString().find("not registered"), std::string::npos);
  // Which static inputs a kind reads.
  EXPECT_EQ(ActivationKindOf({ActMode::kStaticPerTensor, 0, QDType::kINT8, false})
                .StaticSlots({ActMode::kStaticPerTensor, 0, QDType::kINT8, false}),
            (std::vector<Slot>{Slot::kInputScale, Slot::kInputOffset}));
  EXPECT_TRUE(ActivationKindOf({ActMode::kDynamicPerToken, 0}).StaticSlots({}).empty());
}

TEST(ActivationKindsTest, ATestKindIsFoundWithoutCentralEdits) {
  const TensorQuant in = Input(QDType::kINT3, Granularity::kPerTensor, Dynamic::kStatic);
  const ActivationQuant act = ActivationKindClaiming(in)->Quant(in);
  EXPECT_EQ(act.kind, kToy);
  EXPECT_EQ(act.ToString(), "toy int3");
  EXPECT_EQ(QuantizeActivationsReference(std::vector<double>{0.3, -1.2, 2}, 1, 3, act, 0.5),
            (std::vector<double>{0.5, -1, 2}));

  Checkpoint checkpoint = testing::OpenTestCheckpoint({
      Fp8Tensor("a.weight", {1, 2}, {0x38, 0xB8}),
      F32Tensor("a.weight_scale", {}, {0.5}),
      F32Tensor("a.input_scale", {}, {0.25}),
      Fp8Tensor("b.weight", {1, 2}, {0x38, 0x38}),
      F32Tensor("b.weight_scale", {1}, {2}),
      F32Tensor("b.input_scale", {1}, {0.75}),
  });
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kFP8E4M3;
  scheme.weight.load.layout = SourceLayout::kFp8Scale;
  scheme.input = in;
  Result<ReferenceLayer> layer = DequantizeReference(checkpoint, scheme, "l", {"a", "b"}, false);
  ASSERT_TRUE(layer.ok()) << layer.status().message();
  EXPECT_EQ(layer->input_scale, 0.25);  // the toy's smallest, where fp8_static takes the largest
  scheme.input->dtype = QDType::kFP8E4M3;
  layer = DequantizeReference(checkpoint, scheme, "l", {"a", "b"}, false);
  ASSERT_TRUE(layer.ok()) << layer.status().message();
  EXPECT_EQ(layer->input_scale, 0.75);
}

}  // namespace
}  // namespace quantpath
