#!/usr/bin/env python3
"""The batch what-if on engine-grade profiles: one `specplan whatif --concurrency` per (GPU, engine).

  python3 scripts/whatif/engine_concurrency.py [--specplan build/cli/specplan] [--model qwen3-8b]
      [--gpus h100,a100,l40s] [--engines sglang,vllm,trtllm] [--draft-share 0.15] [--n-max 64]
      [--concurrency 1,2,4,8,16,32,64,128,256] [--calibrate] [--batch-scan]

For each GPU and engine it prices the bundled trace with that engine's profile, with a parallel
drafter whose pass costs --draft-share of one plain decoding step of that engine on that GPU
(T_verify(1, 1024) from `specplan estimate`), and prints one Markdown table: per B the batch
planner's tree size and speedup over plain decoding, the best static budget per B and its speedup,
and the B where speculation stops paying. Every figure comes from the commands it prints.
"""
import argparse
import json
import subprocess
import sys


def run(cmd):
    print("$ " + " ".join(cmd), file=sys.stderr)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specplan", default="build/cli/specplan")
    ap.add_argument("--model", default="qwen3-8b")
    ap.add_argument("--gpus", default="h100,a100,l40s")
    ap.add_argument("--engines", default="sglang,vllm,trtllm")
    ap.add_argument("--draft-share", type=float, default=0.15)
    ap.add_argument("--n-max", type=int, default=64)
    ap.add_argument("--concurrency", default="1,2,4,8,16,32,64,128,256")
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--batch-scan", action="store_true")
    a = ap.parse_args()
    sizes = [int(b) for b in a.concurrency.split(",")]
    print("| GPU | engine | T_AR(1) ms | draft ms | " +
          " | ".join(f"B={b}" for b in sizes) + " | stops paying |")
    print("| --- | --- | --- | --- | " + " | ".join("---" for _ in sizes) + " | --- |")
    for gpu in a.gpus.split(","):
        for engine in a.engines.split(","):
            est = run([a.specplan, "estimate", "--model", a.model, "--gpu", gpu, "--engine", engine,
                       "--s", "1", "--c", "1024", "--json"])
            t_ar = est["predicted_s"] * 1e3
            draft = round(a.draft_share * t_ar, 2)
            cmd = [a.specplan, "whatif", "--model", a.model, "--gpu", gpu, "--engine", engine,
                   "--n-max", str(a.n_max), "--t-draft-ms", str(draft), "--concurrency",
                   a.concurrency, "--best-fixed", "--json"]
            if a.calibrate:
                cmd.append("--calibrate")
            if a.batch_scan:
                cmd.append("--batch-scan")
            r = run(cmd)
            rows = {(row["batch"], row["strategy"]): row for row in r["rows"]}
            cells = []
            for i, b in enumerate(sizes):
                bp = rows[(b, "batch")]
                bf = rows[(b, "best-fixed")]
                cells.append(f"{bp['mean_tree_size']:.1f} n, {bp['speedup']:.2f}x / "
                             f"{r['best_fixed_budgets'][i]}, {bf['speedup']:.2f}x")
            stop = r["stop_paying_batch"]
            print(f"| {est['gpu']} | {engine} | {t_ar:.2f} | {draft:.2f} | " + " | ".join(cells) +
                  f" | {stop if stop else 'never (to ' + str(sizes[-1]) + ')'} |")


if __name__ == "__main__":
    main()
