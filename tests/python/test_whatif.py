"""specplan.whatif_online: `specplan whatif --online` from Python on a specplan.Cost. The dict
equals the CLI's --json for the same stream (rows, best_k, limits, slo), SLOs give goodput, and bad
keywords are refused naming the keyword and value."""

import pytest

import specplan

LOG = ("INFO 08-12 10:00:00 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.85, "
       "Accepted throughput: 5.00 tokens/s, Drafted throughput: 10.00 tokens/s, Accepted: 1850 "
       "tokens, Drafted: 3000 tokens, Per-position acceptance rate: 0.800, 0.600, 0.450, Avg "
       "Draft acceptance rate: 61.7%\n")

TRACE = ('{"id": "a", "prompt_token_ids": [1, 2, 3, 1, 2], "generated_token_ids": [3, 9, 9, 8], '
         '"acc_ngram": {"acc_len": [1, 2, 1, 1]}}\n')


@pytest.fixture()
def vllm_log(tmp_path):
    path = tmp_path / "accept.log"
    path.write_text(LOG)
    return str(path)


def test_equals_the_cli_json(cli, vllm_log):
    cost = specplan.Cost(gpu="h100", model="llama-3.1-8b", engine="vllm")
    got = specplan.whatif_online(cost, vllm_log, rates=[2, 16], chains=[0, 3],
                                 prompt_tokens=(256, 1024), output_tokens=(128, 256),
                                 num_prompts=200, slo_tpot_ms=10)
    want = cli("whatif", "--online", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine",
               "vllm", "--acceptance", vllm_log, "--rates", "2,16", "--chains", "0,3",
               "--prompt-tokens", "256:1024", "--output-tokens", "128:256", "--num-prompts",
               "200", "--slo-tpot-ms", "10", "--json")
    assert got["rows"] == want["rows"]
    assert got["best_k"] == want["best_k"] == [3, 3]
    assert got["limits"] == want["limits"]
    assert got["slo"] == want["slo"]
    assert got["scheduler_engine"] == "vllm"
    for key in ("model", "gpu", "profile", "engine", "engine_version", "drafter", "kv_cache_from"):
        assert got[key] == want[key], key
    for row in got["rows"]:
        assert row["goodput"] <= row["throughput"] * (1 + 1e-12)


def test_engine_limits_reach_the_cuda_graph_ladder_as_in_the_cli(cli, vllm_log):
    # With 8 running requests vLLM captures up to min(8 x 4 x 2, 512) = 64 tokens at K = 3, so a
    # mixed pass of decoding requests and a prefill chunk runs without graphs: Python's Cost,
    # built before the limits are known, must price it as the CLI does.
    cost = specplan.Cost(gpu="h100", model="llama-3.1-8b", engine="vllm")
    kwargs = dict(rates=[16], chains=[0, 3], prompt_tokens=(256, 1024), output_tokens=(128, 256),
                  num_prompts=100)
    got = specplan.whatif_online(cost, vllm_log, max_num_seqs=8, **kwargs)
    want = cli("whatif", "--online", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine",
               "vllm", "--acceptance", vllm_log, "--rates", "16", "--chains", "0,3",
               "--prompt-tokens", "256:1024", "--output-tokens", "128:256", "--num-prompts",
               "100", "--max-num-seqs", "8", "--json")
    assert got["rows"] == want["rows"]
    default = specplan.whatif_online(cost, vllm_log, **kwargs)
    assert default["rows"] != got["rows"]


def test_ngram_trace_with_the_matcher(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text(TRACE)
    cost = specplan.Cost(gpu="h100", model="llama-3.1-8b", engine="vllm", drafter="ngram")
    r = specplan.whatif_online(cost, str(trace), max_concurrency=1, chains=[0, 3],
                               acceptance_k_max=3, prompt_lookup_min=2, prompt_lookup_max=2)
    assert r["requests_from"] == "trace"
    assert [row["k"] for row in r["rows"]] == [0, 3]
    # The matcher drafts at output position 1 only: 4 tokens in 2 decode steps (+ the prefill's).
    assert r["rows"][1]["steps"] < r["rows"][0]["steps"]


def test_bad_keywords_name_the_keyword(vllm_log):
    cost = specplan.Cost(gpu="h100", model="llama-3.1-8b", engine="vllm")
    cases = [
        (dict(), "rates, max_concurrency: give one"),
        (dict(rates=[1], prompt_tokens=256), "output_tokens: not given"),
        (dict(rates=[0], prompt_tokens=256, output_tokens=64), "rates[0] = 0"),
        (dict(rates=[1], prompt_tokens=(9, 3), output_tokens=64), "\"9:3\""),
        (dict(rates=[1], prompt_tokens=256, output_tokens=64, slo_tpot_ms=float("nan")),
         "slo_tpot_ms"),
        (dict(rates=[1], prompt_tokens=256, output_tokens=64, arrivals="burst"), "arrivals"),
    ]
    for kwargs, message in cases:
        with pytest.raises(specplan.InvalidArgumentError) as info:
            specplan.whatif_online(cost, vllm_log, **kwargs)
        assert message in str(info.value), (kwargs, str(info.value))
    with pytest.raises(specplan.InvalidArgumentError, match="drafter = ''"):
        specplan.whatif_online(specplan.Cost(gpu="h100", model="llama-3.1-8b", drafter=""),
                               vllm_log, rates=[1], prompt_tokens=256, output_tokens=64)
