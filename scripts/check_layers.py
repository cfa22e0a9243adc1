#!/usr/bin/env python3
"""Checks the dependency rule on the sources' #include lines.

Every top-level folder sits on a floor; a file may include headers of its own folder and of
folders on lower floors only. Inside planner/ the sub-folders are ordered the same way. No file
may be part of an include circle. And no front end (cli/, service/, python/, client/) calls a
planner, the cost resolver or a replay directly: each calls the operation (ops/), apart from the
files FRONTEND_ALLOWED lists while they are converted (an entry that is no longer needed is a
breach too, so the list only shrinks). Prints each breach as `file: includes "x" (why)` or
`file:line: calls ...` and exits 1 when there is one; exits 0 with a one-line summary otherwise.

Usage: scripts/check_layers.py [REPO_ROOT]   (default: the folder above scripts/)
"""
import os
import re
import subprocess
import sys

# Lowest first. A folder may include only folders on a strictly lower floor (and itself).
FLOORS = [
    ["util"],
    ["costmodel", "plot", "specplan"],  # specplan/: the generated gRPC/protobuf headers
    ["planner"],
    # include/specplan/: the public entry headers an engine includes (installed), over costmodel
    # and planner; ops/ implements <specplan/specplan.h>'s Planner (ops/engine_planner.cc).
    ["whatif", "tokenizer", "include"],
    ["ops"],  # the operations (docs/operations.md): what every front end calls
    ["service"],
    ["client"],
    ["cli", "runtime", "microbench"],
    ["profiler", "train", "python", "fuzz"],
]
# Edges the floors would allow but the design forbids.
FORBIDDEN = {
    ("runtime", "service"): "the runtime reaches a server only through the client library",
    ("planner", "plot"): "the planner stays free of output formats",
    ("costmodel", "plot"): "the cost model stays free of output formats",
    ("ops", "plot"): "the operations depend on costmodel, planner and whatif only",
    ("ops", "tokenizer"): "the operations depend on costmodel, planner and whatif only",
}
# planner/'s sub-folders, lowest first.
PLANNER_ORDER = ["tree", "marginals", "policies", "acceptance", "batch"]
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# The front ends, which reach the planners, the cost resolver and the replays only through ops/.
FRONTENDS = ("cli/", "service/", "python/", "client/")
# What a front end must not call itself (the operation does): (pattern, what it is).
FRONTEND_BANNED = [
    (re.compile(r'\b\w*[Pp]lanner\w*(?:\(\))?\s*(?:\.|->)\s*Plan\s*\('),
     "a planner (BestFirstPlanner / BatchPlanner ::Plan; call ops::PlanTree / ops::PlanBatch)"),
    (re.compile(r'\bplanner::MergeTrees\s*\('), "planner::MergeTrees (call ops::Merge)"),
    (re.compile(r'(?<![\w.>])(?:costmodel::)?Resolve(?:Cost|LatencyModel)\s*\('),
     "the cost resolver (costmodel::ResolveCost; use ops::CostRequest)"),
    (re.compile(r'\bwhatif::(?:RunConcurrency|RunWhatIf|ReplayChains|BuildSchedule|'
                r'BuildChainSchedule|BuildContextSchedule)\s*\('),
     "a replay (whatif::Run*, ReplayChains, Build*Schedule; call the ops/ operation)"),
]
# Front-end files not yet converted to the operations, each with who converts it. Remove an entry
# once its file calls the operation: the check fails while an entry is no longer needed.
FRONTEND_ALLOWED = {
    # Empty: every front end calls the operations. A file added here while it is converted must
    # name what it still calls and the operation it moves to.
}


def floor_of(folder):
    for i, names in enumerate(FLOORS):
        if folder in names:
            return i
    return None


def source_files(root):
    out = subprocess.run(["git", "ls-files", "*.h", "*.cc"], cwd=root, capture_output=True,
                         text=True, check=True).stdout.split()
    return [f for f in out if not f.startswith(("tests/", "examples/", "docs/"))]


def strip_comments(line):
    cut = line.find("//")
    return line if cut < 0 else line[:cut]


def frontend_breaches(root, files):
    """Direct calls of a planner, the cost resolver or a replay in the front ends."""
    out = []
    calling = set()
    for f in files:
        if not f.startswith(FRONTENDS):
            continue
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
        for no, line in enumerate(lines, 1):
            code = strip_comments(line)
            for pattern, what in FRONTEND_BANNED:
                if pattern.search(code):
                    calling.add(f)
                    if f not in FRONTEND_ALLOWED:
                        out.append(f"{f}:{no}: calls {what} directly; front ends call the "
                                   "operation (ops/)")
    for f in sorted(FRONTEND_ALLOWED):
        if f not in calling:
            out.append(f"{f}: listed in FRONTEND_ALLOWED (scripts/check_layers.py) but calls no "
                       "planner, cost resolver or replay any more: remove its entry")
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    files = source_files(root)
    known = set(files)
    breaches = []
    graph = {}
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            includes = INCLUDE_RE.findall(fh.read())
        graph[f] = [i for i in includes if i in known]
        src = f.split("/")[0]
        src_floor = floor_of(src)
        for inc in includes:
            # "specplan/cost.h" is include/specplan/cost.h; "specplan/v1/..." the generated headers.
            public = inc.startswith("specplan/") and os.path.isfile(os.path.join(root, "include", inc))
            dst = "include" if public else inc.split("/")[0]
            if dst == src:
                if src == "planner" and f.count("/") >= 2 and inc.count("/") >= 2:
                    a, b = f.split("/")[1], inc.split("/")[1]
                    if a in PLANNER_ORDER and b in PLANNER_ORDER and \
                            PLANNER_ORDER.index(b) > PLANNER_ORDER.index(a):
                        breaches.append(f'{f}: includes "{inc}" (planner/{b}/ sits above '
                                        f'planner/{a}/)')
                continue
            dst_floor = floor_of(dst)
            if dst_floor is None:
                continue  # a library outside the repository (absl, grpc, torch, ...)
            if src_floor is None:
                breaches.append(f'{f}: folder {src}/ has no floor in scripts/check_layers.py')
                break
            if (src, dst) in FORBIDDEN:
                breaches.append(f'{f}: includes "{inc}" ({FORBIDDEN[(src, dst)]})')
            elif dst_floor >= src_floor:
                breaches.append(f'{f}: includes "{inc}" ({dst}/ is not below {src}/)')

    # Include circles among the repository's own files (iterative DFS, white/grey/black).
    state = {}
    for start in graph:
        if state.get(start):
            continue
        stack = [(start, iter(graph[start]))]
        path = [start]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
                continue
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                breaches.append("include circle: " + " -> ".join(cycle))
            elif not state.get(nxt):
                state[nxt] = 1
                stack.append((nxt, iter(graph[nxt])))
                path.append(nxt)

    breaches += frontend_breaches(root, files)
    for b in breaches:
        print(b)
    if breaches:
        print(f"{len(breaches)} breach(es) of the dependency rule", file=sys.stderr)
        return 1
    print(f"dependency rule holds: {len(files)} files, "
          f"{sum(len(v) for v in graph.values())} includes of the repository's own headers, "
          f"no circles; front ends call the operations ({len(FRONTEND_ALLOWED)} files still "
          "allowed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
