// ParseSafetensorsHeader for the readers that also look tensors up by name: the names' table the
// parse builds anyway (to reject duplicates) is handed over instead of built twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "quantpath/checkpoint.h"
#include "src/base/name_ids.h"

namespace quantpath::checkpoint_internal {

// ParseSafetensorsHeader; on success `*ids` gives each tensor's index in the result.
Result<std::vector<TensorInfo>> ParseHeader(std::span<const std::byte> bytes, uint64_t file_size,
                                            std::string_view file, uint64_t* data_start,
                                            SafetensorsMetadata* metadata, NameIds* ids);
// ReadSafetensorsHeader, its names' table in `*ids`.
Result<SafetensorsHeader> ReadHeaderWithNames(const std::filesystem::path& path, NameIds* ids);

}  // namespace quantpath::checkpoint_internal
