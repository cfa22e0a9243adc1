#!/usr/bin/env bash
# The AddressSanitizer + UndefinedBehaviorSanitizer suite of the code that parses outside input and
# plans: util, costmodel, planner, whatif and (when gRPC is installed) service, with their test
# suites and the binaries service_tests starts (specplan-server, the fault server, the load
# generator), built into build-asan (override with BUILD_DIR) and run through ctest. Any sanitizer
# report fails the run. Binaries that only wrap those libraries (the CLI, plot/, tokenizer/, the
# Python module) are not re-instrumented: their suites run uninstrumented in scripts/test.sh, and
# the fuzz corpora run under ASan/UBSan in scripts/fuzz.sh.
# The build is the one scripts/fuzz.sh uses too (scripts/lib.sh configure_sanitized: clang when
# installed, the libraries also instrumented for libFuzzer), so running both compiles the libraries
# once. Extra args go to cmake. Objects are cached by ccache in the same cache as scripts/build.sh,
# so a second run only recompiles what changed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/scripts/lib.sh"
build="${BUILD_DIR:-$root/build-asan}"
jobs="${JOBS:-$(nproc)}"
# Share cache entries between build directories: paths under the source tree are hashed relative
# to it, and the compile directory (only in debug info) is not hashed.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

start=$(date +%s)
configure_sanitized "$build" "$@"
grpc=$SANITIZED_GRPC

# The suites of the instrumented components; each pulls in the binaries it runs.
targets=(util_tests costmodel_tests planner_tests whatif_tests)
if [[ $grpc == ON ]]; then targets+=(service_tests); fi
# Suites of this configuration left unbuilt (cli_tests) appear to CTest as <suite>_NOT_BUILT, and
# Validation.EndToEnd runs the CLI: both are skipped here (scripts/test.sh runs them). A suite
# named in targets that failed to build stops the script before CTest.
skip='_NOT_BUILT$|^Validation\.EndToEnd$'

# Any report is fatal; leaks included. Test discovery (at build time) runs under the same options.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:print_stacktrace=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:strict_string_checks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
# Leaks inside system libraries (fontconfig under PLplot's cairo text) are suppressed by
# scripts/lsan.supp.
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:report_error_type=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

echo "sanitize: building ${targets[*]} in $build (grpc=$grpc, compiler ${SANITIZED_CXX:-default})"
cmake --build "$build" -j"$jobs" --target "${targets[@]}"
built=$(date +%s)

cd "$build"
status=0
ctest --output-on-failure -j"$jobs" --timeout 900 -E "$skip" || status=$?
end=$(date +%s)
echo "sanitize: build $((built - start)) s, tests $((end - built)) s, ctest exit $status"
exit "$status"
