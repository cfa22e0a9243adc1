#!/usr/bin/env python3
"""Writes tiny random HuggingFace checkpoints and transformers' logits for them, the reference the
runtime's CPU tests check against (tests/runtime/hf_reference_test.cc).

For each architecture (llama with llama3 RoPE scaling, qwen3 with q/k norm, decoupled head_dim and
tied embeddings, gpt_neox with partial rotary and parallel residual) it writes OUT/<arch>/:
  config.json, model.safetensors   save_pretrained of a random model (float32)
  reference.safetensors            input_ids [T] int64 and logits [T][V] float32: a causal forward
                                   of input_ids by transformers, computed in float64 (eager attention)
Weights are redrawn with scales like the runtime's own random init (matrices N(0, 1/fan_in),
embeddings N(0, 1), norm weights 1 + 0.1 N(0, 1), biases 0.1 N(0, 1)) so that logits are far from
uniform; transformers' default init (std 0.02) would make every logit nearly equal.

Usage: python3 scripts/gpu/hf_reference.py OUT_DIR   (needs torch, transformers, safetensors; CPU)
"""
import json
import math
import os
import sys

import torch
import transformers
from safetensors.torch import save_file

COMMON = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, vocab_size=128,
              max_position_embeddings=256)

CONFIGS = {
    "llama": transformers.LlamaConfig(
        **COMMON, intermediate_size=64, num_key_value_heads=2, rms_norm_eps=1e-5,
        tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
        rope_theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 32}),
    "qwen3": transformers.Qwen3Config(
        **COMMON, intermediate_size=64, num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6,
        tie_word_embeddings=True, rope_theta=1000000.0, use_sliding_window=False),
    "gpt_neox": transformers.GPTNeoXConfig(
        **COMMON, intermediate_size=128, rotary_pct=0.5, rotary_emb_base=10000,
        use_parallel_residual=True, layer_norm_eps=1e-5, hidden_act="gelu",
        tie_word_embeddings=False, attention_bias=True),
}


def redraw(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float64)
            if name.endswith(".bias"):
                r = 0.1 * r
            elif p.dim() == 1:  # norm weights
                r = 1.0 + 0.1 * r
            elif "embed_tokens" in name or "embed_in" in name:
                pass
            else:
                r = r / math.sqrt(p.shape[1])
            p.copy_(r.to(p.dtype))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "hf_reference"
    torch.manual_seed(0)
    summary = {"transformers": transformers.__version__, "torch": torch.__version__, "models": {}}
    for i, (arch, cfg) in enumerate(CONFIGS.items()):
        cfg._attn_implementation = "eager"
        model = transformers.AutoModelForCausalLM.from_config(cfg).float().eval()
        redraw(model, 100 + i)
        d = os.path.join(out, arch)
        os.makedirs(d, exist_ok=True)
        model.save_pretrained(d, safe_serialization=True)
        g = torch.Generator().manual_seed(200 + i)
        ids = torch.randint(0, cfg.vocab_size, (24,), generator=g, dtype=torch.int64)
        with torch.no_grad():
            logits = model.double()(ids.unsqueeze(0), use_cache=False).logits[0]
        save_file({"input_ids": ids.contiguous(), "logits": logits.float().contiguous()},
                  os.path.join(d, "reference.safetensors"))
        summary["models"][arch] = {"params": sum(p.numel() for p in model.parameters()),
                                   "logit_std": float(logits.std()),
                                   "files": sorted(os.listdir(d))}
        print(f"hf_reference: {arch}: {summary['models'][arch]}", flush=True)
    with open(os.path.join(out, "versions.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
