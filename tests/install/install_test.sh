#!/usr/bin/env bash
# CTest: installs the build tree into a fresh prefix, builds tests/install/consumer against it with
# find_package(specplan), runs it, and checks that the package and the program are free of Torch,
# gRPC and CUDA. Usage: install_test.sh <build dir> <source dir> <scratch dir>
set -euo pipefail
build=$1 src=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
prefix="$scratch/prefix"
cmake --install "$build" --prefix "$prefix" >"$scratch/install.log"
pkg=$(find "$prefix" -name specplanConfig.cmake -print -quit)
[[ -n "$pkg" ]] || { echo "no specplanConfig.cmake under $prefix"; exit 1; }
# Exactly the public surface: the entry headers and their includes (scripts/public_headers.py),
# no implementation header, no `namespace internal`, not the CHECK macros.
python3 "$src/scripts/public_headers.py" "$src" --check >"$scratch/public.txt"
want=$(sed 's|^include/specplan/||' "$scratch/public.txt" | sort)
got=$(cd "$prefix/include/specplan" && find . -name '*.h' | sed 's|^\./||' | sort)
if [[ "$want" != "$got" ]]; then
  echo "installed headers differ from scripts/public_headers.py:"
  diff <(echo "$want") <(echo "$got") || true
  exit 1
fi
for f in cost.h planner.h tree.h costmodel/cost_spec.h planner/policies/best_first.h; do
  [[ -f "$prefix/include/specplan/$f" ]] || { echo "header $f not installed"; exit 1; }
done
for f in util/check.h costmodel/compose/compose.h costmodel/profile/profile_json.h planner/policies/dynatree.h; do
  [[ ! -e "$prefix/include/specplan/$f" ]] || { echo "implementation header $f installed"; exit 1; }
done
[[ -d "$prefix/share/specplan/calib" ]] || { echo "calib/ not installed"; exit 1; }
if grep -Eil 'torch|grpc|cuda' "$(dirname "$pkg")"/*.cmake; then
  echo "the exported package names Torch, gRPC or CUDA"; exit 1
fi
# The consumer is configured with only the package's prefix: nothing points it at this build tree.
cmake -S "$src/tests/install/consumer" -B "$scratch/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$scratch/configure.log"
cmake --build "$scratch/consumer" >"$scratch/build.log"
if ldd "$scratch/consumer/consumer" | grep -Ei 'torch|grpc|cuda'; then
  echo "the consumer links Torch, gRPC or CUDA"; exit 1
fi
out=$("$scratch/consumer/consumer")
echo "$out"
[[ "$out" =~ ^nodes=[1-9][0-9]*\ speedup=[0-9.]+$ ]] || { echo "unexpected output: $out"; exit 1; }
