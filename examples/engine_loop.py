#!/usr/bin/python3
"""A reference speculative-decoding engine loop in PyTorch, shaped like SGLang's EAGLE worker,
that plans every step's draft trees for the whole batch through specplan's Python module.

Per step (docs/engine-loop.md has the details and the SGLang field mapping):
  1. admit: waiting requests take free slots (continuous batching) and are prefilled together
     in one ragged causal pass; their first token is the prefill's argmax;
  2. draft: every running request's draft model (models/draft) runs its greedy chain of gamma
     steps from the pending token, batched over requests (one forward per depth level), giving
     a gamma x k top-k lattice (marginals) per request;
  3. plan: specplan.plan_batch sizes all requests' trees from one budget (n_i = 0: that request
     does not speculate this step), and the tree outputs / SGLang layout come from specplan;
  4. verify: the target (models/target) runs ONE forward over the batch: every request's tree
     tokens at positions c_i + depth over its own KV cache, with the tree (ancestor) mask;
  5. accept: greedy, walking retrive_next_token / retrive_next_sibling as SGLang's
     verify_tree_greedy does; compact the KV cache (accepted path's rows into place, the rest
     dropped); the draft cache keeps its accepted chain rows;
  6. finished requests leave.
The model code (examples/engine_loop/qwen3_torch.py) is runtime/transformer.cc op for op, so
greedy outputs equal plain autoregressive decoding and specplan-bench's.

  /usr/bin/python3 examples/engine_loop.py                        # bundled models and prompts
  PYTHONPATH=build/python /usr/bin/python3 examples/engine_loop.py --batch 8 --json out.json
"""

import argparse
import json
import os
import sys
import time
from typing import Any

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "engine_loop"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from qwen3_torch import Segment, Transformer, tree_mask_block  # noqa: E402
import plan_glue  # noqa: E402
from prompts import load_requests  # noqa: E402
from trees import Tree, accept_greedy_sglang, seq_plan_of_tree  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- requests, drafting, the loop ------------------------------------------------------------

class Request:
    def __init__(self, rid, prompt, max_new_tokens):
        self.rid = rid
        self.prompt = list(prompt)
        self.max_new_tokens = max_new_tokens
        self.committed = list(prompt)  # ends with the pending root once prefilled
        self.output = []
        self.cache: Any = None        # target KV: slots [0, c) = committed[:-1]
        self.draft_cache: Any = None  # draft KV: slots [0, draft_cache.length)
        self.steps = 0
        self.accepted = 0
        self.drafted = 0

    @property
    def c(self):
        return self.cache.length

    def done(self):
        return len(self.output) >= self.max_new_tokens

    def emit(self, tokens):
        self.committed.extend(tokens)
        self.output.extend(tokens)
        del self.output[self.max_new_tokens:]  # the excess is the target's own continuation


def softmax_topk(logits, k):
    """runtime::SoftmaxTopK: top k of softmax in float64, probs shrunk by 1e-6 relative so a row
    sums to <= 1 in float32. logits [m][V] -> tokens int32 [m][k], probs float32 [m][k]."""
    p = torch.softmax(logits.to(torch.float64), -1)
    vals, idx = p.topk(k)
    return idx.to(torch.int32).numpy(), (vals * (1.0 - 1e-6)).to(torch.float32).numpy()


class Engine:
    """Continuous batching over a target and a draft model, one verification pass per step."""

    def __init__(self, target, draft, planner, max_batch=8, gamma=6, top_k=4, log=None):
        if draft is not None and draft.config.vocab_size != target.config.vocab_size:
            raise ValueError(f"draft vocab_size = {draft.config.vocab_size}: must equal the "
                             f"target's {target.config.vocab_size}")
        self.target, self.draft, self.planner = target, draft, planner
        self.max_batch, self.gamma, self.top_k = max_batch, gamma, top_k
        self.waiting, self.running, self.finished = [], [], []
        self.step_log = []
        self.log = log
        self.max_tree = planner.max_tree_nodes

    def add_request(self, rid, prompt, max_new_tokens):
        self.waiting.append(Request(rid, prompt, max_new_tokens))

    # 1. admission and prefill
    def _admit(self):
        new = []
        while self.waiting and len(self.running) < self.max_batch:
            r = self.waiting.pop(0)
            max_len = len(r.prompt) + r.max_new_tokens + self.max_tree + 2
            r.cache = self.target.new_cache(max_len)
            if self.draft is not None:
                r.draft_cache = self.draft.new_cache(max_len + self.gamma + 1)
            self.running.append(r)
            new.append(r)
        if not new:
            return new
        segs = [Segment(torch.tensor(r.prompt, dtype=torch.int64),
                        torch.arange(len(r.prompt), dtype=torch.int64), 0, r.cache) for r in new]
        logits = self.target.forward_batch(segs)
        ends = np.cumsum([len(r.prompt) for r in new]) - 1
        first = logits[torch.as_tensor(ends)].argmax(-1).tolist()
        for r, t in zip(new, first):
            r.cache.length = len(r.prompt)
            r.emit([t])
        return new

    # 2. drafting: the greedy chain of each request, batched by depth level
    def _draft(self, reqs, depth):
        B, k = len(reqs), self.top_k
        tokens = np.zeros((B, depth, k), dtype=np.int32)
        probs = np.zeros((B, depth, k), dtype=np.float32)
        # Catch-up: each draft cache is fed the committed tokens it lacks (root included).
        segs = []
        for r in reqs:
            n, have = len(r.committed), r.draft_cache.length
            segs.append(Segment(torch.tensor(r.committed[have:], dtype=torch.int64),
                                torch.arange(have, n, dtype=torch.int64), have, r.draft_cache))
        logits = self.draft.forward_batch(segs)
        rows = logits[torch.as_tensor(np.cumsum([s.tokens.numel() for s in segs]) - 1)]
        for r in reqs:
            r.draft_cache.length = len(r.committed)
        for d in range(depth):
            tokens[:, d], probs[:, d] = softmax_topk(rows, k)
            if d + 1 == depth:
                break
            # Feed each chain's greedy token at slot root + 1 + d (causal: the chain is contiguous).
            segs = []
            for b, r in enumerate(reqs):
                slot = len(r.committed) + d
                segs.append(Segment(torch.tensor([int(tokens[b, d, 0])], dtype=torch.int64),
                                    torch.tensor([slot], dtype=torch.int64), slot, r.draft_cache))
            rows = self.draft.forward_batch(segs)
        return tokens, probs

    @staticmethod
    def _draft_commit(r, chain, accepted_tokens):
        """DraftModelDrafter::Commit: keep the draft rows of the accepted prefix that follows the
        fed greedy chain (those rows already sit at slots root + 1 + d); call before emit."""
        keep = 0
        for a, t in zip(accepted_tokens, chain):
            if a != t:
                break
            keep += 1
        r.draft_cache.length = len(r.committed) + keep

    def step(self):
        t0 = time.perf_counter()
        new = self._admit()
        t1 = time.perf_counter()
        for r in [r for r in new if r.done()]:
            self._retire(r)
        reqs = list(self.running)
        rec = {"step": len(self.step_log), "batch": len(reqs), "joined": len(new),
               "prefill_ms": 1e3 * (t1 - t0)}
        if not reqs:
            return rec
        # 2. the gate (specplan.SpeculationGate: does this step draft, how deep), then draft
        contexts = [r.c for r in reqs]
        roots = [r.committed[-1] for r in reqs]
        depth = self.planner.decide(contexts) if self.draft is not None else 0
        tg = time.perf_counter()
        marg_tokens = marg_probs = None
        if depth > 0:
            marg_tokens, marg_probs = self._draft(reqs, depth)
            # a request's share of one batched level: decide_batch and plan_batch (growth 1)
            # price B requests' drafting as B times it, i.e. as the batched level measured
            self.planner.observe_draft_level((time.perf_counter() - tg) / depth / len(reqs))
        t2 = time.perf_counter()
        # 3. plan (specplan.plan_batch): every request's tree and what it verifies
        if depth > 0:
            plans = self.planner.plan(roots, marg_tokens, marg_probs, contexts)
        else:  # a plain decoding step for every request: root-only trees, no draft model
            plans = [seq_plan_of_tree(Tree([t], [-1]), c) for t, c in zip(roots, contexts)]
        t3 = time.perf_counter()
        # 4. verify: one target pass over every request's tree
        segs = []
        for r, sp in zip(reqs, plans):
            mask = tree_mask_block(sp.mask, sp.s) if sp.s > 1 else None
            segs.append(Segment(torch.tensor(sp.tokens, dtype=torch.int64),
                                torch.as_tensor(sp.positions, dtype=torch.int64), r.c, r.cache,
                                mask))
        logits = self.target.forward_batch(segs)
        predict = logits.argmax(-1).tolist()
        t4 = time.perf_counter()
        # 5. accept (greedy, SGLang's walk) and compact the KV caches
        committed = drafted = verified = 0
        accepted_lengths = []
        for b, (r, sp) in enumerate(zip(reqs, plans)):
            rows = predict[verified:verified + sp.s]
            verified += sp.s
            nodes, bonus = accept_greedy_sglang(sp.tokens, sp.next_token, sp.next_sibling, rows)
            c = r.c
            r.cache.gather([c + i for i in nodes], c)
            r.cache.length = c + len(nodes)
            accepted_tokens = [sp.tokens[i] for i in nodes[1:]]
            if marg_tokens is not None:
                self._draft_commit(r, marg_tokens[b, :-1, 0].tolist(), accepted_tokens)
            r.emit(accepted_tokens + [bonus])
            r.steps += 1
            r.accepted += len(accepted_tokens)
            r.drafted += sp.n
            committed += len(accepted_tokens) + 1
            drafted += sp.n
            accepted_lengths.append(len(accepted_tokens))
        if depth > 0:
            self.planner.observe(plans, accepted_lengths)
        for r in [r for r in reqs if r.done()]:
            self._retire(r)
        t5 = time.perf_counter()
        rec.update({"depth": depth, "gate_ms": 1e3 * (tg - t1),
                    "specplan_ms": 1e3 * getattr(self.planner, "call_s", 0.0),
                    "draft_ms": 1e3 * (t2 - tg), "plan_ms": 1e3 * ((tg - t1) + (t3 - t2)),
                    "verify_ms": 1e3 * (t4 - t3), "accept_ms": 1e3 * (t5 - t4),
                    "step_ms": 1e3 * (t5 - t0), "drafted": drafted, "tokens": committed,
                    "verified": verified, "accepted": sum(accepted_lengths)})
        return rec

    def _retire(self, r):
        self.running.remove(r)
        self.finished.append(r)

    def run(self, progress_every=0):
        total = len(self.waiting) + len(self.running)
        while self.waiting or self.running:
            rec = self.step()
            self.step_log.append(rec)
            if self.log is not None and "step_ms" in rec:
                self.log(rec)
            if progress_every and len(self.step_log) % progress_every == 0:
                print(f"engine_loop: step {len(self.step_log)}, {len(self.finished)}/{total} "
                      "requests done", file=sys.stderr, flush=True)
        return {r.rid: r.output for r in self.finished}


def generate_ar(model, prompt, max_new_tokens):
    """Plain autoregressive greedy decoding with the same model code (the reference)."""
    cache = model.new_cache(len(prompt) + max_new_tokens + 1)
    logits = model.forward_causal(prompt, 0, cache)
    out = [int(logits[-1].argmax())]
    pos = len(prompt)
    while len(out) < max_new_tokens:
        out.append(int(model.forward_causal([out[-1]], pos, cache)[0].argmax()))
        pos += 1
    return out


# ---- command line ----------------------------------------------------------------------------

def _stats(values):
    v = np.asarray(values if values else [0.0], dtype=np.float64)
    return {"mean": float(v.mean()), "p50": float(np.percentile(v, 50)),
            "p99": float(np.percentile(v, 99)), "total": float(v.sum())}


def summarize(step_log, outputs, wall_s, args_dict):
    """The --json summary: per-step planning time (specplan's calls alone, and with this loop's
    glue) against the whole step, overall and by the number of requests in the step."""
    steps = [s for s in step_log if "step_ms" in s]
    step_total = sum(s["step_ms"] for s in steps)
    by_batch: dict = {}
    for s in steps:
        by_batch.setdefault(s["batch"], []).append(s)
    return {
        "args": args_dict,
        "steps": len(steps),
        "wall_s": wall_s,
        "tokens": sum(len(o) for o in outputs),
        "tokens_per_s": sum(len(o) for o in outputs) / wall_s if wall_s > 0 else None,
        "drafted": sum(s["drafted"] for s in steps),
        "accepted": sum(s["accepted"] for s in steps),
        "drafting_steps": sum(1 for s in steps if s["depth"] > 0),
        "specplan_ms": _stats([s["specplan_ms"] for s in steps]),
        "plan_ms": _stats([s["plan_ms"] for s in steps]),
        "step_ms": _stats([s["step_ms"] for s in steps]),
        "plan_fraction": sum(s["plan_ms"] for s in steps) / step_total if step_total else 0.0,
        "specplan_fraction": (sum(s["specplan_ms"] for s in steps) / step_total
                              if step_total else 0.0),
        "by_batch": {str(b): {"steps": len(v),
                              "specplan_ms": _stats([s["specplan_ms"] for s in v]),
                              "plan_ms": _stats([s["plan_ms"] for s in v]),
                              "step_ms": _stats([s["step_ms"] for s in v]),
                              "drafted_per_step": float(np.mean([s["drafted"] for s in v]))}
                     for b, v in sorted(by_batch.items())},
        "outputs": outputs,
        "step_log": step_log,
    }


def positive_int(flag, least=1):
    def parse(v):
        try:
            n = int(v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} = {v!r}: expected an integer")
        if n < least:
            raise argparse.ArgumentTypeError(f"{flag} = {n}: must be >= {least}")
        return n
    return parse


def nonnegative_int(flag):
    return positive_int(flag, least=0)


def add_int_flags(p, least, flags):
    """Adds integer flags that must be >= least, each given as (flag, default, help)."""
    for flag, default, text in flags:
        p.add_argument(flag, type=positive_int(flag, least), default=default, help=text)


def build_parser():
    p = argparse.ArgumentParser(
        prog="engine_loop.py", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Reference speculative-decoding engine loop (PyTorch, CPU): continuous "
                    "batching, draft model chains, specplan's batch planner every step, one "
                    "tree-verification pass, greedy acceptance, KV compaction.",
        epilog="Run with /usr/bin/python3 and PYTHONPATH=build/python (specplan's module). "
               "See docs/engine-loop.md.")
    p.add_argument("--target", default=os.path.join(REPO, "models", "target"),
                   help="target checkpoint directory (config.json + model.safetensors)")
    p.add_argument("--draft", default=os.path.join(REPO, "models", "draft"),
                   help="draft model checkpoint directory")
    p.add_argument("--prompts", default=os.path.join(REPO, "runtime", "prompts",
                                                     "heldout-text.jsonl"),
                   help='JSONL, one {"ids": [...]} or {"text": "..."} per line (optional '
                        '"max_new_tokens" per line)')
    p.add_argument("--tokenizer", default=os.path.join(REPO, "models", "tokenizer.model"),
                   help="SentencePiece model for text prompts")
    p.add_argument("--tokenizer-bin", default=os.path.join(REPO, "build", "tokenizer",
                                                           "specplan-tokenizer"),
                   help="the specplan-tokenizer executable")
    add_int_flags(p, 0, [("--max-prompts", 0, "use the first N prompts (0 = all)")])
    add_int_flags(p, 1, [
        ("--repeat", 1, "submit the prompt list this many times (more requests than slots)"),
        ("--max-new-tokens", 32,
         "tokens generated per request (a prompt line's own max_new_tokens wins)"),
        ("--batch", 8, "requests in flight (continuous batching)")])
    p.add_argument("--planner", default="specplan", choices=["specplan", "chain", "ar"],
                   help="specplan: specplan.plan_batch over the chain lattices; chain: a top-1 "
                        "chain of --chain-depth nodes per request (no specplan); ar: root-only")
    add_int_flags(p, 1, [
        ("--chain-depth", 3, "--planner chain: draft nodes per request (<= --gamma)"),
        ("--gamma", 6, "draft chain depth (lattice rows)"),
        ("--top-k", 4, "candidates per lattice row"),
        ("--n-max", 32, "most draft nodes per request tree")])
    plan_glue.add_arguments(p)
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"],
                   help="weights and activations (as specplan-bench --dtype)")
    p.add_argument("--threads", type=nonnegative_int("--threads"), default=0,
                   help="torch intra-op threads (0 = torch's default)")
    p.add_argument("--check-ar", action="store_true",
                   help="also decode every prompt autoregressively and compare")
    p.add_argument("--json", dest="json_out", help="write the summary (and outputs) here")
    p.add_argument("--quiet", action="store_true", help="no per-step lines")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    flag = "--target"
    try:
        target = Transformer.load(args.target, dtype)
        flag = "--draft"
        draft = Transformer.load(args.draft, dtype) if args.planner != "ar" else None
        flag = "--prompts"
        requests = load_requests(args.prompts, target.config.vocab_size, args.max_new_tokens,
                                 args.tokenizer, args.tokenizer_bin, args.max_prompts)
        flag = f"--planner {args.planner}"
        planner = plan_glue.make_planner(args, draft)
    except (OSError, ValueError, LookupError, TypeError, RuntimeError) as e:
        print(f"engine_loop.py: {flag}: {e}", file=sys.stderr)
        return 2

    def log(rec):
        if not args.quiet:
            print(f"step {rec['step']:4d}  B={rec['batch']:3d}  tokens={rec['tokens']:4d}  "
                  f"drafted={rec['drafted']:4d}  prefill={rec['prefill_ms']:7.2f}  "
                  f"draft={rec['draft_ms']:7.2f}  plan={rec['plan_ms']:6.3f} "
                  f"(specplan {rec['specplan_ms']:6.3f})  "
                  f"verify={rec['verify_ms']:7.2f}  accept={rec['accept_ms']:6.2f}  "
                  f"step={rec['step_ms']:7.2f} ms  plan/step={rec['plan_ms'] / rec['step_ms']:.2%}",
                  flush=True)

    engine = Engine(target, draft, planner, max_batch=args.batch, gamma=args.gamma,
                    top_k=args.top_k, log=log)
    n = 0
    for _ in range(args.repeat):
        for ids, max_new in requests:
            engine.add_request(n, ids, max_new)
            n += 1
    print(f"engine_loop: target {args.target} ({target.config.num_layers} layers), draft "
          f"{args.draft if draft else '-'}, planner {planner.name}, {n} requests, batch "
          f"{args.batch}, {args.dtype}, {torch.get_num_threads()} threads", file=sys.stderr)
    t0 = time.perf_counter()
    outputs = engine.run(progress_every=50 if args.quiet else 0)
    wall = time.perf_counter() - t0
    ordered = [outputs[i] for i in range(n)]
    summary = summarize(engine.step_log, ordered, wall,
                        {k: v for k, v in vars(args).items()})
    summary["planner"] = planner.name
    exact = None
    if args.check_ar:
        exact = all(generate_ar(target, ids, m) == out
                    for (ids, m), out in zip(requests * args.repeat, ordered))
        summary["greedy_equals_ar"] = exact
    print(f"done: {summary['steps']} steps ({summary['drafting_steps']} drafted), "
          f"{summary['tokens']} tokens in {wall:.2f} s ({summary['tokens_per_s']:.1f} tok/s); "
          f"drafted {summary['drafted']} nodes, accepted {summary['accepted']}; per step: plan "
          f"{summary['plan_ms']['mean']:.3f} ms (specplan's calls "
          f"{summary['specplan_ms']['mean']:.3f}"
          f" ms, p99 {summary['specplan_ms']['p99']:.3f}) of {summary['step_ms']['mean']:.2f} ms "
          f"= {summary['plan_fraction']:.2%} (specplan {summary['specplan_fraction']:.2%})"
          + ("" if exact is None else f"; outputs == AR: {exact}"))
    if summary["drafted"] == 0 and args.planner == "specplan":
        if args.draft_level_ms is not None:
            level = f"a draft level priced at {args.draft_level_ms:g} ms per request"
        else:
            level = (f"a draft level measured {1e3 * (getattr(planner, 'level_s', 0) or 0):.2f} "
                     "ms per request on this machine")
        print(f"note: no step verified a draft tree: under {planner.name} drafting does not pay "
              f"({level}); --draft-level-ms prices a GPU drafter's level, --gate off --mode "
              "fixed forces trees", file=sys.stderr)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    return 0 if exact in (None, True) else 1


if __name__ == "__main__":
    sys.exit(main())
