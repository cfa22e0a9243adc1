"""The engine's whole step from Python (issue 41): Cost(drafter=...) builds the step model the CLI
builds (costmodel/step/step_model.h), so Cost.step / Cost.ar_step / Cost.estimate equal
`specplan estimate --json`'s step and ar_step_s, plans price their cycle through PlannerTermsFor
as `specplan plan` does, and bad step keywords are refused naming the keyword and value."""

import pytest

import specplan

from conftest import MARGINALS

STEP_KEYS = ("verify_s", "draft_s", "sample_s", "host_s", "step_s")


def _same_step(got, want):
    assert isinstance(got, specplan.StepBreakdown)
    for key in STEP_KEYS:
        assert getattr(got, key) == pytest.approx(want[key], rel=1e-12), key
    assert got.draft_forwards == want["draft_forwards"]
    assert got.draft_priced_by == want["draft_priced_by"]


@pytest.mark.parametrize("flags,kwargs", [
    ([], {}),
    (["--engine", "vllm"], dict(engine="vllm")),
    (["--drafter", "mtp", "--draft-steps", "2", "--topk", "4"],
     dict(drafter="mtp", draft_steps=2, topk=4)),
    (["--drafter", "ngram", "--engine", "vllm"], dict(drafter="ngram", engine="vllm")),
    (["--host-step-ms", "1.5", "--sample-ms", "0.05", "--host-per-seq-ms", "0.01"],
     dict(host_step_ms=1.5, sample_ms=0.05, host_per_seq_ms=0.01)),
    (["--drafter", "draft:qwen3-0.6b"], dict(drafter="draft:qwen3-0.6b")),
])
@pytest.mark.parametrize("s,c,b", [(4, 1024, 1), (5, 512, 16)])
def test_step_matches_cli(cli, flags, kwargs, s, c, b):
    want = cli("estimate", "--model", "qwen3-8b", "--gpu", "h100", "--s", s, "--c", c, "--b", b,
               *flags, "--json")
    cost = specplan.Cost(gpu="h100", model="qwen3-8b", **kwargs)
    _same_step(cost.step(b, s, c), want["step"])
    assert cost.ar_step(b, c).step_s == pytest.approx(want["ar_step_s"], rel=1e-12)
    assert cost.draft_priced_by == want["step"]["draft_priced_by"]
    assert cost.drafter == want["step"]["drafter"]
    # Cost.estimate and specplan.estimate carry the same step as the CLI's JSON.
    got = cost.estimate(s, c, b)
    _same_step(got.step, want["step"])
    for key in ("drafter", "draft_steps", "topk"):
        assert getattr(got.step, key) == want["step"][key], key
    assert isinstance(got.step.host, specplan.HostTime)
    assert got.step.host.to_dict() == pytest.approx(
        {k: v for k, v in want["step"]["host"].items() if k != "provenance"} |
        {"provenance": got.step.host.provenance})
    assert got.ar_step_s == pytest.approx(want["ar_step_s"], rel=1e-12)
    # the dict form is the CLI's JSON for the keys both carry
    assert got.to_dict()["step"]["host"]["step_s"] == got.step.host.step_s
    one = specplan.estimate(s, c, b, gpu="h100", model="qwen3-8b", **kwargs)
    _same_step(one.step, want["step"])


def test_drafting_by_hand_matches_cli(cli):
    want = cli("estimate", "--model", "qwen3-8b", "--gpu", "h100", "--s", 4, "--c", 1024,
               "--t-net-ms", 2, "--json")
    got = specplan.estimate(4, 1024, gpu="h100", model="qwen3-8b", t_draft_ms=2)
    _same_step(got.step, want["step"])
    assert got.step.draft_priced_by == "given"


def test_a_drafter_the_profile_cannot_price_is_priced_by_its_roofline(tmp_path):
    composed = specplan.Cost(gpu="h100", model="qwen3-8b")
    assert composed.draft_priced_by == "kernel tables"
    for cost in (specplan.Cost(gpu="h100", model="qwen3-8b", drafter="draft:qwen3-0.6b"),
                 specplan.Cost(gpu="h100", model="qwen3-8b", calib_dir=str(tmp_path))):
        assert cost.draft_priced_by == "roofline"
        assert cost.step(1, 4, 256).draft_s > 0
    assert specplan.Cost(gpu="h100", model="qwen3-8b", drafter="ngram").draft_priced_by == \
        "host only"


def test_ngram_draft_is_a_fraction_of_the_verify_pass():
    cost = specplan.Cost(gpu="h100", model="llama-3.1-8b", engine="vllm", drafter="ngram")
    h = cost.host
    assert "ngram_verify_fraction" in h._fields and h.ngram_verify_fraction == 0.005875
    assert h.to_dict()["ngram_verify_fraction"] == h.ngram_verify_fraction
    for b in (1, 16, 64, 128):
        step = cost.step(b, 4, 186)
        assert step.draft_priced_by == "host only" and step.draft_forwards == 0
        assert step.draft_s == pytest.approx(h.ngram_verify_fraction * step.verify_s, rel=1e-12)
        # the host term does not grow with the proposal: it is the plain step's
        assert step.host_s == cost.ar_step(b, 186).host_s


def test_host_file_matches_cli(cli, tmp_path):
    """Cost(host_file=...) prices the terms `specplan step fit --out` writes, as --host-file does,
    with host_step_ms still overriding one term over them."""
    host = tmp_path / "host.json"
    host.write_text('{"step_s": 0.0042, "per_sequence_s": 3e-5, "per_draft_forward_s": 0.0011, '
                    '"sample_call_s": 0.0002, "verify_per_token_s": 1e-6, '
                    '"ngram_verify_fraction": 0.05, "provenance": "a test file"}')
    for flags, kwargs in (([], {}), (["--host-step-ms", "2.5"], dict(host_step_ms=2.5))):
        want = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm",
                   "--s", 4, "--c", 1024, "--b", 16, "--host-file", host, *flags, "--json")
        cost = specplan.Cost(gpu="h100", model="llama-3.1-8b", engine="vllm", host_file=str(host),
                             **kwargs)
        _same_step(cost.step(16, 4, 1024), want["step"])
    assert specplan.Cost(gpu="h100", model="llama-3.1-8b", engine="vllm",
                         host_file=str(host)).host.step_s == pytest.approx(0.0042)
    bad = tmp_path / "bad.json"
    bad.write_text('{"step_s": 1e-3}')
    with pytest.raises(specplan.InvalidArgumentError, match="host_file = '.*bad.json'"):
        specplan.Cost(gpu="h100", model="llama-3.1-8b", host_file=str(bad))
    with pytest.raises(specplan.NotFoundError, match="host_file = '.*missing.json'"):
        specplan.Cost(gpu="h100", model="llama-3.1-8b", host_file=str(tmp_path / "missing.json"))


def test_host_time_and_repr():
    cost = specplan.Cost(gpu="h100", model="qwen3-8b", engine="vllm", host_step_ms=2)
    assert cost.host.step_s == pytest.approx(2e-3)
    assert cost.host.provenance.startswith("given to specplan.Cost, over ")
    assert "drafter=eagle3 (kernel tables)" in repr(cost)
    bare = specplan.Cost(gpu="h100", model="qwen3-8b", drafter="")
    assert bare.drafter == "" and bare.host is None and "drafter=None" in repr(bare)
    assert bare.estimate(4, 1024).step is None and "step" not in bare.estimate(4, 1024).to_dict()


@pytest.mark.parametrize("flags,kwargs", [
    ([], {}),
    (["--drafter", "mtp", "--n-max", 128, "--scan"], dict(drafter="mtp", mode="scan", n_max=128)),
    (["--engine", "vllm", "--t-draft-ms", 1], dict(engine="vllm", t_draft_ms=1)),
])
def test_plan_tree_prices_the_step_as_the_cli(cli, marginals, flags, kwargs):
    kwargs = dict(kwargs)
    cost_kw = {k: kwargs.pop(k) for k in ("drafter", "engine") if k in kwargs}
    base = ["--n-max", 256] if "--n-max" not in flags else []
    want = cli("plan", "--marginals", MARGINALS, "--model", "qwen3-8b", "--gpu", "h100",
               "--c", 1024, *base, *flags, "--json")
    cost = specplan.Cost(gpu="h100", model="qwen3-8b", **cost_kw)
    kwargs.setdefault("n_max", 256)
    got = specplan.plan_tree(marginals, cost, c=1024, **kwargs).to_dict()
    assert got["n"] == want["n"] and got["tokens"] == want["tokens"]
    for key in ("cycle_s", "speedup", "l_ar_s"):
        assert got[key] == pytest.approx(want[key], rel=1e-12), key


def test_a_cost_class_on_the_plan_call_prices_by_class(marginals):
    # drafter="ar" with its own t_draft_ms prices drafting by class (the CLI's --drafter ar),
    # whatever architecture the Cost names.
    with_step = specplan.Cost(gpu="h100", model="qwen3-8b")
    bare = specplan.Cost(gpu="h100", model="qwen3-8b", drafter="")
    a = specplan.plan_tree(marginals, with_step, c=512, n_max=64, drafter="ar", t_draft_ms=0.3)
    b = specplan.plan_tree(marginals, bare, c=512, n_max=64, drafter="ar", t_draft_ms=0.3)
    assert a.n == b.n and a.cycle_s == b.cycle_s and a.l_ar_s == b.l_ar_s
    # The architecture's step costs more than the verify pass alone.
    c = specplan.plan_tree(marginals, with_step, c=512, n_max=64)
    assert c.l_ar_s > b.l_ar_s


def test_a_given_l_ar_stands(marginals, cost):
    plan = specplan.plan_tree(marginals, cost, c=1024, n_max=64, l_ar_ms=50)
    assert plan.l_ar_s == pytest.approx(0.05)


@pytest.mark.parametrize("flags,kwargs", [
    ([], {}),
    (["--cuda-graphs", "off"], dict(cuda_graphs="off")),
    (["--enforce-eager", "--eager-launch-us", "100"], dict(cuda_graphs="eager", eager_launch_us=100)),
    (["--cuda-graph-sizes", "64,128,256"], dict(cuda_graph_sizes=[64, 128, 256])),
    (["--cuda-graph-max", "64"], dict(cuda_graph_max=64)),
])
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_cuda_graphs_match_cli(cli, flags, kwargs, engine):
    # 65 requests fall between captured sizes on both ladders (vLLM: 260 -> 272 tokens; SGLang:
    # 65 -> 72 requests), so the keywords change the step exactly as the CLI's flags do.
    want = cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", engine,
               "--s", 4, "--c", 1024, "--b", 65, *flags, "--json")
    cost = specplan.Cost(gpu="h100", model="llama-3.1-8b", engine=engine, **kwargs)
    _same_step(cost.step(65, 4, 1024), want["step"])
    assert cost.ar_step(65, 1024).step_s == pytest.approx(want["ar_step_s"], rel=1e-12)


def test_cuda_graphs_pad_and_are_checked():
    graphed = specplan.Cost(gpu="h100", model="llama-3.1-8b", engine="vllm")
    exact = specplan.Cost(gpu="h100", model="llama-3.1-8b", engine="vllm", cuda_graphs="off")
    assert graphed.step(65, 4, 1024).verify_s > exact.step(65, 4, 1024).verify_s
    assert graphed.step(64, 4, 1024).verify_s == exact.step(64, 4, 1024).verify_s
    with pytest.raises(specplan.InvalidArgumentError, match="cuda_graphs = 'maybe'"):
        specplan.Cost(gpu="h100", model="qwen3-8b", cuda_graphs="maybe")
    with pytest.raises(specplan.InvalidArgumentError, match=r"cuda_graph_sizes\[1\] = 2"):
        specplan.Cost(gpu="h100", model="qwen3-8b", cuda_graph_sizes=[4, 2])
    with pytest.raises(specplan.InvalidArgumentError, match="eager_launch_us"):
        specplan.Cost(gpu="h100", model="qwen3-8b", eager_launch_us=float("nan"))


@pytest.mark.parametrize("kwargs,exc,words", [
    (dict(drafter="medusa"), specplan.InvalidArgumentError,
     ["drafter = 'medusa'", "unknown", "eagle3"]),
    (dict(drafter="ar"), specplan.InvalidArgumentError, ["drafter = 'ar'", "cost class"]),
    (dict(topk=0), specplan.InvalidArgumentError, ["topk = 0"]),
    (dict(draft_steps=-3), specplan.InvalidArgumentError, ["draft_steps = -3"]),
    (dict(draft_vocab=-1), specplan.InvalidArgumentError, ["draft_vocab = -1"]),
    (dict(host_step_ms=-1), specplan.InvalidArgumentError, ["host_step_ms = -1"]),
    (dict(sample_ms="x"), specplan.ArgumentTypeError, ["sample_ms"]),
])
def test_bad_step_keywords_name_the_keyword(kwargs, exc, words):
    with pytest.raises(exc) as e:
        specplan.Cost(gpu="h100", model="qwen3-8b", **kwargs)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_step_without_a_drafter_is_refused():
    bare = specplan.Cost(gpu="h100", model="qwen3-8b", drafter="")
    with pytest.raises(specplan.InvalidArgumentError, match="Cost.step"):
        bare.step(1, 4, 0)
    with pytest.raises(specplan.InvalidArgumentError, match="s = 0"):
        specplan.Cost(gpu="h100", model="qwen3-8b").step(1, 0, 0)
