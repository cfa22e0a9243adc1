"""The vocabularies of specplan's keyword arguments, as typing.Literal aliases.

    from specplan.types import BudgetMode
    def plan(mode: BudgetMode = "controller") -> None: ...

They name what the C++ library accepts (its name tables: planner::kBudgetModeNames,
costmodel::KnownEngines, ...); a value outside them is refused at run time with an
InvalidArgumentError naming the keyword and value.
"""

import typing as _t

#: plan_tree / plan_batch ``mode``: stop at the first decrease, scan every budget, or take it.
BudgetMode = _t.Literal["controller", "scan", "fixed"]
#: The drafter cost classes (``drafter=`` of plan_tree, plan_batch, Cost.estimate).
DrafterClass = _t.Literal["ar", "parallel", "causal"]
#: Whose kernels a profile describes (``engine=`` of Cost; "" = the default rule).
Engine = _t.Literal["sglang", "vllm", "trtllm", "specplan"]
#: A dtype's name, as results report it (Cost.dtype, Profile.dtype).
DTypeName = _t.Literal["bf16", "fp16", "fp32", "fp8"]
#: Weight and activation type where a call takes one (``dtype=``): a name or an alias.
DType = _t.Literal["bf16", "fp16", "fp32", "fp8", "bfloat16", "float16", "half", "float32",
                   "float", "float8", "float8_e4m3fn"]
#: The latency model kinds a profile can hold (``latency_model=``).
LatencyModelKind = _t.Literal["roofline", "linear", "per_term", "overlap", "kernel_sum", "table"]
#: plan_batch ``layout=``: which engine layout to compute in the same call.
LayoutName = _t.Literal["ragged", "sglang"]
#: SGLang's TreeMaskMode names (an int 0-2 or SGLang's own enum is taken too).
TreeMaskMode = _t.Literal["FULL_MASK", "QLEN_ONLY", "QLEN_ONLY_BITPACKING"]
#: A drafter's marginals where a call takes them: a specplan.Marginals, or a mapping with
#: root_token, tokens [gamma][k] and probs [gamma][k].
MarginalsLike = _t.Union["_specplan.Marginals", _t.Mapping[str, object]]
#: A tree where a call takes one: a (tokens, parents) pair of int arrays or lists, a TreePlan, a
#: MergedTree, or a mapping with tokens and parents (and optionally path_probs).
TreeLike = _t.Union[
    _t.Tuple[object, object], "_specplan.TreePlan", "_specplan.MergedTree", _t.Mapping[str, object]
]

if _t.TYPE_CHECKING:
    from . import _specplan

__all__ = [
    "BudgetMode", "DrafterClass", "DType", "DTypeName", "Engine", "LatencyModelKind", "LayoutName",
    "MarginalsLike", "TreeLike", "TreeMaskMode",
]
