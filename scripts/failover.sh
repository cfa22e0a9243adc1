#!/usr/bin/env bash
# The replica must-show runs on loopback (docs/deployment.md has the figures). Each scenario starts
# its own replicas (scripts/replicas.sh) on a private port range and stops them at the end; every
# run is bounded (SECONDS per measured phase) and stops by itself.
#
#   scripts/failover.sh failover [SECONDS]  3 replicas; throughput of 3 against 1 (flat out, one
#                                           run); then half the 3-replica maximum for SECONDS (60)
#                                           with replica 1 SIGKILLed at 1/3 and restarted at 1/2
#   scripts/failover.sh reload [SECONDS]    3 replicas on one shared profiles dir (polled every
#                                           1 s); the profile in use replaced at 1/3 (rename), then
#                                           a corrupt replacement at 2/3
#   scripts/failover.sh drain [SECONDS]     3 replicas; replica 2 gets SIGTERM at 1/3; its exit
#                                           status must be 0
#   scripts/failover.sh all [SECONDS]       the three in turn
#
# Every PlanTree / PlanBatch answer is compared with in-process planning of the same input
# (specplan-loadgen fleet mode); the run fails (exit 1) on any failed call, mismatched answer or
# wrong exit status. Environment: BUILD (build), BASE_PORT (51051), CLIENTS (4).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
LOADGEN="$BUILD/service/tools/specplan-loadgen"
export SERVER="$BUILD/service/specplan-server"
export BASE_PORT="${BASE_PORT:-51051}"
export METRICS_BASE="${METRICS_BASE:-$((BASE_PORT + 100))}"
CLIENTS="${CLIENTS:-4}"
SCENARIO="${1:-all}"
SECONDS_RUN="${2:-60}"
PROFILE="h100-sxm/qwen3-8b"
PROFILE_FILE="h100-sxm/qwen3-8b-bf16.json"
REPLICAS="scripts/replicas.sh"
cd "$ROOT"

[[ -x "$LOADGEN" && -x "$SERVER" ]] || {
  echo "failover.sh: build specplan-server and specplan-loadgen first ($BUILD)" >&2; exit 1; }

at() { awk -v s="$SECONDS_RUN" -v f="$1" 'BEGIN { printf "%.1f", s * f }'; }
status=0

header() {
  echo
  echo "=== $1 ($(date -u +%FT%TZ), $(nproc) cores, $(uname -m), load average $(cut -d' ' -f1-3 /proc/loadavg))"
}

# new_run_dir NAME: a fresh RUN_DIR for the replicas' logs and pid files.
new_run_dir() { export RUN_DIR; RUN_DIR="$(mktemp -d "/tmp/specplan-$1.XXXXXX")"; }

# start_replicas CALIB_DIR RELOAD_S: 3 replicas on CALIB_DIR (stopped on exit too); sets targets.
start_replicas() {
  export CALIB_DIR="$1" RELOAD_S="$2"
  trap '"$REPLICAS" stop >/dev/null 2>&1 || true' EXIT
  "$REPLICAS" 3
  targets="$("$REPLICAS" targets)"
}

stop_replicas() {
  "$REPLICAS" stop
  trap - EXIT
}

# fleet_load ARGS...: specplan-loadgen's fleet mode against the replicas for SECONDS_RUN; a failed
# or mismatched call fails the script.
fleet_load() {
  "$LOADGEN" --targets "$targets" --profile "$PROFILE" --clients "$CLIENTS" \
    --seconds "$SECONDS_RUN" --at-fraction 0.5 "$@" || status=1
}

failover() {
  header "failover: SIGKILL one of 3 replicas under load at half the measured maximum"
  new_run_dir failover
  start_replicas "$ROOT/calib" 10
  fleet_load --scaling-baseline "127.0.0.1:$BASE_PORT" --probe-seconds 10 \
    --expect-profiles "$CALIB_DIR" \
    --event "$(at 0.3333)=$REPLICAS kill 1 KILL" \
    --event "$(at 0.5)=$REPLICAS start 1"
  echo "replica 1 exit status after SIGKILL: $(cat "$RUN_DIR/replica-1.exit.prev" 2>/dev/null || echo '?') (128 + 9)"
  stop_replicas
}

reload() {
  header "reload: a profile replaced under load, then a corrupt replacement"
  new_run_dir reload
  local old="$RUN_DIR/calib-old" new="$RUN_DIR/calib-new" shared="$RUN_DIR/calib-shared"
  mkdir -p "$old/h100-sxm" "$new/h100-sxm" "$shared/h100-sxm"
  cp "$ROOT/calib/$PROFILE_FILE" "$old/$PROFILE_FILE"
  cp "$ROOT/calib/$PROFILE_FILE" "$shared/$PROFILE_FILE"
  # The new version: the roofline instead of the fitted kernel-sum model as the default (the
  # planned trees differ); a new created_utc.
  /usr/bin/python3 - "$old/$PROFILE_FILE" "$new/$PROFILE_FILE" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
p["default_model"] = "roofline"
p["created_utc"] = "2026-11-25T00:00:00Z"
json.dump(p, open(sys.argv[2], "w"), indent=2)
EOF
  start_replicas "$shared" 1
  local f="$shared/$PROFILE_FILE"
  fleet_load --probe-seconds 5 --expect-profiles "$old,$new" \
    --event "$(at 0.3333)=cp $new/$PROFILE_FILE $f.tmp-new && mv $f.tmp-new $f" \
    --event "$(at 0.6667)=printf '{\"format\": \"specplan.prof' > $f.tmp-bad && mv $f.tmp-bad $f"
  echo "replica logs (reload lines):"
  grep -h "profile reload" "$RUN_DIR"/replica-*.log | sed 's/^/  /' || true
  stop_replicas
}

drain() {
  header "drain: SIGTERM one of 3 replicas under load"
  new_run_dir drain
  start_replicas "$ROOT/calib" 10
  fleet_load --probe-seconds 5 --expect-profiles "$CALIB_DIR" \
    --event "$(at 0.3333)=$REPLICAS kill 2 TERM"
  local rc; rc="$("$REPLICAS" exit 2)"
  echo "replica 2 exit status after SIGTERM: $rc"
  [[ "$rc" == "0" ]] || status=1
  grep -h "SIGTERM\|stopped" "$RUN_DIR/replica-2.log" | sed 's/^/  /' || true
  stop_replicas
}

case "$SCENARIO" in
  failover) failover ;;
  reload) reload ;;
  drain) drain ;;
  all) failover; reload; drain ;;
  *) sed -n '2,18p' "$0" >&2; exit 2 ;;
esac
echo
[[ $status == 0 ]] && echo "failover.sh: all checks passed" || echo "failover.sh: FAILED"
exit $status
