#!/usr/bin/env bash
# Installs the Debian bookworm packages specplan builds with (only those missing). Extra package
# names given as arguments are installed too (e.g. `setup.sh clang libclang-rt-dev` for fuzz.sh).
#   setup.sh [--main] [PACKAGE...]
# --main: only what scripts/main.sh needs (configure without LibTorch, build the CLI, the server
# and the Python module, run them); without it, everything the whole test suite needs as well
# (LibTorch, PyTorch for the Python tests, mypy, mkdocs, graphviz).
set -euo pipefail
main_packages=(
  build-essential cmake ninja-build ccache pkg-config lld
  libabsl-dev libeigen3-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcairo2-dev libplplot-dev plplot-driver-cairo
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  python3-grpcio python3-grpc-tools
  libsentencepiece-dev
  pybind11-dev python3-dev python3-numpy
)
test_packages=(libtorch-dev python3-pytest python3-torch mypy mkdocs graphviz)
if [[ ${1:-} == --main ]]; then
  shift
  packages=("${main_packages[@]}" "$@")
else
  packages=("${main_packages[@]}" "${test_packages[@]}" "$@")
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
