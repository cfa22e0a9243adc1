#!/usr/bin/env bash
# Configures and builds specplan into build/ (override with BUILD_DIR). Extra args go to cmake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
# ccache keys on paths relative to the checkout, so fresh clones (CI) reuse earlier builds' objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DSPECPLAN_WITH_GRPC=ON -DSPECPLAN_WITH_TORCH=ON "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
