"""Planners for the engine loop: every step, the batch's draft lattices -> one tree per request,
plus the arrays verification and acceptance read (positions c_i + depth, ancestor masks, SGLang's
retrive_next_token / retrive_next_sibling).

  SpecplanPlanner  specplan.plan_batch (the batch planner) and specplan's layouts
  ChainPlanner     a top-1 chain of fixed depth per request (no specplan; the bring-up planner)
  ArPlanner        root-only trees (plain decoding)
"""

import numpy as np

from trees import StepPlan, Tree


class ArPlanner:
    name = "ar"
    needs_draft = False
    max_tree_nodes = 0

    def plan(self, roots, tokens, probs, contexts):
        return StepPlan([Tree([r], [-1]) for r in roots], contexts)


class ChainPlanner:
    needs_draft = True

    def __init__(self, depth):
        self.depth = depth
        self.max_tree_nodes = depth
        self.name = f"chain:{depth}"

    def plan(self, roots, tokens, probs, contexts):
        trees = []
        for b, r in enumerate(roots):
            d = min(self.depth, tokens.shape[1])
            trees.append(Tree([r] + tokens[b, :d, 0].tolist(), list(range(-1, d))))
        return StepPlan(trees, contexts)


def add_arguments(p):
    """Flags of the specplan planner."""
    p.add_argument("--profile", default="",
                   help="latency profile JSON that prices the plans (default: the module's own "
                        "default; see docs/engine-loop.md)")


def make_planner(args, target):
    if args.planner == "ar":
        return ArPlanner()
    if args.planner == "chain":
        if args.chain_depth > args.gamma:
            raise ValueError(f"--chain-depth = {args.chain_depth}: must be <= --gamma = "
                             f"{args.gamma}")
        return ChainPlanner(args.chain_depth)
    raise ValueError("--planner specplan: not wired yet")
