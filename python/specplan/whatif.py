"""What-if replays from Python: specplan.whatif_online, `specplan whatif --online` on a Cost.

    cost = specplan.Cost(gpu="h100", model="llama-3.1-8b", engine="vllm")   # drafter eagle3
    r = specplan.whatif_online(cost, "accept.log", rates=[2, 8, 16], chains=[0, 3],
                               prompt_tokens=(256, 1024), output_tokens=(128, 256),
                               num_prompts=500, slo_tpot_ms=10)
    r["rows"][1]["tpot"]["p50_ms"], r["rows"][1]["goodput"], r["best_k"]

The dict is what `specplan whatif --online --json` prints (docs/online.md).
"""

from ._specplan import whatif_online

__all__ = ["whatif_online"]
