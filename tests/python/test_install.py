"""The installed package stands on its own: `cmake --install --component python` puts the module,
its stubs, py.typed and the bundled profiles (specplan/calib/) in one folder; moved elsewhere and
imported from outside the checkout, it prices a bundled profile from its own copy. The search
order (docs/python.md): $SPECPLAN_CALIB_DIR, the package's calib/, the library's default."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import specplan
from conftest import BUILD_DIR, SOURCE_DIR

PROBE = """
import json, specplan
c = specplan.Cost(gpu="h100", model="qwen3-8b")
print(json.dumps(dict(file=specplan.__file__, calib=specplan.default_calib_dir(),
                      search=specplan.calib_search_path(), path=c.profile_path, id=c.profile_id,
                      kind=c.kind, t=c.verify_seconds(64, 1024),
                      profiles=len(specplan.list_profiles()))))
"""


@pytest.fixture(scope="module")
def moved_install(tmp_path_factory):
    """The python component installed into a temporary prefix, then moved to another folder
    (so nothing can refer to where it was installed either)."""
    if shutil.which("cmake") is None or not (BUILD_DIR / "CMakeCache.txt").exists():
        pytest.skip("needs cmake and a configured build directory")
    root = tmp_path_factory.mktemp("install")
    prefix = root / "prefix"
    subprocess.run(["cmake", "--install", str(BUILD_DIR), "--component", "python", "--prefix",
                    str(prefix)], check=True, capture_output=True, text=True)
    inits = list(prefix.glob("**/specplan/__init__.py"))
    assert len(inits) == 1, inits
    moved = root / "elsewhere"
    shutil.copytree(inits[0].parent, moved / "specplan")
    shutil.rmtree(prefix)
    return moved


def _run(site, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPECPLAN_CALIB_DIR")}
    env.update(PYTHONPATH=str(site), PYTHONNOUSERSITE="1", **(env_extra or {}))
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env,
                         cwd=str(site.parent))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_installed_package_carries_stubs_and_profiles(moved_install):
    pkg = moved_install / "specplan"
    for name in ("__init__.py", "_specplan.pyi", "py.typed", "types.py", "cost.py"):
        assert (pkg / name).exists(), name
    shipped = sorted(p.relative_to(SOURCE_DIR / "calib")
                     for p in (SOURCE_DIR / "calib").glob("**/*.json"))
    assert sorted(p.relative_to(pkg / "calib") for p in (pkg / "calib").glob("**/*.json")) == \
        shipped
    assert not list(pkg.glob("*bench*"))  # the timing module stays in the build tree


def test_moved_install_prices_its_own_profiles(moved_install):
    got = _run(moved_install)
    pkg = moved_install / "specplan"
    assert got["file"].startswith(str(pkg))
    assert got["calib"] == str(pkg / "calib")
    assert got["search"][0] == ["package", str(pkg / "calib")]
    assert got["path"].startswith(str(pkg / "calib"))
    assert not got["path"].startswith(str(SOURCE_DIR))
    assert got["id"] == "h100-sxm/qwen3-8b-bf16@sglang" and got["kind"] != "roofline"
    assert got["profiles"] == len(list((SOURCE_DIR / "calib").glob("**/*.json")))
    # the same profile as the build tree prices from the checkout
    here = specplan.Cost(gpu="h100", model="qwen3-8b")
    assert got["t"] == here.verify_seconds(64, 1024)


def test_environment_variable_comes_first(moved_install, tmp_path):
    empty = tmp_path / "no-profiles"
    empty.mkdir()
    got = _run(moved_install, {"SPECPLAN_CALIB_DIR": str(empty)})
    assert got["calib"] == str(empty)
    assert got["search"] == [["SPECPLAN_CALIB_DIR", str(empty)],
                             ["package", str(moved_install / "specplan" / "calib")]]
    assert got["kind"] == "roofline" and got["id"] == "" and got["profiles"] == 0


def test_search_path_in_the_build_tree():
    # The build tree's package carries no calib/: the variable (ctest sets it) or the library's
    # default, the checkout's calib/.
    search = specplan.calib_search_path()
    assert [w for w, _ in search] in (["SPECPLAN_CALIB_DIR"], ["library"])
    assert specplan.default_calib_dir() == search[0][1]
