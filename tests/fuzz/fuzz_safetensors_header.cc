// libFuzzer target: a safetensors file's bytes → header parsing and validation (as the reference
// implementation validates: lengths, offsets, dtypes, shapes, overlaps).
// seeds: tests/data/checkpoints/**/*.safetensors examples/**/*.safetensors
#include <cstddef>
#include <cstdint>
#include <span>

#include "quantpath/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  uint64_t data_start = 0;
  quantpath::SafetensorsMetadata metadata;
  (void)quantpath::ParseSafetensorsHeader(bytes, size, "fuzz.safetensors", &data_start, &metadata);
  return 0;
}
