"""examples/engine_loop.py: the PyTorch reference engine loop gives exactly the tokens of plain
autoregressive decoding (same model code) and of specplan-bench (the C++ LibTorch runtime) for the
same prompts, and its model code gives the runtime's logits bit for bit.

Run: PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/test_engine_loop.py
The comparisons with the C++ binaries skip (saying so) when build/runtime/specplan-bench or
specplan-logits is not built; the specplan planner case skips when `import specplan` fails.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

sys.dont_write_bytecode = True
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "examples"))

import engine_loop  # noqa: E402
from engine_loop import Engine, generate_ar  # noqa: E402
from plan_glue import ArPlanner, ChainPlanner  # noqa: E402
from qwen3_torch import Transformer  # noqa: E402
from trees import Tree, accept_greedy_sglang, sglang_links  # noqa: E402

BUILD = os.environ.get("SPECPLAN_BUILD_DIR", os.path.join(REPO, "build"))
BENCH = os.path.join(BUILD, "runtime", "specplan-bench")
LOGITS = os.path.join(BUILD, "runtime", "specplan-logits")
TARGET = os.path.join(REPO, "models", "target")
DRAFT = os.path.join(REPO, "models", "draft")
NEW_TOKENS = 32


def heldout_prompts():
    """Four prompts of different lengths cut from the family's held-out token slice."""
    ids = np.fromfile(os.path.join(REPO, "models", "heldout-slice.ids"), dtype="<i4")
    cuts = [(0, 9), (300, 17), (1200, 5), (2500, 12)]
    return [ids[a:a + n].tolist() for a, n in cuts]


@pytest.fixture(scope="module")
def models():
    torch.set_num_threads(1)
    return Transformer.load(TARGET), Transformer.load(DRAFT)


@pytest.fixture(scope="module")
def ar_outputs(models):
    target, _ = models
    return [generate_ar(target, p, NEW_TOKENS) for p in heldout_prompts()]


def run_engine(models, planner, batch):
    target, draft = models
    eng = Engine(target, draft, planner, max_batch=batch, gamma=6, top_k=4)
    prompts = heldout_prompts()
    for i, p in enumerate(prompts):
        eng.add_request(i, p, NEW_TOKENS)
    out = eng.run()
    return [out[i] for i in range(len(prompts))], eng


def specplan_planner(*flags):
    try:
        import specplan  # noqa: F401
    except ImportError as e:
        pytest.skip(f"specplan's Python module is not importable ({e}); build it "
                    "(cmake --build build --target _specplan) and set PYTHONPATH=build/python")
    import plan_glue
    return plan_glue.make_planner(engine_loop.build_parser().parse_args(list(flags)), None)


# The specplan cases price plans with the bundled H100 x Qwen3-8B SGLang profile and a fixed
# draft level of 0.3 ms (a GPU drafter's), so that the batch planner drafts real trees here; with
# this CPU's own costs it would keep every step plain (see docs/engine-loop.md).
H100 = ("--n-max", "8", "--draft-level-ms", "0.3")


@pytest.fixture(scope="module")
def specplan_run(models):
    """The specplan planner, 3 slots for 4 requests (one waits and joins)."""
    return run_engine(models, specplan_planner(*H100), 3)


def test_specplan_loop_equals_autoregressive(ar_outputs, specplan_run):
    outputs, eng = specplan_run
    assert outputs == ar_outputs
    steps = [s for s in eng.step_log if "drafted" in s]
    assert max(s["batch"] for s in steps) == 3 and sum(s["joined"] for s in eng.step_log) == 4
    assert sum(s["drafted"] for s in steps) > 0 and sum(s["accepted"] for s in steps) > 0


@pytest.mark.parametrize("name,batch,flags", [
    ("chain", 3, ()),
    ("specplan", 1, H100),
    ("specplan", 4, H100 + ("--layout", "sglang")),
    ("specplan", 3, ("--mode", "fixed", "--gpu", "none", "--budget", "10", "--gate", "off")),
])
def test_engine_tokens_equal_autoregressive(models, ar_outputs, name, batch, flags):
    planner = ChainPlanner(3) if name == "chain" else specplan_planner(*flags)
    outputs, eng = run_engine(models, planner, batch)
    assert outputs == ar_outputs
    assert all(len(o) == NEW_TOKENS for o in outputs)
    # with fewer slots than the 4 requests, the later ones joined as earlier ones left
    assert max(s["batch"] for s in eng.step_log) == min(batch, 4)
    assert sum(s["joined"] for s in eng.step_log) == 4
    steps = [s for s in eng.step_log if "drafted" in s]
    assert sum(s["drafted"] for s in steps) > 0  # trees were verified, not only plain steps
    if "fixed" in flags:
        assert all(s["drafted"] == 10 for s in steps if s["depth"] > 0)


def test_root_only_planner_is_ar(models, ar_outputs):
    outputs, _ = run_engine(models, ArPlanner(), 2)
    assert outputs == ar_outputs


def test_tokens_equal_specplan_bench(models, ar_outputs, request, tmp_path):
    if not os.access(BENCH, os.X_OK):
        pytest.skip(f"{BENCH} is not built (cmake --build build --target specplan-bench)")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"ids": p}) + "\n" for p in heldout_prompts()))
    report = tmp_path / "bench.json"
    r = subprocess.run([BENCH, "--target", TARGET, "--draft", DRAFT, "--prompts", str(prompts),
                        "--strategies", "ar", "--batch", "3", "--max-new-tokens", str(NEW_TOKENS),
                        "--threads", "1", "--seed", "0", "--json", str(report)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    bench = json.loads(report.read_text())["strategies"]["ar"]["outputs"]
    assert bench == ar_outputs
    try:
        import specplan  # noqa: F401
        loop = request.getfixturevalue("specplan_run")[0]
    except ImportError:  # without the module, the loop with its own chain planner
        loop = run_engine(models, ChainPlanner(3), 3)[0]
    assert loop == bench


def test_logits_equal_the_runtime_bit_for_bit(models, tmp_path):
    if not os.access(LOGITS, os.X_OK):
        pytest.skip(f"{LOGITS} is not built (cmake --build build --target specplan-logits)")
    from safetensors_reader import read_safetensors
    ids = heldout_prompts()[1]
    for name, model in zip(("target", "draft"), models):
        out = tmp_path / f"{name}.safetensors"
        r = subprocess.run([LOGITS, "--model", os.path.join(REPO, "models", name), "--ids",
                            ",".join(map(str, ids)), "--threads", "1", "--out", str(out)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        ref = read_safetensors(str(out))
        assert ref["input_ids"].tolist() == ids
        ours = model.forward_causal(ids, 0, model.new_cache(len(ids)))
        assert torch.equal(ours, ref["logits"]), (ours - ref["logits"]).abs().max()


def test_tree_verification_gives_each_node_its_path_logits(models):
    """One masked pass over a branching tree = a causal pass along each root-to-node path."""
    target, _ = models
    prompt = heldout_prompts()[0]
    cache = target.new_cache(64)
    target.forward_causal(prompt[:-1], 0, cache)
    cache.length = len(prompt) - 1
    tree = Tree([prompt[-1], 11, 12, 13, 14, 15], [-1, 0, 0, 1, 1, 3])
    c = cache.length
    from qwen3_torch import Segment, tree_mask_block
    seg = Segment(torch.tensor(tree.tokens), torch.tensor([c + d for d in tree.depths]), c, cache,
                  tree_mask_block(tree.ancestor_dense(), tree.size))
    logits = target.forward_batch([seg])
    for i in range(tree.size):
        path, u = [], i
        while u >= 0:
            path.append(tree.tokens[u])
            u = tree.parents[u]
        ref = target.forward_causal(prompt[:-1] + path[::-1], 0, target.new_cache(64))[-1]
        assert torch.allclose(logits[i], ref, rtol=0, atol=1e-4)
        assert logits[i].argmax() == ref.argmax()


def test_sglang_links_and_greedy_walk():
    # DESIGN/README example tree: 0 -> {1, 2}, 1 -> {3, 4}
    tree = Tree([50, 51, 52, 53, 54], [-1, 0, 0, 1, 1])
    nxt, sib = sglang_links(tree)
    assert nxt == [1, 3, -1, -1, -1]
    assert sib == [-1, 2, -1, 4, -1]
    # target argmax per node: root -> 51 (node 1), node 1 -> 54 (node 4), node 4 -> 99 (bonus)
    predict = [51, 54, 0, 0, 99]
    assert accept_greedy_sglang(tree.tokens, nxt, sib, predict) == ([0, 1, 4], 99)
    assert accept_greedy_sglang(tree.tokens, nxt, sib, [7, 0, 0, 0, 0]) == ([0], 7)


def test_cli_errors_name_flag_and_value(capsys):
    with pytest.raises(SystemExit):
        engine_loop.build_parser().parse_args(["--batch", "0"])
    assert "--batch = 0" in capsys.readouterr().err
    rc = engine_loop.main(["--prompts", "/nonexistent/prompts.jsonl", "--planner", "ar"])
    assert rc == 2
    assert "/nonexistent/prompts.jsonl" in capsys.readouterr().err


def test_sglang_walk_equals_specplan_accept_greedy():
    """The loop's SGLang-style acceptance = specplan.accept_greedy on trees whose siblings carry
    distinct tokens (what the planner builds), over random trees and target argmaxes."""
    try:
        import specplan
    except ImportError as e:
        pytest.skip(f"specplan's Python module is not importable ({e})")
    rng = np.random.default_rng(0)
    for _ in range(200):
        s = int(rng.integers(1, 12))
        parents, tokens, used = [-1], [100], {}
        for i in range(1, s):
            p = int(rng.integers(0, i))
            t = int(rng.integers(0, 6))
            while t in used.setdefault(p, set()):
                t = (t + 1) % 6 if len(used[p]) < 6 else t
                if len(used[p]) >= 6:
                    break
            if t in used[p]:
                continue
            used[p].add(t)
            parents.append(p)
            tokens.append(t)
        tree = Tree(tokens, parents)
        argmax = rng.integers(0, 6, size=tree.size).astype(np.int32)
        nxt, sib = sglang_links(tree)
        nodes, bonus = accept_greedy_sglang(tree.tokens, nxt, sib, argmax.tolist())
        ref = specplan.accept_greedy((np.array(tokens, np.int32), np.array(parents, np.int32)),
                                     argmax)
        assert nodes == ref.accepted_nodes.tolist() and bonus == ref.bonus_token
