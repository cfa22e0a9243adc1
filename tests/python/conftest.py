"""Shared fixtures of the specplan Python tests (pytest; run by ctest as `python`).

Run: cd build && ctest -R python, or
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python -q -p no:cacheprovider
SPECPLAN_SOURCE_DIR / SPECPLAN_BUILD_DIR locate the tree (default: from this file and from
the imported package, build/python/specplan/ -> build/).
"""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import specplan

SOURCE_DIR = pathlib.Path(os.environ.get("SPECPLAN_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))


def _build_dir():
    if os.environ.get("SPECPLAN_BUILD_DIR"):
        return pathlib.Path(os.environ["SPECPLAN_BUILD_DIR"])
    return pathlib.Path(specplan.__file__).resolve().parents[2]  # build/python/specplan/


BUILD_DIR = _build_dir()
CLI = BUILD_DIR / "cli" / "specplan"
MARGINALS = SOURCE_DIR / "examples" / "marginals.json"
BATCH_REQUESTS = SOURCE_DIR / "examples" / "batch_requests.jsonl"


@pytest.fixture(scope="session")
def source_dir():
    return SOURCE_DIR


@pytest.fixture(scope="session")
def marginals():
    return specplan.Marginals.load(str(MARGINALS))


@pytest.fixture(scope="session")
def cost():
    return specplan.Cost(gpu="h100", model="qwen3-8b")


@pytest.fixture(scope="session")
def roofline():
    return specplan.Cost(gpu="h100", model="qwen3-8b", latency_model="roofline")


@pytest.fixture(scope="session")
def cli():
    """Runs build/cli/specplan with the given arguments and returns its parsed --json output."""
    if not CLI.exists():
        pytest.skip(f"{CLI} not built")

    def run(*args):
        out = subprocess.run([str(CLI), *map(str, args)], check=True, capture_output=True,
                             text=True, cwd=SOURCE_DIR)
        return json.loads(out.stdout)

    return run


def random_tree(rng, s, vocab=6):
    """A random tree of s nodes: parents[i] uniform in [0, i)."""
    parents = [-1] + [int(rng.integers(0, i)) for i in range(1, s)]
    tokens = [int(t) for t in rng.integers(0, vocab, size=s)]
    return np.array(tokens, np.int32), np.array(parents, np.int32)


def random_marginals(rng, gamma, k, root=1):
    """Valid marginals: rows sorted descending, sums <= 1, distinct tokens per row."""
    tokens = np.stack([rng.permutation(1000)[:k] for _ in range(gamma)]).astype(np.int32)
    raw = rng.random((gamma, k)) ** 3
    probs = (raw / raw.sum(axis=1, keepdims=True) * rng.uniform(0.5, 0.95, (gamma, 1)))
    probs = -np.sort(-probs, axis=1).astype(np.float32)
    return {"root_token": root, "tokens": tokens, "probs": probs}
