#!/usr/bin/env bash
# Installs the built Python package `specplan` (target specplan_python, build/python/specplan/)
# with `cmake --install --component python`, so that `python3 -c "import specplan"` works, and
# prints the import check. The package carries its stubs, py.typed and the bundled profiles
# (specplan/calib/), so it does not need the checkout it was built in. Debian's layout: <prefix>/lib/python3.X/dist-packages/specplan
# (/usr/local/lib/python3.11/dist-packages is on Debian python3's sys.path).
# When the `python3` on PATH is another interpreter of the same major.minor as the one the module
# was built for (pyenv's 3.11.7 beside Debian's 3.11.2: same ABI), a specplan.pth in its
# site-packages points it at the install directory and, after its own paths, at
# /usr/lib/python3/dist-packages (Debian's NumPy, which the module needs).
# Environment: BUILD_DIR (default build/), PREFIX (default: the build's CMAKE_INSTALL_PREFIX).
# A build without the module (no pybind11) is reported and skipped, not an error.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
cache="$build/CMakeCache.txt"
[[ -f "$cache" ]] || { echo "install_python.sh: $build is not a configured build directory" >&2; exit 1; }
cached() { sed -n "s/^$1:[A-Z]*=//p" "$cache" | head -n 1; }

if ! compgen -G "$build/python/specplan/_specplan*.so" >/dev/null; then
  echo "install_python.sh: the Python module is not built in $build (SPECPLAN_WITH_PYTHON needs" \
       "pybind11-dev and python3-dev); skipped"
  exit 0
fi
prefix="${PREFIX:-$(cached CMAKE_INSTALL_PREFIX)}"
prefix="${prefix:-/usr/local}"
rel="$(cached SPECPLAN_PYTHON_INSTALL_DIR)"
built_for="$(cached Python3_EXECUTABLE)"
built_for="${built_for:-/usr/bin/python3}"
dest="$prefix/$rel"

cmake --install "$build" --component python --prefix "$prefix" --strip >/dev/null
echo "installed specplan into $dest/specplan (for $built_for)"

version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
real() { "$1" -c 'import os, sys; print(os.path.realpath(sys.executable))'; }
# The interpreter the module was built for must find the install directory on its own.
if ! "$built_for" -c "import sys; sys.exit(0 if '$dest' in sys.path else 1)"; then
  echo "note: $dest is not on $built_for's sys.path; use PYTHONPATH=$dest"
fi
# Another python3 on PATH (pyenv) of the same major.minor: a .pth file.
if py="$(command -v python3)" && [[ "$(real "$py")" != "$(real "$built_for")" ]]; then
  if [[ "$(version "$py")" == "$(version "$built_for")" ]]; then
    site="$("$py" -c 'import site; print(site.getsitepackages()[0])')"
    mkdir -p "$site"
    printf '%s\n%s\n' "$dest" /usr/lib/python3/dist-packages >"$site/specplan.pth"
    echo "wrote $site/specplan.pth for $py ($(version "$py")): $dest, then /usr/lib/python3/dist-packages"
  else
    echo "note: $py is Python $(version "$py"), the module is built for $(version "$built_for"):" \
         "use $built_for"
  fi
fi

# The import check, from outside the source tree, for both interpreters.
cd /
for interp in "$built_for" python3; do
  command -v "$interp" >/dev/null || continue
  if out="$("$interp" -c 'import specplan; c = specplan.Cost(gpu="h100", model="qwen3-8b"); print("import specplan", specplan.__version__, "from", specplan.__file__, "| profiles from", specplan.default_calib_dir(), "|", c.profile_id, "T(1, 64, 1024) = %.3f ms" % (c.verify_seconds(64, 1024) * 1e3))' 2>&1)"; then
    echo "$interp: $out"
  else
    echo "$interp: import specplan FAILED: $out" >&2
    exit 1
  fi
done
