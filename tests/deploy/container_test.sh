#!/usr/bin/env bash
# ctest Deploy.Container (label `container`): scripts/container.sh end to end (mmdebstrap base,
# podman build of deploy/Dockerfile, the container started, a plan through it from the host over
# 127.0.0.1 compared with the in-process plan, SIGTERM drain, clean-up). Slow where it runs (a cold
# compile of specplan-server inside the image build: about 25 min on 2 cores). Exit status 77
# (skipped, in well under a second) where mmdebstrap or podman is missing, or where
# SPECPLAN_CONTAINER_TEST=0; `ctest -LE container` leaves it out anyway.
#
#   tests/deploy/container_test.sh SPECPLAN_CLI
set -euo pipefail
cli="${1:?usage: container_test.sh SPECPLAN_CLI}"
here="${BASH_SOURCE[0]%/*}"; [[ "${BASH_SOURCE[0]}" == */* ]] || here=.

if [[ "${SPECPLAN_CONTAINER_TEST:-1}" == 0 ]]; then
  echo "SKIPPED: SPECPLAN_CONTAINER_TEST=0"
  exit 77
fi
missing=()
for tool in mmdebstrap podman; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "SKIPPED: the container test needs ${missing[*]} (Debian: apt-get install mmdebstrap podman runc)," \
       "see docs/deployment.md"
  exit 77
fi
SPECPLAN_CLI="$cli" exec bash "$here/../../scripts/container.sh"
