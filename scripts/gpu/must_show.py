#!/usr/bin/env python3
"""Issue 40's runtime must-shows, read off measured passes of specplan's runtime on a GPU.

  python3 scripts/gpu/must_show.py --samples CELLS.csv [--samples MORE.csv] --model qwen3-8b \
      --gpu h100 [--engine-profile calib/h100-sxm/qwen3-8b-bf16@sglang.json] [--specplan BIN] \
      [--c 1024] [--bandwidth BYTES_PER_S] [--check]

CELLS.csv are the cells `calibrate --mode runtime --samples-out` wrote (columns b (optional: 1
when absent), s, c, seconds; scripts/gpu/run_stages.sh's calib and calib-batch stages). Prints,
as Markdown:
  1. the b = 1 decode step (s = 1) over c = --c cached tokens against the weight-streaming floor:
     the roofline's memory time of that pass (`specplan estimate --json` memory_s: weights, KV
     cache and activations over the GPU's datasheet bandwidth; with --bandwidth, the same bytes
     over that bandwidth, e.g. hf_decode_bench.py's measured copy_bytes_per_s). Goal: 1.25x or
     less.
  2. s = 64 over c = --c against s = 1 over c = --c (b = 1). Goal: 1.15x or less.
  3. every b = 64 pass against the engine profile's price of the same pass (`specplan estimate
     --profile P --b 64 --s S --c C`). Goal: 1.3x or less, every cell.
Where a cell is missing from the samples the line says so. --check exits 1 when a goal is missed
or its cells are missing. The GEMM table and the greedy outputs are checked elsewhere (`specplan
profiles compare-kernels`, the CUDA tests and specplan-bench's "= AR").
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_cells(paths):
    """(b, s, c) -> seconds; a cell measured in several files keeps the last file's value."""
    cells = {}
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            for field in ("s", "c", "seconds"):
                if field not in (reader.fieldnames or []):
                    sys.exit(f"must_show: {path}: no column '{field}' (expected b,s,c,seconds,...)")
            for line, row in enumerate(reader, start=2):
                try:
                    key = (int(row.get("b") or 1), int(row["s"]), int(row["c"]))
                    cells[key] = float(row["seconds"])
                except ValueError as e:
                    sys.exit(f"must_show: {path}:{line}: {e}")
    return cells


def estimate(args, s, c, b=1, profile=None):
    cmd = [args.specplan, "estimate", "--model", args.model, "--gpu", args.gpu, "--s", str(s),
           "--c", str(c), "--json"]
    if b > 1:
        cmd += ["--b", str(b)]
    if profile:
        cmd += ["--profile", profile]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"must_show: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", action="append", required=True, help="cells CSV (repeatable)")
    ap.add_argument("--model", required=True)
    ap.add_argument("--gpu", required=True, help="registry name, e.g. h100 or h200")
    ap.add_argument("--engine-profile", default="",
                    help="profile the b = 64 passes are set against (default: the bundled "
                         "SGLang profile for --gpu and --model, as `estimate --engine sglang`)")
    ap.add_argument("--specplan", default=os.path.join(REPO, "build", "cli", "specplan"))
    ap.add_argument("--c", type=int, default=1024, help="cached tokens of goals 1 and 2")
    ap.add_argument("--bandwidth", type=float, default=0,
                    help="bytes/s of the floor (default: the GPU's datasheet bandwidth)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = ap.parse_args()
    if args.bandwidth < 0:
        ap.error(f"--bandwidth {args.bandwidth}: must be > 0")
    cells = read_cells(args.samples)
    rows, missed = [], []

    def goal(name, value, limit, detail):
        ok = value is not None and value <= limit
        rows.append((name, "missing" if value is None else f"{value:.2f}x", f"<= {limit}x",
                     "yes" if ok else "no", detail))
        if not ok:
            missed.append(name)

    c = args.c
    decode = cells.get((1, 1, c))
    if decode is None:
        goal("b = 1 decode step / weight-streaming floor", None, 1.25, f"no cell b = 1, s = 1, c = {c}")
    else:
        e = estimate(args, 1, c)
        floor = e["bytes"] / args.bandwidth if args.bandwidth > 0 else e["memory_s"]
        goal("b = 1 decode step / weight-streaming floor", decode / floor, 1.25,
             f"{decode * 1e3:.2f} ms against {floor * 1e3:.2f} ms (c = {c})")
    s64 = cells.get((1, 64, c))
    if decode is None or s64 is None:
        goal(f"s = 64 / s = 1 over c = {c}", None, 1.15, "needs b = 1 cells s = 1 and s = 64")
    else:
        goal(f"s = 64 / s = 1 over c = {c}", s64 / decode, 1.15,
             f"{s64 * 1e3:.2f} ms against {decode * 1e3:.2f} ms")
    b64 = sorted((s, cc, t) for (b, s, cc), t in cells.items() if b == 64)
    if not b64:
        goal("b = 64 pass / engine profile (worst cell)", None, 1.3, "no b = 64 cells")
    else:
        ratios = []
        profile = args.engine_profile or None
        for s, cc, t in b64:
            e = estimate(args, s, cc, b=64, profile=profile)
            ratios.append((t / e["predicted_s"], s, cc, t, e["predicted_s"], e.get("profile", "")))
        worst = max(ratios)
        goal("b = 64 pass / engine profile (worst cell)", worst[0], 1.3,
             f"{len(ratios)} cells, median {statistics.median(r[0] for r in ratios):.2f}x, best "
             f"{min(ratios)[0]:.2f}x; worst s = {worst[1]}, c = {worst[2]}: {worst[3] * 1e3:.2f} "
             f"ms against {worst[4] * 1e3:.2f} ms ({os.path.basename(worst[5]) or 'default'})")
    print(f"# Issue 40 must-shows: {args.model} on {args.gpu}, {', '.join(args.samples)}\n")
    print("| goal | measured | target | met | detail |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if args.check and missed:
        print(f"must_show: missed: {'; '.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
