# quantpath/version.h, generated from project(VERSION) into the build tree and installed beside the
# public headers. Only the targets that print the version (the CLI, the Python module) and the
# installed package see it: the stages' compile lines stay the same whatever the build folder.
set(QUANTPATH_GENERATED_INCLUDE ${PROJECT_BINARY_DIR}/generated/include)
configure_file(${CMAKE_CURRENT_LIST_DIR}/version.h.in ${QUANTPATH_GENERATED_INCLUDE}/quantpath/version.h
               @ONLY)
add_library(quantpath_version INTERFACE)
target_include_directories(quantpath_version INTERFACE ${QUANTPATH_GENERATED_INCLUDE})
