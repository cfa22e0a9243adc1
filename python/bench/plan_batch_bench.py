#!/usr/bin/env python3
"""PlanBatch from Python against the same call from C++, on one machine.

Workload: microbench/batch_plan_bench.cc's (B requests, gamma = 16, K = 8, seeds 100 + i, contexts
512 (1 + i % 8), the bare H100 x Qwen3-8B roofline, t_draft 0.5 ms, t_aux 0.1 ms, N = n_max over
the batch) with outputs. Three timings per mode, all medians of many single calls:

  python  specplan.plan_batch_arrays(..., layout="ragged"): arrays in, the plan and the ragged
          layout (positions, packed masks, retrieve matrices) out, timed with timeit from Python;
  cpp     _specplan_bench.plan_batch_cpp(outputs="ragged") (python/bench/bind_bench.cc, a
          test-only extension built into build/python_bench/, not part of the package):
          BatchPlanner::Plan + ComputeBatchLayout timed in a C++ loop (steady_clock around each
          call; one planner, plan and layout reused, as an engine linking the library would), no
          Python in between; the same arrays read by the same reader, the same cycle;
  gbench  build/microbench/batch_plan_bench's BM_PlanBatch<Mode>/B/N (Plan + ComputeTreeOutputs per
          request, Google Benchmark's mean of its own iterations), when the binary exists.

python / cpp is the overhead of calling from Python. The two alternate in short rounds (a few
calls each, about a millisecond) so that load from other processes hits both alike; reported are
the ratio of the medians, the median of the per-round ratios (the most robust on a loaded
machine) and the ratio of the minima. Also reported: the list form (plan_batch over
specplan.Marginals objects) and the Python call plus reading every output (layout dict, trees).

  PYTHONPATH=build/python /usr/bin/python3 python/bench/plan_batch_bench.py [--b 64] [--n 4096]
      [--modes fixed,scan,controller] [--rounds 300] [--per-round 5] [--check 1.15] [--json FILE]
      [--build-dir build]
"""

import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import timeit

import specplan

ROOT = pathlib.Path(__file__).resolve().parents[2]


def bench_module(build_dir):
    """The test-only timing module from build_dir/python_bench (never installed)."""
    where = pathlib.Path(build_dir) / "python_bench"
    sys.path.insert(0, str(where))
    try:
        import _specplan_bench
    except ImportError as e:
        sys.exit(f"cannot import _specplan_bench from {where} ({e}): build the target "
                 "_specplan_bench (flock /tmp/specplan-build.lock cmake --build build --target "
                 "_specplan_bench)")
    finally:
        sys.path.remove(str(where))
    return _specplan_bench


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def gbench(binary, mode, b, n):
    name = f"BM_PlanBatch{mode.capitalize()}/{b}/{n}"
    if not binary.exists():
        return None
    out = subprocess.run([str(binary), f"--benchmark_filter=^{name}$", "--benchmark_format=json",
                          "--benchmark_repetitions=5", "--benchmark_report_aggregates_only=true"],
                         capture_output=True, text=True, check=True)
    for row in json.loads(out.stdout)["benchmarks"]:
        if row.get("aggregate_name") == "median":
            scale = {"us": 1e-6, "ns": 1e-9, "ms": 1e-3}[row["time_unit"]]
            return row["real_time"] * scale
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--b", type=int, default=64)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--modes", default="fixed,scan,controller")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--per-round", type=int, default=5)
    ap.add_argument("--gbench", default=str(ROOT / "build" / "microbench" / "batch_plan_bench"))
    ap.add_argument("--check", type=float, default=0.0,
                    help="exit 1 when a python / cpp ratio exceeds this (0: report only)")
    ap.add_argument("--json", default="", help="also write the figures to this file")
    ap.add_argument("--build-dir", default=str(ROOT / "build"),
                    help="where python_bench/_specplan_bench*.so was built")
    a = ap.parse_args()

    bench = bench_module(a.build_dir)
    w = bench.bench_batch(a.b)
    with tempfile.TemporaryDirectory() as empty:  # no profiles: the bare roofline, as the C++ bench
        cost = specplan.Cost(gpu="h100", model="qwen3-8b", calib_dir=empty)
    assert cost.kind == "roofline" and cost.profile_id == ""
    kw = dict(n_max=a.n, t_draft_ms=0.5, t_aux_ms=0.1)
    args = (w["root_tokens"], w["tokens"], w["probs"], w["context_lens"], cost)
    marginals = [specplan.Marginals(int(r), t, p) for r, t, p in
                 zip(w["root_tokens"], w["tokens"], w["probs"])]
    requests = [specplan.Request(m, int(c)) for m, c in zip(marginals, w["context_lens"])]

    print(f"PlanBatch B = {a.b}, N = {a.n}, gamma 16, K 8, H100 x Qwen3-8B roofline, with outputs;"
          f" {cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"medians of {a.rounds} rounds x {a.per_round} calls, python and cpp alternating by round;"
          " ratios: of the medians / median of per-round ratios / of the minima")
    header = (f"{'mode':<11}{'N*':>6}{'cpp us':>9}{'python us':>11}{'ratio':>7}{'rounds':>8}"
              f"{'minima':>8}{'list form':>11}{'+ read out':>12}{'gbench us':>11}")
    print(header)
    rows, worst = [], 0.0
    for mode in a.modes.split(","):
        call = lambda: specplan.plan_batch_arrays(*args, mode=mode, layout="ragged", **kw)  # noqa: E731
        listed = lambda: specplan.plan_batch(requests, cost, mode=mode, layout="ragged", **kw)  # noqa: E731

        def read_all():
            bp = call()
            bp.layout, bp.trees, bp.n, bp.expected_accepted  # noqa: B018 (materialise)

        n_star = call().n_total
        assert listed().n_total == n_star
        for f in (call, listed, read_all):  # warm up
            f()
        cpp, py, lst, full, per_round = [], [], [], [], []
        for r in range(a.rounds):
            c = list(bench.plan_batch_cpp(*args, mode=mode, outputs="ragged",
                                          repeats=a.per_round, **kw))
            p = timeit.repeat(call, number=1, repeat=a.per_round)
            cpp += c
            py += p
            per_round.append(statistics.median(p) / statistics.median(c))
            if r % 2 == 0:
                lst += timeit.repeat(listed, number=1, repeat=a.per_round)
            else:
                full += timeit.repeat(read_all, number=1, repeat=a.per_round)
        m = {k: statistics.median(v) for k, v in
             dict(cpp=cpp, python=py, list=lst, read=full).items()}
        g = gbench(pathlib.Path(a.gbench), mode, a.b, a.n)
        ratio = m["python"] / m["cpp"]
        rounds_ratio = statistics.median(per_round)
        min_ratio = min(py) / min(cpp)
        worst = max(worst, ratio)
        rows.append(dict(mode=mode, n_star=n_star, cpp_s=m["cpp"], python_s=m["python"],
                         ratio=ratio, round_ratio=rounds_ratio, min_ratio=min_ratio,
                         list_form_s=m["list"], read_out_s=m["read"], gbench_s=g))
        print(f"{mode:<11}{n_star:>6}{m['cpp'] * 1e6:>9.1f}{m['python'] * 1e6:>11.1f}{ratio:>7.3f}"
              f"{rounds_ratio:>8.3f}{min_ratio:>8.3f}{m['list'] * 1e6:>11.1f}"
              f"{m['read'] * 1e6:>12.1f}{(g * 1e6 if g else float('nan')):>11.1f}")
    print(f"largest python / cpp ratio (of the medians): {worst:.3f}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(dict(b=a.b, n=a.n, cpu=cpu_name(), rows=rows),
                                                   indent=2) + "\n")
    if a.check and worst > a.check:
        print(f"FAIL: python / cpp = {worst:.3f} > {a.check}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
