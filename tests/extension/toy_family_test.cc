// Adding a spec family is one file: this file registers a toy family (int8 weights with one fp32
// scale per row, read under the tensor names of AWQ's layouts, `qweight` and `scales`, in the
// gemv layout, which the library refuses and no library entry dequantizes), its reference kernel
// and its fp64 reference entry, and nothing else in the library names it. The test then finds it
// through every generic path: spec_id parsing, byte counts, materialize, the kernel registry, a
// loaded Linear and the double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "fmt/format.h"
#include "quantpath/kernels.h"
#include "quantpath/linear.h"
#include "quantpath/materialize.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/spec_common.h"
#include "src/specs/spec_id_grammar.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath {
namespace {

constexpr SpecFamily kToy{"toy_int8_row"};
constexpr SpecKey kToyKey{kToy};

// Layout: W [N, K] int8 + S [N, 1] fp32; W[n][k] = w[n][k] × S[n].
class ToySpec final : public WeightSpec {
 public:
  explicit ToySpec(const LoadFacts& facts) : facts_(facts) {}
  const SpecKey& key() const override { return kToyKey; }
  const ActivationQuant& activation() const override { return act_; }
  const LoadFacts& facts() const override { return facts_; }
  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(specs_internal::ShardGeometry g, specs_internal::ComputeGeometry(request));
    LinearParams p = specs_internal::NewParams(request, g, kToyKey);
    p.tensor(Slot::kWeight) = ParamTensor(QDType::kINT8, g.rows, g.cols);
    p.tensor(Slot::kWeightScale) = ParamTensor(QDType::kFP32, g.rows, 1);
    return p;
  }
  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    return LayoutStorageBytes(kToyKey, request);
  }
  Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& legs,
              LinearParams* p) const override {
    const std::string& layer = p->request.layer;
    QP_RETURN_IF_ERROR(
        specs_internal::ExpectLayout(layer, kToyKey, facts_.layout, {SourceLayout::kAwqGemv}));
    QP_ASSIGN_OR_RETURN(TensorView w, specs_internal::FindSlotTensor(checkpoint, layer, legs[0],
                                                                     facts_.layout, Slot::kWeight));
    QP_ASSIGN_OR_RETURN(TensorView s,
                        specs_internal::FindSlotTensor(checkpoint, layer, legs[0], facts_.layout,
                                                       Slot::kWeightScale));
    std::copy(w.bytes.begin(), w.bytes.end(), p->tensor(Slot::kWeight).raw());
    QP_ASSIGN_OR_RETURN(std::vector<float> scales, specs_internal::ReadScales(s, layer));
    std::copy(scales.begin(), scales.end(), p->tensor(Slot::kWeightScale).data<float>());
    p->loaded = true;
    return {};
  }
  Status ProcessAfterLoading(LinearParams* p) const override {
    p->processed = true;
    return {};
  }

 private:
  const ActivationQuant act_{};
  const LoadFacts facts_;
};

class ToyFamily final : public SpecFamilyRow {
 public:
  SpecFamily family() const override { return kToy; }
  std::string_view name() const override { return "toy_int8_row"; }
  std::string_view grammar() const override { return "toy_int8_row"; }
  std::optional<SpecKey> Parse(std::string_view id) const override {
    auto params = specs_internal::IdParameters(id, name());
    if (!params || !params->empty()) return std::nullopt;
    return kToyKey;
  }
  std::string Format(const SpecKey&) const override { return "toy_int8_row"; }
  std::vector<Slot> Slots(const SpecKey&, const ActivationQuant&) const override {
    return {Slot::kWeight, Slot::kWeightScale};
  }
  int64_t BytesFor(const SpecKey&, int64_t rows, int64_t cols, int) const override {
    return rows * cols + rows * 4;
  }
  Result<std::unique_ptr<WeightSpec>> Make(const SpecKey&, const ActivationQuant&,
                                           const LoadFacts& facts) const override {
    return std::unique_ptr<WeightSpec>(std::make_unique<ToySpec>(facts));
  }
  double Tolerance(const SpecKey&, ActMode) const override { return 1e-4; }
  std::vector<SpecCandidate> Candidates() const override {
    // Above the integer families' own candidates, so that this scheme reaches the toy.
    return {{"weight-only int8 per-channel, toy layout", "cpu",
             [](const QuantScheme& s) {
               return s.weight.dtype == QDType::kINT8 &&
                      s.weight.granularity == Granularity::kPerChannel && !s.input &&
                      s.weight.load.layout == SourceLayout::kAwqGemv;
             },
             [](const DeviceCaps& d) { return d.is_cpu(); },
             [](const QuantScheme&) -> Result<SpecKey> { return kToyKey; }, 1000}};
  }
};

class ToyKernel final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmToyInt8Row_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return key.family == kToy && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return Serves(probe.spec, probe.device) && probe.act.mode == ActMode::kNone &&
           reference::CanHandleIo(probe);
  }
  void Apply(const LinearParams& p, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const int8_t* w = p.tensor(Slot::kWeight).data<int8_t>();
    const float* s = p.tensor(Slot::kWeightScale).data<float>();
    reference::GemmRowwise(p, act, x, y, [&](int64_t n, float* row) {
      for (int64_t c = 0; c < p.cols; ++c) row[c] = w[n * p.cols + c] * s[n];
    });
  }
};

Result<ReferenceLeg> DequantizeToyLeg(const Checkpoint& checkpoint, const QuantScheme&,
                                      std::string_view layer, const std::string& prefix) {
  QP_ASSIGN_OR_RETURN(TensorView w, checkpoint.Get(prefix + ".qweight"));
  QP_ASSIGN_OR_RETURN(TensorView s, checkpoint.Get(prefix + ".scales"));
  QP_ASSIGN_OR_RETURN(std::vector<float> scales, specs_internal::ReadScales(s, layer));
  ReferenceLeg leg{w.info->shape[0], w.info->shape[1], {}};
  for (int64_t i = 0; i < leg.rows * leg.cols; ++i) {
    leg.weight.push_back(static_cast<double>(static_cast<int8_t>(w.bytes[i])) *
                         scales[i / leg.cols]);
  }
  return leg;
}

const SpecFamilyRegistrar kRegisterToy(std::make_unique<ToyFamily>());
const KernelRegistrar kRegisterToyKernel(std::make_unique<ToyKernel>());
const ReferenceRegistrar kRegisterToyReference(SourceLayout::kAwqGemv, &DequantizeToyLeg);

// Two oracles for one source layout would make the reference ambiguous: the library has its
// (stacked) entry for gpt-oss's *_blocks / *_scales, and a second is registered here to see the
// error.
const ReferenceRegistrar kSecondGptOss(SourceLayout::kGptOssMxfp4, &DequantizeToyLeg);

QuantScheme ToyScheme() {
  QuantScheme s;
  s.weight.dtype = QDType::kINT8;
  s.weight.granularity = Granularity::kPerChannel;
  s.weight.load.layout = SourceLayout::kAwqGemv;
  return s;
}

TEST(ToyFamilyTest, ReachesEveryGenericPath) {
  // Parsing and formatting the id.
  Result<SpecKey> key = ParseSpecId("toy_int8_row");
  ASSERT_TRUE(key.ok()) << key.status().message();
  EXPECT_EQ(*key, kToyKey);
  EXPECT_EQ(kToyKey.ToId(), "toy_int8_row");
  // Byte counts: the row's own, and through materialize's request path (bias included).
  EXPECT_EQ(*LayoutBytes(kToyKey, 4, 8, 16), 4 * 8 + 4 * 4);
  AllocationRequest request;
  request.layer = "toy.proj";
  request.shape = {4, 8};
  EXPECT_EQ(*StorageBytes(kToyKey, request), 48);
  // Materialize picks it for its scheme on the CPU, and the registry has its kernel there.
  Result<std::shared_ptr<const WeightSpec>> spec = Materialize(ToyScheme(), DeviceCaps{});
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ((*spec)->key(), kToyKey);
  EXPECT_TRUE(KernelRegistry::Global().Supports(kToyKey, DeviceCaps{}));
  EXPECT_FALSE(KernelRegistry::Global().Supports(kToyKey, *ParseDevice("sm90")));
  EXPECT_NE(KeyFor(ToyScheme(), *ParseDevice("sm90"))->ToId(), "toy_int8_row");

  // A loaded Linear against the fp64 reference of its source layout.
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> code(-127, 127);
  std::vector<uint8_t> w(32);
  for (uint8_t& b : w) b = static_cast<uint8_t>(static_cast<int8_t>(code(rng)));
  const std::vector<float> scales = {0.5f, 0.25f, 0.125f, 2.0f};
  Checkpoint checkpoint =
      testing::OpenTestCheckpoint({testing::TestTensor{"toy.proj.qweight", "I8", {4, 8}, w},
                                   testing::F32Tensor("toy.proj.scales", {4, 1}, scales)});
  Result<Linear> linear =
      LoadLinear(std::move(*spec), request, checkpoint, {"toy.proj"}, *Dispatcher::Default());
  ASSERT_TRUE(linear.ok()) << linear.status().message();
  EXPECT_EQ((*linear->KernelFor(2, QDType::kFP32, QDType::kFP32))->name(), "GemmToyInt8Row_Ref");
  const std::vector<float> x = testing::RandomBf16Values(&rng, 2 * 8);
  Result<std::vector<float>> y = linear->Forward(x, 2);
  ASSERT_TRUE(y.ok()) << y.status().message();
  Result<ReferenceLayer> ref =
      DequantizeReference(checkpoint, ToyScheme(), "toy.proj", {"toy.proj"}, false);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  double max_abs = 0, max_ref = 0;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t n = 0; n < 4; ++n) {
      double acc = 0;
      for (int64_t c = 0; c < 8; ++c) acc += x[i * 8 + c] * ref->weight[n * 8 + c];
      max_abs = std::max(max_abs, std::fabs((*y)[i * 4 + n] - acc));
      max_ref = std::max(max_ref, std::fabs(acc));
    }
  }
  EXPECT_LE(max_abs / max_ref, ToleranceFor(kToyKey, ActMode::kNone));
}

TEST(ToyFamilyTest, TwoReferenceEntriesForOneLayoutAreAnError) {
  Checkpoint checkpoint = testing::OpenTestCheckpoint({});
  QuantScheme scheme = ToyScheme();
  scheme.weight.load.layout = SourceLayout::kGptOssMxfp4;
  Result<ReferenceLayer> ref =
      DequantizeReference(checkpoint, scheme, "toy.proj", {"toy.proj"}, false);
  ASSERT_FALSE(ref.ok());
  EXPECT_NE(ref.status().message().find("gpt-oss-mxfp4 has 2 reference entries"), std::string::npos)
      << ref.status().message();
}

}  // namespace
}  // namespace quantpath
