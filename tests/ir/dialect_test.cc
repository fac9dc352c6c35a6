// The one dialect table: names, ids as row indices, releases in order, and rows that hold since a
// release.
#include <gtest/gtest.h>

#include <array>

#include "quantpath/ir.h"

namespace quantpath {
namespace {

TEST(Dialects, EveryNameParsesToTheRowAtItsId) {
  const std::vector<std::string_view> names = DialectNames();
  ASSERT_EQ(names.size(), kDialectCount);
  EXPECT_EQ(Join({names.begin(), names.end()}, ","),
            "native,vllm@helpers,sglang@helpers,vllm@0.33,sglang@0.5.23,vllm@0.34");
  for (size_t i = 0; i < names.size(); ++i) {
    std::optional<Dialect> d = ParseDialect(names[i]);
    ASSERT_TRUE(d.has_value()) << names[i];
    EXPECT_EQ(d->index(), i);
    EXPECT_EQ(DialectAt(d->id).name, names[i]);
  }
  EXPECT_FALSE(ParseDialect("tensorrt").has_value());
  EXPECT_FALSE(ParseDialect("VLLM").has_value());
  EXPECT_FALSE(ParseDialect("vllm@0.32").has_value());
  EXPECT_FALSE(ParseDialect("vllm@").has_value());
  EXPECT_EQ(ParseDialect("vllm@0.33.0")->id, DialectId::kVllm033);
  EXPECT_EQ(ParseDialect("vllm@0.34.0")->id, DialectId::kVllm034);
  EXPECT_EQ(ParseDialect("sglang@0.5.23")->id, DialectId::kSglang0523);
  EXPECT_FALSE(ParseDialect("sglang@0.5.2").has_value());
}

TEST(Dialects, AnEngineNameIsItsNewestRelease) {
  EXPECT_EQ(ParseDialect("vllm")->name, "vllm@0.34");
  EXPECT_EQ(ParseDialect("sglang")->name, "sglang@0.5.23");
  EXPECT_EQ(NewestRelease(Engine::kVllm).id, DialectId::kVllm034);
  EXPECT_EQ(NewestRelease(Engine::kSglang).id, DialectId::kSglang0523);
  EXPECT_EQ(NewestRelease(Engine::kNative).id, DialectId::kNative);
}

TEST(Dialects, RegexFlavourFollowsTheEngine) {
  for (const Dialect& d : kDialectTable) {
    EXPECT_EQ(d.regex,
              d.engine == Engine::kVllm ? RegexFlavor::kPythonRegexModule : RegexFlavor::kPythonRe)
        << d.name;
  }
}

TEST(Dialects, ReleasesAreOrderedPerEngine) {
  const Dialect& v33 = DialectAt(DialectId::kVllm033);
  const Dialect& v34 = DialectAt(DialectId::kVllm034);
  EXPECT_TRUE(Since(v34, DialectId::kVllm033));
  EXPECT_TRUE(Since(v33, DialectId::kVllm033));
  EXPECT_FALSE(Since(v33, DialectId::kVllm034));
  EXPECT_FALSE(Since(DialectAt(DialectId::kSglang0523), DialectId::kVllm033));
  // The helper recordings are outside the order.
  EXPECT_FALSE(Since(DialectAt(DialectId::kVllmHelpers), DialectId::kVllm033));
  EXPECT_FALSE(DialectAt(DialectId::kVllmHelpers).is_release());
  EXPECT_EQ(ReleaseDialect(Engine::kVllm, "0.34.0")->id, DialectId::kVllm034);
  EXPECT_FALSE(ReleaseDialect(Engine::kVllm, "0.3").has_value());
  EXPECT_FALSE(ReleaseDialect(Engine::kSglang, "0.33.0").has_value());
}

TEST(DialectRows, ALaterReleaseInheritsUntilARowReplacesIt) {
  constexpr std::array<DialectRow<int>, 5> kRows = {{{DialectId::kNative, 0},
                                                     {DialectId::kVllmHelpers, 1},
                                                     {DialectId::kSglangHelpers, 2},
                                                     {DialectId::kVllm033, 33},
                                                     {DialectId::kSglang0523, 523}}};
  static_assert(CoversEveryDialect(kRows));
  EXPECT_EQ(RowFor(DialectAt(DialectId::kVllm034), kRows), 33);
  EXPECT_EQ(RowFor(DialectAt(DialectId::kVllm033), kRows), 33);
  EXPECT_EQ(RowFor(DialectAt(DialectId::kVllmHelpers), kRows), 1);

  constexpr std::array<DialectRow<int>, 6> kReplaced = {{{DialectId::kNative, 0},
                                                         {DialectId::kVllmHelpers, 1},
                                                         {DialectId::kSglangHelpers, 2},
                                                         {DialectId::kVllm034, 34},
                                                         {DialectId::kVllm033, 33},
                                                         {DialectId::kSglang0523, 523}}};
  EXPECT_EQ(RowFor(DialectAt(DialectId::kVllm034), kReplaced), 34);
  EXPECT_EQ(RowFor(DialectAt(DialectId::kVllm033), kReplaced), 33);
}

TEST(DialectRows, HelperRecordingsInheritNothing) {
  constexpr std::array<DialectRow<int>, 3> kReleasesOnly = {
      {{DialectId::kNative, 0}, {DialectId::kVllm033, 33}, {DialectId::kSglang0523, 523}}};
  static_assert(!CoversEveryDialect(kReleasesOnly));
  EXPECT_EQ(FindDialectRow(DialectAt(DialectId::kVllmHelpers), kReleasesOnly), nullptr);
  EXPECT_DEATH(RowFor(DialectAt(DialectId::kSglangHelpers), kReleasesOnly),
               "no row for sglang@helpers");
}

}  // namespace
// The engine's platform is part of how it is launched: every name parses to its value, and an
// unknown one is an error naming the option and the choices.
TEST(Launch, PlatformNamesRoundTrip) {
  for (std::string_view name : kPlatformNames) {
    std::optional<Platform> p = ParsePlatform(name);
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_EQ(PlatformName(*p), name);
  }
  Result<Launch> amx = ParseLaunch("auto", 2, false, "cpu-amx");
  ASSERT_TRUE(amx.ok()) << amx.status().message();
  EXPECT_EQ(amx->platform, Platform::kCpuAmx);
  EXPECT_EQ(amx->tp_size, 2);
  EXPECT_EQ(ParseLaunch("auto", 1, false)->platform, Platform::kCuda);
  Result<Launch> bad = ParseLaunch("auto", 1, false, "tpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "--platform: expected one of cuda, cpu, cpu-amx, npu, mps, got tpu");
}

}  // namespace quantpath
