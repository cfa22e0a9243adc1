"""Latency and step costs: specplan.Cost (a resolved latency model of one GPU x model x engine),
profiles, and one-call estimates.

    cost = specplan.Cost(gpu="h100", model="qwen3-8b")      # the bundled SGLang profile
    est = specplan.estimate(s=64, c=1024, gpu="h100", model="qwen3-8b")
    est.predicted_s, est.cycle.cycle_s, est.step.host_s

Bundled profiles are read from specplan.default_calib_dir(): $SPECPLAN_CALIB_DIR, else the
package's own specplan/calib (installed with it), else the library's default (the source tree's
calib/ while it exists); specplan.calib_search_path() lists the candidates.
"""

import typing as _t

from ._specplan import (
    Cost,
    CycleBreakdown,
    Estimate,
    HostTime,
    Profile,
    ProfileInfo,
    StepBreakdown,
    bundled_profile_path,
    calib_search_path,
    compose_profile,
    default_calib_dir,
    known_engines,
    known_gpus,
    known_models,
    latency_model_kinds,
    list_profiles,
    load_profile,
)
from . import types as _types

_COST_CLASSES = ("ar", "parallel", "causal")


_EngineArg = _t.Union[_types.Engine, _t.Literal[""]]
_KindArg = _t.Union[_types.LatencyModelKind, _t.Literal[""]]


def estimate(s: int = 1, c: int = 0, b: int = 1, *, gpu: str = "", model: str = "",
             engine: _EngineArg = "", dtype: _types.DType = "bf16", tp: int = 0,
             profile: str = "", latency_model: _KindArg = "",
             drafter: _t.Union[_types.DrafterClass, str] = "eagle3", gamma: int = 16,
             t_draft_ms: float = 0.0, t_aux_ms: float = 0.0, draft_steps: int = -1,
             topk: int = 1, draft_vocab: int = 0, host_step_ms: _t.Optional[float] = None,
             host_per_seq_ms: _t.Optional[float] = None,
             host_per_draft_ms: _t.Optional[float] = None,
             sample_ms: _t.Optional[float] = None, host_file: str = "") -> Estimate:
    """`specplan estimate --json` in one call: resolves the cost (see Cost) and prices one pass
    of b sequences, each verifying s tokens over c cached tokens. drafter is, as the CLI's
    --drafter, an architecture (eagle3 by default; the engine's whole step is priced) or a cost
    class (ar, parallel, causal; priced by t_draft_ms alone). Returns Cost.estimate's Estimate
    (predicted_s for the whole pass, per_sequence_s, per_token_s, latency_model, profile, engine,
    cycle, and with an architecture step, ar_step and ar_step_s); .to_dict() gives the JSON's
    dict."""
    is_class = drafter in _COST_CLASSES
    cost = Cost(gpu=gpu, model=model, engine=engine, dtype=dtype, tp=tp, profile=profile,
                latency_model=latency_model, drafter="" if is_class else drafter,
                draft_steps=draft_steps, topk=topk, draft_vocab=draft_vocab,
                host_step_ms=host_step_ms, host_per_seq_ms=host_per_seq_ms,
                host_per_draft_ms=host_per_draft_ms, sample_ms=sample_ms,
                host_file=host_file)
    cls = _t.cast(_types.DrafterClass, drafter) if is_class else "parallel"
    return cost.estimate(s, c, b, drafter=cls, gamma=gamma, t_draft_ms=t_draft_ms,
                         t_aux_ms=t_aux_ms)


def resolve_cost(gpu: str = "", model: str = "", *, engine: _t.Optional[_types.Engine] = None,
                 dtype: _types.DType = "bf16", tp: int = 0, profile: _t.Optional[str] = None,
                 latency_model: _t.Optional[_types.LatencyModelKind] = None,
                 calib_dir: _t.Optional[str] = None, drafter: _t.Optional[str] = "eagle3",
                 **step: _t.Any) -> Cost:
    """Cost(...) with positional gpu and model and None for "not given" (drafter=None: none);
    further keywords (draft_steps, topk, draft_vocab, host_step_ms, ...) go to Cost."""
    return Cost(gpu=gpu, model=model, engine=engine or "", dtype=dtype, tp=tp,
                profile=profile or "", latency_model=latency_model or "",
                calib_dir=calib_dir or "", drafter=drafter or "", **step)


__all__ = [
    "Cost", "CycleBreakdown", "Estimate", "HostTime", "Profile", "ProfileInfo", "StepBreakdown",
    "bundled_profile_path", "calib_search_path", "compose_profile", "default_calib_dir",
    "estimate", "known_engines", "known_gpus", "known_models", "latency_model_kinds",
    "list_profiles", "load_profile", "resolve_cost",
]
