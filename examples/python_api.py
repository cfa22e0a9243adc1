#!/usr/bin/python3
# mypy: disallow-untyped-defs, disallow-any-generics, warn-return-any
"""A typed tour of `import specplan` (docs/python.md): one engine step planned, laid out and
accepted, with the results as the typed objects the package returns. mypy checks this file
against the package's stubs (ctest python.typecheck), and tests/python runs it.

  PYTHONPATH=build/python /usr/bin/python3 examples/python_api.py [--batch 4] [--c 1024]
"""

import argparse
import os
import sys
import typing

import numpy as np
import numpy.typing as npt

import specplan
from specplan.types import BudgetMode, TreeMaskMode

HERE = os.path.dirname(os.path.abspath(__file__))


def price(cost: specplan.Cost, c: int) -> specplan.Estimate:
    """The engine's whole step for 4 verified tokens over c cached, and its plain step."""
    est = cost.estimate(4, c)
    step = est.step
    assert step is not None  # a Cost with a drafter architecture prices the whole step
    print(f"{cost.profile_id or 'roofline'}: verify {step.verify_s * 1e3:.3f} ms, "
          f"draft {step.draft_s * 1e3:.3f} ms ({step.draft_priced_by}), "
          f"host {step.host_s * 1e3:.3f} ms; plain step {est.ar_step_s or 0.0:.6f} s")
    return est


def plan_one(m: specplan.Marginals, cost: specplan.Cost, c: int,
             mode: BudgetMode = "controller") -> specplan.TreePlan:
    plan = specplan.plan_tree(m, cost, c=c, n_max=256, mode=mode)
    curve: specplan.TreeCurve = plan.curve
    best = int(np.argmax(curve.speedup)) if curve.n.size else plan.n
    print(f"plan_tree: n* = {plan.n}, speedup {plan.speedup or 0.0:.3f} (scan's argmax {best})")
    return plan


def plan_step(m: specplan.Marginals, cost: specplan.Cost, contexts: typing.Sequence[int],
              mask_mode: TreeMaskMode = "QLEN_ONLY") -> specplan.BatchPlan:
    requests = [specplan.Request(m, c) for c in contexts]
    batch = specplan.plan_batch(requests, cost, n_max=64 * len(requests), layout="sglang",
                                tree_mask_mode=mask_mode)
    layout = batch.layout
    assert isinstance(layout, specplan.SglangLayout)
    print(f"plan_batch: n = {batch.n.tolist()}, goodput {batch.goodput or 0.0:.1f} tokens/s, "
          f"D = {layout.draft_token_num}, mask {layout.tree_mask_mode} {layout.tree_mask.shape}")
    return batch


def accept(batch: specplan.BatchPlan) -> specplan.BatchAcceptResult:
    """A target that agrees with every request's first draft token (node 1)."""
    layout = specplan.ragged_layout(batch.trees, batch.c)
    argmax: npt.NDArray[np.int32] = np.zeros(layout.total_tokens, np.int32)
    for b, (tokens, _parents) in enumerate(batch.trees):
        if tokens.size > 1:
            argmax[layout.cu_seqlens[b]] = tokens[1]
    result = specplan.accept_greedy_batch(batch, argmax)
    print(f"accept_greedy_batch: accepted {result.accepted_length.tolist()}")
    return result


def gate_depth(cost: specplan.Cost, contexts: typing.Sequence[int]) -> int:
    gate = specplan.SpeculationGate()
    gate.observe_draft_level(0.0008)
    decision: specplan.GateDecision = gate.decide_batch(cost, list(contexts), max_depth=8)
    stats: specplan.GateStats = gate.stats
    print(f"gate: depth {decision.depth} ({decision.tokens_per_s:.0f} against "
          f"{decision.ar_tokens_per_s:.0f} tokens/s), decisions {stats.decisions}")
    return decision.depth


def main(argv: typing.Optional[typing.List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--c", type=int, default=1024)
    ap.add_argument("--marginals", default=os.path.join(HERE, "marginals.json"))
    a = ap.parse_args(argv)
    try:
        cost = specplan.Cost(gpu="h100", model="qwen3-8b")
    except specplan.NotFoundError as e:  # a registry without the model: say so
        print(e, file=sys.stderr)
        return 1
    m = specplan.Marginals.load(a.marginals)
    contexts = [a.c * (1 + i) for i in range(a.batch)]
    price(cost, a.c)
    plan_one(m, cost, a.c)
    gate_depth(cost, contexts)
    accept(plan_step(m, cost, contexts))
    profiles: typing.List[specplan.ProfileInfo] = specplan.list_profiles()
    print(f"{len(profiles)} bundled profiles under {specplan.default_calib_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
