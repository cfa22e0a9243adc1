"""Issue 39's Python findings: errors in the keywords the API takes, canonical bundled paths, and
SGLang layouts of large plans with the defaults."""

import os

import numpy as np
import pytest

import specplan
from conftest import SOURCE_DIR, random_marginals


def test_cost_errors_name_the_profile_keyword():
    # No sglang profile ships for h200: the advice names the keyword Cost takes.
    with pytest.raises(specplan.Error) as err:
        specplan.Cost(gpu="h200", model="qwen3-8b", engine="sglang")
    assert "profile_path" not in str(err.value)
    assert "profile=PATH" in str(err.value)


def test_bundled_profile_path_is_canonical():
    calib = str(SOURCE_DIR / "calib")
    path = specplan.bundled_profile_path("h100", "qwen3-8b", calib_dir=calib)
    assert path.endswith("calib/h100-sxm/qwen3-8b-bf16.json")
    assert os.path.exists(path)
    assert specplan.bundled_profile_path("h100-sxm", "qwen3-8b", calib_dir=calib) == path
    with pytest.raises(specplan.InvalidArgumentError, match="gpu = 'h1000'"):
        specplan.bundled_profile_path("h1000", "qwen3-8b")


def test_sglang_layout_defaults_take_a_127_node_plan():
    m = random_marginals(np.random.default_rng(3), 16, 8)
    plan = specplan.plan_tree(m, n_max=127, mode="fixed")
    assert plan.n == 127
    lay = plan.sglang_layout()
    assert lay.draft_token_num == 128
    assert lay.tree_mask_mode == "QLEN_ONLY"
    assert lay.tree_mask.shape == (128 * 128,)
    lay = specplan.sglang_layout([plan], [0])
    assert lay.tree_mask_mode == "QLEN_ONLY"
    # A tree that fits 32 slots keeps the bit-packed default.
    small = specplan.plan_tree(m, n_max=20, mode="fixed")
    assert small.sglang_layout().tree_mask_mode == "QLEN_ONLY_BITPACKING"
    # Asked for explicitly, bit packing still refuses D > 32, naming it.
    with pytest.raises(specplan.InvalidArgumentError, match="QLEN_ONLY_BITPACKING"):
        plan.sglang_layout(tree_mask_mode="QLEN_ONLY_BITPACKING")


def test_check_links_help_and_bad_root():
    import subprocess
    import sys
    script = str(SOURCE_DIR / "scripts/docs/check_links.py")
    r = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "REPO_ROOT" in r.stdout and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, script, "/nonexistent-root"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "REPO_ROOT /nonexistent-root: no README.md" in r.stderr
    assert "Traceback" not in r.stderr
