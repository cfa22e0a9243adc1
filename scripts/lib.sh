# Sourced by scripts that take their settings from the environment (replicas.sh, fuzz.sh,
# sanitize.sh, bench/gated_vs_ar.sh):
#   defaults NAME=VALUE...   every NAME the environment leaves unset or empty gets VALUE, as
#                            NAME="${NAME:-VALUE}" would, for a whole list of settings at once.
#   configure_sanitized DIR [CMAKE_ARGS...]
#                            configures DIR as the one instrumented build that sanitize.sh and
#                            fuzz.sh share (see there).
defaults() {
  local setting name
  for setting in "$@"; do
    name="${setting%%=*}"
    [[ -n "${!name:-}" ]] || printf -v "$name" '%s' "${setting#*=}"
  done
}

# The instrumented build of sanitize.sh and fuzz.sh: clang, ASan + UBSan, the Torch-free libraries
# that parse outside input and plan also instrumented for libFuzzer's coverage, tests and fuzz
# targets both configured. Both scripts configure it with the same arguments, so whichever runs
# second only builds its own targets on the objects the first compiled (CI runs sanitize.sh, then
# fuzz.sh: the libraries are compiled once). Without clang (FUZZ_CXX, clang++, clang++-14) it
# falls back to the default compiler without the fuzz targets; fuzz.sh then refuses to run.
# Sets SANITIZED_CXX to the compiler used ("" = the default) and SANITIZED_GRPC to ON or OFF.
configure_sanitized() {
  local dir=$1 root
  shift
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  SANITIZED_CXX="${FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}"
  SANITIZED_GRPC=OFF
  if pkg-config --exists grpc++ 2>/dev/null; then SANITIZED_GRPC=ON; fi
  local compiler=() fuzzers=OFF
  if [[ -n "$SANITIZED_CXX" ]]; then
    compiler=(-DCMAKE_CXX_COMPILER="$SANITIZED_CXX")
    fuzzers=ON
  fi
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
    "${compiler[@]}" -DSPECPLAN_SANITIZE=ON -DSPECPLAN_BUILD_FUZZERS="$fuzzers" \
    -DSPECPLAN_WITH_GRPC="$SANITIZED_GRPC" -DSPECPLAN_WITH_TORCH=OFF -DSPECPLAN_WITH_PYTHON=OFF \
    -DSPECPLAN_WITH_TOKENIZER=OFF -DSPECPLAN_WITH_PLOT=OFF \
    -DSPECPLAN_BUILD_BENCHMARKS=OFF -DSPECPLAN_BUILD_TESTS=ON "$@" >/dev/null
}
