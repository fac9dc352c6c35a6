#!/usr/bin/env bash
# Builds tests/embedding/main.cc with nothing but pkg-config's flags for an installed quantpath
# and runs it on the bundled example, as a Makefile project would.
# Usage: pkg_config.sh PREFIX BUILD_DIR CXX "EXTRA_FLAGS" (from the repository root).
set -euo pipefail
prefix="$1" out="$2" cxx="$3" extra="$4"
mkdir -p "$out"
pc_dir="$(dirname "$(find "$prefix" -name quantpath.pc | head -1)")"
export PKG_CONFIG_PATH="$pc_dir"
pkg-config --exists quantpath
[ "$(pkg-config --modversion quantpath)" = "$(sed -n 's/^project(quantpath VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)" ]
libdir="$(pkg-config --variable=libdir quantpath)"
# shellcheck disable=SC2046,SC2086
"$cxx" $extra tests/embedding/main.cc $(pkg-config --cflags --libs quantpath) \
  -Wall -Wextra -Werror -Wl,-rpath,"$libdir" -o "$out/embed"
"$out/embed" examples/llama-tiny-fp8
