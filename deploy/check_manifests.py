#!/usr/bin/python3
"""Checks deploy/ against the server it deploys (run by tests/service/deploy_test.cc).

    /usr/bin/python3 deploy/check_manifests.py SERVER_HELP_FILE

SERVER_HELP_FILE holds `specplan-server --help`. Checks: the Kubernetes manifests parse; the
Deployment's args are flags the server has, its --listen / --metrics-port ports are the container's
named ports; startup, readiness and liveness probes call the gRPC health service on the grpc port
(readiness for "specplan.v1.Planner"); the Service is headless and selects the pods; the calib
volume is mounted at --calib-dir; the pod runs as non-root; the Dockerfile is multi-stage on
Debian bookworm (a FROM ${ARG} read as the ARG's default), runs as a non-root USER, and its CMD
flags exist too. Prints one line per problem; exit status 1 if any.
"""
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
problems = []


def check(cond, msg):
    if not cond:
        problems.append(msg)


def flags_of(args):
    return [a.split("=")[0] for a in args if a.startswith("--")]


def arg_value(args, flag):
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def main():
    help_text = open(sys.argv[1]).read()
    known = set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text))
    check("--metrics-port" in known and "--calib-dir" in known,
          "server --help lacks --metrics-port / --calib-dir")

    with open(os.path.join(HERE, "k8s", "specplan-server.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    by_kind = {d["kind"]: d for d in docs}
    check(set(by_kind) >= {"Deployment", "Service"}, "need a Deployment and a Service")
    dep, svc = by_kind.get("Deployment", {}), by_kind.get("Service", {})
    pod = dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    check(dep["spec"]["selector"]["matchLabels"].items() <= labels.items(),
          "Deployment selector does not match the pod labels")
    check(svc["spec"].get("clusterIP") == "None", "Service must be headless (clusterIP: None)")
    check(svc["spec"]["selector"].items() <= labels.items(),
          "Service selector does not match the pod labels")
    check(pod["spec"]["securityContext"].get("runAsNonRoot") is True, "pod must run as non-root")
    (c,) = pod["spec"]["containers"]
    args = [str(a) for a in c["args"]]
    for flag in flags_of(args):
        check(flag in known, "container arg %s is not a specplan-server flag" % flag)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    listen = arg_value(args, "--listen") or ""
    check(listen.startswith("0.0.0.0:"), "--listen must bind all interfaces in a pod: %s" % listen)
    check(listen.rsplit(":", 1)[-1] == str(ports.get("grpc")),
          "--listen port %s != containerPort grpc %s" % (listen, ports.get("grpc")))
    check(arg_value(args, "--metrics-port") == str(ports.get("metrics")),
          "--metrics-port != containerPort metrics")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        p = c.get(probe)
        check(p is not None and "grpc" in p, "%s must be a gRPC health probe" % probe)
        if p and "grpc" in p:
            check(p["grpc"]["port"] == ports.get("grpc"), "%s port != grpc port" % probe)
    check(c.get("readinessProbe", {}).get("grpc", {}).get("service") == "specplan.v1.Planner",
          "readinessProbe must check the service specplan.v1.Planner")
    svc_ports = {p["name"]: p for p in svc["spec"]["ports"]}
    check(svc_ports.get("grpc", {}).get("port") == ports.get("grpc"), "Service grpc port")
    calib = arg_value(args, "--calib-dir")
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    check(calib in mounts, "--calib-dir %s is not a volume mount" % calib)
    vols = {v["name"]: v for v in pod["spec"].get("volumes", [])}
    check(calib in mounts and mounts[calib] in vols, "calib volume missing")
    grace = float(arg_value(args, "--grace-s") or 5)
    check(pod["spec"].get("terminationGracePeriodSeconds", 30) > grace,
          "terminationGracePeriodSeconds must exceed --grace-s")

    with open(os.path.join(HERE, "Dockerfile")) as f:
        docker = f.read()
    # FROM ${BASE}: the base images are build arguments (scripts/container.sh passes an mmdebstrap
    # bookworm root file system); their defaults must be bookworm images too.
    arg_defaults = dict(re.findall(r"^ARG\s+(\w+)=(\S*)", docker, re.M))
    froms = [re.sub(r"\$\{?(\w+)\}?", lambda m: arg_defaults.get(m.group(1), m.group(0)), f)
             for f in re.findall(r"^FROM\s+(\S+)", docker, re.M)]
    check(len(froms) >= 2, "Dockerfile must be multi-stage")
    check(all("bookworm" in f for f in froms),
          "Dockerfile stages must be Debian bookworm (FROM, ARG defaults resolved): %s" % froms)
    users = re.findall(r"^USER\s+(\S+)", docker, re.M)
    check(users and not users[-1].startswith(("root", "0:", "0")), "Dockerfile must end as non-root USER")
    cmd = re.search(r"^CMD\s+(\[.*?\])", docker, re.M | re.S)
    check(cmd is not None, "Dockerfile CMD missing")
    if cmd:
        import json
        cmd_args = json.loads(cmd.group(1).replace("\\\n", ""))
        for flag in flags_of(cmd_args):
            check(flag in known, "Dockerfile CMD flag %s is not a specplan-server flag" % flag)
        check(arg_value(cmd_args, "--metrics-port") is not None, "Dockerfile CMD: no --metrics-port")

    for p in problems:
        print(p)
    print("check_manifests: %d problems" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
