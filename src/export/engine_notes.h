// What the engines would make of a written folder: `check` as each engine dialect loads it, its
// errors summed up in the report's notes, so a folder an engine would refuse (a layer its kernels
// do not take, a shape its blocks do not divide) says so when it is written.
#pragma once

#include <string>
#include <vector>

namespace quantpath::export_internal {

void AddEngineNotes(const std::string& out_dir, std::vector<std::string>* notes);

}  // namespace quantpath::export_internal
