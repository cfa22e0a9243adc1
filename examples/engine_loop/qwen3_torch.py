"""The runtime's decoder-only transformer (runtime/transformer.cc) re-written in PyTorch, op for op.

Llama-family models as the C++ LibTorch runtime runs them on the CPU: qwen3 (q/k RMSNorm, tied
embeddings), qwen2 (q/k/v bias) and llama without RoPE scaling. Same op order and dtypes as
Transformer::ForwardBatch's CPU path (the explicit bmm/softmax attention, not SDPA), so with the
same torch build (Debian's 1.13, which both python3-torch and the runtime link) the logits are
the runtime's bit for bit and every argmax agrees:

  * weights are read as stored (bf16 for models/) and copied into tensors of the run dtype
    (fp32 by default, as specplan-bench's --dtype);
  * RMSNorm in float32 then cast back, then scaled (HF LlamaRMSNorm);
  * RoPE tables from float32 positions and float32 inverse frequencies (computed in double),
    cast to the run dtype; rotate-half with cat(-x2, x1);
  * attention per segment over its own KV cache ([max_len][n_kv][d] per layer, keys after RoPE):
    the g query heads of a kv head folded into rows, scores in float32 scaled by 1/sqrt(d), an
    additive float32 mask, softmax, cast back, bmm with the values;
  * SiLU(gate) * up -> down; residuals x + attn, then + mlp;
  * final norm, LM head (the embedding when tied), logits in float32.
"""

import json
import math
import os

import torch

from safetensors_reader import read_checkpoint

NEG_INF = float("-inf")


class ModelConfig:
    """What the runtime reads from a HuggingFace config.json (costmodel/hardware/hf_config.h), restricted
    to the llama family without RoPE scaling."""

    def __init__(self, j, name=""):
        self.name = name
        self.model_type = j.get("model_type", "")
        if self.model_type not in ("qwen3", "qwen2", "llama", "mistral"):
            raise ValueError(f"{name}: model_type = {self.model_type!r}: this reference runs "
                             "qwen3, qwen2, llama and mistral")
        rs = j.get("rope_scaling")
        if rs not in (None, {}) and rs.get("rope_type", rs.get("type")) != "default":
            raise ValueError(f"{name}: rope_scaling = {rs!r}: not supported here")
        act = j.get("hidden_act", "silu")
        if act != "silu":
            raise ValueError(f"{name}: hidden_act = {act!r}: expected silu")
        self.vocab_size = int(j["vocab_size"])
        self.hidden_size = int(j["hidden_size"])
        self.intermediate_size = int(j["intermediate_size"])
        self.num_layers = int(j["num_hidden_layers"])
        self.num_heads = int(j["num_attention_heads"])
        self.num_kv_heads = int(j.get("num_key_value_heads", self.num_heads))
        self.head_dim = int(j.get("head_dim") or self.hidden_size // self.num_heads)
        self.rope_theta = float(j.get("rope_theta", 10000.0))
        self.norm_eps = float(j.get("rms_norm_eps", 1e-6))
        self.qk_norm = self.model_type == "qwen3"
        self.attention_bias = bool(j.get("attention_bias", self.model_type == "qwen2"))
        self.tie_word_embeddings = bool(j.get("tie_word_embeddings", False))
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"{name}: num_attention_heads = {self.num_heads} is not a multiple "
                             f"of num_key_value_heads = {self.num_kv_heads}")

    @staticmethod
    def load(directory):
        path = os.path.join(directory, "config.json")
        with open(path) as f:
            return ModelConfig(json.load(f), name=directory)


class KvCache:
    """K and V per layer, [max_len][n_kv][head_dim] (runtime/kv_cache.h). Slots [0, length) hold
    the committed sequence in order; a verification pass writes tree node i at slot c + i."""

    def __init__(self, config, max_len, dtype):
        shape = (max_len, config.num_kv_heads, config.head_dim)
        self.k = [torch.zeros(shape, dtype=dtype) for _ in range(config.num_layers)]
        self.v = [torch.zeros(shape, dtype=dtype) for _ in range(config.num_layers)]
        self.max_len = max_len
        self.length = 0

    def gather(self, src_slots, dst_start):
        """Moves rows src_slots[i] to dst_start + i in every layer (KvCache::GatherSlots):
        gathered first, so sources and destinations may overlap; skipped when in place."""
        m = len(src_slots)
        if m == 0 or all(s == dst_start + i for i, s in enumerate(src_slots)):
            return
        index = torch.tensor(src_slots, dtype=torch.int64)
        for layer in range(len(self.k)):
            kr = self.k[layer].index_select(0, index)
            vr = self.v[layer].index_select(0, index)
            self.k[layer].narrow(0, dst_start, m).copy_(kr)
            self.v[layer].narrow(0, dst_start, m).copy_(vr)


class Segment:
    """One sequence of a batched forward: s new tokens at `positions`, written to slots
    [start_slot, start_slot + s) of `cache`, attending over slots [0, start_slot + s).
    mask: None = causal; or a float32 [s][k] additive block over the last k slots (0 visible,
    -inf hidden; every earlier slot visible), e.g. the [s][s] tree block."""

    def __init__(self, tokens, positions, start_slot, cache, mask=None):
        self.tokens = tokens          # [s] int64
        self.positions = positions    # [s] int64
        self.start_slot = start_slot
        self.cache = cache
        self.mask = mask


def _inverse_frequencies(c):
    dim = c.head_dim
    inv = [1.0 / math.pow(c.rope_theta, (2 * i) / dim) for i in range(dim // 2)]
    return torch.tensor(inv, dtype=torch.float64).to(torch.float32)


class Transformer:
    """Weights by HF name; forward_batch is Transformer::ForwardBatch's CPU path."""

    def __init__(self, config, tensors, dtype=torch.float32):
        self.config = c = config
        self.dtype = dtype
        expected = {}

        def take(name, shape):
            if name not in tensors:
                raise KeyError(f"{name}: missing from the checkpoint ({c.name})")
            t = tensors[name]
            if list(t.shape) != list(shape):
                raise ValueError(f"{name}: shape {list(t.shape)}, expected {list(shape)}")
            expected[name] = True
            out = torch.empty(shape, dtype=dtype)
            out.copy_(t)  # as the runtime: allocate in the run dtype, copy_ the stored tensor
            return out

        h, d, f, V = c.hidden_size, c.head_dim, c.intermediate_size, c.vocab_size
        qw, kvw = c.num_heads * d, c.num_kv_heads * d
        self.embed = take("model.embed_tokens.weight", (V, h))
        self.layers = []
        for i in range(c.num_layers):
            p = f"model.layers.{i}."
            L = {
                "ln1": take(p + "input_layernorm.weight", (h,)),
                "ln2": take(p + "post_attention_layernorm.weight", (h,)),
                "q": take(p + "self_attn.q_proj.weight", (qw, h)),
                "k": take(p + "self_attn.k_proj.weight", (kvw, h)),
                "v": take(p + "self_attn.v_proj.weight", (kvw, h)),
                "o": take(p + "self_attn.o_proj.weight", (h, qw)),
                "gate": take(p + "mlp.gate_proj.weight", (f, h)),
                "up": take(p + "mlp.up_proj.weight", (f, h)),
                "down": take(p + "mlp.down_proj.weight", (h, f)),
                "q_b": None, "k_b": None, "v_b": None, "q_norm": None, "k_norm": None,
            }
            if c.attention_bias:
                L["q_b"] = take(p + "self_attn.q_proj.bias", (qw,))
                L["k_b"] = take(p + "self_attn.k_proj.bias", (kvw,))
                L["v_b"] = take(p + "self_attn.v_proj.bias", (kvw,))
            if c.qk_norm:
                L["q_norm"] = take(p + "self_attn.q_norm.weight", (d,))
                L["k_norm"] = take(p + "self_attn.k_norm.weight", (d,))
            self.layers.append(L)
        self.final_norm = take("model.norm.weight", (h,))
        if c.tie_word_embeddings:
            self.lm_head = self.embed
        else:
            self.lm_head = take("lm_head.weight", (V, h))
        for name in tensors:
            if name in expected or name.endswith("rotary_emb.inv_freq"):
                continue
            if c.tie_word_embeddings and name == "lm_head.weight":
                continue
            raise ValueError(f"{name}: unexpected tensor for model_type {c.model_type} with "
                             f"{c.num_layers} layers ({c.name})")
        self.inv_freq = _inverse_frequencies(c)

    @staticmethod
    def load(directory, dtype=torch.float32):
        return Transformer(ModelConfig.load(directory), read_checkpoint(directory), dtype)

    def new_cache(self, max_len):
        return KvCache(self.config, max_len, self.dtype)

    # --- the layers, as transformer.cc writes them -------------------------------------------

    def _norm(self, x, w):
        xf = x.to(torch.float32)
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.config.norm_eps)
        return w * xf.to(x.dtype)

    @staticmethod
    def _rope(x, cos, sin):
        half = x.size(-1) // 2
        x1 = x.narrow(-1, 0, half)
        x2 = x.narrow(-1, half, half)
        rotated = torch.cat([-x2, x1], -1)
        return x * cos + rotated * sin

    def _rope_tables(self, positions):
        freqs = torch.outer(positions, self.inv_freq)
        emb = torch.cat([freqs, freqs], -1).unsqueeze(1)
        return emb.cos().to(self.dtype), emb.sin().to(self.dtype)

    def _layer_mask(self, mask, s, start_slot):
        T = start_slot + s
        if mask is not None and mask.size(1) == T:
            return mask.to(torch.float32)
        if mask is not None:  # [s][k] block over the last k slots; earlier slots visible
            k = mask.size(1)
            full = torch.zeros((s, T), dtype=torch.float32)
            full.narrow(1, T - k, k).copy_(mask)
            return full
        if s == 1:
            return None
        return torch.zeros((s, T), dtype=torch.float32).masked_fill_(
            torch.ones((s, T), dtype=torch.bool).triu_(start_slot + 1), NEG_INF)

    def _attend(self, index, q, k, v, seg, s, mask):
        c = self.config
        d, nq, nkv = c.head_dim, c.num_heads, c.num_kv_heads
        g = nq // nkv
        kc, vc = seg.cache.k[index], seg.cache.v[index]
        kc.narrow(0, seg.start_slot, s).copy_(k)
        vc.narrow(0, seg.start_slot, s).copy_(v)
        T = seg.start_slot + s
        keys = kc.narrow(0, 0, T).permute(1, 0, 2)    # [nkv][T][d]
        values = vc.narrow(0, 0, T).permute(1, 0, 2)  # [nkv][T][d]
        qg = q.view(s, nkv, g, d).permute(1, 2, 0, 3).reshape(nkv, g * s, d)
        scores = torch.bmm(qg, keys.transpose(1, 2)).view(nkv, g, s, T)
        scores = scores.to(torch.float32) * (1.0 / math.sqrt(d))
        if mask is not None:
            scores = scores + mask
        p = torch.softmax(scores, -1).to(values.dtype).view(nkv, g * s, T)
        return torch.bmm(p, values).view(nkv, g, s, d).permute(2, 0, 1, 3).reshape(s, nq * d)

    def _attention(self, index, L, x, cos, sin, segs):
        c = self.config
        S, d = x.size(0), c.head_dim
        q = torch.nn.functional.linear(x, L["q"], L["q_b"]).view(S, c.num_heads, d)
        k = torch.nn.functional.linear(x, L["k"], L["k_b"]).view(S, c.num_kv_heads, d)
        v = torch.nn.functional.linear(x, L["v"], L["v_b"]).view(S, c.num_kv_heads, d)
        if c.qk_norm:
            q = self._norm(q, L["q_norm"])
            k = self._norm(k, L["k_norm"])
        q = self._rope(q, cos, sin)
        k = self._rope(k, cos, sin)
        if len(segs) == 1:
            seg, s, off, mask = segs[0]
            out = self._attend(index, q, k, v, seg, s, mask)
        else:
            out = torch.cat([self._attend(index, q.narrow(0, off, s), k.narrow(0, off, s),
                                          v.narrow(0, off, s), seg, s, mask)
                             for seg, s, off, mask in segs], 0)
        return torch.nn.functional.linear(out, L["o"])

    def _mlp(self, L, x):
        F = torch.nn.functional
        gate = F.silu(F.linear(x, L["gate"]))
        return F.linear(gate * F.linear(x, L["up"]), L["down"])

    # --- forwards ----------------------------------------------------------------------------

    @torch.inference_mode()
    def forward_batch(self, segments):
        """B segments in one pass: projections, norms, MLP and LM head once over the S packed
        tokens, attention per segment over its own cache. Returns float32 logits [S][V], segment
        i's rows at offset sum_{j<i} s_j. Does not change any cache's length."""
        segs, toks, poss, off = [], [], [], 0
        for seg in segments:
            s = int(seg.tokens.size(0))
            if seg.start_slot + s > seg.cache.max_len:
                raise ValueError(f"segment of {s} tokens at slot {seg.start_slot} overflows the "
                                 f"cache (max_len {seg.cache.max_len})")
            segs.append((seg, s, off, self._layer_mask(seg.mask, s, seg.start_slot)))
            off += s
            toks.append(seg.tokens.to(torch.int64))
            poss.append(seg.positions.to(torch.float32))
        tok = toks[0] if len(toks) == 1 else torch.cat(toks, 0)
        pos = poss[0] if len(poss) == 1 else torch.cat(poss, 0)
        cos, sin = self._rope_tables(pos)
        x = torch.embedding(self.embed, tok)
        for i, L in enumerate(self.layers):
            y = x + self._attention(i, L, self._norm(x, L["ln1"]), cos, sin, segs)
            x = y + self._mlp(L, self._norm(y, L["ln2"]))
        x = self._norm(x, self.final_norm)
        return torch.nn.functional.linear(x, self.lm_head).to(torch.float32)

    def forward_causal(self, tokens, start, cache):
        """Transformer::ForwardCausal: tokens at positions/slots start .. start + s - 1."""
        t = torch.as_tensor(tokens, dtype=torch.int64)
        pos = torch.arange(start, start + t.numel(), dtype=torch.int64)
        return self.forward_batch([Segment(t, pos, start, cache)])


def tree_mask_block(ancestor_dense, s):
    """The [s][s] float32 additive block of a tree (0 where bit j of row i is set: j is i or an
    ancestor of i; -inf elsewhere), as DecodeSequence::VerifySegment writes it."""
    visible = torch.as_tensor(ancestor_dense, dtype=torch.bool).view(s, s)
    return torch.zeros((s, s), dtype=torch.float32).masked_fill_(~visible, NEG_INF)
