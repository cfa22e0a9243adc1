#!/usr/bin/env bash
# The main job on embedded defaults: install, build, start specplan-server with the bundled
# profiles (calib/) and show clients getting plans from it. In an interactive terminal the server
# keeps serving afterwards until Ctrl-C; otherwise it is stopped once the demo is done.
# Builds only the CLI, the server and the Python module (scripts/test.sh builds the rest).
# Environment: SPECPLAN_LISTEN (default 127.0.0.1:50051), BUILD_DIR (default build/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" --main
# Only what this job runs: the CLI, the server and the Python module (target specplan_main, top-level
# CMakeLists.txt); the test binaries, the LibTorch runtime and the trainer are scripts/test.sh's,
# which configures LibTorch back in (build.sh's default) and installs what it needs.
"$root/scripts/build.sh" -DSPECPLAN_WITH_TORCH=OFF -- specplan_main
build="${BUILD_DIR:-$root/build}"
BUILD_DIR="$build" "$root/scripts/install_python.sh"  # `import specplan` for python3 (docs/python.md); prints the import check
listen="${SPECPLAN_LISTEN:-127.0.0.1:50051}"
log="$(mktemp -t specplan-server.XXXXXX.log)"

echo
echo "== starting specplan-server --listen $listen --profiles-dir calib (log: $log)"
"$build/service/specplan-server" --listen "$listen" --profiles-dir "$root/calib" >"$log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  grep -q "listening on" "$log" && break
  kill -0 "$server" 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
head -n 1 "$log"

echo
echo "== specplan plan --server $listen --marginals examples/marginals.json --model qwen3-8b --gpu h100 --c 1024 --n-max 256"
"$build/cli/specplan" plan --server "$listen" --marginals "$root/examples/marginals.json" \
  --model qwen3-8b --gpu h100 --c 1024 --n-max 256
echo
echo "== specplan estimate --server $listen --model qwen3-8b --gpu h100 --s 64 --c 1024"
"$build/cli/specplan" estimate --server "$listen" --model qwen3-8b --gpu h100 --s 64 --c 1024
if /usr/bin/python3 -c 'import grpc, grpc_tools' 2>/dev/null; then
  echo
  echo "== python3 examples/python_client.py --server $listen --profile h100-sxm/qwen3-8b (an engine asking for a plan each step, priced by the H100 x Qwen3-8B profile the server holds: SGLang's kernels, the first engine it holds it for)"
  /usr/bin/python3 "$root/examples/python_client.py" --server "$listen" \
    --marginals "$root/examples/marginals.json" --profile h100-sxm/qwen3-8b
fi

if [ -t 0 ] && [ -t 1 ]; then
  echo
  echo "specplan-server is serving on $listen (requests are logged to $log); Ctrl-C to stop."
  wait "$server"
fi
