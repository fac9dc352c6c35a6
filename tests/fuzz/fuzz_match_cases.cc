// libFuzzer target: a `quantpath match` case file → the recorded engine cases decided.
// seeds: tests/data/oracle/cases/*.json tests/data/oracle/releases/*/cases/*.json
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "quantpath/pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  quantpath::Result<quantpath::Json> cases = quantpath::ParseJson(text, "cases.json");
  if (!cases.ok()) return 0;
  (void)quantpath::MatchCases(*cases, "cases.json", std::nullopt);
  return 0;
}
