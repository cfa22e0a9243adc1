#!/usr/bin/env python3
"""A kernel-calibrated profile against whole runtime passes measured on the same machine.

  python3 scripts/validate/kernels_vs_runtime.py [--build DIR] [--model tiny] [--gpu cpu]
      [--runs N] [--threads T] [--b-grid 1,4,16] [--work DIR] [--check MAPE]

Each run times, one after the other on this machine's CPU:
  1. `calibrate --kernels --gpu GPU --model MODEL`: LibTorch's GEMM, attention and elementwise
     kernels at the model's shapes, composed into a profile (docs/calibration.md);
  2. `calibrate --mode runtime --gpu GPU --model MODEL --samples-out cells.csv`: whole
     verification passes of specplan's runtime over the default (s, c) grid, for every b of
     --b-grid (default 1: single sequences; b > 1 is one ragged pass of b sequences, which
     attend in one call per layer as their caches are rows of one arena);
then prices every measured cell with `specplan estimate --profile <kernel profile> [--b B] --json`
(the kernel profile composed over the same --b-grid) and
prints the cells, the mean signed error (the bias) and the MAPE of the kernel profile against the
measured passes, over all cells and per b. On a shared machine (a VM) the speed of the whole
machine drifts between the two calibrations, and only ever slows a measurement down, so the report
ends with the best of the N runs on both sides: each cell's fastest measured pass against its
lowest kernel-profile price.
--threads sets OMP_NUM_THREADS for both calibrations (default: LibTorch's own). --check M exits
1 when that best-of-N MAPE exceeds M percent. Progress goes to stderr, the report (Markdown) to
stdout.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, env):
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"kernels_vs_runtime: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return p.stdout, time.time() - t0


def one_run(args, index, env):
    work = os.path.join(args.work, f"run{index}")
    os.makedirs(work, exist_ok=True)
    calibrate = os.path.join(args.build, "profiler", "calibrate")
    specplan = os.path.join(args.build, "cli", "specplan")
    kernels = os.path.join(work, args.gpu, f"{args.model}-kernels.json")
    runtime = os.path.join(work, args.gpu, f"{args.model}-runtime.json")
    cells = os.path.join(work, "cells.csv")
    for path in (kernels, runtime):
        if os.path.exists(path):
            os.remove(path)
    b_grid = ["--b-grid", args.b_grid] if args.b_grid != "1" else []
    _, tk = run([calibrate, "--gpu", args.gpu, "--model", args.model, "--out", kernels] + b_grid,
                env)
    print(f"run {index}: calibrate --kernels {tk:.0f} s", file=sys.stderr)
    _, tr = run([calibrate, "--mode", "runtime", "--gpu", args.gpu, "--model", args.model,
                 "--out", runtime, "--samples-out", cells, "--no-plot"] + b_grid, env)
    print(f"run {index}: calibrate --mode runtime {tr:.0f} s", file=sys.stderr)
    rows = []
    with open(cells) as f:
        for r in csv.DictReader(f):
            b, s, c, measured = int(r["b"]), int(r["s"]), int(r["c"]), float(r["seconds"])
            batch = ["--b", str(b)] if b > 1 else []
            out, _ = run([specplan, "estimate", "--model", args.model, "--gpu", args.gpu,
                          "--profile", kernels, "--s", str(s), "--c", str(c), "--json"] + batch,
                         env)
            predicted = json.loads(out)["predicted_s"]
            rows.append((b, s, c, measured, predicted, 100 * (predicted / measured - 1)))
    return rows


def mape(errors):
    return sum(abs(e) for e in errors) / len(errors)


def summary(errors):
    return (f"MAPE {mape(errors):.1f} %, mean error {sum(errors) / len(errors):+.1f} %, "
            f"worst {max(errors, key=abs):+.1f} %")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--gpu", default="cpu")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="OMP_NUM_THREADS (0: LibTorch's own)")
    ap.add_argument("--b-grid", default="1",
                    help="sequences per pass, comma-separated, including 1 (default 1)")
    ap.add_argument("--work", default="", help="folder for the profiles (default: a temporary one)")
    ap.add_argument("--check", type=float, default=0, help="exit 1 when a run's MAPE exceeds this")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error(f"--runs {args.runs}: must be >= 1")
    try:
        bs = [int(x) for x in args.b_grid.split(",")]
    except ValueError:
        ap.error(f"--b-grid {args.b_grid}: expected comma-separated integers")
    if 1 not in bs or min(bs) < 1:
        ap.error(f"--b-grid {args.b_grid}: must include 1, every b >= 1")
    env = dict(os.environ)
    if args.threads > 0:
        env["OMP_NUM_THREADS"] = str(args.threads)
    holder = None
    if not args.work:
        holder = tempfile.TemporaryDirectory(prefix="kernels_vs_runtime_")
        args.work = holder.name
    mapes = []
    best = {}  # (b, s, c) -> [fastest measured, lowest predicted]
    print(f"# calibrate --kernels against calibrate --mode runtime ({args.model}, {args.gpu}, "
          f"b {args.b_grid}, OMP_NUM_THREADS={args.threads or 'default'})\n")
    for i in range(1, args.runs + 1):
        rows = one_run(args, i, env)
        for b, s, c, m, p, _ in rows:
            cell = best.setdefault((b, s, c), [m, p])
            cell[0], cell[1] = min(cell[0], m), min(cell[1], p)
        errors = [e for *_, e in rows]
        worst = max(rows, key=lambda r: abs(r[5]))
        mapes.append(mape(errors))
        print(f"run {i}: {len(rows)} cells, {summary(errors)} (b = {worst[0]}, s = {worst[1]}, "
              f"c = {worst[2]})")
        if i == 1:
            print("\n| b | s | c | measured pass (ms) | kernel profile (ms) | error |")
            print("| --- | --- | --- | --- | --- | --- |")
            for b, s, c, m, p, e in rows:
                print(f"| {b} | {s} | {c} | {m * 1e3:.3f} | {p * 1e3:.3f} | {e:+.1f} % |")
            print()
    print(f"\nMAPE of each run: " + ", ".join(f"{m:.1f} %" for m in mapes))
    errors = [100 * (p / m - 1) for m, p in best.values()]
    best_mape = mape(errors)
    print(f"best of {len(mapes)} run(s), {len(best)} cells: {summary(errors)}")
    if len(bs) > 1:
        for b in sorted(set(bs)):
            eb = [100 * (p / m - 1) for (bb, _, _), (m, p) in best.items() if bb == b]
            print(f"  b = {b}: {len(eb)} cells, {summary(eb)}")
    if args.check > 0 and best_mape > args.check:
        print(f"kernels_vs_runtime: MAPE {best_mape:.1f} % > {args.check} %", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
