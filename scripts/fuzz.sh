#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang + ASan/UBSan into build-asan (override BUILD_DIR)
# and runs each for FUZZ_SECONDS (default 30), JOBS (default nproc) targets at a time, on a scratch
# copy of its committed seed corpus (fuzz/corpus/<target>/), with fuzz/dict/<target>.dict when
# present. Prints per target the executions run and the crashes found; exits non-zero when any
# target crashed (reproducers are left in <build>/fuzz-run/<target>/artifacts/).
#   FUZZ_TARGETS="a b"  run only these targets      MAX_LEN (8192)   RSS_LIMIT_MB (2048)
#   FUZZ_TIMEOUT (10 s per input)                    extra args go to cmake
# The build directory is the one scripts/sanitize.sh builds its suites in (scripts/lib.sh
# configure_sanitized): after it, only the fuzz targets themselves are compiled here.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/scripts/lib.sh"
defaults BUILD_DIR="$root/build-asan" JOBS="$(nproc)" FUZZ_SECONDS=30 MAX_LEN=8192 \
  RSS_LIMIT_MB=2048 FUZZ_TIMEOUT=10
# Share cache entries between build directories: paths under the source tree are hashed relative
# to it, and the compile directory (only in debug info) is not hashed.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

start=$(date +%s)
configure_sanitized "$BUILD_DIR" "$@"
if [[ -z "$SANITIZED_CXX" ]]; then
  echo "fuzz: clang++ not found (apt-get install clang libclang-rt-dev, or set FUZZ_CXX)" >&2
  exit 2
fi
cmake --build "$BUILD_DIR" -j"$JOBS" --target fuzzers
built=$(date +%s)

mapfile -t all < <(grep -v '^$' "$BUILD_DIR/fuzz/fuzzers.txt")
targets=(${FUZZ_TARGETS:-${all[@]}})

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:print_stacktrace=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# One target: fuzzes on a scratch copy of its seeds, then writes its summary line to
# $work/summary.txt and, when it crashed, what to look at to $work/failure.txt.
fuzz_one() {
  local t=$1
  local bin="$BUILD_DIR/fuzz/$t" seeds="$root/fuzz/corpus/$t" work="$BUILD_DIR/fuzz-run/$t"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  if [[ -d "$seeds" ]]; then cp -r "$seeds/." "$work/corpus/"; fi
  local dict=()
  if [[ -f "$root/fuzz/dict/$t.dict" ]]; then dict=(-dict="$root/fuzz/dict/$t.dict"); fi
  local rc=0
  "$bin" "$work/corpus" "${dict[@]}" -max_total_time="$FUZZ_SECONDS" -max_len="$MAX_LEN" \
    -rss_limit_mb="$RSS_LIMIT_MB" -timeout="$FUZZ_TIMEOUT" -artifact_prefix="$work/artifacts/" \
    -print_final_stats=1 >"$work/log.txt" 2>&1 || rc=$?
  local execs crashes cov
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log.txt" | tail -1)
  if [[ -z "$execs" ]]; then  # stopped early (crash): libFuzzer's last progress line
    execs=$(grep -o '^#[0-9]*' "$work/log.txt" | tail -1 | tr -d '#' || true)
  fi
  crashes=$(find "$work/artifacts" -type f | wc -l)
  cov=$(grep -o 'cov: [0-9]*' "$work/log.txt" | tail -1 | cut -d' ' -f2 || true)
  printf '%-28s execs=%-10s cov=%-6s crashes=%s\n' "$t" "${execs:-0}" "${cov:-?}" "$crashes" \
    >"$work/summary.txt"
  if [[ $rc -ne 0 || $crashes -ne 0 ]]; then
    {
      echo "fuzz: $t FAILED (exit $rc); log $work/log.txt; reproducers:"
      find "$work/artifacts" -type f
      grep -m1 -A25 'ERROR\|CHECK failed\|runtime error\|deadly signal' "$work/log.txt" || true
    } >"$work/failure.txt"
  fi
}

# JOBS targets at a time (each libFuzzer run is one process on one core), every target for its
# full FUZZ_SECONDS; the summary keeps the targets' order.
running=0
for t in "${targets[@]}"; do
  if ((running >= JOBS)); then
    wait -n || true
    running=$((running - 1))
  fi
  echo "fuzz: $t for ${FUZZ_SECONDS}s"
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
failed=0
summary=()
for t in "${targets[@]}"; do
  work="$BUILD_DIR/fuzz-run/$t"
  if [[ -f "$work/summary.txt" ]]; then
    summary+=("$(cat "$work/summary.txt")")
  else
    summary+=("$t: no summary (the run did not finish)")
    failed=1
  fi
  if [[ -f "$work/failure.txt" ]]; then
    failed=1
    cat "$work/failure.txt" >&2
  fi
done
end=$(date +%s)

echo "fuzz: summary (${FUZZ_SECONDS}s per target, $JOBS at a time; build $((built - start)) s, fuzzing $((end - built)) s)"
printf '  %s\n' "${summary[@]}"
exit "$failed"
