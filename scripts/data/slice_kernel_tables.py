#!/usr/bin/env python3
"""Copies the slice of aiconfigurator's kernel tables that the shipped engine-grade profiles read.

  python3 scripts/data/slice_kernel_tables.py SRC DST

SRC is a folder laid out as <gpu>/<engine>-<version>/{gemm,context_attention,generation_attention}.csv
(and SOURCE.txt; moe.csv, allreduce.csv and SOURCE_moe.txt where present), e.g. the full export the profiles were composed from; DST (data/kernels/) gets the
same layout with only the rows `specplan profiles compose` reads for the models below at tensor
parallelism 1, 2, 4 and 8, and for the drafter heads it composes beside them (eagle, eagle3, mtp):
  - attention rows whose per-GPU heads (num_heads / num_key_value_heads / head_dim) are the models';
  - GEMM rows (every m) of the (n, k) pairs that the composer's interpolation touches: for each GEMM
    width the measured widths around it, and for widths above the largest measured one the blocks
    it is split into (costmodel/compose/kernel_tables.h GemmTable::Seconds);
  - for the mixture-of-experts models (MOE_MODELS): their attention heads and non-expert GEMMs
    (QKV, O, router, shared experts, first_k_dense layers, LM head) as above, and the moe.csv rows
    of their expert shapes (MOE_SHAPES: each model's own, or the nearest measured one the composer
    scales from) in their expert dtype, every routing distribution, moe_ep_size 1 and
    moe_tp_size in TPS (expert parallelism, --moe-ep, needs the full tables);
  - allreduce.csv whole (a few hundred rows);
  - the GEMM rows that give the table's launch floor, DRAM bandwidth and peak FLOP/s (the
    fastest row, memory-bound rows with m <= 16 over >= 256 MiB of weights, the fastest in FLOP/s),
    so a profile composed from the slice equals one composed from the full tables.
The composer works unchanged on the full tables; the slice only keeps the repository small.
"""
import bisect
import csv
import os
import shutil
import sys

# (layers, hidden, query heads, kv heads, head_dim, ffn, vocab), as costmodel/hardware/model_registry.cc has them.
MODELS = {
    "qwen3-8b": (36, 4096, 32, 8, 128, 12288, 151936),
    "qwen3-4b": (36, 2560, 32, 8, 128, 9728, 151936),
    "llama-3.1-8b": (32, 4096, 32, 8, 128, 14336, 128256),
}
TPS = (1, 2, 4, 8)
# (layers, hidden, query heads, kv heads, head_dim, experts, [dense GEMM widths: shared experts,
# first_k_dense layers], vocab, tensor parallelisms), as costmodel/hardware/model_registry.cc has
# them; each at the tensor parallelisms it is documented at (a 20B model on 1-2 GPUs, a 106B one
# on 2-8).
MOE_MODELS = {
    "qwen3-30b-a3b": (48, 2048, 32, 4, 128, 128, [], 151936, (1, 2, 4, 8)),
    "gpt-oss-20b": (24, 2880, 64, 8, 64, 32, [], 201088, (1, 2)),
    "glm-4.5-air": (46, 4096, 96, 8, 128, 128, [1408, 10944], 151552, (2, 4, 8)),
}
# The MLP width one token activates (top-k x expert width + shared experts), by hidden size.
ACTIVE_FFN = {2048: 8 * 768, 2880: 4 * 2880, 4096: 8 * 1408 + 1408}
# moe.csv (moe_dtype, hidden_size, inter_size, topk, num_experts) the MoE models read: Qwen3-30B-A3B,
# GPT-OSS-20B (MXFP4 experts, the only form measured), GLM-4.5-Air's nearest measured shape
# (4096/1536, 128 experts top-8; its own 4096/1408 is not in the tables).
MOE_SHAPES = {
    ("bfloat16", 2048, 768, 8, 128),
    ("w4a16_mxfp4", 2880, 2880, 4, 32),
    ("bfloat16", 4096, 1536, 8, 128),
}
# draft_vocab_size of the released EAGLE-3 heads for Llama-3.1-8B and Qwen3-8B.
EAGLE3_DRAFT_VOCAB = 32000


def around(grid, x):
    """The measured widths an interpolation at x reads (x clamped up to the smallest)."""
    x = max(x, grid[0])
    i = bisect.bisect_left(grid, x)
    return {grid[i]} if grid[i] == x else {grid[i - 1], grid[i]}


def widths(grid, x):
    """The measured widths a GEMM width x reads, splitting x above the largest into blocks."""
    if x > grid[-1]:
        out = {grid[-1]}
        if x % grid[-1]:
            out |= widths(grid, x % grid[-1])
        return out
    return around(grid, x)


def gemm_shapes():
    for (_, h, nq, nkv, d, ffn, vocab) in MODELS.values():
        for tp in TPS:
            kvh = nkv // tp if nkv >= tp else 1
            q, kv, f = nq * d // tp, kvh * d, ffn // tp
            yield (q + 2 * kv, h)   # QKV
            yield (h, q)            # O
            yield (2 * f, h)        # gate/up
            yield (h, f)            # down
            yield (vocab // tp, h)  # LM head
            # The drafter heads composed beside each target (costmodel/step/drafter_arch.h):
            yield (h, 2 * h)              # eagle and mtp fc over (embedding, hidden)
            yield (h, 3 * h)              # eagle3 fc over three hidden states
            yield (q + 2 * kv, 2 * h)     # eagle3's QKV reads embedding ++ hidden
            yield (EAGLE3_DRAFT_VOCAB // tp, h)  # eagle3's LM head over its draft vocabulary
    for (_, h, nq, nkv, d, experts, dense, vocab, tps) in MOE_MODELS.values():
        for tp in tps:
            kvh = nkv // tp if nkv >= tp else 1
            q, kv = nq * d // tp, kvh * d
            yield (q + 2 * kv, h)   # QKV
            yield (h, q)            # O
            yield (experts, h)      # router (replicated)
            for f in dense:         # shared experts, first_k_dense layers
                yield (2 * f // tp, h)
                yield (h, f // tp)
            yield (vocab // tp, h)  # LM head
            # The EAGLE-3 head composed beside a MoE target (costmodel/step/drafter_arch.h): one
            # dense layer whose MLP is as wide as the experts a token activates (k x expert width,
            # plus the shared experts), its fc, wide QKV and draft LM head.
            f = ACTIVE_FFN[h]
            yield (2 * f // tp, h)
            yield (h, f // tp)
            yield (h, 3 * h)
            yield (q + 2 * kv, 2 * h)
            yield (EAGLE3_DRAFT_VOCAB // tp, h)


def heads():
    out = set()
    for (_, _, nq, nkv, d, _, _) in MODELS.values():
        for tp in TPS:
            out.add((nq // tp, nkv // tp if nkv >= tp else 1, d))
    for (_, _, nq, nkv, d, _, _, _, tps) in MOE_MODELS.values():
        for tp in tps:
            out.add((nq // tp, nkv // tp if nkv >= tp else 1, d))
    return out


def slice_folder(src, dst):
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(src, "gemm.csv")) as f:
        rows = list(csv.DictReader(f))
    ns = sorted({int(r["n"]) for r in rows})
    ks = sorted({int(r["k"]) for r in rows})
    pairs = set()
    for n, k in gemm_shapes():
        pairs |= {(a, b) for a in widths(ns, n) for b in widths(ks, k)}
    def flops(r):
        return 2 * int(r["m"]) * int(r["n"]) * int(r["k"]) / float(r["latency_ms"])
    fastest = min(rows, key=lambda r: float(r["latency_ms"]))
    best = max(rows, key=flops)
    write(dst, "gemm.csv", rows,
          lambda r: (int(r["n"]), int(r["k"])) in pairs or r is fastest or r is best
          or (int(r["m"]) <= 16 and int(r["n"]) * int(r["k"]) * 2 >= 256 * 2**20))
    keep = heads()
    for name in ("context_attention.csv", "generation_attention.csv"):
        with open(os.path.join(src, name)) as f:
            attn = list(csv.DictReader(f))
        write(dst, name, attn, lambda r: (int(r["num_heads"]), int(r["num_key_value_heads"]),
                                          int(r["head_dim"])) in keep)
    if os.path.exists(os.path.join(src, "moe.csv")):
        with open(os.path.join(src, "moe.csv")) as f:
            moe = list(csv.DictReader(f))
        # Sorted by series and num_tokens (the source lists token counts in any order).
        moe.sort(key=lambda r: (r["kernel_source"], r["moe_dtype"], int(r["hidden_size"]),
                                int(r["inter_size"]), int(r["topk"]), int(r["num_experts"]),
                                int(r["moe_tp_size"]), int(r["moe_ep_size"]), r["distribution"],
                                int(r["num_tokens"])))
        write(dst, "moe.csv", moe,
              lambda r: (r["moe_dtype"], int(r["hidden_size"]), int(r["inter_size"]),
                         int(r["topk"]), int(r["num_experts"])) in MOE_SHAPES
              and int(r["moe_ep_size"]) == 1 and int(r["moe_tp_size"]) in TPS)
    for name in ("allreduce.csv", "SOURCE.txt", "SOURCE_moe.txt"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))


def write(dst, name, rows, keep):
    kept = [r for r in rows if keep(r)]
    with open(os.path.join(dst, name), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(kept)
    print(f"{os.path.join(dst, name)}: {len(kept)} of {len(rows)} rows")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1:]
    for gpu in sorted(os.listdir(src)):
        if not os.path.isdir(os.path.join(src, gpu)):
            continue
        for engine in sorted(os.listdir(os.path.join(src, gpu))):
            if os.path.exists(os.path.join(src, gpu, engine, "gemm.csv")):
                slice_folder(os.path.join(src, gpu, engine), os.path.join(dst, gpu, engine))


if __name__ == "__main__":
    main()
