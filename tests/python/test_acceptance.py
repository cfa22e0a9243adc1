"""accept_greedy against brute force; AcceptanceEstimator and SpeculationGate against their
formulas; merge_trees against `specplan merge --json`; errors."""

import json

import numpy as np
import pytest

import specplan
from conftest import SOURCE_DIR, random_tree


def _brute_force_greedy(tokens, parents, argmax):
    """Longest matching root-to-node path; ties to the lexicographically smallest node list."""
    s = len(tokens)
    best = [0]
    paths = [[0]]
    while paths:
        nxt = []
        for p in paths:
            u = p[-1]
            for c in range(1, s):
                if parents[c] == u and tokens[c] == argmax[u]:
                    nxt.append(p + [c])
        if nxt:
            best = min(nxt)
        paths = nxt
    return best


def test_accept_greedy_against_brute_force():
    rng = np.random.default_rng(5)
    for _ in range(300):
        tokens, parents = random_tree(rng, int(rng.integers(1, 25)), vocab=3)
        argmax = rng.integers(0, 3, size=len(tokens)).astype(np.int32)
        r = specplan.accept_greedy((tokens, parents), argmax)
        want = _brute_force_greedy(tokens.tolist(), parents.tolist(), argmax.tolist())
        assert r.accepted_nodes.tolist() == want
        assert r.accepted_length == len(want) - 1
        assert r.bonus_token == argmax[want[-1]]
        assert r.emitted.tolist() == [tokens[i] for i in want[1:]] + [argmax[want[-1]]]
        assert r.num_draft == len(tokens) - 1


def test_accept_greedy_on_a_plan(marginals):
    plan = specplan.plan_tree(marginals, c=0, n_max=30, mode="fixed")
    # the target agrees with the first root-to-leaf path of the retrieve matrix
    path = [x for x in plan.retrieve[0] if x >= 0]
    argmax = np.full(len(plan), 7, np.int64)
    for a, b in zip(path, path[1:]):
        argmax[a] = plan.tokens[b]
    r = specplan.accept_greedy(plan, argmax)
    assert r.accepted_nodes.tolist() == path and r.bonus_token == 7
    assert "accepted_length=%d" % (len(path) - 1) in repr(r)


@pytest.mark.parametrize("tree,argmax,exc,words", [
    (([1, 2, 3], [-1, 0, 1]), [1, 2], specplan.InvalidArgumentError,
     ["argmax: 2 entries", "3 nodes"]),
    (([1, 2, 3], [-1, 0, 1]), [1.0, 2.0, 3.0], specplan.ArgumentTypeError, ["argmax: dtype float64"]),
    (([1, 2, 3], [-1, 2, 1]), [1, 2, 3], specplan.InvalidArgumentError, ["tree.parents[1] = 2"]),
    (([1, 2, 3], [-1, 0, 1]), [[1, 2, 3]], specplan.InvalidArgumentError, ["argmax: shape (1, 3)"]),
    ("tree", [1], specplan.ArgumentTypeError, ["tree: got str"]),
])
def test_accept_greedy_errors(tree, argmax, exc, words):
    with pytest.raises(exc) as e:
        specplan.accept_greedy(tree, argmax)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_estimator_formulas():
    est = specplan.AcceptanceEstimator(prior_alpha=0.5, prior_weight=1.0, forget=1.0)
    assert est.alpha == 0.5 and est.surrogate_scale == 1.0 and est.observed_steps == 0
    est.observe(4, 10, 2)          # 2 successes, 1 failure
    est.observe(3, 3, 3)           # 3 successes
    assert est.alpha == pytest.approx((5 + 0.5) / (6 + 1))
    a = est.alpha
    assert est.expected_accepted(3) == pytest.approx(a + a * a + a ** 3)
    est.observe_surrogate(5.0, 2)  # promised 4 draft tokens, realised 2
    assert est.surrogate_scale == pytest.approx((2 + 1) / (4 + 1))
    r = specplan.accept_greedy(([1, 2, 3], [-1, 0, 1]), [2, 3, 9])
    est.observe(r)
    assert est.observed_steps == 3 and est.surrogate_steps == 1
    assert "AcceptanceEstimator(alpha=" in repr(est)


@pytest.mark.parametrize("kwargs,words", [
    (dict(prior_alpha=1.5), ["prior_alpha = 1.5"]),
    (dict(prior_weight=-1), ["prior_weight = -1"]),
    (dict(forget=0), ["forget = 0"]),
])
def test_estimator_errors(kwargs, words):
    with pytest.raises(specplan.InvalidArgumentError) as e:
        specplan.AcceptanceEstimator(**kwargs)
    for w in words:
        assert w in str(e.value)
    with pytest.raises(specplan.InvalidArgumentError, match="accepted_length = 5"):
        specplan.AcceptanceEstimator().observe(3, 4, 5)
    with pytest.raises(specplan.ArgumentTypeError, match="AcceptResult"):
        specplan.AcceptanceEstimator().observe(3)


def test_gate_drafts_when_it_pays_and_stops_when_not(cost):
    gate = specplan.SpeculationGate(prior_alpha=0.9, prior_weight=10)
    gate.observe_draft_level(0.0002)
    d = gate.decide(cost, 1024, max_depth=6)
    assert d.depth >= 1 and not d.probe and d.tokens_per_s > d.ar_tokens_per_s
    # R(0) = 1 / T(1, c)
    assert d.ar_tokens_per_s == pytest.approx(1 / cost.verify_seconds(1, 1024), rel=1e-9)
    # a drafter that is never accepted and costs a whole pass per level: plain decoding
    slow = specplan.SpeculationGate(prior_alpha=0.01, prior_weight=100, probe_interval=1000)
    slow.observe_draft_level(0.05)
    assert slow.decide(cost, 1024, max_depth=6).depth == 0
    assert slow.stats.to_dict() == {"decisions": 1, "undrafted": 1, "probes": 0}
    assert isinstance(slow.stats, specplan.GateStats) and slow.stats.undrafted == 1
    batch = gate.decide_batch(cost, np.array([1024, 2048, 64]), min_depth=1, max_depth=6)
    assert batch.ar_tokens_per_s == pytest.approx(
        3 / cost.verify_batch_seconds([1, 1, 1], [1024, 2048, 64]), rel=1e-9)
    gate.observe(specplan.accept_greedy(([1, 2], [-1, 0]), [2, 5]))
    gate.observe(2, 4, 1)
    assert gate.estimator.observed_steps == 2 and gate.draft_level_s == pytest.approx(0.0002)
    assert "SpeculationGate(decisions=" in repr(gate)


def test_gate_probes_before_any_timing(cost):
    d = specplan.SpeculationGate(probe_depth=2).decide(cost, 100, max_depth=8)
    assert d.probe and d.depth == 2


@pytest.mark.parametrize("kwargs,words", [
    (dict(probe_interval=0), ["probe_interval", "0"]),
    (dict(time_forget=1.0), ["time_forget", "1"]),
    (dict(probe_budget=2.0), ["probe_budget", "2"]),
    (dict(probe_depth=0), ["probe_depth", "0"]),
])
def test_gate_option_errors(kwargs, words):
    with pytest.raises(specplan.InvalidArgumentError) as e:
        specplan.SpeculationGate(**kwargs)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_gate_call_errors(cost):
    gate = specplan.SpeculationGate()
    with pytest.raises(specplan.InvalidArgumentError, match="cost = None"):
        gate.decide(None, 10)
    with pytest.raises(specplan.InvalidArgumentError, match="min_depth = 3, max_depth = 2"):
        gate.decide(cost, 10, min_depth=3, max_depth=2)
    with pytest.raises(specplan.InvalidArgumentError, match="c = -1"):
        gate.decide(cost, -1)
    with pytest.raises(specplan.InvalidArgumentError, match=r"contexts\[1\] = -4"):
        gate.decide_batch(cost, [3, -4])
    with pytest.raises(specplan.InvalidArgumentError, match="contexts: empty"):
        gate.decide_batch(cost, np.zeros(0, np.int64))
    with pytest.raises(specplan.ArgumentTypeError, match="draft_level_s"):
        gate.decide(cost, 10, draft_level_s="fast")


# ---- merge ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("flags,kwargs", [([], {}), (["--dedup"], dict(dedup=True)),
                                          (["--n-max", 3], dict(n_max=3)),
                                          (["--dedup", "--n-max", 4], dict(dedup=True, n_max=4))])
def test_merge_matches_cli(cli, flags, kwargs):
    a_path, b_path = SOURCE_DIR / "examples/tree_a.json", SOURCE_DIR / "examples/tree_b.json"
    want = cli("merge", "--a", a_path, "--b", b_path, *flags, "--json")
    a, b = json.loads(a_path.read_text()), json.loads(b_path.read_text())
    mt = specplan.merge_trees(a, b, **kwargs)
    assert mt.tokens.tolist() == want["tokens"] and mt.parents.tolist() == want["parents"]
    assert mt.depths.tolist() == want["depths"]
    assert mt.phi_a.tolist() == want["phi_a"] and mt.phi_b.tolist() == want["phi_b"]
    names = {1: "a", 2: "b", 3: "both"}
    assert [names[x] for x in mt.source.tolist()] == want["source"]


def test_merge_plain_union_and_errors():
    mt = specplan.merge_trees(([1, 2, 3], [-1, 0, 1]), ([1, 2, 4], [-1, 0, 1]))
    assert mt.tokens.tolist() == [1, 2, 3, 2, 4] and mt.parents.tolist() == [-1, 0, 1, 0, 3]
    assert mt.phi_b.tolist() == [0, 3, 4] and len(mt) == 5 and mt.path_probs.size == 0
    with pytest.raises(specplan.InvalidArgumentError) as e:
        specplan.merge_trees(([5], [-1]), ([7], [-1]))
    assert "a.tokens[0] = 5" in str(e.value) and "b.tokens[0] = 7" in str(e.value)
    with pytest.raises(specplan.InvalidArgumentError, match="path_probs"):
        specplan.merge_trees(([1, 2], [-1, 0]), ([1, 3], [-1, 0]), n_max=1)
    with pytest.raises(specplan.InvalidArgumentError, match=r"b.parents\[1\] = 1"):
        specplan.merge_trees(([1, 2], [-1, 0]), ([1, 3], [-1, 1]))
    with pytest.raises(specplan.InvalidArgumentError, match=r"a.path_probs\[1\]"):
        specplan.merge_trees({"tokens": [1, 2], "parents": [-1, 0], "path_probs": [1, 1.5]},
                             ([1, 3], [-1, 0]))


def test_gate_probe_cost_spaces_probes(cost):
    gate = specplan.SpeculationGate(prior_alpha=0.01, prior_weight=1000, probe_interval=1,
                                    max_probe_interval=1000, probe_budget=0.01)
    gate.observe_draft_level(0.05)
    decisions = [gate.decide(cost, 1024, max_depth=4) for _ in range(3)]
    assert any(d.probe for d in decisions)
    gate.observe_probe_seconds(1.0)  # a probe that cost a second: the next one waits
    probes = sum(gate.decide(cost, 1024, max_depth=4).probe for _ in range(50))
    assert probes == 0


def test_accept_greedy_batch_is_accept_greedy_per_request(roofline):
    rng = np.random.default_rng(9)
    trees = [random_tree(rng, int(rng.integers(1, 12)), vocab=3) for _ in range(6)]
    argmax = [rng.integers(0, 3, size=len(t[0])).astype(np.int32) for t in trees]
    out = specplan.accept_greedy_batch(trees, np.concatenate(argmax))
    off = out.offsets
    for i, (t, a) in enumerate(zip(trees, argmax)):
        r = specplan.accept_greedy(t, a)
        assert out.accepted_length[i] == r.accepted_length
        assert out.bonus_token[i] == r.bonus_token
        assert out.accepted_nodes[off[i]:off[i + 1]].tolist() == r.accepted_nodes.tolist()
        assert out.emitted[off[i]:off[i + 1]].tolist() == r.emitted.tolist()
    # SGLang's padded slots: request b's node i at row b * D + i
    d = max(len(t[0]) for t in trees)
    padded = np.full((len(trees), d), 99, np.int64)
    for i, a in enumerate(argmax):
        padded[i, :len(a)] = a
    again = specplan.accept_greedy_batch(trees, padded.ravel(), draft_token_num=d)
    assert again.accepted_length.tolist() == out.accepted_length.tolist()
    assert again.emitted.tolist() == out.emitted.tolist()


def test_accept_greedy_batch_on_a_batch_plan(marginals, roofline):
    bp = specplan.plan_batch([(marginals, 100), (marginals, 3000)], roofline, n_max=40,
                             mode="fixed", layout="ragged")
    argmax = np.zeros(bp.layout.total_tokens, np.int32)
    # request 1's target agrees with its first two draft levels along node 1
    cu = bp.layout.cu_seqlens
    t1, p1 = bp.tree(1)
    argmax[cu[1]] = t1[1]
    child = [j for j in range(len(t1)) if p1[j] == 1][0]
    argmax[cu[1] + 1] = t1[child]
    out = specplan.accept_greedy_batch(bp, argmax)
    assert out.accepted_length.tolist()[1] == 2
    assert out.emitted[out.offsets[1]:out.offsets[2]].tolist() == [t1[1], t1[child], 0]


@pytest.mark.parametrize("args,exc,words", [
    (([([1, 2], [-1, 0])], [1, 2, 3]), specplan.InvalidArgumentError, ["argmax: 3 entries", "2"]),
    (([([1, 2], [-1, 0])], [1, 2], 1), specplan.InvalidArgumentError,
     ["draft_token_num = 1", "trees[0] has 2 nodes"]),
    (([([1, 2], [-1, 0])], [1.0, 2.0]), specplan.ArgumentTypeError, ["argmax: dtype float64"]),
    (("x", [1]), specplan.ArgumentTypeError, ["trees: got str"]),
    (([([1, 2], [-1, 5])], [1, 2]), specplan.InvalidArgumentError, ["trees[0].parents[1] = 5"]),
])
def test_accept_greedy_batch_errors(args, exc, words):
    with pytest.raises(exc) as e:
        specplan.accept_greedy_batch(*args)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_gate_prices_the_engines_host_work_when_given_the_costs_host():
    cost = specplan.Cost(gpu="h100", model="llama-3.1-8b", engine="vllm")
    h = cost.host
    assert h is not None and h.step_s > 0
    t1 = cost.verify_seconds(1, 1024)
    bare = specplan.SpeculationGate().decide(cost, 1024, max_depth=4, draft_level_s=1e-3)
    hosted = specplan.SpeculationGate(host=h).decide(cost, 1024, max_depth=4, draft_level_s=1e-3)
    assert bare.ar_tokens_per_s == pytest.approx(1 / t1)
    host_s = h.step_s + h.per_sequence_s + h.sample_call_s + h.verify_per_token_s
    assert hosted.ar_tokens_per_s == pytest.approx(1 / (t1 + host_s))
    # Every HostTime term travels to the gate (one list: costmodel::HostTimeTerms), checked there.
    terms = {name: getattr(h, name) for name in ("step_s", "per_sequence_s", "sample_call_s",
                                                  "verify_per_token_s", "per_draft_forward_s",
                                                  "ngram_verify_fraction")}
    with pytest.raises(ValueError, match="gate.host.step_s"):
        specplan.SpeculationGate(host=type("Host", (), {**terms, "step_s": -1.0})())
    with pytest.raises(ValueError, match="gate.host.ngram_verify_fraction"):
        specplan.SpeculationGate(host=type("Host", (), {**terms, "ngram_verify_fraction": 2.0})())
    partial = {k: v for k, v in terms.items() if k != "per_draft_forward_s"}
    with pytest.raises(ValueError, match="host: .*without 'per_draft_forward_s'"):
        specplan.SpeculationGate(host=type("Host", (), partial)())
