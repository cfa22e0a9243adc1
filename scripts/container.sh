#!/usr/bin/env bash
# The container image of deploy/Dockerfile, built and run with Debian's own tools, no registry:
#   1. base:  a Debian bookworm root file system from mmdebstrap (deb.debian.org), imported into
#             podman as localhost/specplan-base:bookworm, the base of both Dockerfile stages
#             (--build-arg BASE / RUNTIME_BASE);
#   2. image: podman build -f deploy/Dockerfile (compiles only the target specplan-server, -j JOBS,
#             through the host's ccache when there is one)
#             from the sources of the commit HEAD (git archive; CONTEXT=worktree takes the working
#             tree instead, through deploy/Dockerfile.dockerignore);
#   3. run:   the image started with its own CMD, gRPC and metrics ports published on 127.0.0.1;
#   4. plan:  `specplan plan --server 127.0.0.1:PORT` from the host over loopback, its answer
#             compared with the same plan computed in-process, the metrics endpoint scraped;
#   5. stop:  SIGTERM (the server drains and must exit 0), the container removed; then the images
#             and the work directory are removed too (KEEP_IMAGES=1 keeps the images).
# Every step prints a progress line with its time; any failure stops the script with a message
# naming the step (exit status 1). Needs mmdebstrap, podman (runc where crun is refused) and
# Debian's mirror; verified as root (docs/deployment.md), rootless untried.
#
#   scripts/container.sh            all of the above
#
# Environment: SPECPLAN_CLI (the host CLI, default build/cli/specplan, built with gRPC), JOBS (2),
# IMAGE (localhost/specplan-server:dev), BASE_IMAGE (localhost/specplan-base:bookworm), PORT and
# METRICS_PORT (host ports on 127.0.0.1, default: free ones), CONTEXT (head | worktree),
# KEEP_IMAGES (0), CCACHE (1: mount the host's ccache into the build stage; 0: compile cold),
# WORK_PARENT (/var/tmp: where the work directory, 0.2 GB, is made), MIRROR
# (http://deb.debian.org/debian), SECURITY_MIRROR (http://deb.debian.org/debian-security),
# PODMAN_OPTS (extra flags for podman build and run; the script adds the ulimits and the OCI
# runtime it finds working, see "probe" below).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/lib.sh"
defaults SPECPLAN_CLI="$ROOT/build/cli/specplan" JOBS=2 IMAGE=localhost/specplan-server:dev \
  BASE_IMAGE=localhost/specplan-base:bookworm CONTEXT=head KEEP_IMAGES=0 CCACHE=1 \
  MIRROR=http://deb.debian.org/debian SECURITY_MIRROR=http://deb.debian.org/debian-security \
  PODMAN_OPTS= WORK_PARENT=/var/tmp

[[ $# -eq 0 ]] || { sed -n '2,28p' "$0" >&2; exit 2; }

t_start=$SECONDS
step=setup
progress() { printf '== [container %4ds] %s\n' "$((SECONDS - t_start))" "$*"; }
die() { printf '\n!! scripts/container.sh: FAILED at step "%s": %s\n' "$step" "$*" >&2; exit 1; }

# ---- what is needed ------------------------------------------------------------------------------
for tool in mmdebstrap podman python3; do
  command -v "$tool" >/dev/null || die "$tool not found (apt-get install mmdebstrap podman)"
done
[[ -x "$SPECPLAN_CLI" ]] || die "no CLI at $SPECPLAN_CLI (cmake --build build --target specplan; or set SPECPLAN_CLI)"
# shellcheck disable=SC2153  # CONTEXT comes from the environment (defaults above)
[[ "$CONTEXT" == head || "$CONTEXT" == worktree ]] || die "CONTEXT must be head or worktree, not '$CONTEXT'"

# One run at a time on a machine: the image names are fixed and clean-up removes every image made
# while the run held the lock.
lock="$WORK_PARENT/specplan-container.lock"
exec 9>"$lock"
if ! flock -n 9; then
  progress "waiting for another scripts/container.sh run to finish (lock $lock)"
  flock 9
fi
podman() { command podman "$@" 9>&-; }  # a container's conmon must not hold the lock
WORK_DIR="$(mktemp -d "$WORK_PARENT/specplan-container.XXXXXX")"
name="specplan-ctr-$$"
made_images=()
cleanup() {
  local rc=$?
  failed_step="$step"
  step=cleanup
  podman rm -f -t 0 "$name" >/dev/null 2>&1 || true
  if [[ "$KEEP_IMAGES" != 1 && ${#made_images[@]} -gt 0 ]]; then
    podman rmi -f "${made_images[@]}" >/dev/null 2>&1 || true
    progress "clean-up: removed the ${#made_images[@]} images this run made (base, build stage, $IMAGE; KEEP_IMAGES=1 keeps them)"
  fi
  if [[ $rc -ne 0 && -f "$WORK_DIR/build.log" ]]; then
    mv "$WORK_DIR/build.log" "$WORK_PARENT/specplan-container-build.$$.log"
    printf '!! the image build log is kept at %s\n' "$WORK_PARENT/specplan-container-build.$$.log" >&2
  fi
  rm -rf "$WORK_DIR"
  [[ $rc -eq 0 ]] || printf '!! scripts/container.sh: failed in step "%s" (exit status %d); cleaned up\n' "$failed_step" "$rc" >&2
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT="${PORT:-$(free_port)}"
METRICS_PORT="${METRICS_PORT:-$(free_port)}"
[[ "$PORT" != "$METRICS_PORT" ]] || METRICS_PORT="$(free_port)"
progress "podman $(podman --version | awk '{print $3}'), mmdebstrap $(mmdebstrap --version | awk '{print $2}'); work dir $WORK_DIR; $(nproc) cores; JOBS=$JOBS"

# ---- 1. base: mmdebstrap root file system, imported --------------------------------------------
step=base
progress "base: mmdebstrap --variant=apt bookworm (from $MIRROR)"
t=$SECONDS
# Docs, man pages and translations left out as in Debian's -slim images; apt lists cleaned by
# mmdebstrap. --include=passwd for the runtime stage's groupadd / useradd.
mmdebstrap --quiet --variant=apt --format=tar --include=passwd \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
  bookworm "$WORK_DIR/rootfs.tar" \
  "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
  "deb $SECURITY_MIRROR bookworm-security main" \
  || die "mmdebstrap failed"
podman import --quiet "$WORK_DIR/rootfs.tar" "$BASE_IMAGE" >/dev/null || die "podman import failed"
made_images+=("$BASE_IMAGE")  # the ids the build makes are added after it
rm -f "$WORK_DIR/rootfs.tar"
progress "base: $BASE_IMAGE imported ($(podman image inspect --format '{{.Size}}' "$BASE_IMAGE" | numfmt --to=si)B) in $((SECONDS - t)) s"

# ---- probe: the podman flags under which a container starts here --------------------------------
# podman asks for RLIMIT_NOFILE 1048576 (and itself ran with RLIMIT_NPROC 32768 here), which a runtime
# without CAP_SYS_RESOURCE cannot set above this shell's hard limits: ask for those. crun refuses a
# cgroup v1 + v2 hybrid with controllers on v2 ("cgroups in hybrid mode not supported"); runc runs
# there. The first set of flags that runs `true` in the base image is used for build and run.
step=probe
hard_nofile="$(ulimit -Hn)"; hard_nproc="$(ulimit -Hu)"
[[ "$hard_nofile" =~ ^[0-9]+$ && "$hard_nofile" -le 1048576 ]] || hard_nofile=1048576
[[ "$hard_nproc" =~ ^[0-9]+$ && "$hard_nproc" -le 32768 ]] || hard_nproc=32768
ulimits="--ulimit nofile=$hard_nofile:$hard_nofile --ulimit nproc=$hard_nproc:$hard_nproc"
candidates=("$ulimits")
command -v runc >/dev/null && candidates+=("$ulimits --runtime runc")
opts=
for c in "${candidates[@]}"; do
  # shellcheck disable=SC2086
  if out="$(podman run --rm $PODMAN_OPTS $c "$BASE_IMAGE" true 2>&1)"; then opts="$c"; break; fi
  progress "probe: podman run $c ... true failed: $out"
done
[[ -n "$opts" ]] || die "no container starts here (tried: ${candidates[*]}; apt-get install runc if crun is refused)"
progress "probe: containers start with: podman run ${PODMAN_OPTS:+$PODMAN_OPTS }$opts"

# ---- 2. image: podman build ------------------------------------------------------------------------
step=image
if [[ "$CONTEXT" == head ]]; then
  git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null || die "CONTEXT=head but $ROOT is not a git checkout"
  mkdir "$WORK_DIR/context"
  git -C "$ROOT" archive HEAD | tar -x -C "$WORK_DIR/context"
  context="$WORK_DIR/context"; what="commit $(git -C "$ROOT" rev-parse --short HEAD)"
else
  context="$ROOT"; what="the working tree"
fi
# The host's compiler cache, mounted into the build stage (deploy/Dockerfile, CCACHE_DIR): the
# image compiles what scripts/build.sh compiled, with the same compiler and flags, so a host that
# built the tests first serves every compilation from the cache.
cache_opts=()
cache_note="no compiler cache: a cold compile"
if [[ "$CCACHE" == 1 ]] && command -v ccache >/dev/null; then
  host_cache="$(ccache --get-config cache_dir)"
  mkdir -p "$host_cache"
  cache_opts=(-v "$host_cache:/ccache" --build-arg CCACHE_DIR=/ccache)
  cache_note="the host's ccache $host_cache mounted"
fi
progress "image: podman build -f deploy/Dockerfile from $what, target specplan-server, -j$JOBS ($cache_note)"
t=$SECONDS
images_before="$(podman images -aq --no-trunc | sort -u)"
set +e
# shellcheck disable=SC2086
podman build $PODMAN_OPTS $opts "${cache_opts[@]}" -f "$ROOT/deploy/Dockerfile" \
  --ignorefile "$ROOT/deploy/Dockerfile.dockerignore" \
  --build-arg BASE="$BASE_IMAGE" --build-arg RUNTIME_BASE="$BASE_IMAGE" --build-arg JOBS="$JOBS" \
  -t "$IMAGE" "$context" 2>&1 | tee "$WORK_DIR/build.log" \
  | grep --line-buffered -E '^\[[0-9]+/[0-9]+\] (STEP|Building|Linking)|FAILED|error:'
build_rc="${PIPESTATUS[0]}"
set -e
# Every image this build made (the build stage's layers included) goes at clean-up.
while read -r id; do made_images+=("$id"); done \
  < <(comm -13 <(echo "$images_before") <(podman images -aq --no-trunc | sort -u))
[[ "$build_rc" -eq 0 ]] || { tail -n 40 "$WORK_DIR/build.log" >&2; die "podman build failed (status $build_rc)"; }
build_s=$((SECONDS - t))
size="$(podman image inspect --format '{{.Size}}' "$IMAGE")"
progress "image: $IMAGE built in $build_s s, $(numfmt --to=si "$size")B ($size bytes)"

# ---- 3. run ------------------------------------------------------------------------------------------
step=run
progress "run: podman run -d -p 127.0.0.1:$PORT:50051 -p 127.0.0.1:$METRICS_PORT:9090 $IMAGE (its CMD)"
# shellcheck disable=SC2086
podman run -d --name "$name" $PODMAN_OPTS $opts -p "127.0.0.1:$PORT:50051" \
  -p "127.0.0.1:$METRICS_PORT:9090" "$IMAGE" >/dev/null || die "podman run failed"
for _ in $(seq 150); do
  podman logs "$name" 2>&1 | grep -q "listening on" && break
  [[ "$(podman inspect --format '{{.State.Running}}' "$name")" == true ]] \
    || { podman logs "$name" >&2; die "the container exited before listening"; }
  sleep 0.2
done
podman logs "$name" 2>&1 | grep -q "listening on" || { podman logs "$name" >&2; die "no 'listening on' in 30 s"; }
progress "run: $(podman logs "$name" 2>&1 | grep -m1 'listening on')"
# Ready = health SERVING (profiles loaded), read from the metrics port over loopback.
scrape() {
  python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
    "http://127.0.0.1:$METRICS_PORT/metrics"
}
ready=0
for _ in $(seq 150); do
  if scrape 2>/dev/null | grep -q '^specplan_ready 1'; then ready=1; break; fi
  sleep 0.2
done
[[ $ready == 1 ]] || { podman logs "$name" >&2; scrape >&2 || true; die "no specplan_ready 1 at http://127.0.0.1:$METRICS_PORT/metrics in 30 s"; }
progress "run: ready (specplan_ready 1, $(scrape | awk '/^specplan_profiles_loaded /{print $2}') profiles loaded)"
progress "run: user in the container: $(podman exec "$name" id -u):$(podman exec "$name" id -g)"

# ---- 4. plan over loopback -------------------------------------------------------------------------
step=plan
plan_args=(plan --marginals "$ROOT/examples/marginals.json" --model qwen3-8b --gpu h100 --c 1024 --n-max 256)
progress "plan: $SPECPLAN_CLI ${plan_args[*]} --server 127.0.0.1:$PORT"
"$SPECPLAN_CLI" "${plan_args[@]}" --server "127.0.0.1:$PORT" >"$WORK_DIR/remote.txt" 2>&1 \
  || { cat "$WORK_DIR/remote.txt" >&2; podman logs "$name" >&2; die "the plan through the container failed"; }
cat "$WORK_DIR/remote.txt"
if [[ "$CONTEXT" == head ]]; then calib="$WORK_DIR/context/calib"; else calib="$ROOT/calib"; fi
SPECPLAN_CALIB_DIR="$calib" "$SPECPLAN_CLI" "${plan_args[@]}" >"$WORK_DIR/local.txt" 2>&1 \
  || { cat "$WORK_DIR/local.txt" >&2; die "the same plan in-process failed"; }
diff "$WORK_DIR/local.txt" "$WORK_DIR/remote.txt" >&2 \
  || die "the container's answer differs from the in-process plan on the same profiles (diff above)"
progress "plan: the container's answer equals the in-process plan (same profiles, the image's calib/)"
metrics="$(scrape)" || die "GET http://127.0.0.1:$METRICS_PORT/metrics failed"
line="$(grep -E '^specplan_requests_total\{.*method="PlanTree".*code="OK".*\} [1-9]' <<<"$metrics")" \
  || die "the metrics do not count the PlanTree call"
progress "plan: metrics over loopback: $line"

# ---- 5. stop -----------------------------------------------------------------------------------------
step=stop
t=$SECONDS
podman stop -t 30 "$name" >/dev/null || die "podman stop failed"
code="$(podman inspect --format '{{.State.ExitCode}}' "$name")"
[[ "$code" == 0 ]] || { podman logs "$name" >&2; die "the server exited with status $code after SIGTERM (want 0)"; }
progress "stop: SIGTERM drained the server, exit status 0 in $((SECONDS - t)) s"
progress "OK: image $IMAGE ($(numfmt --to=si "$size")B) built in $build_s s, planned through over 127.0.0.1:$PORT; total $((SECONDS - t_start)) s"
