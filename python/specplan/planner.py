"""Best-first draft trees for one request: a parallel drafter's Marginals in, a TreePlan out
(the tree T_{n*}, the verifier's positions, mask and retrieve matrix, the cost figures).

    m = specplan.Marginals.load("examples/marginals.json")
    plan = specplan.plan_tree(m, specplan.Cost(gpu="h100", model="qwen3-8b"), c=1024, n_max=256)
    plan.n, plan.speedup, plan.curve.speedup
"""

from ._specplan import Marginals, TreeCurve, TreePlan, plan_tree

__all__ = ["Marginals", "TreeCurve", "TreePlan", "plan_tree"]
