# quantpath_stage(NAME DEPS...): one stage per src/ folder, built from every .cc in it (sub-folders
# included, cuda/ left to the stage's own CMakeLists), so adding a file never means editing a list.
#
# Stages register kernels (and other rows) from static initializers that nothing references. A
# static archive would let the linker drop those objects, so no stage is an archive:
#   NAME_objects  an OBJECT library: the compiled files (position-independent, for libquantpath)
#                 and the stage's usage requirements. It links its dependencies' NAME_objects, so
#                 it carries includes, flags and third-party libraries, never objects.
#   NAME          an INTERFACE library that puts the stage's object files, and through DEPS those
#                 of every stage it uses, on the consumer's link line ($<TARGET_OBJECTS> link
#                 items, CMake 3.21+). Objects on a link line are always linked, and CMake lists
#                 each once, so `target_link_libraries(x PRIVATE qp_linear)` keeps every kernel.
# DEPS are other stages (qp_*) or imported third-party targets.
#
# A file named *_<level>.cc is compiled for that CPU level (cpu_features.h) and must be reached
# only through a kernel that declares the level's features:
#   *_avx2.cc        AVX2, FMA, F16C
#   *_avx512.cc      + AVX-512 F/BW/VL/DQ
#   *_avx512vnni.cc  + AVX512-VNNI, AVX512-BF16
#   *_amx.cc         + AMX-TILE, AMX-BF16, AMX-INT8
# Each level's -m flags are CpuLevelRequires(level) in GCC's spelling; tests/kernels checks that
# the two tables agree (tests/CMakeLists.txt hands it these).
set(QUANTPATH_CPU_LEVELS avx2 avx512 avx512vnni amx)
set(QUANTPATH_FLAGS_avx2 -mavx2 -mfma -mf16c)
set(QUANTPATH_FLAGS_avx512 ${QUANTPATH_FLAGS_avx2} -mavx512f -mavx512bw -mavx512vl -mavx512dq)
set(QUANTPATH_FLAGS_avx512vnni ${QUANTPATH_FLAGS_avx512} -mavx512vnni -mavx512bf16)
set(QUANTPATH_FLAGS_amx ${QUANTPATH_FLAGS_avx512vnni} -mamx-tile -mamx-bf16 -mamx-int8)

# Such a file skips its target's precompiled headers, which were compiled without its flags.
function(quantpath_cpu_level_flags)
  list(JOIN QUANTPATH_CPU_LEVELS "|" levels)
  foreach(f ${ARGN})
    if(f MATCHES "_(${levels})\\.cc$")
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS "${QUANTPATH_FLAGS_${CMAKE_MATCH_1}}"
                                  SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()

# quantpath_precompile(TARGET [HEADERS...]): with clang, the standard and fmt headers most files
# include, and HEADERS, parsed once per target instead of once per file (about 30 % of a test
# file's compile time in the sanitize preset). Only third-party headers, so that a file still has
# to include what it uses of ours. Not with g++ 12: code inlined from a precompiled libstdc++ no
# longer counts as a system header's there, and its false positives fail -Werror.
set(QUANTPATH_PRECOMPILED <algorithm> <array> <cmath> <cstdint> <cstring> <filesystem> <fstream>
    <functional> <map> <memory> <mutex> <optional> <span> <string> <string_view> <unordered_map>
    <utility> <variant> <vector> <fmt/format.h>)
function(quantpath_precompile target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_precompile_headers(${target} PRIVATE ${QUANTPATH_PRECOMPILED} ${ARGN})
  endif()
endfunction()

function(quantpath_stage name)
  set(object_deps)
  foreach(dep ${ARGN})
    if(dep MATCHES "^qp_")
      list(APPEND object_deps ${dep}_objects)
    else()
      list(APPEND object_deps ${dep})
    endif()
  endforeach()
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER sources EXCLUDE REGEX "/cuda/")
  quantpath_cpu_level_flags(${sources})
  # An OBJECT library needs a source: a stage without one is headers and dependencies only.
  if(sources)
    add_library(${name}_objects OBJECT ${sources})
    set_target_properties(${name}_objects PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_link_libraries(${name}_objects PRIVATE quantpath_warnings)
    quantpath_precompile(${name}_objects)
    # The fuzz targets steer by the coverage of the library's code, not of the tests'.
    if(QUANTPATH_FUZZ)
      target_compile_options(${name}_objects PRIVATE -fsanitize=fuzzer-no-link)
    endif()
    set(scope PUBLIC)
  else()
    add_library(${name}_objects INTERFACE)
    set(scope INTERFACE)
  endif()
  target_include_directories(${name}_objects ${scope} ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name}_objects ${scope} ${object_deps})
  add_library(${name} INTERFACE)
  target_link_libraries(${name} INTERFACE ${name}_objects ${ARGN})
  if(sources)
    target_link_libraries(${name} INTERFACE $<TARGET_OBJECTS:${name}_objects>)
  endif()
  set_property(GLOBAL APPEND PROPERTY QUANTPATH_STAGES ${name})
endfunction()
