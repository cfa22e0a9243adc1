"""Issue 55's Python probes: hostile files and numbers end in a specplan.Error that names the
path or the keyword, never a crash, a bare UnicodeDecodeError or a silent fall-back."""

import math
import os

import pytest

import specplan
from conftest import SOURCE_DIR

MARGINALS = str(SOURCE_DIR / "examples" / "marginals.json")


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_nested_marginals_are_refused_with_the_position(tmp_path):
    d = 100000
    path = _write(tmp_path, "nested.json", b'{"root_token":' + b"[" * d + b"]" * d + b"}")
    with pytest.raises(specplan.InvalidArgumentError) as err:
        specplan.Marginals.load(path)
    assert str(err.value) == path + ":1:78: JSON nested deeper than 64 levels (the limit)"


def test_binary_directory_missing_and_endless_files_name_the_path(tmp_path):
    binary = _write(tmp_path, "binary.json", bytes(range(256)) * 4)
    with pytest.raises(specplan.InvalidArgumentError) as err:
        specplan.Marginals.load(binary)
    assert str(err.value).startswith(binary + ":1:")  # a str, whatever the bytes were
    with pytest.raises(specplan.InvalidArgumentError, match="is a directory, not a file"):
        specplan.Marginals.load(str(tmp_path))
    with pytest.raises(specplan.NotFoundError, match="no such file"):
        specplan.Marginals.load(str(tmp_path / "missing.json"))
    with pytest.raises(specplan.ResourceExhaustedError, match="more than the 64 MiB"):
        specplan.Marginals.load("/dev/zero")


def test_unreadable_file_names_the_os_reason(tmp_path):
    locked = _write(tmp_path, "locked.json", b"{}")
    os.chmod(locked, 0)
    if os.access(locked, os.R_OK):
        pytest.skip("running as a user who reads mode-0 files (root)")
    with pytest.raises(specplan.PermissionDeniedError, match="Permission denied"):
        specplan.Marginals.load(locked)


def test_direct_cost_calls_check_what_estimate_checks(cost):
    with pytest.raises(specplan.InvalidArgumentError, match=r"c = 1000000000000: must be in"):
        cost.verify_seconds(64, 10**12)
    with pytest.raises(specplan.InvalidArgumentError, match=r"s = 0: must be in"):
        cost.verify_seconds(0, 16)
    with pytest.raises(specplan.InvalidArgumentError, match=r"c = 1000000000000"):
        cost.estimate(64, 10**12)


@pytest.mark.parametrize("keyword", ["l_ar_ms", "t_aux_ms", "t_draft_ms"])
@pytest.mark.parametrize("value", [math.nan, math.inf, 1e308, -1.0])
def test_plan_tree_times_are_checked(cost, keyword, value):
    m = specplan.Marginals.load(MARGINALS)
    with pytest.raises(specplan.InvalidArgumentError, match=keyword):
        specplan.plan_tree(m, cost, c=1024, n_max=64, **{keyword: value})


def test_cost_refuses_a_calib_dir_that_is_a_file_and_absurd_numbers(tmp_path):
    a_file = _write(tmp_path, "not_a_dir", b"x")
    with pytest.raises(specplan.NotFoundError, match="calib_dir = '.*': not a directory"):
        specplan.Cost(gpu="h100", model="qwen3-8b", calib_dir=a_file)
    with pytest.raises(specplan.InvalidArgumentError, match="draft_vocab = 2147483647"):
        specplan.Cost(gpu="h100", model="qwen3-8b", drafter="eagle3", draft_vocab=2**31 - 1)
    with pytest.raises(specplan.InvalidArgumentError, match="host_step_ms = nan"):
        specplan.Cost(gpu="h100", model="qwen3-8b", drafter="eagle3", host_step_ms=math.nan)


def test_a_layout_past_the_byte_budget_is_refused_before_it_is_built():
    # One 3-node chain, D = 8192, FULL_MASK over c = 2^17: 8192 x (131072 + 8192) bytes > 1 GiB.
    chain = ([60, 61, 62], [-1, 0, 1])
    with pytest.raises(specplan.ResourceExhaustedError, match="over the limit of 1073741824"):
        specplan.sglang_layout([chain], [1 << 17], 8192, "FULL_MASK")
    layout = specplan.sglang_layout([chain], [1 << 17], 8192, "QLEN_ONLY")  # fits
    assert layout.draft_token_num == 8192
