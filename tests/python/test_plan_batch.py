"""specplan.plan_batch / plan_batch_arrays against `specplan plan-batch --json`, each other and
the layouts; their errors; the GIL released while planning."""

import json
import threading

import numpy as np
import pytest

import specplan
from conftest import BATCH_REQUESTS, random_marginals


def _requests():
    out = []
    for line in BATCH_REQUESTS.read_text().splitlines():
        if line.strip():
            j = json.loads(line)
            out.append(specplan.Request(j["marginals"], j["c"], j.get("n_max", -1),
                                        j.get("weight", 1.0)))
    return out


def _arrays(reqs):
    return dict(root_tokens=np.array([r.marginals["root_token"] for r in reqs]),
                tokens=np.array([r.marginals["tokens"] for r in reqs], np.int32),
                probs=np.array([r.marginals["probs"] for r in reqs], np.float32),
                context_lens=np.array([r.c for r in reqs], np.int64),
                request_n_max=np.array([r.n_max for r in reqs]),
                weights=np.array([r.weight for r in reqs]))


def _compare(got, want):
    for key in ("mode", "objective", "n_max", "n_total", "speculation_pays", "lattice_exhausted",
                "latency_model", "profile"):
        assert got[key] == want[key], key
    for key in ("cycle_s", "goodput", "ar_goodput"):
        assert got[key] == pytest.approx(want[key], rel=1e-12), key
    assert len(got["requests"]) == len(want["requests"])
    for g, w in zip(got["requests"], want["requests"]):
        for key in ("n", "c", "tokens", "parents", "depths", "positions", "retrieve"):
            assert g[key] == w[key], key
        assert g["expected_accepted"] == pytest.approx(w["expected_accepted"], rel=1e-12)
        assert g["price"] == pytest.approx(w["price"], rel=1e-12)
    assert [p["n"] for p in got["curve"]] == [p["n"] for p in want["curve"]]
    assert [p["goodput"] for p in got["curve"]] == pytest.approx(
        [p["goodput"] for p in want["curve"]], rel=1e-12)


@pytest.mark.parametrize("flags,kwargs", [
    (["--n-max", 2048, "--scan", "--latency-model", "roofline"],
     dict(n_max=2048, mode="scan", latency_model="roofline")),
    (["--n-max", 2048], dict(n_max=2048)),
    (["--n-max", 1024, "--engine", "specplan", "--scan"],
     dict(n_max=1024, mode="scan", engine="specplan")),
    (["--budget", 300], dict(n_max=300, mode="fixed")),
    (["--n-max", 2048, "--max-ms-per-token", 2.5, "--latency-model", "roofline"],
     dict(n_max=2048, max_ms_per_token=2.5, latency_model="roofline")),
])
def test_plan_batch_matches_cli(cli, flags, kwargs):
    want = cli("plan-batch", "--requests", BATCH_REQUESTS, "--model", "qwen3-8b", "--gpu", "h100",
               "--t-draft-ms", 0.5, *flags, "--json")
    cost = specplan.Cost(gpu="h100", model="qwen3-8b", engine=kwargs.pop("engine", ""),
                         latency_model=kwargs.pop("latency_model", ""))
    reqs = _requests()
    got = specplan.plan_batch(reqs, cost, t_draft_ms=0.5, **kwargs)
    _compare(got.to_dict(), want)
    if "max_ms_per_token" in kwargs:
        assert got.to_dict()["bound_met"] == want["bound_met"]
    dense = specplan.plan_batch_arrays(**_arrays(reqs), cost=cost, t_draft_ms=0.5, **kwargs)
    _compare(dense.to_dict(), want)


def test_readme_batch_figures(roofline):
    # The roofline Cost prices EAGLE-3's whole step (T_draft by hand: 0.5 ms; sampling, host; the
    # per-verified-token time paid per token of the pass).
    bp = specplan.plan_batch(_requests(), roofline, n_max=2048, mode="scan", t_draft_ms=0.5)
    assert bp.n_total == 91 and bp.n.tolist() == [27, 20, 8, 10, 8, 8, 6, 4]
    assert round(bp.goodput, 1) == 3649.0 and round(bp.ar_goodput, 1) == 1002.3
    assert len(bp) == 8 and "n_total=91" in repr(bp)
    # The verify pass alone (drafter=""): a 0.5 ms parallel drafter, no sampling or host work.
    bare = specplan.Cost(gpu="h100", model="qwen3-8b", latency_model="roofline", drafter="")
    bp = specplan.plan_batch(_requests(), bare, n_max=2048, mode="scan", t_draft_ms=0.5)
    assert bp.n_total == 221 and round(bp.goodput, 1) == 4416.7


def test_result_arrays(roofline):
    bp = specplan.plan_batch(_requests(), roofline, n_max=2048, mode="scan", t_draft_ms=0.5)
    off = bp.offsets
    assert off[0] == 0 and (np.diff(off) == bp.n + 1).all() and off[-1] == bp.tokens.size
    for i, (tokens, parents) in enumerate(bp.trees):
        assert (tokens == bp.tokens[off[i]:off[i + 1]]).all()
        assert parents[0] == -1 and (parents[1:] < np.arange(1, len(parents))).all()
        t, p = bp.tree(i)
        assert (t == tokens).all() and (p == parents).all()
        assert np.shares_memory(t, tokens)  # both views of the planner's tree
    assert bp.tree(-1)[0].size == bp.n[-1] + 1
    with pytest.raises(IndexError):
        bp.tree(8)
    assert bp.expected_accepted.shape == (8,) and bp.price.shape == (8,)
    assert bp.c.tolist() == [r.c for r in _requests()]
    curve = bp.curve
    assert isinstance(curve, specplan.BatchCurve) and curve.n.size == 2049
    assert (curve.weighted_accepted / curve.cycle_s).argmax() == bp.n_total  # weight 2 on one
    assert bp.layout is None


def test_fixed_without_cost_is_the_best_weighted_sum():
    reqs = _requests()
    bp = specplan.plan_batch(reqs, n_max=100, mode="fixed")
    assert bp.n_total == 100 and bp.cycle_s is None and bp.goodput is None
    assert bp.n[2] == 8  # line 3's cap


@pytest.mark.parametrize("layout", ["ragged", "sglang"])
def test_layout_in_the_same_call(roofline, layout):
    reqs = _requests()
    kw = dict(n_max=64, mode="fixed", layout=layout)
    if layout == "sglang":
        kw.update(tree_mask_mode="QLEN_ONLY", draft_token_num=32, pad_token=-1)
    bp = specplan.plan_batch(reqs, roofline, **kw)
    ctx = [r.c for r in reqs]
    want = (specplan.ragged_layout(bp.trees, ctx) if layout == "ragged" else
            specplan.sglang_layout(bp.trees, ctx, 32, "QLEN_ONLY", pad_token=-1))
    got = bp.layout
    assert type(got) is type(want)
    assert np.shares_memory(got.positions, bp.layout.positions)  # views of the result
    assert got._fields == want._fields and got == want
    for k, w in want.to_dict().items():
        if isinstance(w, np.ndarray):
            g = getattr(got, k)
            assert g.dtype == w.dtype and (g == w).all(), k
        else:
            assert getattr(got, k) == w, k


def test_request_forms_agree(cost, marginals):
    d = marginals.to_dict()
    a = specplan.plan_batch([(marginals, 100), (d, 2000, 5), {"marginals": d, "c": 300,
                                                               "weight": 2.0}], cost, n_max=300)
    b = specplan.plan_batch([specplan.Request(d, 100), specplan.Request(marginals, 2000, 5),
                             specplan.Request(marginals, 300, -1, 2.0)], cost, n_max=300)
    assert a.n.tolist() == b.n.tolist() and (a.tokens == b.tokens).all()
    assert a.n[1] <= 5


def test_batch_of_one_is_plan_tree(marginals, roofline):
    one = specplan.plan_batch([(marginals, 1024)], roofline, n_max=256, mode="scan")
    tree = specplan.plan_tree(marginals, roofline, c=1024, n_max=256, mode="scan")
    assert one.n[0] == tree.n and (one.tokens == tree.tokens).all()
    assert (one.parents == tree.parents).all()


def test_off_switch():
    m = specplan.Marginals(1, [[5, 6]], [[0.01, 0.005]])
    cost = specplan.Cost(gpu="h100", model="qwen3-8b", latency_model="roofline")
    bp = specplan.plan_batch([(m, 1024)] * 4, cost, n_max=64, mode="scan", t_draft_ms=5.0)
    assert not bp.speculation_pays and bp.n_total == 0 and (bp.n == 0).all()
    assert [t.tolist() for t, _ in bp.trees] == [[1]] * 4


def test_gil_is_released_and_threads_agree(roofline):
    rng = np.random.default_rng(3)
    reqs = [(random_marginals(rng, 16, 8), int(c)) for c in rng.integers(0, 8192, 64)]
    want = specplan.plan_batch(reqs, roofline, n_max=4096, mode="scan").n.tolist()
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(specplan.plan_batch(reqs, roofline, n_max=4096, mode="scan").n.tolist())
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 20 and all(r == want for r in results)


@pytest.mark.parametrize("requests,exc,words", [
    ([], specplan.InvalidArgumentError, ["requests: 0 requests"]),
    ("abc", specplan.ArgumentTypeError, ["requests", "str"]),
    ([3], specplan.ArgumentTypeError, ["requests[0]", "int"]),
    ([("m",)], specplan.InvalidArgumentError, ["requests[0]", "1 items"]),
    ([{"c": 3}], specplan.InvalidArgumentError, ["requests[0].marginals: missing"]),
    ([{"marginals": "M", "c": 3, "prio": 1}], specplan.InvalidArgumentError,
     ["requests[0].prio", "unknown field"]),
    ([("M", -3)], specplan.InvalidArgumentError, ["requests[0].c = -3"]),
    ([("M", 3.5)], specplan.ArgumentTypeError, ["requests[0].c", "float"]),
    ([("M", 3, 9000)], specplan.InvalidArgumentError, ["requests[0].n_max = 9000"]),
    ([("M", 3), ("M", 3, -1, 0.0)], specplan.InvalidArgumentError, ["requests[1]", "weight"]),
    ([("M", 3), ({"root_token": 1, "tokens": [[5, 6]], "probs": [[0.2, 0.9]]}, 3)],
     specplan.InvalidArgumentError, ["requests[1].marginals.probs[0]"]),
    ([({"root_token": 1, "tokens": [[5.0, 6.0]], "probs": [[0.9, 0.1]]}, 3)],
     specplan.ArgumentTypeError, ["requests[0].marginals.tokens", "float64"]),
])
def test_plan_batch_request_errors(marginals, cost, requests, exc, words):
    requests = [tuple(marginals if x == "M" else x for x in r) if isinstance(r, tuple) else
                ({**r, "marginals": marginals} if isinstance(r, dict) and r.get("marginals") == "M"
                 else r) for r in requests] if isinstance(requests, list) else requests
    with pytest.raises(exc) as e:
        specplan.plan_batch(requests, cost, n_max=64)
    for w in words:
        assert w in str(e.value), str(e.value)


@pytest.mark.parametrize("kwargs,exc,words", [
    (dict(mode="greedy"), specplan.InvalidArgumentError, ["mode", "greedy"]),
    (dict(n_max=-2), specplan.InvalidArgumentError, ["n_max = -2"]),
    (dict(layout="flat"), specplan.InvalidArgumentError, ["layout", "flat"]),
    (dict(layout="sglang", tree_mask_mode="DENSE"), specplan.InvalidArgumentError,
     ["tree_mask_mode", "DENSE"]),
    (dict(layout="sglang", draft_token_num=-3), specplan.InvalidArgumentError,
     ["draft_token_num = -3"]),
    (dict(layout="sglang", n_max=200), specplan.InvalidArgumentError,
     ["QLEN_ONLY_BITPACKING", "32"]),
    (dict(mode="fixed", max_ms_per_token=2.0), specplan.InvalidArgumentError,
     ["max_ms_per_token", "fixed"]),
    (dict(max_ms_per_token=-1.0), specplan.InvalidArgumentError, ["max_ms_per_token = -1"]),
    (dict(cost=None), specplan.InvalidArgumentError, ["cost = None"]),
    (dict(drafter="rnn"), specplan.InvalidArgumentError, ["drafter", "rnn"]),
    (dict(draft_batch_growth=-0.5), specplan.InvalidArgumentError, ["draft_batch_growth"]),
    (dict(acceptance_scale=100.0), specplan.InvalidArgumentError, ["acceptance_scale"]),
])
def test_plan_batch_keyword_errors(marginals, cost, kwargs, exc, words):
    args = dict(cost=cost)
    args.update(kwargs)
    with pytest.raises(exc) as e:
        specplan.plan_batch([(marginals, 1024), (marginals, 10)], **args)
    for w in words:
        assert w in str(e.value), str(e.value)


def _dense(b=3, gamma=4, k=2):
    rng = np.random.default_rng(1)
    ms = [random_marginals(rng, gamma, k) for _ in range(b)]
    return dict(root_tokens=np.ones(b, np.int64),
                tokens=np.stack([m["tokens"] for m in ms]),
                probs=np.stack([m["probs"] for m in ms]),
                context_lens=np.arange(b, dtype=np.int64) * 100)


@pytest.mark.parametrize("change,exc,words", [
    (dict(tokens=np.zeros((3, 4), np.int32)), specplan.InvalidArgumentError,
     ["tokens: shape (3, 4)", "3 dimensions"]),
    (dict(tokens=np.zeros((3, 4, 2), np.float32)), specplan.ArgumentTypeError,
     ["tokens: dtype float32"]),
    (dict(probs=np.zeros((3, 4, 3), np.float32)), specplan.InvalidArgumentError,
     ["probs: shape (3, 4, 3)", "tokens'"]),
    (dict(probs=np.zeros((3, 4, 2), np.bool_)), specplan.ArgumentTypeError, ["probs: dtype bool"]),
    (dict(context_lens=np.zeros(2, np.int64)), specplan.InvalidArgumentError,
     ["context_lens: 2 entries", "B = 3"]),
    (dict(context_lens=np.array([0, -1, 0])), specplan.InvalidArgumentError,
     ["context_lens[1] = -1"]),
    (dict(root_tokens=np.array([1, -7, 1])), specplan.InvalidArgumentError,
     ["root_tokens[1] = -7"]),
    (dict(root_tokens=np.array([[1, 1, 1]])), specplan.InvalidArgumentError,
     ["root_tokens: shape (1, 3)"]),
    (dict(request_n_max=np.array([1, 2])), specplan.InvalidArgumentError,
     ["request_n_max: 2 entries"]),
    (dict(request_n_max=np.array([1, -5, 2])), specplan.InvalidArgumentError,
     ["request_n_max[1] = -5"]),
    (dict(weights=np.array([1.0, 0.0, 1.0])), specplan.InvalidArgumentError, ["requests[1]", "weight"]),
    (dict(tokens=np.zeros((0, 4, 2), np.int32), probs=np.zeros((0, 4, 2), np.float32)),
     specplan.InvalidArgumentError, ["B = 0"]),
])
def test_plan_batch_arrays_errors(cost, change, exc, words):
    args = _dense()
    args.update(change)
    with pytest.raises(exc) as e:
        specplan.plan_batch_arrays(cost=cost, **args)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_plan_batch_arrays_converts_other_widths(cost):
    args = _dense()
    ref = specplan.plan_batch_arrays(cost=cost, **args)
    args.update(tokens=args["tokens"].astype(np.int64), probs=args["probs"].astype(np.float64),
                context_lens=args["context_lens"].tolist(),
                root_tokens=args["root_tokens"].astype(np.int32))
    other = specplan.plan_batch_arrays(cost=cost, **args)
    assert (ref.tokens == other.tokens).all() and ref.n.tolist() == other.n.tolist()
    # non-contiguous input is copied, not refused
    t = np.asfortranarray(_dense()["tokens"])
    assert specplan.plan_batch_arrays(_dense()["root_tokens"], t, _dense()["probs"],
                                      _dense()["context_lens"], cost).n.tolist() == ref.n.tolist()
