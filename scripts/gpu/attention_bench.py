#!/usr/bin/env python3
"""Tree-verification attention for one layer of a GQA target (qwen3-8b: 8 kv heads, 4 query heads
per kv head, head_dim 128, bf16), s tree tokens over c cached tokens, three ways:
  masked   SDPA over all c + s keys with an additive [4s][c + s] mask (the runtime before this
           change; the mask rules out FlashAttention, so PyTorch runs its memory-efficient kernel)
  split    FlashAttention over the c cached keys (no mask: every tree token sees the whole prefix)
           + the s x s tree block with its ancestor mask in float32, merged by log-sum-exp
           (FlashInfer's cascade merge)
  gqa      SDPA with enable_gqa and a [s][c + s] mask (no folding), for reference
Prints median microseconds per call (CUDA events, 50 calls after 5 warm-ups) and each variant's
relative error against float64 attention.

Then a batch of b sequences, each s tree tokens over its own c cached tokens, the caches rows of
one arena [b][c + s][nkv][d] (runtime/kv_cache.h KvCache::Batch), two ways:
  per_seq   one gqa call per sequence (the runtime before one call per layer, 2161ce3)
  batched   one SDPA call, enable_gqa, a [b][1][s][c + s] mask (Transformer::AttendGroup); also
            forced onto the memory-efficient and the math backends (batched_efficient,
            batched_math: an error says the backend refused the call)
with each variant's relative error against float64 attention of every sequence.
"""
import json
import math
import statistics

import torch

NKV, G, D = 8, 4, 128


def inputs(s, c, gen):
    T = c + s
    cache_k = torch.randn(T, NKV, D, device="cuda", dtype=torch.bfloat16, generator=gen)
    cache_v = torch.randn(T, NKV, D, device="cuda", dtype=torch.bfloat16, generator=gen)
    q = torch.randn(s, NKV * G, D, device="cuda", dtype=torch.bfloat16, generator=gen)
    parents = [-1] + [int(torch.randint(0, i, (1,), generator=torch.Generator().manual_seed(i)))
                      for i in range(1, s)]
    anc = torch.zeros(s, s, dtype=torch.bool)
    for i in range(s):
        anc[i, i] = True
        if parents[i] >= 0:
            anc[i] |= anc[parents[i]]
    tree = torch.zeros(s, s, dtype=torch.float32)
    tree[~anc] = -math.inf
    return q, cache_k, cache_v, tree.cuda()


def fold(q, s):  # [s][nkv*g][d] -> [1][nkv][g*s][d]
    return q.view(s, NKV, G, D).permute(1, 2, 0, 3).reshape(1, NKV, G * s, D)


def unfold(o, s):  # [1][nkv][g*s][d] -> [s][nkv*g*d]
    return o.view(NKV, G, s, D).permute(2, 0, 1, 3).reshape(s, NKV * G * D)


def masked(q, k, v, tree, s, c):
    T = c + s
    m = torch.zeros(s, T, device="cuda", dtype=torch.bfloat16)
    m[:, c:] = tree.to(torch.bfloat16)
    m = m.repeat(G, 1).view(1, 1, G * s, T)
    kk = k[:T].permute(1, 0, 2).unsqueeze(0)
    vv = v[:T].permute(1, 0, 2).unsqueeze(0)
    return unfold(torch.nn.functional.scaled_dot_product_attention(fold(q, s), kk, vv, m), s)


def split(q, k, v, tree, s, c):
    qf = fold(q, s)  # [1][nkv][g s][d]
    scale = 1.0 / math.sqrt(D)
    kt = k[c:c + s].permute(1, 0, 2).float()  # [nkv][s][d]
    vt = v[c:c + s].permute(1, 0, 2).float()
    sc = torch.matmul(qf[0].float(), kt.transpose(1, 2)) * scale + tree.repeat(G, 1)
    lse2 = torch.logsumexp(sc, -1)  # [nkv][g s]
    o2 = torch.matmul(torch.softmax(sc, -1), vt)
    if c == 0:
        return unfold(o2.unsqueeze(0).to(torch.bfloat16), s)
    kp = k[:c].permute(1, 0, 2).unsqueeze(0)
    vp = v[:c].permute(1, 0, 2).unsqueeze(0)
    r = torch.ops.aten._scaled_dot_product_flash_attention(qf, kp, vp, 0.0, False, False)
    o1, lse1 = r[0][0].float(), r[1][0]
    lse = torch.logaddexp(lse1, lse2)
    o = o1 * torch.exp(lse1 - lse).unsqueeze(-1) + o2 * torch.exp(lse2 - lse).unsqueeze(-1)
    return unfold(o.unsqueeze(0).to(torch.bfloat16), s)


def gqa(q, k, v, tree, s, c):
    T = c + s
    m = torch.zeros(s, T, device="cuda", dtype=torch.bfloat16)
    m[:, c:] = tree.to(torch.bfloat16)
    kk = k[:T].permute(1, 0, 2).unsqueeze(0)
    vv = v[:T].permute(1, 0, 2).unsqueeze(0)
    o = torch.nn.functional.scaled_dot_product_attention(
        q.permute(1, 0, 2).unsqueeze(0), kk, vv, m, enable_gqa=True)
    return o[0].permute(1, 0, 2).reshape(s, -1)


def reference(q, k, v, tree, s, c):
    T = c + s
    m = torch.zeros(s, T, device="cuda", dtype=torch.float64)
    m[:, c:] = tree.double()
    kk = k[:T].double().repeat_interleave(G, 1).permute(1, 0, 2)
    vv = v[:T].double().repeat_interleave(G, 1).permute(1, 0, 2)
    sc = torch.matmul(q.double().permute(1, 0, 2), kk.transpose(1, 2)) / math.sqrt(D) + m
    return torch.matmul(torch.softmax(sc, -1), vv).permute(1, 0, 2).reshape(s, -1)


def timeit(fn):
    for _ in range(5):
        fn()
    ts = []
    for _ in range(50):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return statistics.median(ts)


def batch_inputs(b, s, c, gen):
    T = c + s
    ks = torch.randn(b, T, NKV, D, device="cuda", dtype=torch.bfloat16, generator=gen)
    vs = torch.randn(b, T, NKV, D, device="cuda", dtype=torch.bfloat16, generator=gen)
    qs = torch.randn(b, s, NKV * G, D, device="cuda", dtype=torch.bfloat16, generator=gen)
    tree = inputs(s, 0, gen)[3]  # one random tree's [s][s] mask for every sequence
    mask = torch.zeros(b, 1, s, T, device="cuda", dtype=torch.bfloat16)
    mask[:, 0, :, c:] = tree.to(torch.bfloat16)
    return qs, ks, vs, tree, mask


def per_seq(qs, ks, vs, tree, mask, s, c):
    return torch.stack([gqa(qs[i], ks[i], vs[i], tree, s, c) for i in range(qs.size(0))])


def batched(qs, ks, vs, tree, mask, s, c):
    o = torch.nn.functional.scaled_dot_product_attention(
        qs.permute(0, 2, 1, 3), ks.permute(0, 2, 1, 3), vs.permute(0, 2, 1, 3), mask,
        enable_gqa=True)
    return o.permute(0, 2, 1, 3).reshape(qs.size(0), s, -1)


def forced(backend):
    def fn(*args):
        from torch.nn.attention import sdpa_kernel
        with sdpa_kernel(backend):
            return batched(*args)
    return fn


def batch_rows(gen):
    from torch.nn.attention import SDPBackend
    variants = [("per_seq", per_seq), ("batched", batched),
                ("batched_efficient", forced(SDPBackend.EFFICIENT_ATTENTION)),
                ("batched_math", forced(SDPBackend.MATH))]
    for b, s, c in [(64, 1, 1024), (64, 4, 1024), (64, 16, 1024), (16, 64, 1024), (64, 4, 4096)]:
        args = batch_inputs(b, s, c, gen) + (s, c)
        qs, ks, vs, tree, _ = args[:5]
        ref = torch.stack([reference(qs[i], ks[i], vs[i], tree, s, c) for i in range(b)])
        row = {"b": b, "s": s, "c": c}
        for name, fn in variants:
            try:
                out = fn(*args)
                row[name + "_err"] = float((out.double() - ref).norm() / ref.norm())
                row[name + "_us"] = timeit(lambda: fn(*args))
            except Exception as e:  # noqa: BLE001
                row[name + "_error"] = str(e)[:200]
        print(json.dumps(row), flush=True)


def main():
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for s, c in [(1, 1024), (64, 1024), (1, 16384), (64, 16384), (256, 4096), (1024, 16384)]:
        q, k, v, tree = inputs(s, c, gen)
        ref = reference(q, k, v, tree, s, c)
        row = {"s": s, "c": c}
        for name, fn in [("masked", masked), ("split", split), ("gqa", gqa)]:
            try:
                out = fn(q, k, v, tree, s, c)
                row[name + "_err"] = float((out.double() - ref).norm() / ref.norm())
                row[name + "_us"] = timeit(lambda: fn(q, k, v, tree, s, c))
            except Exception as e:  # noqa: BLE001
                row[name + "_error"] = str(e)[:200]
        rows.append(row)
        print(json.dumps(row), flush=True)
    batch_rows(gen)


if __name__ == "__main__":
    main()
