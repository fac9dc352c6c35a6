// The importers quantpath knows, in detection order. Each importer file defines one factory.
#pragma once

#include <vector>

#include "quantpath/importers.h"

namespace quantpath {

const Importer* Fp8Importer();

inline std::vector<const Importer*> MakeImporterList() {
  return {
      Fp8Importer(),
  };
}

}  // namespace quantpath
