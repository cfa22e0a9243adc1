"""One tree budget across a batch of requests verified in one ragged pass: plan_batch (a list of
requests) and plan_batch_arrays (the dense arrays a drafter's batched output has) return a
BatchPlan.

    batch = specplan.plan_batch([specplan.Request(m, 1024), (m, 4096)], cost, n_max=512)
    batch.n, batch.goodput, batch.trees
"""

import typing as _t

from ._specplan import BatchCurve, BatchPlan, plan_batch, plan_batch_arrays
from . import types as _types


class Request(_t.NamedTuple):
    """One request of plan_batch: its drafter's marginals (specplan.Marginals or a mapping
    {root_token, tokens, probs}), its cached tokens c, a cap on its draft nodes (-1 = none) and
    its weight w_i > 0 in the goodput."""

    marginals: _types.MarginalsLike
    c: int
    n_max: int = -1
    weight: float = 1.0


__all__ = ["BatchCurve", "BatchPlan", "Request", "plan_batch", "plan_batch_arrays"]
