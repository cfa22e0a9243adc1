"""specplan.Cost, Profile, list/load/compose_profile and the registries, against the CLI."""

import glob
import json
import math

import numpy as np
import pytest

import specplan
from conftest import SOURCE_DIR


def test_default_engine_is_the_first_shipped(cost):
    assert cost.profile_id == "h100-sxm/qwen3-8b-bf16@sglang"
    assert cost.engine == "sglang" and cost.engine_version
    assert cost.kind == "table"
    assert (cost.model, cost.gpu, cost.dtype, cost.tp) == ("qwen3-8b", "h100-sxm", "bf16", 1)
    assert "sglang" in repr(cost) and "h100-sxm/qwen3-8b-bf16@sglang" in repr(cost)


def test_named_engine_and_latency_model():
    runtime = specplan.Cost(gpu="h100", model="qwen3-8b", engine="specplan")
    assert runtime.profile_id == "h100-sxm/qwen3-8b-bf16" and runtime.kind == "kernel_sum"
    roof = specplan.Cost(gpu="h100", model="qwen3-8b", engine="vllm", latency_model="roofline")
    assert roof.kind == "roofline" and roof.engine == "vllm"


def test_explicit_profile_and_resolve_cost():
    path = str(SOURCE_DIR / "calib/h100-sxm/qwen3-8b-bf16@vllm.json")
    a = specplan.Cost(profile=path)
    b = specplan.resolve_cost("h100", "qwen3-8b", engine="vllm")
    assert a.engine == "vllm" and a.profile_path == path
    assert a.verify_seconds(64, 1024) == b.verify_seconds(64, 1024)


def test_bare_roofline_without_profiles(tmp_path):
    c = specplan.Cost(gpu="h100", model="qwen3-8b", calib_dir=str(tmp_path))
    assert c.kind == "roofline" and c.profile_id == "" and c.engine == ""


@pytest.mark.parametrize("engine", ["", "specplan", "vllm"])
@pytest.mark.parametrize("s,c,b", [(1, 1024, 1), (64, 1024, 1), (1, 4096, 64), (8, 512, 16)])
def test_estimate_matches_cli(cli, engine, s, c, b):
    args = ["estimate", "--model", "qwen3-8b", "--gpu", "h100", "--s", s, "--c", c, "--b", b,
            "--t-net-ms", "0.5", "--json"]
    if engine:
        args += ["--engine", engine]
    want = cli(*args)
    got = specplan.estimate(s, c, b, gpu="h100", model="qwen3-8b", engine=engine, t_draft_ms=0.5)
    assert isinstance(got, specplan.Estimate) and isinstance(got.cycle, specplan.CycleBreakdown)
    for key in ("predicted_s", "per_sequence_s", "per_token_s"):
        assert getattr(got, key) == pytest.approx(want[key], rel=1e-12), key
    for key in ("latency_model", "profile", "engine", "engine_version", "model", "gpu", "tp"):
        assert getattr(got, key) == want[key], key
    for key in ("draft_s", "verify_s", "cycle_s", "aux_s"):
        assert getattr(got.cycle, key) == pytest.approx(want["cycle"][key], rel=1e-12), key
    # the dict form carries the same keys as the CLI's JSON
    as_dict = got.to_dict()
    assert set(as_dict) <= set(want) and set(as_dict["cycle"]) <= set(want["cycle"])
    assert as_dict["cycle"]["cycle_s"] == got.cycle.cycle_s


def test_verify_seconds_forms_agree(cost):
    assert cost.verify_seconds(1, 1024, b=8) == pytest.approx(
        cost.verify_batch_seconds([1] * 8, [1024] * 8), rel=1e-12)
    assert cost.verify_batch_seconds(np.array([5]), np.array([300])) == cost.verify_seconds(5, 300)
    assert cost.verify_seconds(64, 1024) > cost.verify_seconds(1, 1024) > 0


@pytest.mark.parametrize("kwargs,exc,words", [
    (dict(gpu="h999", model="qwen3-8b"), specplan.NotFoundError, ["gpu", "h999"]),
    (dict(gpu="h100", model="nope-7b"), specplan.NotFoundError, ["nope-7b"]),
    (dict(gpu="h100", model="qwen3-8b", engine="foo"), specplan.InvalidArgumentError,
     ["engine = 'foo'", "known: sglang, vllm, trtllm, specplan"]),
    (dict(gpu="h100", model="qwen3-8b", dtype="int3"), specplan.InvalidArgumentError,
     ["dtype", "int3"]),
    (dict(gpu="h100", model="qwen3-8b", tp=-2), specplan.InvalidArgumentError, ["tp", "-2"]),
    (dict(gpu="b200", model="qwen3-8b", engine="sglang"), specplan.NotFoundError,
     ["engine = 'sglang'", "no profile for"]),
    (dict(gpu="h100", model="qwen3-8b", latency_model="magic"), specplan.Error,
     ["latency_model = 'magic'"]),
    (dict(profile="/nonexistent/p.json"), specplan.Error, ["/nonexistent/p.json"]),
    (dict(), specplan.InvalidArgumentError, ["gpu", "model", "profile"]),
])
def test_cost_errors_name_field_and_value(kwargs, exc, words):
    with pytest.raises(exc) as e:
        specplan.Cost(**kwargs)
    for w in words:
        assert w in str(e.value)


def test_error_classes_are_builtins_too():
    assert issubclass(specplan.InvalidArgumentError, ValueError)
    assert issubclass(specplan.NotFoundError, LookupError)
    assert issubclass(specplan.ArgumentTypeError, TypeError)
    for cls in (specplan.InvalidArgumentError, specplan.NotFoundError, specplan.ArgumentTypeError,
                specplan.FailedPreconditionError, specplan.InternalError):
        assert issubclass(cls, specplan.Error)
    assert specplan.NotFoundError.code == "NOT_FOUND"
    with pytest.raises(LookupError):
        specplan.Cost(gpu="h999", model="qwen3-8b")


@pytest.mark.parametrize("call,words", [
    (lambda c: c.verify_seconds(0, 10), ["s = 0"]),
    (lambda c: c.verify_seconds(1, -1), ["c = -1"]),
    (lambda c: c.verify_seconds(1, 1, b=0), ["b = 0"]),
    (lambda c: c.verify_batch_seconds([1, 2], [3]), ["s, c", "2", "1"]),
    (lambda c: c.verify_batch_seconds([1, 0], [3, 3]), ["s[1] = 0"]),
    (lambda c: c.estimate(4, 10, drafter="lstm"), ["drafter", "lstm"]),
    (lambda c: c.estimate(4, 10, t_draft_ms=-1), ["t_draft_ms", "-1"]),
])
def test_cost_call_errors(cost, call, words):
    with pytest.raises(specplan.InvalidArgumentError) as e:
        call(cost)
    for w in words:
        assert w in str(e.value)


def test_verify_batch_seconds_dtype_error(cost):
    with pytest.raises(specplan.ArgumentTypeError, match="s: dtype float64"):
        cost.verify_batch_seconds(np.array([1.5]), [3])


def test_list_profiles_covers_the_bundled_files():
    files = sorted(glob.glob(str(SOURCE_DIR / "calib" / "**" / "*.json"), recursive=True))
    listed = specplan.list_profiles(str(SOURCE_DIR / "calib"))
    assert [p.path for p in listed] == files
    assert all(isinstance(p, specplan.ProfileInfo) for p in listed)
    ids = {p.id for p in listed}
    assert "h100-sxm/qwen3-8b-bf16@sglang" in ids and "h100-sxm/qwen3-8b-bf16" in ids
    assert {p.engine for p in listed} == {"sglang", "vllm", "trtllm", "specplan"}
    with pytest.raises(specplan.NotFoundError, match="calib_dir /no/such"):
        specplan.list_profiles("/no/such")


def test_load_profile_and_its_cost():
    path = str(SOURCE_DIR / "calib/h100-sxm/qwen3-8b-bf16.json")
    p = specplan.load_profile(path)
    assert p.id == "h100-sxm/qwen3-8b-bf16" and p.engine == "specplan" and p.path == path
    assert "table" in p.latency_models and p.default_model in p.latency_models
    assert json.loads(p.to_json())["model"] == "qwen3-8b"
    via_profile = p.cost("table").verify_seconds(16, 2048)
    via_spec = specplan.Cost(gpu="h100", model="qwen3-8b", engine="specplan",
                             latency_model="table").verify_seconds(16, 2048)
    assert via_profile == via_spec
    with pytest.raises(specplan.Error, match="nope"):
        p.cost("nope")


def test_load_profile_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "specplan.profile", "version": 1}')
    with pytest.raises(specplan.Error, match="bad.json|gpu"):
        specplan.load_profile(str(bad))
    with pytest.raises(specplan.Error, match="missing.json"):
        specplan.load_profile(str(tmp_path / "missing.json"))


def test_compose_matches_the_shipped_profile(tmp_path):
    kernels = SOURCE_DIR / "data/kernels/h100_sxm/sglang-0.5.14"
    out = tmp_path / "p.json"
    p = specplan.compose_profile(str(kernels), "qwen3-8b", out=str(out))
    assert out.exists() and p.path == str(out) and p.engine == "sglang"
    shipped = specplan.Cost(gpu="h100", model="qwen3-8b", engine="sglang")
    composed = p.cost()
    for b, s, c in [(1, 1, 1024), (1, 64, 1024), (64, 1, 4096), (16, 8, 512)]:
        assert composed.verify_seconds(s, c, b=b) == pytest.approx(
            shipped.verify_seconds(s, c, b=b), rel=1e-9)
    assert specplan.load_profile(str(out)).id == p.id


def test_compose_errors(tmp_path):
    with pytest.raises(specplan.Error, match="/no/kernels"):
        specplan.compose_profile("/no/kernels", "qwen3-8b")
    kernels = str(SOURCE_DIR / "data/kernels/h100_sxm/sglang-0.5.14")
    with pytest.raises(specplan.InvalidArgumentError, match="tp = 0"):
        specplan.compose_profile(kernels, "qwen3-8b", tp=0)
    with pytest.raises(specplan.Error, match="engine"):
        specplan.compose_profile(kernels, "qwen3-8b", engine="vllm")


def test_compose_into_the_profiles_it_reads_needs_force(tmp_path, monkeypatch):
    kernels = str(SOURCE_DIR / "data/kernels/h100_sxm/sglang-0.5.14")
    grids = dict(b_grid=[1, 64], s_grid=[1, 8], c_grid=[0, 1024], drafters=["none"])
    monkeypatch.setenv("SPECPLAN_CALIB_DIR", str(tmp_path))
    out = tmp_path / "h100-sxm" / "mine.json"
    with pytest.raises(specplan.InvalidArgumentError, match="shipped profiles directory"):
        specplan.compose_profile(kernels, "qwen3-8b", out=str(out), **grids)
    assert not out.exists()
    p = specplan.compose_profile(kernels, "qwen3-8b", out=str(out), force=True, **grids)
    assert out.exists() and p.path == str(out)
    assert specplan.compose_profile(kernels, "qwen3-8b", **grids).path == ""


def test_registries():
    assert "h100-sxm" in specplan.known_gpus()
    assert "qwen3-8b" in specplan.known_models()
    assert specplan.known_engines() == ["sglang", "vllm", "trtllm", "specplan"]
    assert "table" in specplan.latency_model_kinds()
    path = specplan.bundled_profile_path("h100-sxm", "qwen3-8b", engine="vllm",
                                         calib_dir=str(SOURCE_DIR / "calib"))
    assert path.endswith("calib/h100-sxm/qwen3-8b-bf16@vllm.json")
    with pytest.raises(specplan.InvalidArgumentError, match="foo"):
        specplan.bundled_profile_path("h100-sxm", "qwen3-8b", engine="foo")
    assert math.isfinite(specplan.Cost(gpu="l40s", model="qwen3-4b").verify_seconds(1, 0))


def test_profile_save_round_trip(tmp_path):
    p = specplan.load_profile(str(SOURCE_DIR / "calib/l40s/qwen3-8b-bf16@vllm.json"))
    out = tmp_path / "sub" / "copy.json"
    p.save(str(out))
    assert p.path == str(out)
    q = specplan.load_profile(str(out))
    assert q.id == p.id and q.cost().verify_seconds(8, 100) == p.cost().verify_seconds(8, 100)
    assert "l40s/qwen3-8b-bf16@vllm" in repr(q)
    with pytest.raises(specplan.Error):
        p.save("/proc/no/such/dir/p.json")
