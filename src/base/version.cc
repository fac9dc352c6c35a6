#include "quantpath/base.h"

namespace quantpath {

// QUANTPATH_LIBRARY_VERSION comes from project(VERSION) (cmake/version.cmake).
std::string_view LibraryVersion() { return QUANTPATH_LIBRARY_VERSION; }

}  // namespace quantpath
