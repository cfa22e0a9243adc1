"""Planners for the engine loop: every step, the batch's draft lattices -> what each request
verifies (a SeqPlan: tokens, positions c + depth, ancestor mask, SGLang's links).

  SpecplanPlanner  specplan.plan_batch (the batch planner) with layout='sglang': the trees and
                   SGLang's EAGLE verification tensors in one call
  ChainPlanner     a top-1 chain of fixed depth per request (no specplan; the bring-up planner)
  ArPlanner        root-only trees (plain decoding)
"""

import os
import time

import numpy as np

from trees import SeqPlan, Tree, seq_plan_of_tree


class ArPlanner:
    name = "ar"
    max_tree_nodes = 0

    def decide(self, contexts):
        return 0


class ChainPlanner:
    def __init__(self, depth):
        self.depth = depth
        self.max_tree_nodes = depth
        self.name = f"chain:{depth}"

    def decide(self, contexts):
        return self.depth

    def observe_draft_level(self, seconds):
        pass

    def plan(self, roots, tokens, probs, contexts):
        d = min(self.depth, tokens.shape[1])
        return [seq_plan_of_tree(Tree([r] + tokens[b, :d, 0].tolist(), list(range(-1, d))), c)
                for b, (r, c) in enumerate(zip(roots, contexts))]

    def observe(self, seq_plans, accepted):
        pass


class SpecplanPlanner:
    """The runtime's `batch` strategy through specplan's Python module: one SpeculationGate for
    the batch decides the draft depth (0 = a plain step), then specplan.plan_batch_arrays sizes
    every request's tree over its chain lattice from one budget, returning the trees and SGLang's
    EAGLE verification tensors in the same call (layout='sglang')."""

    def __init__(self, specplan, cost, n_max, gamma, mode="controller", budget=0,
                 layout="ragged", gate=True, draft_level_s=None, fixed_level_s=None):
        self.sp, self.cost = specplan, cost
        self.max_tree_nodes = n_max       # per request
        self.gamma = gamma
        self.mode, self.budget = mode, budget
        self.padded = layout == "sglang"  # verify SGLang's padded [B][D] slots as they are
        self.gate = specplan.SpeculationGate(enabled=gate and cost is not None)
        self.use_gate = gate and cost is not None
        self.fixed_level_s = fixed_level_s  # priced instead of the measured level when set
        self.level_s = draft_level_s or 0.0   # EMA of one request's share of a draft level
        if draft_level_s:
            self.gate.observe_draft_level(draft_level_s)
        what = (cost.profile_id or f"roofline {cost.gpu} x {cost.model}") if cost else "no cost"
        self.name = f"specplan.plan_batch ({mode}, {what}, gate {'on' if self.use_gate else 'off'})"
        self.last = None
        self.call_s = 0.0  # seconds inside specplan this step (decide_batch + plan_batch_arrays)

    def decide(self, contexts):
        self.call_s = 0.0
        if not self.use_gate:
            return self.gamma
        t0 = time.perf_counter()
        d = self.gate.decide_batch(self.cost, np.asarray(contexts, dtype=np.int64), min_depth=1,
                                   max_depth=self.gamma, draft_level_s=self.fixed_level_s)
        self.call_s = time.perf_counter() - t0
        return int(d.depth)

    def observe_draft_level(self, seconds):
        """Measured seconds of one request's share of a draft level."""
        self.gate.observe_draft_level(seconds)
        self.level_s = seconds if not self.level_s else 0.8 * self.level_s + 0.2 * seconds

    def plan(self, roots, tokens, probs, contexts):
        sp, B = self.sp, len(roots)
        total = self.budget if self.mode == "fixed" and self.budget else self.max_tree_nodes * B
        kw = dict(n_max=total, mode=self.mode, layout="sglang", tree_mask_mode="QLEN_ONLY",
                  acceptance_scale=self.gate.estimator.surrogate_scale)
        if self.cost is not None:
            # B requests' drafting priced as B times one request's (growth 1), as decide_batch does
            level = self.fixed_level_s if self.fixed_level_s is not None else self.level_s
            kw.update(drafter="ar", t_draft_ms=1e3 * level, draft_batch_growth=1.0)
        t0 = time.perf_counter()
        bp = sp.plan_batch_arrays(np.asarray(roots, dtype=np.int64), tokens, probs,
                                  np.asarray(contexts, dtype=np.int64), self.cost,
                                  np.full(B, self.max_tree_nodes, dtype=np.int64), **kw)
        lay = bp.layout
        self.call_s += time.perf_counter() - t0  # the module's calls alone, without this glue
        self.last = bp
        D = int(lay.draft_token_num)
        draft_tokens = lay.draft_tokens.reshape(B, D)
        positions = lay.positions.reshape(B, D)
        mask = lay.tree_mask.reshape(B, D, D)
        nxt, sib = lay.retrive_next_token, lay.retrive_next_sibling
        n, ea, depths, off = bp.n, bp.expected_accepted, bp.depths, bp.offsets
        out = []
        for b in range(B):
            s = D if self.padded else int(n[b]) + 1
            p = SeqPlan(draft_tokens[b, :s].tolist(), positions[b, :s],
                        mask[b, :s, :s] if s > 1 else None, nxt[b, :s].tolist(),
                        sib[b, :s].tolist(), int(n[b]), float(ea[b]))
            p.depth = int(depths[off[b]:off[b + 1]].max())
            out.append(p)
        return out

    def observe(self, seq_plans, accepted):
        """After verification: the gate's acceptance estimate and the surrogate's calibration
        (what BatchStrategy::Observe feeds), for every request of a drafted step."""
        for p, a in zip(seq_plans, accepted):
            self.gate.observe(p.depth, p.n, a)
            if p.n > 0:
                self.gate.estimator.observe_surrogate(p.expected_accepted, a)


def add_arguments(p):
    """Flags of the specplan planner."""
    g = p.add_argument_group("specplan planner (--planner specplan)")
    g.add_argument("--profile", default="",
                   help="latency profile JSON that prices the plans (e.g. one written by "
                        "build/profiler/calibrate --gpu cpu ...); default: --gpu x --cost-model")
    g.add_argument("--gpu", default="h100",
                   help="GPU whose bundled profile prices the plans (with --cost-model, "
                        "--engine): plans as that engine on that GPU would make them")
    g.add_argument("--cost-model", default="qwen3-8b",
                   help="registry model (or HF config.json path) of the cost")
    g.add_argument("--engine", default="sglang",
                   help="whose kernels the cost describes: sglang, vllm, trtllm, specplan")
    g.add_argument("--mode", default="controller", choices=["controller", "scan", "fixed"],
                   help="batch planner stopping rule; fixed: exactly --budget nodes per step")
    g.add_argument("--budget", type=int, default=0,
                   help="--mode fixed: draft nodes over the batch per step (0 = --n-max x B); "
                        "with --gpu none no cost is used at all")
    g.add_argument("--layout", default="ragged", choices=["ragged", "sglang"],
                   help="ragged: verify each tree's s_i nodes (packed, as the runtime); sglang: "
                        "verify SGLang's padded D slots per request as they come")
    g.add_argument("--draft-level-ms", type=float, default=None,
                   help="price one request's draft level at this many ms instead of the measured "
                        "time (e.g. a GPU drafter's, with a GPU profile; fixed plans for tests)")
    g.add_argument("--gate", default="on", choices=["on", "off"],
                   help="on: specplan.SpeculationGate decides each step whether the batch drafts "
                        "and how deep (0 = a plain step, no draft model); off: always draft "
                        "--gamma levels")


def import_specplan():
    """specplan from PYTHONPATH, else from this checkout's build/python."""
    try:
        import specplan
        return specplan
    except ImportError:
        pass
    import sys
    build = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "build", "python")
    if os.path.isdir(build) and build not in sys.path:
        sys.path.append(build)
    try:
        import specplan
    except ImportError as e:
        raise RuntimeError(f"cannot import specplan ({e}): build it (flock "
                           "/tmp/specplan-build.lock cmake --build build --target _specplan) "
                           "and run with "
                           "PYTHONPATH=build/python; or use --planner chain|ar") from e
    return specplan


def measure_draft_level(draft, repeats=5):
    """Seconds of one single-token draft forward over a short cache (the gate's first estimate of
    a draft level, as the runtime's SeedDraftLevel measures it); median of `repeats`."""
    import time

    cache = draft.new_cache(80)
    draft.forward_causal(list(range(1, 65)), 0, cache)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        draft.forward_causal([1], 64, cache)
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def make_planner(args, draft=None):
    if args.planner == "ar":
        return ArPlanner()
    if args.chain_depth > args.gamma:
        raise ValueError(f"--chain-depth = {args.chain_depth}: must be <= --gamma = {args.gamma}")
    if args.planner == "chain":
        return ChainPlanner(args.chain_depth)
    sp = import_specplan()
    if args.budget < 0:
        raise ValueError(f"--budget = {args.budget}: must be >= 0")
    if args.draft_level_ms is not None and not args.draft_level_ms >= 0:
        raise ValueError(f"--draft-level-ms = {args.draft_level_ms}: must be >= 0")
    if args.profile:
        if not os.path.exists(args.profile):
            raise ValueError(f"--profile {args.profile}: no such file")
        cost = sp.Cost(profile=args.profile)
    elif args.mode == "fixed" and args.gpu == "none":
        cost = None
    else:
        cost = sp.Cost(gpu=args.gpu, model=args.cost_model, engine=args.engine)
    fixed = args.draft_level_ms * 1e-3 if args.draft_level_ms is not None else None
    level_s = measure_draft_level(draft) if draft is not None and fixed is None else None
    return SpecplanPlanner(sp, cost, args.n_max, args.gamma, mode=args.mode, budget=args.budget,
                           layout=args.layout, gate=args.gate == "on", draft_level_s=level_s,
                           fixed_level_s=fixed)
