#!/usr/bin/env python3
"""ctest python.typecheck: `import specplan` type-checks.

1. mypy over examples/ (every example, the engine loop's helpers included), with the built
   package (build/python/specplan: its .py modules, the compiled module's _specplan.pyi and
   py.typed) on MYPYPATH; unannotated functions are checked too (--check-untyped-defs), and
   examples/python_api.py is checked strictly (its inline mypy flags).
2. mypy's stubtest: python/specplan/_specplan.pyi against the compiled module (every name the
   module has is in the stub and the other way round; pybind11 functions carry no signature
   stubtest could compare, so their arguments are checked by 1 and the tests).

Exits 77 (ctest: skipped) with a message when mypy is not installed (Debian: apt-get install
mypy). Environment: SPECPLAN_SOURCE_DIR, SPECPLAN_BUILD_DIR (default: from this file).
"""

import os
import pathlib
import subprocess
import sys
import tempfile

SOURCE = pathlib.Path(os.environ.get("SPECPLAN_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
BUILD = pathlib.Path(os.environ.get("SPECPLAN_BUILD_DIR", SOURCE / "build"))
# stubtest's allowlist (regular expressions): a class of the compiled module has pybind11's
# metaclass, which the stub does not spell, and the classes without a Python constructor have
# pybind11's refusing __init__(*args, **kwargs). Their members are still checked one by one.
ALLOWLIST = r"""
specplan\._specplan\.[A-Z][A-Za-z]*
specplan\._specplan\.[A-Z][A-Za-z]*\.__init__
"""
# The gRPC stubs generated beside the package (specplan/v1, python_client.py imports them) are
# typed by protobuf, whose stubs Debian does not ship: not followed.
MYPY_INI = """
[mypy]
ignore_missing_imports = True
[mypy-specplan.v1.*]
follow_imports = skip
"""


def main():
    try:
        import mypy  # noqa: F401
    except ImportError:
        print("SKIPPED: mypy is not installed (Debian: apt-get install mypy)")
        return 77
    pkg = BUILD / "python"
    if not (pkg / "specplan" / "_specplan.pyi").exists():
        print(f"{pkg}/specplan/_specplan.pyi missing: build the target specplan_python",
              file=sys.stderr)
        return 1
    examples = sorted(str(p) for p in (SOURCE / "examples").glob("*.py"))
    helpers = sorted(str(p) for p in (SOURCE / "examples" / "engine_loop").glob("*.py"))
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, MYPYPATH=os.pathsep.join([str(pkg), str(SOURCE / "examples"
                                                                        / "engine_loop")]))
        ini = pathlib.Path(cache) / "mypy.ini"
        ini.write_text(MYPY_INI)
        common = ["--config-file", str(ini), "--cache-dir", cache, "--python-version", "3.11",
                  "--no-color-output"]
        rc = 0
        # The engine loop's helpers are imported by their own names (examples/engine_loop on
        # MYPYPATH, as engine_loop.py puts it on sys.path).
        cmd = [sys.executable, "-m", "mypy", *common, "--check-untyped-defs", *examples, *helpers]
        print("+", " ".join(cmd[2:]), flush=True)
        rc |= subprocess.run(cmd, env=env, cwd=str(SOURCE)).returncode
        allow = pathlib.Path(cache) / "allowlist.txt"
        allow.write_text(ALLOWLIST)
        cmd = [sys.executable, "-m", "mypy.stubtest", "specplan._specplan", "--allowlist",
               str(allow)]
        print("+", " ".join(cmd[2:]), flush=True)
        env["PYTHONPATH"] = os.pathsep.join([str(pkg), env.get("PYTHONPATH", "")])
        rc |= subprocess.run(cmd, env=env, cwd=cache).returncode
    return 1 if rc else 0


if __name__ == "__main__":
    sys.exit(main())
