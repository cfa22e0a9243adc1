#!/usr/bin/env bash
# N specplan-server replicas on this machine, without containers: one process per replica on
# 127.0.0.1:BASE_PORT+i, all sharing one profiles directory (reloaded every RELOAD_S seconds and on
# SIGHUP), Prometheus metrics on 127.0.0.1:METRICS_BASE+i. Clients reach all of them with one
# target: specplan --server 127.0.0.1:50051,127.0.0.1:50052,... (round robin, retries).
#
#   scripts/replicas.sh N            start N replicas (in the background), print the --targets list
#   scripts/replicas.sh status       pid, port and health of each replica started here
#   scripts/replicas.sh kill I [SIG] send SIG (default KILL) to replica I (0-based)
#   scripts/replicas.sh start I      (re)start replica I on its port
#   scripts/replicas.sh hup          SIGHUP every replica (reload profiles now)
#   scripts/replicas.sh stop         SIGTERM every replica (graceful drain), wait, report exit codes
#   scripts/replicas.sh exit I       replica I's exit status once it has exited (128 + signal)
#
# Environment: BASE_PORT (50051), METRICS_BASE (9100), CALIB_DIR (repository calib/), RELOAD_S (10),
# RUN_DIR (/tmp/specplan-replicas: pid files and logs), SERVER (build/service/specplan-server),
# SERVER_ARGS (extra flags for every replica, e.g. "--threads 4").
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/lib.sh"
defaults BASE_PORT=50051 METRICS_BASE=9100 CALIB_DIR="$ROOT/calib" RELOAD_S=10 \
  RUN_DIR=/tmp/specplan-replicas SERVER="$ROOT/build/service/specplan-server" SERVER_ARGS=

usage() { sed -n '2,17p' "$0" >&2; exit 2; }

pidfile() { echo "$RUN_DIR/replica-$1.pid"; }
alive() { [[ -f "$(pidfile "$1")" ]] && kill -0 "$(cat "$(pidfile "$1")")" 2>/dev/null; }
count() { find "$RUN_DIR" -maxdepth 1 -name "replica-*.port" | wc -l; }

start_one() {
  local i="$1" port=$((BASE_PORT + $1)) mport=$((METRICS_BASE + $1))
  if alive "$i"; then echo "replica $i already running (pid $(cat "$(pidfile "$i")"))" >&2; return 0; fi
  [[ -x "$SERVER" ]] || { echo "replicas.sh: SERVER=$SERVER is not an executable (build it first)" >&2; exit 1; }
  # The previous run's exit status stays readable as replica-I.exit.prev.
  [[ -f "$RUN_DIR/replica-$i.exit" ]] && mv -f "$RUN_DIR/replica-$i.exit" "$RUN_DIR/replica-$i.exit.prev"
  rm -f "$RUN_DIR/replica-$i.out" "$(pidfile "$i")"
  # A watcher subshell records the server's exit status in replica-I.exit (128 + signal when
  # killed); signals go to the server's own pid (replica-I.pid).
  (
    # shellcheck disable=SC2086
    "$SERVER" --listen "127.0.0.1:$port" --metrics-port "$mport" --calib-dir "$CALIB_DIR" \
      --reload-interval-s "$RELOAD_S" --replica-id "replica-$i" --quiet $SERVER_ARGS \
      >"$RUN_DIR/replica-$i.out" 2>>"$RUN_DIR/replica-$i.log" &
    spid=$!
    echo "$spid" >"$(pidfile "$i")"
    set +e
    wait "$spid"
    echo $? >"$RUN_DIR/replica-$i.exit"
  ) >/dev/null 2>&1 &
  echo "$port" >"$RUN_DIR/replica-$i.port"
  for _ in $(seq 1 100); do [[ -s "$(pidfile "$i")" ]] && break; sleep 0.02; done
  # Ready once it prints its listening line (after the profiles are loaded).
  for _ in $(seq 1 200); do
    if grep -q "listening on" "$RUN_DIR/replica-$i.out" 2>/dev/null; then
      echo "replica $i: pid $(cat "$(pidfile "$i")"), 127.0.0.1:$port, metrics http://127.0.0.1:$mport/metrics"
      return 0
    fi
    alive "$i" || { echo "replica $i exited; log: $RUN_DIR/replica-$i.log" >&2; cat "$RUN_DIR/replica-$i.log" >&2; exit 1; }
    sleep 0.05
  done
  echo "replica $i did not start within 10 s; log: $RUN_DIR/replica-$i.log" >&2
  exit 1
}

targets() {
  local list="" i
  for ((i = 0; i < $(count); i++)); do list+="${list:+,}127.0.0.1:$((BASE_PORT + i))"; done
  echo "$list"
}

[[ $# -ge 1 ]] || usage
mkdir -p "$RUN_DIR"
case "$1" in
  ''|*[!0-9]*) ;;
  *)
    n="$1"
    [[ "$n" -ge 1 && "$n" -le 64 ]] || { echo "replicas.sh: N = $n: must be in [1, 64]" >&2; exit 2; }
    rm -f "$RUN_DIR"/replica-*.port
    for ((i = 0; i < n; i++)); do start_one "$i"; done
    echo "targets: $(targets)"
    exit 0 ;;
esac
case "$1" in
  status)
    for ((i = 0; i < $(count); i++)); do
      if alive "$i"; then echo "replica $i: pid $(cat "$(pidfile "$i")") up, 127.0.0.1:$((BASE_PORT + i))"
      else echo "replica $i: down"; fi
    done ;;
  kill) [[ $# -ge 2 ]] || usage; kill -"${3:-KILL}" "$(cat "$(pidfile "$2")")" ;;
  start) [[ $# -ge 2 ]] || usage; start_one "$2" ;;
  hup) for ((i = 0; i < $(count); i++)); do alive "$i" && kill -HUP "$(cat "$(pidfile "$i")")"; done ;;
  targets) targets ;;
  exit)
    [[ $# -ge 2 ]] || usage
    for _ in $(seq 1 300); do [[ -f "$RUN_DIR/replica-$2.exit" ]] && break; sleep 0.05; done
    cat "$RUN_DIR/replica-$2.exit" ;;
  stop)
    for ((i = 0; i < $(count); i++)); do alive "$i" && kill -TERM "$(cat "$(pidfile "$i")")"; done
    for ((i = 0; i < $(count); i++)); do
      pid="$(cat "$(pidfile "$i")")"
      for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
      for _ in $(seq 1 50); do [[ -f "$RUN_DIR/replica-$i.exit" ]] && break; sleep 0.05; done
      echo "replica $i: stopped, exit status $(cat "$RUN_DIR/replica-$i.exit" 2>/dev/null || echo '?')"
    done
    rm -f "$RUN_DIR"/replica-*.pid "$RUN_DIR"/replica-*.port ;;
  *) usage ;;
esac
