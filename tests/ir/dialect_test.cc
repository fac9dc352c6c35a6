// The one dialect table: names, ids as row indices, and the current release of each engine.
#include <gtest/gtest.h>

#include "quantpath/ir.h"

namespace quantpath {
namespace {

TEST(Dialects, EveryNameParsesToTheRowAtItsId) {
  const std::vector<std::string_view> names = DialectNames();
  ASSERT_EQ(names.size(), kDialectCount);
  EXPECT_EQ(Join({names.begin(), names.end()}, ","), "native,vllm,sglang,vllm@0.33,sglang@0.5.23");
  for (size_t i = 0; i < names.size(); ++i) {
    std::optional<Dialect> d = ParseDialect(names[i]);
    ASSERT_TRUE(d.has_value()) << names[i];
    EXPECT_EQ(d->index(), i);
    EXPECT_EQ(DialectAt(d->id).name, names[i]);
  }
  EXPECT_FALSE(ParseDialect("tensorrt").has_value());
  EXPECT_FALSE(ParseDialect("VLLM").has_value());
  EXPECT_EQ(ParseDialect("vllm@0.33.0")->id, DialectId::kVllmCurrent);
}

TEST(Dialects, RegexFlavourAndReleaseFollowTheEngine) {
  EXPECT_EQ(DialectAt(DialectId::kVllm).regex, RegexFlavor::kPythonRegexModule);
  EXPECT_EQ(DialectAt(DialectId::kVllmCurrent).regex, RegexFlavor::kPythonRegexModule);
  EXPECT_EQ(DialectAt(DialectId::kSglang).regex, RegexFlavor::kPythonRe);
  EXPECT_EQ(DialectAt(DialectId::kNative).regex, RegexFlavor::kPythonRe);

  const Dialect& vllm = DialectFor(Engine::kVllm, EngineRelease::kCurrent);
  EXPECT_EQ(vllm.name, "vllm@0.33");
  EXPECT_EQ(vllm.version, "0.33");
  EXPECT_TRUE(vllm.current());
  EXPECT_EQ(DialectFor(Engine::kSglang, EngineRelease::kCurrent).version, "0.5.23");
  EXPECT_EQ(DialectFor(Engine::kSglang, EngineRelease::kRecorded).id, DialectId::kSglang);
  // Native has one row whatever the release.
  EXPECT_EQ(DialectFor(Engine::kNative, EngineRelease::kCurrent).id, DialectId::kNative);
  EXPECT_FALSE(DialectAt(DialectId::kNative).current());
}

}  // namespace
}  // namespace quantpath
