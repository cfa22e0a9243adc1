#!/usr/bin/env bash
# clang-format over every tracked C++ and CUDA source and header (the style is .clang-format).
#   scripts/format.sh          rewrites the files in place
#   scripts/format.sh --check  changes nothing; lists every file clang-format would change and
#                              fails when there is one (what CI runs)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh" clang-format >/dev/null
cd "$root"
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu')
if [[ "${1:-}" == "--check" ]]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if ((${#bad[@]})); then
    echo "format: ${#bad[@]} of ${#files[@]} files differ from clang-format (run scripts/format.sh):"
    printf '  %s\n' "${bad[@]}"
    exit 1
  fi
  echo "format: ${#files[@]} files clean ($(clang-format --version))"
else
  clang-format -i "${files[@]}"
  echo "format: formatted ${#files[@]} files"
fi
