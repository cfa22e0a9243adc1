"""Planners for the engine loop: every step, the batch's draft lattices -> what each request
verifies (a SeqPlan: tokens, positions c + depth, ancestor mask, SGLang's links).

  SpecplanPlanner  specplan.plan_batch (the batch planner) with layout='sglang': the trees and
                   SGLang's EAGLE verification tensors in one call
  ChainPlanner     a top-1 chain of fixed depth per request (no specplan; the bring-up planner)
  ArPlanner        root-only trees (plain decoding)
"""

import os

import numpy as np

from trees import SeqPlan, Tree, seq_plan_of_tree


class ArPlanner:
    name = "ar"
    needs_draft = False
    max_tree_nodes = 0

    def plan(self, roots, tokens, probs, contexts, t_draft_ms=0.0):
        return [seq_plan_of_tree(Tree([r], [-1]), c) for r, c in zip(roots, contexts)]

    def observe(self, seq_plans, accepted):
        pass


class ChainPlanner:
    needs_draft = True

    def __init__(self, depth):
        self.depth = depth
        self.max_tree_nodes = depth
        self.name = f"chain:{depth}"

    def plan(self, roots, tokens, probs, contexts, t_draft_ms=0.0):
        d = min(self.depth, tokens.shape[1])
        return [seq_plan_of_tree(Tree([r] + tokens[b, :d, 0].tolist(), list(range(-1, d))), c)
                for b, (r, c) in enumerate(zip(roots, contexts))]

    def observe(self, seq_plans, accepted):
        pass


class SurrogateCalibration:
    """The forgetful ratio of realised draft tokens to promised ones (planner/speculation_gate.h
    AcceptanceEstimator::surrogate_scale): (sum f^age L + w0) / (sum f^age (Â - 1) + w0), clamped
    to [1/64, 64]; the planner's acceptance_scale, so an over-confident drafter gets smaller
    trees."""

    def __init__(self, forget=0.9, prior=1.0):
        self.forget, self.prior = forget, prior
        self.num = self.den = 0.0

    def observe(self, expected_accepted, accepted_length):
        self.num = self.forget * self.num + accepted_length
        self.den = self.forget * self.den + max(0.0, expected_accepted - 1.0)

    @property
    def scale(self):
        return min(64.0, max(1.0 / 64.0, (self.num + self.prior) / (self.den + self.prior)))


class SpecplanPlanner:
    """specplan.plan_batch over every request's chain lattice, with SGLang's layout."""

    needs_draft = True

    def __init__(self, specplan, cost, n_max, mode="controller", budget=0, layout="ragged",
                 calibrate=True):
        self.sp, self.cost = specplan, cost
        self.max_tree_nodes = n_max       # per request
        self.mode, self.budget = mode, budget
        self.padded = layout == "sglang"  # verify SGLang's padded [B][D] slots as they are
        self.calibration = SurrogateCalibration() if calibrate else None
        what = cost.profile_id or f"roofline {cost.gpu} x {cost.model}" if cost else "no cost"
        self.name = f"specplan.plan_batch ({mode}, {what})"
        self.last = None

    def plan(self, roots, tokens, probs, contexts, t_draft_ms=0.0):
        sp, B = self.sp, len(roots)
        reqs = [(sp.Marginals(int(roots[b]), tokens[b], probs[b]), int(contexts[b]),
                 self.max_tree_nodes) for b in range(B)]
        total = self.budget if self.mode == "fixed" and self.budget else self.max_tree_nodes * B
        kw = dict(n_max=total, mode=self.mode, layout="sglang", tree_mask_mode="QLEN_ONLY")
        if self.cost is not None:
            kw.update(drafter="ar", t_draft_ms=t_draft_ms, draft_batch_growth=0.0)
        if self.calibration is not None:
            kw["acceptance_scale"] = self.calibration.scale
        bp = sp.plan_batch(reqs, self.cost, **kw)
        self.last = bp
        lay = bp.layout
        D = int(lay["draft_token_num"])
        draft_tokens = lay["draft_tokens"].reshape(B, D)
        positions = lay["positions"].reshape(B, D)
        mask = lay["tree_mask"].reshape(B, D, D)
        nxt, sib = lay["retrive_next_token"], lay["retrive_next_sibling"]
        n, ea = bp.n, bp.expected_accepted
        out = []
        for b in range(B):
            s = D if self.padded else int(n[b]) + 1
            out.append(SeqPlan(draft_tokens[b, :s].tolist(), positions[b, :s],
                               mask[b, :s, :s] if s > 1 else None, nxt[b, :s].tolist(),
                               sib[b, :s].tolist(), int(n[b]), float(ea[b])))
        return out

    def observe(self, seq_plans, accepted):
        if self.calibration is None:
            return
        for p, a in zip(seq_plans, accepted):
            if p.n > 0:
                self.calibration.observe(p.expected_accepted, a)


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
                   help="--mode fixed: draft nodes over the batch per step (0 = --n-max x B)")
    g.add_argument("--layout", default="ragged", choices=["ragged", "sglang"],
                   help="ragged: verify each tree's s_i nodes (packed, as the runtime); sglang: "
                        "verify SGLang's padded D slots per request as they come")
    g.add_argument("--no-calibrate", action="store_true",
                   help="do not scale the planner's surrogate by the observed acceptance")


def import_specplan():
    try:
        import specplan
    except ImportError as e:
        raise RuntimeError(f"cannot import specplan ({e}): build it (flock /tmp/specplan-build.lock "
                           "cmake --build build --target _specplan) and run with "
                           "PYTHONPATH=build/python; or use --planner chain|ar") from e
    return specplan


def make_planner(args, target):
    if args.planner == "ar":
        return ArPlanner()
    if args.chain_depth > args.gamma:
        raise ValueError(f"--chain-depth = {args.chain_depth}: must be <= --gamma = {args.gamma}")
    if args.planner == "chain":
        return ChainPlanner(args.chain_depth)
    sp = import_specplan()
    if args.budget < 0:
        raise ValueError(f"--budget = {args.budget}: must be >= 0")
    if args.profile:
        if not os.path.exists(args.profile):
            raise ValueError(f"--profile {args.profile}: no such file")
        cost = sp.Cost(profile=args.profile)
    elif args.mode == "fixed" and args.gpu == "none":
        cost = None
    else:
        cost = sp.Cost(gpu=args.gpu, model=args.cost_model, engine=args.engine)
    return SpecplanPlanner(sp, cost, args.n_max, mode=args.mode, budget=args.budget,
                           layout=args.layout, calibrate=not args.no_calibrate)
