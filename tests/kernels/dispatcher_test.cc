// The M-bucket policy, the packed shape key, kernel choice by CPU features and priority, and the
// dispatcher's cache.
#include <gtest/gtest.h>

#include <algorithm>

#include "quantpath/kernels.h"

namespace quantpath {
namespace {

TEST(BucketMTest, SmallExactThenPowersOfFourFrom128) {
  for (int64_t m = 1; m <= 16; ++m) EXPECT_EQ(BucketM(m), m);
  EXPECT_EQ(BucketM(17), 128);
  EXPECT_EQ(BucketM(128), 128);
  EXPECT_EQ(BucketM(129), 512);
  EXPECT_EQ(BucketM(512), 512);
  EXPECT_EQ(BucketM(513), 2048);
  EXPECT_EQ(BucketM(8192), 8192);
  EXPECT_EQ(BucketM(8193), 32768);
  EXPECT_EQ(BucketM(kMaxBucketM), kMaxBucketM);
}

TEST(PackShapeKeyTest, FieldsAndBuckets) {
  const uint64_t key = *PackShapeKey(5, 4096, 7168);
  EXPECT_EQ(key >> 58, 4u);  // M 5 → index 4
  EXPECT_EQ((key >> 29) & ((uint64_t{1} << 29) - 1), 4096u);
  EXPECT_EQ(key & ((uint64_t{1} << 29) - 1), 7168u);
  EXPECT_EQ(*PackShapeKey(17, 8, 8), *PackShapeKey(128, 8, 8));
  EXPECT_NE(*PackShapeKey(128, 8, 8), *PackShapeKey(129, 8, 8));
  EXPECT_EQ(*PackShapeKey(129, 8, 8) >> 58, 17u);
  EXPECT_EQ(*PackShapeKey(kMaxBucketM, kMaxDim, kMaxDim) >> 58, 28u);
  EXPECT_NE(*PackShapeKey(1, 8, 9), *PackShapeKey(1, 9, 8));
  for (auto [m, n, k] :
       {std::array<int64_t, 3>{0, 1, 1}, {1, 0, 1}, {1, 1, kMaxDim + 1}, {kMaxBucketM + 1, 1, 1}}) {
    Result<uint64_t> bad = PackShapeKey(m, n, k);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("outside the dispatcher's range"), std::string::npos);
  }
}

KernelProbe Probe(std::string_view spec_id, int64_t m, const DeviceCaps& device = DeviceCaps{}) {
  return KernelProbe{*ParseSpecId(spec_id),
                     m,
                     256,
                     256,
                     QDType::kBF16,
                     QDType::kFP32,
                     device,
                     ActivationQuant{ActMode::kDynamicGroup, 128}};
}

TEST(RegistryTest, SupportQueries) {
  const KernelRegistry& registry = KernelRegistry::Global();
  const DeviceCaps cpu;
  const DeviceCaps sm90 = *ParseDevice("sm90");
  for (std::string_view spec : {"bf16", "fp8_per_tensor", "fp8_per_channel", "fp8_block_128_128"}) {
    EXPECT_TRUE(registry.Supports(*ParseSpecId(spec), cpu)) << spec;
  }
  EXPECT_FALSE(registry.Supports(*ParseSpecId("fp8_block_128_128"), sm90));
  // An unregistered family has no kernel either.
  EXPECT_FALSE(registry.Supports(SpecKey{SpecFamily("no_such_family")}, cpu));
  // Every kernel of the spec, whatever the CPU (in registration order, which is link order).
  std::vector<std::string> block = registry.KernelsFor(*ParseSpecId("fp8_block_128_128"), cpu);
  std::sort(block.begin(), block.end());
  EXPECT_EQ(block, (std::vector<std::string>{"GemmFp8Block_Avx2", "GemmFp8Block_Avx512Bf16",
                                             "GemmFp8Block_Ref", "GemmFp8Lanes_Avx512Bf16"}));
}

TEST(DispatcherTest, CachesPerBucket) {
  Dispatcher dispatcher(KernelRegistry::Global(), CpuFeatures{});
  Result<const LinearKernel*> first = dispatcher.Select(Probe("fp8_block_128_128", 20));
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ((*first)->name(), "GemmFp8Block_Ref");
  EXPECT_EQ(*dispatcher.Select(Probe("fp8_block_128_128", 100)), *first);  // same bucket
  EXPECT_EQ(dispatcher.stats().misses, 1);
  EXPECT_EQ(dispatcher.stats().hits, 1);
  ASSERT_TRUE(dispatcher.Select(Probe("fp8_block_128_128", 3)).ok());  // exact bucket 3
  ASSERT_TRUE(dispatcher.Select(Probe("fp8_block_128_64", 3)).ok());   // another spec
  KernelProbe bf16_out = Probe("fp8_block_128_128", 3);
  bf16_out.out = QDType::kBF16;
  ASSERT_TRUE(dispatcher.Select(bf16_out).ok());  // another dtype
  EXPECT_EQ(dispatcher.stats().entries, 4);
  EXPECT_EQ(dispatcher.stats().misses, 4);
}

TEST(DispatcherTest, NoKernelIsAnErrorNamingTheProblem) {
  Dispatcher dispatcher(KernelRegistry::Global(), CpuFeatures{});
  Result<const LinearKernel*> gpu =
      dispatcher.Select(Probe("fp8_block_128_128", 1, *ParseDevice("sm90")));
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(gpu.status().message().find("no kernel for spec fp8_block_128_128 on sm90"),
            std::string::npos)
      << gpu.status().message();
  KernelProbe int8_in = Probe("bf16", 1);
  int8_in.act = {};
  int8_in.in = QDType::kINT8;
  Result<const LinearKernel*> dtype = dispatcher.Select(int8_in);
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.status().message().find("in int8"), std::string::npos);
  EXPECT_NE(dtype.status().message().find("GemmW16A16_Ref"), std::string::npos);
}

// A kernel that claims every fp8 block problem, with given features and priority.
class FakeKernel final : public LinearKernel {
 public:
  FakeKernel(std::string name, CpuFeatures features, int priority)
      : name_(std::move(name)), features_(features), priority_(priority) {}
  std::string_view name() const override { return name_; }
  CpuFeatures features() const override { return features_; }
  int priority() const override { return priority_; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return key.family == SpecFamily("fp8_block") && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override { return probe.m <= 512; }
  void Apply(const LinearParams&, const ActivationQuant&, const ConstMatrix&,
             const MutableMatrix&) const override {}

 private:
  std::string name_;
  CpuFeatures features_;
  int priority_;
};

std::string Chosen(const KernelRegistry& registry, CpuFeatures allowed) {
  Result<const LinearKernel*> kernel =
      Dispatcher(registry, allowed).Select(Probe("fp8_block_128_128", 1));
  return kernel.ok() ? std::string((*kernel)->name()) : kernel.status().message();
}

TEST(DispatcherTest, HighestPriorityAmongKernelsTheAllowedFeaturesCover) {
  const CpuFeatures vnni = CpuLevelRequires(CpuLevel::kAvx2) | CpuFeatures{CpuFeature::kAvxVnni};
  KernelRegistry registry;
  registry.Register(std::make_unique<FakeKernel>("Ref", CpuFeatures{}, kReferencePriority));
  registry.Register(
      std::make_unique<FakeKernel>("Avx512", CpuLevelRequires(CpuLevel::kAvx512), 20));
  registry.Register(std::make_unique<FakeKernel>("Avx2", CpuLevelRequires(CpuLevel::kAvx2), 10));
  registry.Register(
      std::make_unique<FakeKernel>("Avx2Again", CpuLevelRequires(CpuLevel::kAvx2), 10));
  registry.Register(std::make_unique<FakeKernel>("AvxVnni", vnni, 15));
  registry.Register(std::make_unique<FakeKernel>("Amx", CpuLevelRequires(CpuLevel::kAmx), 30));
  EXPECT_EQ(Chosen(registry, CpuFeatures::All()), "Amx");
  EXPECT_EQ(Chosen(registry, CpuFeatures::All() - CpuFeatures{CpuFeature::kAmxTile}), "Avx512");
  EXPECT_EQ(Chosen(registry, CpuLevelAllows(CpuLevel::kAvx512Vnni)), "Avx512");
  EXPECT_EQ(Chosen(registry, CpuLevelAllows(CpuLevel::kAvx2)), "AvxVnni");
  // Equal priorities: the first registered.
  EXPECT_EQ(Chosen(registry, CpuLevelRequires(CpuLevel::kAvx2)), "Avx2");
  // A set short of one needed feature does not qualify.
  EXPECT_EQ(Chosen(registry, CpuLevelRequires(CpuLevel::kAvx2) - CpuFeatures{CpuFeature::kF16c}),
            "Ref");
  EXPECT_EQ(Chosen(registry, CpuFeatures{}), "Ref");
  // A kernel must handle the whole bucket: M 513 is in the 2048 bucket, beyond CanHandle.
  Result<const LinearKernel*> big =
      Dispatcher(registry, CpuFeatures::All()).Select(Probe("fp8_block_128_128", 513));
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(big.status().message().find("on cpu (CPU features avx2,fma,f16c,") !=
              std::string::npos)
      << big.status().message();
}

TEST(DispatcherTest, DefaultFollowsTheEnvironment) {
  // Default() is resolved once per process; its features are what the environment allowed then.
  Result<CpuFeatures> allowed = ResolveCpuFeatures();
  ASSERT_TRUE(allowed.ok()) << allowed.status().message();
  EXPECT_EQ((*Dispatcher::Default())->allowed(), *allowed);
}

TEST(DispatcherTest, WeightDtypeIsInTheCacheKey) {
  // The packed bf16 kernels take bf16 weights only: an fp16 weight of the same shape, asked for
  // after a bf16 one, needs a kernel of its own.
  Dispatcher dispatcher(KernelRegistry::Global(), CpuFeatures::All());
  KernelProbe bf16 = Probe("bf16", 4);
  bf16.act = {};
  KernelProbe fp16 = bf16;
  fp16.weight = QDType::kFP16;
  Result<const LinearKernel*> first = dispatcher.Select(bf16);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_FALSE((*first)->CanHandle(fp16)) << (*first)->name() << " takes fp16 weights too";
  Result<const LinearKernel*> second = dispatcher.Select(fp16);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_TRUE((*second)->CanHandle(fp16)) << (*second)->name();
  EXPECT_EQ(dispatcher.stats().entries, 2);
}

TEST(DispatcherTest, EveryProbeFieldIsInTheCacheKey) {
  KernelRegistry registry;
  registry.Register(std::make_unique<FakeKernel>("Ref", CpuFeatures{}, kReferencePriority));
  Dispatcher dispatcher(registry, CpuFeatures{});
  const KernelProbe base = Probe("fp8_block_128_128", 3);
  std::vector<KernelProbe> variants(10, base);
  variants[0].spec = *ParseSpecId("fp8_block_64_128");
  variants[1].m = 4;
  variants[2].n = 512;
  variants[3].k = 512;
  variants[4].in = QDType::kFP32;
  variants[5].out = QDType::kBF16;
  variants[6].device.name = "cpu0";
  variants[7].act.symmetric = false;
  variants[8].act.kind = ActivationKind{"nvfp4_per_token_global"};
  variants[9].weight = QDType::kFP16;
  ASSERT_TRUE(dispatcher.Select(base).ok());
  for (const KernelProbe& probe : variants) ASSERT_TRUE(dispatcher.Select(probe).ok());
  EXPECT_EQ(dispatcher.stats().misses, 1 + static_cast<int64_t>(variants.size()));
  EXPECT_EQ(dispatcher.stats().hits, 0);
  ASSERT_TRUE(dispatcher.Select(variants[9]).ok());
  EXPECT_EQ(dispatcher.stats().hits, 1);
}

TEST(DispatcherTest, CacheKeyIsTheSpecKey) {
  // Two keys that differ only in a parameter are two entries; the same key again is a hit.
  Dispatcher dispatcher(KernelRegistry::Global(), CpuFeatures{});
  ASSERT_TRUE(dispatcher.Select(Probe("fp8_block_128_128", 2)).ok());
  ASSERT_TRUE(dispatcher.Select(Probe("fp8_block_64_128", 2)).ok());
  ASSERT_TRUE(dispatcher.Select(Probe("fp8_block_128_128", 2)).ok());
  EXPECT_EQ(dispatcher.stats().entries, 2);
  EXPECT_EQ(dispatcher.stats().hits, 1);
}

}  // namespace
}  // namespace quantpath
