#!/usr/bin/python3
"""Minimal engine-side client of specplan-server: asks for a draft-tree plan each decoding step.

Uses Debian's python3-grpcio and python3-grpc-tools. The stubs (planner_pb2, planner_pb2_grpc) come
from --stubs-dir (the build generates them into <build>/python), else from the newest
<repo>/build*/python that is up to date with proto/specplan/v1/planner.proto, else they are
generated at run time into a temporary directory (no build step needed). The directory used is
reported on stderr.

    specplan-server --listen 127.0.0.1:50051 &          # build-*/service/specplan-server
    /usr/bin/python3 examples/python_client.py --server 127.0.0.1:50051 --stubs-dir build/python
    /usr/bin/python3 examples/python_client.py --marginals my_marginals.json --gpu h100 \
        --model qwen3-8b --context 2048 --n-max 256 --json

--marginals takes the JSON form of planner/marginals/marginals.h:
    {"root_token": int, "tokens": [[int] * k] * gamma, "probs": [[float] * k] * gamma}
Without it, a deterministic example (gamma=16, K=8) is built inline. With --profile GPU/MODEL the
server's calibrated profile is used instead of the bare roofline of --gpu/--model; --engine NAME
(sglang, vllm, trtllm, specplan) picks whose kernels that profile prices (default: the server's
--engine, else the first of sglang, vllm, trtllm, specplan it holds; the reply's profile_id says).
--drafter ARCH (default eagle3) names the drafter whose whole step the server prices the cycle with
(docs/step-model.md); --drafter '' prices the verification pass alone.
After the per-request steps it plans one batch (the PlanBatch RPC): --batch B requests with these
marginals at contexts --context, --context + 1024, ... under one total budget --batch-n-max, and
asks for the ragged engine layout; --batch 0 skips it. With --json the batch reply is under "batch".
Replicas: --server also takes several addresses (127.0.0.1:50051,127.0.0.1:50052) or a
dns:///NAME:PORT target (a headless Kubernetes Service); the channel then balances round robin over
the healthy replicas and retries the idempotent calls (PlanTree, PlanBatch, ...) that fail
UNAVAILABLE on another one, through the same gRPC service config as the C++ client
(service/channel.h, SERVICE_CONFIG below). --timeout is each call's deadline (retries included).
Exit status: 0 on success, 1 on an RPC error (the server's message names the bad field), 2 on a bad
flag.
"""

import argparse
import glob
import json
import math
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_ROOT = os.path.join(REPO, "proto")
PROTO_FILE = os.path.join("specplan", "v1", "planner.proto")


# The gRPC service config of service/channel.h (PlannerServiceConfigJson), byte for byte.
_IDEMPOTENT = ["PlanTree", "PlanBatch", "MergeTrees", "EstimateLatency", "ListProfiles",
               "GetProfile", "GetStats", "Ping", "WhatIf"]
SERVICE_CONFIG = (
    '{"loadBalancingConfig":[{"round_robin":{}}],'
    '"healthCheckConfig":{"serviceName":"specplan.v1.Planner"},'
    '"methodConfig":[{"name":['
    + ",".join('{"service":"specplan.v1.Planner","method":"%s"}' % m for m in _IDEMPOTENT)
    + '],"retryPolicy":{"maxAttempts":5,"initialBackoff":"0.01s",'
    '"maxBackoff":"0.2s","backoffMultiplier":2,'
    '"retryableStatusCodes":["UNAVAILABLE"]}}]}')


def planner_target(servers):
    """--server as a gRPC target (service/channel.h PlannerTarget): one HOST:PORT or a scheme
    (dns:///, ipv4:, ipv6:, unix:) as given; a comma-separated list of IP addresses as ipv4:/ipv6:.
    Raises ValueError naming --server."""
    s = servers.strip()
    if not s:
        raise ValueError("--server = '%s': empty" % servers)
    if s.startswith(("dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:")) or "," not in s:
        return s
    v4, v6 = [], []
    for a in (x.strip() for x in s.split(",")):
        host, _, port = a.rpartition(":")
        if not a or not port.isdigit() or not 1 <= int(port) <= 65535 or not host:
            raise ValueError("--server = '%s': '%s' needs a port in [1, 65535] (HOST:PORT)"
                             % (servers, a))
        parts = host.split(".")
        if host == "localhost" or (len(parts) == 4 and all(p.isdigit() and int(p) < 256
                                                           for p in parts)):
            v4.append("%s:%s" % ("127.0.0.1" if host == "localhost" else host, port))
        elif host.startswith("[") and host.endswith("]"):
            v6.append(a)
        else:
            raise ValueError("--server = '%s': '%s' is a host name; a list takes IP addresses: "
                             "use dns:///NAME:PORT for a name that resolves to every replica"
                             % (servers, host))
    if v4 and v6:
        raise ValueError("--server = '%s': mixes IPv4 and IPv6 addresses" % servers)
    return ("ipv4:" + ",".join(v4)) if v4 else ("ipv6:" + ",".join(v6))


def planner_channel(grpc, servers):
    """A channel to one server or several replicas: round robin, health checks, retries."""
    return grpc.insecure_channel(planner_target(servers), options=[
        ("grpc.service_config", SERVICE_CONFIG),
        ("grpc.enable_retries", 1),
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 1000),
    ])


def stubs_in(directory):
    """True if `directory` holds generated stubs at least as new as the .proto file."""
    stub = os.path.join(directory, "specplan", "v1", "planner_pb2_grpc.py")
    return (os.path.isfile(stub) and os.path.isfile(os.path.join(directory, "specplan", "v1",
                                                                  "planner_pb2.py"))
            and os.path.getmtime(stub) >= os.path.getmtime(os.path.join(PROTO_ROOT, PROTO_FILE)))


def find_build_stubs():
    """The newest up-to-date <repo>/build*/python stubs directory, or None."""
    found = [d for d in glob.glob(os.path.join(REPO, "build*", "python")) if stubs_in(d)]
    if not found:
        return None
    return max(found, key=lambda d: os.path.getmtime(
        os.path.join(d, "specplan", "v1", "planner_pb2_grpc.py")))


def generate_stubs():
    """Generates the stubs into a temp dir with grpc_tools (python3-grpc-tools); returns it."""
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="specplan_stubs_")
    rc = protoc.main(["grpc_tools.protoc", "-I" + PROTO_ROOT, "--python_out=" + out,
                      "--grpc_python_out=" + out, os.path.join(PROTO_ROOT, PROTO_FILE)])
    if rc != 0:
        sys.exit("python_client: protoc failed on %s (rc %d)" % (PROTO_FILE, rc))
    return out


def load_stubs(stubs_dir=None):
    """Imports planner_pb2 / planner_pb2_grpc from stubs_dir, the build, or freshly generated."""
    if stubs_dir:
        if not stubs_in(stubs_dir):
            sys.exit("python_client: --stubs-dir %s: no up-to-date specplan/v1/planner_pb2*.py "
                     "(build the specplan_python_stubs target)" % stubs_dir)
        origin = "--stubs-dir"
    else:
        stubs_dir = find_build_stubs()
        origin = "build"
        if stubs_dir is None:
            stubs_dir, origin = generate_stubs(), "generated now"
    print("python_client: stubs from %s (%s)" % (stubs_dir, origin), file=sys.stderr)
    sys.path.insert(0, stubs_dir)
    from specplan.v1 import planner_pb2, planner_pb2_grpc  # noqa: E402 (found just now)
    return planner_pb2, planner_pb2_grpc


def example_marginals(gamma=16, k=8, root_token=1):
    """Deterministic drafter marginals: row d decays geometrically, confidence drops with depth."""
    tokens, probs = [], []
    for d in range(gamma):
        mass = 0.9 * (0.93 ** d)  # row sum < mass <= 0.9
        row = [mass * 0.7 * (0.3 ** r) for r in range(k)]
        tokens.append([1000 + 37 * d + 11 * r for r in range(k)])
        probs.append(row)
    return {"root_token": root_token, "tokens": tokens, "probs": probs}


def to_wire(pb, m):
    gamma, k = len(m["tokens"]), len(m["tokens"][0]) if m["tokens"] else 0
    msg = pb.Marginals(root_token=m["root_token"], gamma=gamma, k=k)
    for row in m["tokens"]:
        msg.tokens.extend(row)
    for row in m["probs"]:
        msg.probs.extend(row)
    return msg


def nan_to_none(x):
    return None if math.isnan(x) else x


def plan_batch(pb, stub, args, marginals, cost, mode):
    """One PlanBatch call: args.batch requests sharing one budget; returns the reply as a dict."""
    import grpc

    req = pb.PlanBatchRequest(mode=mode, n_max=args.batch_n_max,
                              objective=pb.BATCH_OBJECTIVE_GOODPUT,
                              layout=pb.BATCH_LAYOUT_RAGGED)
    for i in range(args.batch):
        req.requests.add(marginals=to_wire(pb, marginals), context_tokens=args.context + 1024 * i)
    req.cost.CopyFrom(cost)
    req.cost.context_tokens = 0  # each request carries its own c
    try:
        resp = stub.PlanBatch(req, timeout=args.timeout, metadata=[("x-request-id", "py-batch")])
    except grpc.RpcError as e:
        print("PlanBatch failed: %s: %s" % (e.code().name, e.details()), file=sys.stderr)
        return None
    requests = []
    for r in resp.requests:
        o, t = r.outputs, r.tree
        requests.append({
            "n": r.n, "tokens": list(t.tokens), "parents": list(t.parents),
            "depths": list(t.depths), "positions": list(o.positions),
            "retrieve": [list(o.retrieve[i * o.retrieve_width:(i + 1) * o.retrieve_width])
                         for i in range(o.num_leaves)],
            "expected_accepted": r.expected_accepted})
    c = resp.curve
    curve = [{"n": c.n[i], "expected_accepted": c.expected_accepted[i], "cycle_s": c.cycle_s[i],
              "goodput": c.goodput[i]} for i in range(len(c.n))]
    print("batch of %d: N* = %d draft nodes, n_i = %s, goodput %s tokens/s (plain decoding %s), "
          "server %.1f us"
          % (len(requests), resp.n_total, [r["n"] for r in requests],
             "n/a" if math.isnan(resp.goodput) else "%.1f" % resp.goodput,
             "n/a" if math.isnan(resp.ar_goodput) else "%.1f" % resp.ar_goodput, resp.plan_us))
    return {"n_total": resp.n_total, "requests": requests, "curve": curve,
            "cycle_s": nan_to_none(resp.cycle_s), "goodput": nan_to_none(resp.goodput),
            "ar_goodput": nan_to_none(resp.ar_goodput),
            "speculation_pays": resp.speculation_pays,
            "ragged": {"cu_seqlens": list(resp.ragged.cu_seqlens),
                       "tokens": list(resp.ragged.tokens),
                       "positions": list(resp.ragged.positions),
                       "parents": list(resp.ragged.parents)},
            "latency_model": resp.latency_model}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", default="127.0.0.1:50051",
                    help="HOST:PORT of specplan-server, several (A:P,B:Q: round robin with "
                    "retries) or dns:///NAME:PORT")
    ap.add_argument("--marginals", help="marginals JSON file (default: built-in example)")
    ap.add_argument("--gpu", default="h100", help="GPU registry name (inline roofline)")
    ap.add_argument("--model", default="qwen3-8b", help="target model registry name")
    ap.add_argument("--profile", help="GPU/MODEL of a profile held by the server")
    ap.add_argument("--engine", default="",
                    help="with --profile: whose kernels (sglang, vllm, trtllm, specplan); "
                    "default: the server's choice")
    ap.add_argument("--context", type=int, default=1024, help="cached tokens c")
    ap.add_argument("--drafter", default="eagle3",
                    help="drafter architecture the server prices the engine's whole step for "
                         "(eagle, eagle3, mtp, draft:MODEL, ngram; docs/step-model.md); '' = "
                         "none: the verification pass alone, drafting at 0 ms")
    ap.add_argument("--n-max", type=int, default=256, help="budget: largest tree searched")
    ap.add_argument("--mode", choices=["controller", "scan", "fixed"], default="controller")
    ap.add_argument("--steps", type=int, default=3, help="decoding steps to simulate")
    ap.add_argument("--timeout", type=float, default=5.0, help="per-call deadline, seconds")
    ap.add_argument("--batch", type=int, default=4,
                    help="requests in the PlanBatch call after the steps (0 = none)")
    ap.add_argument("--batch-n-max", type=int, default=512,
                    help="PlanBatch: total draft nodes over the batch")
    ap.add_argument("--json", action="store_true", help="print the last plan as JSON")
    ap.add_argument("--stubs-dir", help="directory of the build-time Python stubs "
                    "(<build>/python); default: the newest build*/python, else generate now")
    args = ap.parse_args()
    if args.engine and not args.profile:
        ap.error("--engine needs --profile (an engine picks one of the server's profiles)")

    import grpc  # python3-grpcio

    pb, pb_grpc = load_stubs(args.stubs_dir)
    if args.marginals:
        with open(args.marginals) as f:
            marginals = json.load(f)
    else:
        marginals = example_marginals()

    cost = pb.CostSpec(context_tokens=args.context)
    # The drafter the cycle prices: its architecture's whole step (draft forwards composed from the
    # profile's kernel tables, sampling, the engine's host time); "" sends none (verify pass only).
    if args.drafter:
        cost.drafter.architecture = args.drafter
    if args.profile:
        gpu, _, model = args.profile.partition("/")
        cost.profile.gpu, cost.profile.model = gpu, model
        cost.profile.engine = args.engine
    else:
        cost.inline_model.gpu, cost.inline_model.model = args.gpu, args.model
    mode = {"controller": pb.BUDGET_MODE_CONTROLLER, "scan": pb.BUDGET_MODE_SCAN,
            "fixed": pb.BUDGET_MODE_FIXED}[args.mode]

    try:
        channel = planner_channel(grpc, args.server)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    stub = pb_grpc.PlannerStub(channel)
    resp = None
    for step in range(args.steps):
        # An engine would put this step's drafter output here; the root is the pending bonus token.
        marginals["root_token"] = marginals["root_token"] + (1 if step else 0)
        cost.context_tokens = args.context + step
        req = pb.PlanTreeRequest(marginals=to_wire(pb, marginals), cost=cost, mode=mode,
                                 n_max=args.n_max)
        try:
            resp = stub.PlanTree(req, timeout=args.timeout,
                                 metadata=[("x-request-id", "py-step-%d" % step)])
        except grpc.RpcError as e:
            print("PlanTree failed: %s: %s" % (e.code().name, e.details()), file=sys.stderr)
            return 1
        p = resp.plan
        speedup = "n/a" if math.isnan(p.speedup) else "%.3fx" % p.speedup
        print("step %d: n* = %d draft nodes, depth %d, %d leaves, expected accepted %.3f, "
              "speedup %s (%s), server %.1f us"
              % (step, p.n, resp.outputs.max_depth, resp.outputs.num_leaves, p.expected_accepted,
                 speedup, ", ".join(x for x in (resp.latency_model, resp.profile_id) if x)
                 or "no cost", resp.plan_us))

    assert resp is not None  # --steps >= 1
    o, t = resp.outputs, resp.plan.tree
    retrieve = [list(o.retrieve[i * o.retrieve_width:(i + 1) * o.retrieve_width])
                for i in range(o.num_leaves)]
    plan = {"n": resp.plan.n, "tokens": list(t.tokens), "parents": list(t.parents),
            "depths": list(t.depths), "positions": list(o.positions), "retrieve": retrieve,
            "mask_words": o.mask_words, "mask_packed": list(o.mask_packed),
            "expected_accepted": resp.plan.expected_accepted,
            "speedup": None if math.isnan(resp.plan.speedup) else resp.plan.speedup,
            "cycle_s": None if math.isnan(resp.plan.cycle_s) else resp.plan.cycle_s,
            "latency_model": resp.latency_model, "profile_id": resp.profile_id}
    if args.batch > 0:
        batch = plan_batch(pb, stub, args, marginals, cost, mode)
        if batch is None:
            return 1
        plan["batch"] = batch
    if args.json:
        print(json.dumps(plan, indent=2))
    else:
        show = min(12, len(t.tokens))
        print("tokens[:%d]    %s" % (show, list(t.tokens[:show])))
        print("parents[:%d]   %s" % (show, list(t.parents[:show])))
        print("positions[:%d] %s" % (show, list(o.positions[:show])))
        print("retrieve[0]    %s" % (retrieve[0] if retrieve else []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
