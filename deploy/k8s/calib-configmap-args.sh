#!/usr/bin/env bash
# Prints `--from-file=KEY=PATH` arguments for `kubectl create configmap specplan-calib`: ConfigMap
# keys cannot contain '/', so calib/<gpu>/<file>.json becomes the key <gpu>__<file>.json (the
# server reads every *.json under --calib-dir and keys profiles by their content, not their path).
#   kubectl create configmap specplan-calib $(deploy/k8s/calib-configmap-args.sh calib/h100-sxm/*.json)
set -euo pipefail
for f in "$@"; do
  [[ "$f" == *.json ]] || continue
  printf -- '--from-file=%s__%s=%s ' "$(basename "$(dirname "$f")")" "$(basename "$f")" "$f"
done
echo
