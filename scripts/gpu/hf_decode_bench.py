#!/usr/bin/env python3
"""Device ceilings and HuggingFace transformers' decode speed on the same GPU, for runtime/README.

Prints one JSON object:
  copy_bytes_per_s     device-to-device copy of 2 GiB, bytes read + written per second (median of
                       20 event-timed copies after 3 warm-ups, 4 rotating buffers)
  hf                   transformers' eager (no compile, no graphs) greedy generate of a random-weight
                       model built from the given config in bf16: prompt of C tokens, per-token time
                       tpot_s = (t(1 + N) - t(1)) / N, medians of 3 runs each
  model_bytes          parameter bytes of that model (the weight-streaming floor is
                       model_bytes / copy_bytes_per_s)

Usage: python3 scripts/gpu/hf_decode_bench.py --config qwen3-8b.json --c 1024 --new 64
"""
import argparse
import json
import statistics
import time

import torch
import transformers


def copy_bandwidth():
    n = 1 << 30  # bf16 elements = 2 GiB
    src = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    dst = [torch.empty_like(src[0]) for _ in range(2)]
    for i in range(3):
        dst[i % 2].copy_(src[i % 2])
    times = []
    for i in range(20):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        dst[i % 2].copy_(src[(i + 1) % 2])
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * 2 * n / statistics.median(times)


def generate_time(model, ids, new):
    torch.cuda.synchronize()
    t = time.perf_counter()
    model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False,
                   pad_token_id=0)
    torch.cuda.synchronize()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--c", type=int, default=1024)
    ap.add_argument("--new", type=int, default=64)
    a = ap.parse_args()
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "transformers": transformers.__version__}
    result["copy_bytes_per_s"] = copy_bandwidth()
    cfg = transformers.AutoConfig.from_pretrained(a.config)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16).eval()
    result["model_bytes"] = sum(p.numel() * p.element_size() for p in model.parameters())
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, cfg.vocab_size, (1, a.c), generator=g).cuda()
    generate_time(model, ids, 4)  # warm-up
    t1 = statistics.median(generate_time(model, ids, 1) for _ in range(3))
    tn = statistics.median(generate_time(model, ids, 1 + a.new) for _ in range(3))
    result["hf"] = {"attn_implementation": model.config._attn_implementation, "c": a.c,
                    "new": a.new, "prefill_plus_one_s": t1, "tpot_s": (tn - t1) / a.new}
    result["floor_s"] = result["model_bytes"] / result["copy_bytes_per_s"]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
