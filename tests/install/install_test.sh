#!/usr/bin/env bash
# CTest: installs the build tree into a fresh prefix, builds tests/install/consumer against it with
# find_package(specplan), runs it, checks that the package and the program are free of Torch,
# gRPC and CUDA, and that the consumer's EAGLE-3 step and plan are the CLI's (the build's
# cli/specplan). Usage: install_test.sh <build dir> <source dir> <scratch dir>
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
# The consumer includes only the installed entry header.
if grep -E '^\s*#\s*include\s*[<"]' "$src/tests/install/consumer/main.cc" | grep -v '<specplan/' |
   grep -Ev '<(cstdio|cstdint|string|vector)>'; then
  echo "the consumer includes a header other than <specplan/...> (above)"; exit 1
fi
out=$("$scratch/consumer/consumer")
echo "$out"
[[ "$out" =~ ^step_s=[0-9.e-]+\ plain_s=[0-9.e-]+\ nodes=[1-9][0-9]*\ cycle_s=[0-9.e-]+\ speedup=[0-9.]+\ profile=.+$ ]] ||
  { echo "unexpected output: $out"; exit 1; }
# The same step and plan as the CLI's (the operations layer prices both).
cli="$build/cli/specplan"
[[ -x "$cli" ]] || { echo "$cli not built: the consumer's figures are checked against it"; exit 1; }
python3 - "$out" "$cli" "$scratch" <<'PY'
import json, subprocess, sys
out, cli, scratch = sys.argv[1], sys.argv[2], sys.argv[3]
got = dict(kv.split("=", 1) for kv in out.split())
cost = ["--model", "qwen3-8b", "--gpu", "h100", "--engine", "sglang", "--drafter", "eagle3"]
est = json.loads(subprocess.run([cli, "estimate", *cost, "--s", "4", "--c", "1024", "--json"],
                                check=True, capture_output=True, text=True).stdout)
m = {"root_token": 1, "tokens": [[10 * d, 10 * d + 1] for d in range(4)],
     "probs": [[0.8, 0.15] for _ in range(4)]}
path = scratch + "/marginals.json"
with open(path, "w") as f:
    json.dump(m, f)
plan = json.loads(subprocess.run([cli, "plan", "--marginals", path, *cost, "--c", "1024",
                                  "--n-max", "8", "--json"],
                                 check=True, capture_output=True, text=True).stdout)
pairs = [("step_s", est["step"]["step_s"]), ("plain_s", est["ar_step_s"]),
         ("cycle_s", plan["cycle_s"]), ("speedup", plan["speedup"])]
bad = [(k, got[k], want) for k, want in pairs if abs(float(got[k]) - want) > 1e-6 * abs(want)]
if int(got["nodes"]) != plan["n"]:
    bad.append(("nodes", got["nodes"], plan["n"]))
if got["profile"] != est["profile"].split("calib/")[-1].removesuffix(".json") and \
        got["profile"] not in est["profile"]:
    bad.append(("profile", got["profile"], est["profile"]))
if bad:
    sys.exit("the consumer differs from the CLI: " + "; ".join(f"{k} {g} != {w}" for k, g, w in bad))
print("consumer = CLI: step_s, plain_s, nodes, cycle_s, speedup, profile")
PY
