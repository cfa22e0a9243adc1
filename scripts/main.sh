#!/usr/bin/env bash
# The main job on embedded defaults: install, build, then ask the cost model and the planner
# what to verify for Qwen3-8B on an H100 at a 1k context.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
bin="${BUILD_DIR:-$root/build}/cli/specplan"
echo
echo "== specplan estimate --model qwen3-8b --gpu h100 --s 64 --c 1024"
"$bin" estimate --model qwen3-8b --gpu h100 --s 64 --c 1024
if [ -f "$root/examples/marginals.json" ]; then
  echo
  echo "== specplan plan --marginals examples/marginals.json --model qwen3-8b --gpu h100 --c 1024 --n-max 256"
  "$bin" plan --marginals "$root/examples/marginals.json" --model qwen3-8b --gpu h100 --c 1024 --n-max 256
fi
