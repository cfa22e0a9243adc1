"""Requests from a JSONL file: {"ids": [...]} or {"text": "..."} per line (specplan-bench's
prompt format), texts encoded by the specplan-tokenizer binary as specplan-bench encodes them."""

import json
import os
import subprocess
import tempfile


def encode_texts(texts, tokenizer_model, tokenizer_bin):
    """Token ids of each text through the specplan-tokenizer binary (as specplan-bench does:
    runtime/text_prompts.cc), so that both see the same ids."""
    for i, t in enumerate(texts):
        if not t.strip() or "\n" in t or "\r" in t:
            raise ValueError(f"text {i}: empty or with a line break (one line of text per prompt)")
    with tempfile.TemporaryDirectory(prefix="engine_loop_") as tmp:
        src, dst = os.path.join(tmp, "texts.txt"), os.path.join(tmp, "ids.jsonl")
        with open(src, "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in texts))
        try:
            r = subprocess.run([tokenizer_bin, "encode", "--model", tokenizer_model, "--input",
                                src, "--output", dst, "--format", "jsonl"],
                               capture_output=True, text=True)
        except OSError as e:
            raise RuntimeError(f"--tokenizer-bin {tokenizer_bin}: cannot run it ({e}); build it "
                               "(cmake --build build --target specplan-tokenizer) or pass "
                               "{\"ids\": [...]} prompts") from e
        if r.returncode != 0:
            raise RuntimeError(f"{tokenizer_bin} encode failed: {r.stderr.strip()}")
        with open(dst) as f:
            ids = [json.loads(line)["ids"] for line in f if line.strip()]
    if len(ids) != len(texts):
        raise RuntimeError(f"tokenizer: {len(ids)} id lists for {len(texts)} texts")
    return ids


def load_requests(path, vocab, max_new_tokens, tokenizer_model, tokenizer_bin, max_prompts=0):
    """Requests from a JSONL file: {"ids": [...]} or {"text": "..."} per line, optionally with
    "max_new_tokens" (else the default). Returns [(ids, max_new_tokens)]."""
    rows: list = []  # [ids or None, text or None, max_new_tokens]
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}: "
            try:
                j = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(where + f"not JSON ({e})") from e
            if not isinstance(j, dict) or ("ids" not in j and "text" not in j):
                raise ValueError(where + 'expected {"ids": [int, ...]} or {"text": "..."}')
            n = j.get("max_new_tokens", max_new_tokens)
            if not isinstance(n, int) or n < 1:
                raise ValueError(where + f"max_new_tokens = {n!r}: must be an integer >= 1")
            if "ids" in j:
                ids = j["ids"]
                if not isinstance(ids, list) or not ids:
                    raise ValueError(where + "ids: not a list, or empty")
                for i, t in enumerate(ids):
                    if not isinstance(t, int) or not 0 <= t < vocab:
                        raise ValueError(where + f"ids[{i}] = {t!r}: must be an integer in "
                                         f"[0, {vocab})")
                rows.append([ids, None, n])
            else:
                if not isinstance(j["text"], str) or not j["text"]:
                    raise ValueError(where + "text: not a string, or empty")
                rows.append([None, j["text"], n])
            if max_prompts and len(rows) == max_prompts:
                break
    if not rows:
        raise ValueError(f"{path}: no prompts")
    texts = [r[1] for r in rows if r[0] is None]
    if texts:
        if not tokenizer_model:
            raise ValueError(f'{path}: a {{"text": ...}} prompt needs --tokenizer MODEL')
        encoded = iter(encode_texts(texts, tokenizer_model, tokenizer_bin))
        for r in rows:
            if r[0] is None:
                r[0] = next(encoded)
    return [(r[0], r[2]) for r in rows]
