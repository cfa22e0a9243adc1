"""specplan.Marginals and specplan.plan_tree against `specplan plan --json` and the tree rules."""

import json

import numpy as np
import pytest

import specplan
from conftest import MARGINALS, random_marginals


def _check_outputs(plan):
    s = plan.n + 1
    assert len(plan) == s == plan.tokens.shape[0] == plan.parents.shape[0]
    assert plan.parents[0] == -1 and all(plan.parents[i] < i for i in range(1, s))
    depths = np.zeros(s, np.int64)
    for i in range(1, s):
        depths[i] = depths[plan.parents[i]] + 1
    assert (plan.depths == depths).all()
    assert (plan.positions == plan.c + depths).all()
    # mask: bit j of row i iff j is i or an ancestor of i
    for i in range(s):
        anc = {i}
        j = i
        while plan.parents[j] >= 0:
            j = plan.parents[j]
            anc.add(j)
        row = plan.mask[i]
        for j in range(s):
            assert bool((int(row[j // 64]) >> (j % 64)) & 1) == (j in anc)
    # retrieve: one row per leaf, root to leaf
    leaves = [i for i in range(s) if i not in set(plan.parents[1:].tolist())]
    assert plan.retrieve.shape == (len(leaves), depths.max() + 1)
    for row, leaf in zip(plan.retrieve, leaves):
        path = [x for x in row if x >= 0]
        assert path[0] == 0 and path[-1] == leaf
        assert all(plan.parents[b] == a for a, b in zip(path, path[1:]))
    assert plan.expected_accepted == pytest.approx(plan.path_probs.sum(), rel=1e-12)


@pytest.mark.parametrize("mode_args,kwargs", [
    (["--n-max", 256], dict(n_max=256)),
    (["--n-max", 256, "--scan"], dict(n_max=256, mode="scan")),
    (["--budget", 40], dict(n_max=40, mode="fixed")),
])
@pytest.mark.parametrize("engine", ["", "specplan"])
def test_plan_tree_matches_cli(cli, marginals, mode_args, kwargs, engine):
    cost_args = ["--engine", engine] if engine else []
    want = cli("plan", "--marginals", MARGINALS, "--model", "qwen3-8b", "--gpu", "h100",
               "--c", 1024, "--t-draft-ms", 0.5, *cost_args, *mode_args, "--json")
    cost = specplan.Cost(gpu="h100", model="qwen3-8b", engine=engine)
    plan = specplan.plan_tree(marginals, cost, c=1024, t_draft_ms=0.5, **kwargs)
    got = plan.to_dict()
    for key in ("mode", "n_max", "n", "tokens", "parents", "depths", "positions", "retrieve",
                "lattice_exhausted", "c", "latency_model", "profile"):
        assert got[key] == want[key], key
    for key in ("expected_accepted", "cycle_s", "speedup", "l_ar_s"):
        assert got[key] == pytest.approx(want[key], rel=1e-12), key
    assert got["path_probs"] == pytest.approx(want["path_probs"], rel=1e-12)
    if "curve" in want:
        assert [p["n"] for p in got["curve"]] == [p["n"] for p in want["curve"]]
        assert [p["speedup"] for p in got["curve"]] == pytest.approx(
            [p["speedup"] for p in want["curve"]], rel=1e-12)
        curve = plan.curve
        assert (curve.n == np.arange(len(want["curve"]))).all()
        assert curve.speedup[plan.n] == pytest.approx(plan.speedup)
    _check_outputs(plan)


def test_readme_figures(marginals, cost):
    # docs/python.md: the default Cost prices EAGLE-3's whole step (drafting, sampling, host), the
    # drafting per level of the tree it returns (issue 52: `specplan plan` gives the same).
    plan = specplan.plan_tree(marginals, cost, c=1024, n_max=256)
    assert plan.n == 74
    assert round(plan.speedup, 3) == 3.318
    assert "n=74" in repr(plan) and "speedup=3.318" in repr(plan)
    # The verify pass alone (drafter=""): drafting at 0 ms, the figures the demo used to show.
    bare = specplan.Cost(gpu="h100", model="qwen3-8b", drafter="")
    plan = specplan.plan_tree(marginals, bare, c=1024, n_max=256)
    assert plan.n == 127 and round(plan.speedup, 3) == 6.125


def test_fixed_without_cost_and_dict_marginals(marginals):
    d = json.loads(MARGINALS.read_text())
    a = specplan.plan_tree(d, c=7, n_max=30, mode="fixed")
    b = specplan.plan_tree(marginals, None, 7, n_max=30, mode="fixed")
    assert a.n == 30 and (a.tokens == b.tokens).all() and (a.parents == b.parents).all()
    assert a.cycle_s is None and a.speedup is None and a.curve.n.size == 0
    _check_outputs(a)


def test_small_lattice_is_exhausted():
    m = specplan.Marginals(1, [[5, 6], [7, 8]], [[0.6, 0.3], [0.5, 0.4]])
    p = specplan.plan_tree(m, n_max=100, mode="fixed")
    assert p.n == 6 and p.lattice_exhausted
    p4 = specplan.plan_tree(m, c=2, n_max=4, mode="fixed")
    assert p4.tokens.tolist() == [1, 5, 6, 7, 8] and p4.parents.tolist() == [-1, 0, 0, 1, 1]


def test_acceptance_scale_and_l_ar(marginals, roofline):
    base = specplan.plan_tree(marginals, roofline, c=1024, n_max=256)
    shy = specplan.plan_tree(marginals, roofline, c=1024, n_max=256, acceptance_scale=0.3)
    assert shy.n < base.n
    assert shy.speedup == pytest.approx(
        (1 + 0.3 * (shy.expected_accepted - 1)) * shy.l_ar_s / shy.cycle_s, rel=1e-12)
    slow = specplan.plan_tree(marginals, roofline, c=1024, n_max=256, l_ar_ms=20.0)
    assert slow.l_ar_s == pytest.approx(0.02)


def test_best_first_property_on_random_marginals():
    rng = np.random.default_rng(7)
    for _ in range(20):
        m = random_marginals(rng, int(rng.integers(1, 6)), int(rng.integers(1, 5)))
        p = specplan.plan_tree(m, n_max=int(rng.integers(0, 40)), mode="fixed")
        rho = p.path_probs[1:]
        assert (np.diff(rho) <= 1e-12).all()  # pop order: non-increasing rho
        _check_outputs(p)


def test_views_share_the_result_and_outlive_it(marginals, cost):
    p = specplan.plan_tree(marginals, cost, c=1024, n_max=256)
    t1, t2 = p.tokens, p.tokens
    assert np.shares_memory(t1, t2) and t1.base is not None
    tokens, s = p.tree[0], p.n + 1
    del p, t1, t2
    assert tokens.shape[0] == s and tokens[0] == 151644


# ---- Marginals ---------------------------------------------------------------------------------

def test_marginals_object(marginals):
    assert (marginals.root_token, marginals.gamma, marginals.k) == (151644, 16, 8)
    assert marginals.tokens.dtype == np.int32 and marginals.tokens.shape == (16, 8)
    assert marginals.probs.dtype == np.float32
    with pytest.raises(ValueError):
        marginals.tokens[0, 0] = 3  # read-only view
    again = specplan.Marginals(**marginals.to_dict())
    assert (again.tokens == marginals.tokens).all() and (again.probs == marginals.probs).all()
    assert specplan.Marginals.from_json(MARGINALS.read_text()).k == 8
    assert "gamma=16" in repr(marginals)


@pytest.mark.parametrize("args,exc,words", [
    ((1, [[5, 6]], [[0.6, 1.3]]), specplan.InvalidArgumentError, ["marginals.probs[0][1]", "1.3"]),
    ((1, [[5, 6]], [[0.3, 0.6]]), specplan.InvalidArgumentError, ["marginals.probs[0]"]),
    ((1, [[5, 5]], [[0.3, 0.2]]), specplan.InvalidArgumentError, ["marginals.tokens[0]"]),
    ((-4, [[5, 6]], [[0.6, 0.3]]), specplan.InvalidArgumentError, ["root_token", "-4"]),
    ((1, [[5.0, 6.0]], [[0.6, 0.3]]), specplan.ArgumentTypeError, ["marginals.tokens", "float64"]),
    ((1, [5, 6], [[0.6, 0.3]]), specplan.InvalidArgumentError, ["marginals.tokens", "(2,)"]),
    ((1, [[5, 6]], [[0.6, 0.3, 0.1]]), specplan.InvalidArgumentError, ["marginals.probs", "(1, 3)"]),
    ((1, [[5, 6]], [["a", "b"]]), specplan.ArgumentTypeError, ["marginals.probs"]),
    ((1.5, [[5, 6]], [[0.6, 0.3]]), specplan.ArgumentTypeError, ["root_token", "float"]),
    ((1, np.array([[5, 2**40]]), [[0.6, 0.3]]), specplan.InvalidArgumentError,
     ["marginals.tokens", "int32"]),
    ((1, np.zeros((0, 2), np.int32), np.zeros((0, 2), np.float32)), specplan.InvalidArgumentError,
     ["gamma"]),
])
def test_marginals_errors_name_the_field(args, exc, words):
    with pytest.raises(exc) as e:
        specplan.Marginals(*args)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_marginals_load_errors(tmp_path):
    with pytest.raises(specplan.Error, match="missing.json"):
        specplan.Marginals.load(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"root_token": 1, "tokens": [[1, 2]], "probs": [[0.5]]}')
    with pytest.raises(specplan.InvalidArgumentError, match="probs"):
        specplan.Marginals.load(str(bad))


# ---- plan_tree errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,exc,words", [
    (dict(mode="bogus"), specplan.InvalidArgumentError, ["mode", "bogus"]),
    (dict(n_max=-1), specplan.InvalidArgumentError, ["n_max = -1"]),
    (dict(n_max=9000), specplan.InvalidArgumentError, ["n_max = 9000"]),
    (dict(c=-5), specplan.InvalidArgumentError, ["c = -5"]),
    (dict(cost=None), specplan.InvalidArgumentError, ["cost = None", "controller"]),
    (dict(cost="h100"), specplan.ArgumentTypeError, ["cost", "str"]),
    (dict(drafter="lstm"), specplan.InvalidArgumentError, ["drafter", "lstm"]),
    (dict(t_draft_ms=float("nan")), specplan.InvalidArgumentError, ["t_draft_ms", "nan"]),
    (dict(acceptance_scale=0.0), specplan.InvalidArgumentError, ["acceptance_scale"]),
])
def test_plan_tree_errors(marginals, cost, kwargs, exc, words):
    args = dict(cost=cost, c=10)
    args.update(kwargs)
    with pytest.raises(exc) as e:
        specplan.plan_tree(marginals, **args)
    for w in words:
        assert w in str(e.value), str(e.value)


@pytest.mark.parametrize("m,exc,words", [
    ({"root_token": 1, "tokens": [[5, 6]]}, specplan.InvalidArgumentError, ["marginals.probs: missing"]),
    ({"root_token": 1, "tokens": [[5, 6]], "probs": [[0.2, 0.7]]}, specplan.InvalidArgumentError,
     ["marginals.probs[0]"]),
    ({"root_token": 1, "tokens": np.array([[5.5, 6]]), "probs": [[0.7, 0.2]]},
     specplan.ArgumentTypeError, ["marginals.tokens", "float64"]),
    ([1, 2, 3], specplan.ArgumentTypeError, ["marginals", "list"]),
])
def test_plan_tree_marginals_errors(cost, m, exc, words):
    with pytest.raises(exc) as e:
        specplan.plan_tree(m, cost, c=10)
    for w in words:
        assert w in str(e.value), str(e.value)
