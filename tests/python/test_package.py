"""The package: what `import specplan` exports, its docs, its dependencies, the gRPC stubs
beside it, and NumPy ownership of returned arrays."""

import gc
import pathlib
import pydoc
import subprocess
import sys

import numpy as np
import pytest

import specplan


def test_exports_and_docs():
    for name in specplan.__all__:
        obj = getattr(specplan, name)
        if callable(obj) and not name.endswith("Error") and name != "Error":
            assert obj.__doc__ and len(obj.__doc__) > 40, name
    assert specplan.__version__ and specplan.__doc__
    text = pydoc.render_doc(specplan.plan_batch, renderer=pydoc.plaintext)
    assert "requests" in text and "n_max" in text and "layout" in text
    assert "handle" not in text.split("\n")[2]  # the signature line names objects, not handles
    for cls in (specplan.TreePlan, specplan.BatchPlan, specplan.Cost, specplan.Marginals):
        assert cls.__doc__ and "__repr__" in dir(cls)


def test_request_namedtuple():
    r = specplan.Request("m", 5)
    assert r.n_max == -1 and r.weight == 1.0 and tuple(r) == ("m", 5, -1, 1.0)


def test_module_links_no_torch_grpc_or_cuda():
    so = specplan._specplan.__file__
    out = subprocess.run(["ldd", so], capture_output=True, text=True).stdout
    for lib in ("torch", "grpc", "cuda", "protobuf"):
        assert lib not in out.lower(), lib


def test_grpc_stubs_beside_the_package():
    stubs = pathlib.Path(specplan.__file__).parent / "v1" / "planner_pb2.py"
    if not stubs.exists():
        pytest.skip("gRPC Python stubs not generated in this build")
    pytest.importorskip("grpc")
    from specplan.v1 import planner_pb2  # noqa: F401 (imports through the package)
    assert hasattr(planner_pb2, "PlanTreeRequest")


def test_import_in_a_fresh_interpreter():
    pkg_root = pathlib.Path(specplan.__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", "import specplan, sys; print(specplan.__file__)"],
                         capture_output=True, text=True, env={"PYTHONPATH": str(pkg_root)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(pkg_root))


def test_returned_arrays_own_or_share_their_memory(marginals, cost):
    plan = specplan.plan_tree(marginals, cost, c=1024, n_max=256)
    a = plan.tokens
    assert not a.flags.owndata and a.base is not None          # a view of the result
    assert np.shares_memory(a, plan.tree[0])
    lay = specplan.sglang_layout([plan.tree], [1024], tree_mask_mode="QLEN_ONLY")
    pos = lay["positions"]
    del lay, plan
    gc.collect()
    assert pos[0] == 1024  # the capsule keeps the C++ vector alive
    assert not pos.flags.owndata and pos.base is not None


def test_int32_inputs_are_read_in_place(marginals):
    # A C-contiguous int32 array passes through unconverted: the marginals built from it hold
    # its values, and a non-int32 or strided array gives the same result through a conversion.
    tokens = np.ascontiguousarray(marginals.tokens)
    probs = np.ascontiguousarray(marginals.probs)
    m1 = specplan.Marginals(marginals.root_token, tokens, probs)
    m2 = specplan.Marginals(marginals.root_token, tokens[:, ::-1][:, ::-1], probs.astype(np.float64))
    assert (m1.tokens == m2.tokens).all() and (m1.probs == m2.probs).all()


def test_bench_helpers_match_plan_batch_arrays():
    w = specplan._specplan._bench_batch(8)
    assert w["tokens"].shape == (8, 16, 8) and w["probs"].dtype == np.float32
    assert w["context_lens"].tolist() == [512 * (1 + i) for i in range(8)]
    cost = specplan.Cost(gpu="h100", model="qwen3-8b", latency_model="roofline")
    args = (w["root_tokens"], w["tokens"], w["probs"], w["context_lens"], cost)
    for outputs in ("ragged", "tree_outputs", "none"):
        t = specplan._specplan._bench_plan_batch_cpp(*args, n_max=256, mode="scan",
                                                     outputs=outputs, repeats=3)
        assert t.shape == (3,) and (t > 0).all()
    with pytest.raises(specplan.InvalidArgumentError, match="outputs = 'all'"):
        specplan._specplan._bench_plan_batch_cpp(*args, outputs="all")
