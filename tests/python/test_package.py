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
from conftest import BUILD_DIR


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


def test_families_re_export_and_nothing_leaks():
    families = ("acceptance", "batch", "cost", "errors", "layouts", "merge", "planner", "types",
                "whatif")
    for fam in families:
        mod = getattr(specplan, fam)
        assert mod.__doc__ and mod.__all__, fam
        for name in mod.__all__:
            assert getattr(mod, name) is not None, (fam, name)
            if fam != "types":
                assert getattr(specplan, name) is getattr(mod, name), (fam, name)
    # every public name of the package is exported on purpose (no Any, Optional, os, ...)
    public = {n for n in dir(specplan) if not n.startswith("_")}
    assert public - set(specplan.__all__) <= {"v1"}, public - set(specplan.__all__)
    for name in ("Any", "Optional", "NamedTuple", "Literal", "os", "pkgutil"):
        assert not hasattr(specplan, name), name
    for fam in families:
        mod = getattr(specplan, fam)
        leaked = {n for n in dir(mod) if not n.startswith("_")} - set(mod.__all__)
        assert not leaked, (fam, leaked)
    assert specplan.Cost.__module__ == "specplan.cost"
    assert specplan.BatchPlan.__module__ == "specplan.batch"


def test_literal_vocabularies_match_the_library():
    import typing
    from specplan import types as t
    assert set(typing.get_args(t.Engine)) == set(specplan.known_engines())
    assert set(typing.get_args(t.LatencyModelKind)) == set(specplan.latency_model_kinds())
    assert set(typing.get_args(t.DTypeName)) <= set(typing.get_args(t.DType))
    m = specplan.Marginals(1, [[5, 6], [7, 8]], [[0.6, 0.3], [0.5, 0.4]])
    roofline = specplan.Cost(gpu="h100", model="qwen3-8b", latency_model="roofline")
    for mode in typing.get_args(t.BudgetMode):
        assert specplan.plan_tree(m, roofline, n_max=2, mode=mode).mode == mode
    for drafter in typing.get_args(t.DrafterClass):
        specplan.plan_tree(m, n_max=2, mode="fixed", drafter=drafter)
    for dtype in typing.get_args(t.DType):
        specplan.Cost(gpu="h100", model="qwen3-8b", dtype=dtype, latency_model="roofline")
    for mode in typing.get_args(t.TreeMaskMode):
        assert specplan.sglang_layout([([1, 2], [-1, 0])], [0], tree_mask_mode=mode) \
            .tree_mask_mode == mode
    for layout in typing.get_args(t.LayoutName):
        assert specplan.plan_batch([(m, 3)], n_max=2, mode="fixed", layout=layout).layout


def test_records_are_typed_read_only_and_convert_to_dicts(cost):
    est = cost.estimate(4, 1024)
    assert isinstance(est, specplan.Estimate) and isinstance(est.step, specplan.StepBreakdown)
    d = est.to_dict()
    assert isinstance(d["cycle"], dict) and isinstance(d["step"]["host"], dict)
    assert d["predicted_s"] == est.predicted_s
    assert est == cost.estimate(4, 1024) and est != cost.estimate(5, 1024)
    with pytest.raises(AttributeError):
        est.predicted_s = 1.0
    with pytest.raises(TypeError):
        est["predicted_s"]  # noqa: B018 (records are not dicts: .to_dict() gives one)
    assert repr(est).startswith("specplan.Estimate(model='qwen3-8b'")
    assert est.step.drafter == "eagle3" and cost.step(1, 4, 1024).drafter is None


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
    pos = lay.positions
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


def _bench_module():
    """The test-only timing module (build/python_bench/_specplan_bench), imported from the build
    tree; it is not part of the installed package."""
    where = BUILD_DIR / "python_bench"
    if not list(where.glob("_specplan_bench*.so")):
        pytest.skip(f"{where}/_specplan_bench*.so not built (target _specplan_bench)")
    sys.path.insert(0, str(where))
    try:
        import _specplan_bench
    finally:
        sys.path.remove(str(where))
    return _specplan_bench


def test_no_bench_helpers_in_the_public_module():
    assert not [n for n in dir(specplan._specplan) if "bench" in n.lower()]
    pkg = pathlib.Path(specplan.__file__).parent
    assert not list(pkg.glob("*bench*")), "the bench module sits outside the package"


def test_bench_module_times_the_same_plan_batch():
    bench = _bench_module()
    w = bench.bench_batch(8)
    assert w["tokens"].shape == (8, 16, 8) and w["probs"].dtype == np.float32
    assert w["context_lens"].tolist() == [512 * (1 + i) for i in range(8)]
    cost = specplan.Cost(gpu="h100", model="qwen3-8b", latency_model="roofline")
    args = (w["root_tokens"], w["tokens"], w["probs"], w["context_lens"], cost)
    for outputs in ("ragged", "tree_outputs", "none"):
        t = bench.plan_batch_cpp(*args, n_max=256, mode="scan", outputs=outputs, repeats=3)
        assert t.shape == (3,) and (t > 0).all()
    with pytest.raises(ValueError, match="outputs = 'all'"):
        bench.plan_batch_cpp(*args, outputs="all")
    with pytest.raises(TypeError, match="cost: got str"):
        bench.plan_batch_cpp(*args[:4], "h100")


def test_typed_example_runs():
    # examples/python_api.py: the typed tour ctest python.typecheck checks with mypy.
    src = pathlib.Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, str(src / "examples" / "python_api.py"), "--batch", "3"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "plan_batch: n = [" in out.stdout and "accept_greedy_batch: accepted [" in out.stdout
