#!/usr/bin/env bash
# Configures and builds specplan into build/ (override with BUILD_DIR).
#   scripts/build.sh [CMAKE_ARGS...] [-- TARGETS...]
# Arguments before `--` go to cmake's configure step; names after it (or BUILD_TARGETS="a b") are
# the targets to build. Without targets it builds everything (what scripts/test.sh needs);
# scripts/main.sh builds only `specplan_main` (the CLI, the server and the Python module).
# Ninja prints one [n/N] line per step (on a terminal it rewrites one status line instead).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
cmake_args=()
targets=(${BUILD_TARGETS:-})
while (($#)); do
  if [[ $1 == -- ]]; then
    shift
    targets+=("$@")
    break
  fi
  cmake_args+=("$1")
  shift
done
# ccache keys on paths relative to the checkout, so fresh clones (CI) reuse earlier builds' objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
# The LibTorch code compiles through a precompiled header (runtime/torch_pch.h, -include'd by
# CMake); ccache caches such compilations only with this sloppiness (ccache(1), "Precompiled
# headers"). No source of ours uses __TIME__, __DATE__ or __TIMESTAMP__.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DSPECPLAN_WITH_GRPC=ON -DSPECPLAN_WITH_TORCH=ON "${cmake_args[@]}" >/dev/null
start=$(date +%s)
if ((${#targets[@]})); then
  echo "build: ${targets[*]} in $build"
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
else
  echo "build: every target in $build"
  cmake --build "$build" -j"$(nproc)"
fi
echo "build: done in $(($(date +%s) - start)) s"
