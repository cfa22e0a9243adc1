#!/usr/bin/env bash
# Downloads (on a Debian bookworm machine with apt) the .deb files scripts/gpu/run_stages.sh unpacks on
# a GPU machine that lacks them: abseil (headers + shared libraries), Eigen, nlohmann-json, CLI11
# and GoogleTest/GoogleMock. They land in .deps/ (ignored by git, .gitignore); a `device` call
# takes them along when its `carry` names .deps (about 3.5 MB).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$root/.deps"
cd "$root/.deps"
apt-get download libabsl-dev libabsl20220623 libeigen3-dev nlohmann-json3-dev libcli11-dev \
  libgtest-dev libgmock-dev
ls -la "$root/.deps"
