"""specplan.sglang_layout and specplan.ragged_layout: the hand-worked examples of
planner/tree/engine_layouts.h (README "Engine layouts"), the CLI's --layout sglang, a reference
written here from SGLang's definitions, and the errors."""

import json

import numpy as np
import pytest

import specplan
from conftest import random_tree

TREE = ([50, 51, 52, 53, 54], [-1, 0, 0, 1, 1])


def test_sglang_hand_worked_bitpacking():
    lay = specplan.sglang_layout([TREE, ([70], [-1])], [3, 2], 5, "QLEN_ONLY_BITPACKING",
                                 pad_token=-7)
    assert isinstance(lay, specplan.SglangLayout)
    assert lay.draft_token_num == 5 and lay.tree_mask_mode == "QLEN_ONLY_BITPACKING"
    assert lay.to_dict()["draft_tokens"] is lay.draft_tokens
    assert lay.draft_tokens.tolist() == [50, 51, 52, 53, 54, 70, -7, -7, -7, -7]
    assert lay.positions.tolist() == [3, 4, 4, 5, 5, 2, 2, 2, 2, 2]
    assert lay.retrive_index.tolist() == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert lay.retrive_next_token.tolist() == [[1, 3, -1, -1, -1], [-1] * 5]
    assert lay.retrive_next_sibling.tolist() == [[-1, 2, -1, 4, -1], [-1] * 5]
    assert lay.tree_mask.dtype == np.uint8
    assert lay.tree_mask.tolist() == [0b1, 0b11, 0b101, 0b1011, 0b10011,
                                         0b1, 0b10, 0b100, 0b1000, 0b10000]
    for k in ("draft_tokens", "positions", "retrive_index", "retrive_next_token",
              "retrive_next_sibling"):
        assert getattr(lay, k).dtype == np.int64, k


def test_sglang_hand_worked_dense_modes():
    q = specplan.sglang_layout([TREE, ([70], [-1])], [3, 2], tree_mask_mode="QLEN_ONLY")
    rows = q.tree_mask.reshape(2, 5, 5)[0]
    assert q.tree_mask.dtype == np.bool_
    assert ["".join(str(int(x)) for x in r) for r in rows] == [
        "10000", "11000", "10100", "11010", "11001"]
    f = specplan.sglang_layout([TREE, ([70], [-1])], [3, 2], tree_mask_mode=0)
    assert f.tree_mask_mode == "FULL_MASK"
    assert f.tree_mask.size == 5 * (3 + 5) + 5 * (2 + 5)
    block = f.tree_mask[:40].reshape(5, 8)
    assert ["".join(str(int(x)) for x in r) for r in block] == [
        "11110000", "11111000", "11110100", "11111010", "11111001"]
    assert f.tree_mask_offsets.tolist() == [0, 40, 75]


def _reference_sglang(trees, ctx, d):
    """SGLang's definitions, written out: first child / next sibling in ascending index."""
    b = len(trees)
    nxt = -np.ones((b, d), np.int64)
    sib = -np.ones((b, d), np.int64)
    pos = np.zeros((b, d), np.int64)
    packed = np.zeros((b, d), np.int64)
    for i, (tokens, parents) in enumerate(trees):
        s = len(tokens)
        depth = [0] * s
        for j in range(1, s):
            depth[j] = depth[parents[j]] + 1
        last_child = {}
        for j in range(1, s):
            p = parents[j]
            if nxt[i, p] < 0:
                nxt[i, p] = j
            else:
                sib[i, last_child[p]] = j
            last_child[p] = j
        pos[i, :] = ctx[i]
        pos[i, :s] = [ctx[i] + x for x in depth]
        for j in range(d):
            bits, k = 1 << j, j
            while k < s and parents[k] >= 0:
                k = parents[k]
                bits |= 1 << k
            packed[i, j] = bits
    return nxt, sib, pos, packed


def test_sglang_random_against_reference():
    rng = np.random.default_rng(11)
    for _ in range(30):
        b = int(rng.integers(1, 6))
        trees = [random_tree(rng, int(rng.integers(1, 20))) for _ in range(b)]
        ctx = rng.integers(0, 50, size=b)
        d = max(len(t[0]) for t in trees) + int(rng.integers(0, 3))
        lay = specplan.sglang_layout(trees, ctx, d if d <= 32 else None)
        nxt, sib, pos, packed = _reference_sglang(trees, ctx.tolist(), d)
        assert (lay.retrive_next_token == nxt).all()
        assert (lay.retrive_next_sibling == sib).all()
        assert (lay.positions.reshape(b, d) == pos).all()
        assert (lay.tree_mask.astype(np.int64).reshape(b, d) == packed).all()


def test_sglang_matches_cli(cli, tmp_path):
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"root_token": 1, "tokens": [[5, 6], [7, 8]],
                                 "probs": [[0.6, 0.3], [0.5, 0.4]]}))
    for mode in ("QLEN_ONLY_BITPACKING", "QLEN_ONLY", "FULL_MASK"):
        want = cli("plan", "--marginals", small, "--c", 2, "--budget", 4, "--json", "--layout",
                   "sglang", "--tree-mask-mode", mode)["sglang"]
        plan = specplan.plan_tree(specplan.Marginals.load(str(small)), c=2, n_max=4, mode="fixed")
        got = plan.sglang_layout(tree_mask_mode=mode)
        for k, v in want.items():
            g = getattr(got, k)
            assert (g.astype(np.int64).tolist() if isinstance(g, np.ndarray) else g) == v, (mode, k)


def test_ragged_hand_worked_batch_of_three():
    lay = specplan.ragged_layout([TREE, ([70], [-1]), ([1, 2, 3], [-1, 0, 1])], [10, 7, 0])
    assert isinstance(lay, specplan.RaggedLayout) and "RaggedLayout(batch_size=3" in repr(lay)
    assert set(lay.to_dict()) == set(lay._fields)
    assert lay.batch_size == 3 and lay.total_tokens == 9
    assert lay.cu_seqlens.tolist() == [0, 5, 6, 9]
    assert lay.positions.tolist() == [10, 11, 11, 12, 12, 7, 0, 1, 2]
    assert lay.mask_packed.tolist() == [0b1, 0b11, 0b101, 0b1011, 0b10011, 0b1, 0b1, 0b11, 0b111]
    assert lay.mask_offsets.tolist() == [0, 5, 6, 9]
    assert lay.retrieve.tolist() == [0, 2, -1, 0, 1, 3, 0, 1, 4, 0, 0, 1, 2]
    assert lay.retrieve_width.tolist() == [3, 1, 3]
    assert lay.retrieve_offsets.tolist() == [0, 9, 10, 13]
    assert lay.tokens.tolist() == [50, 51, 52, 53, 54, 70, 1, 2, 3]
    assert lay.parents.tolist() == [-1, 0, 0, 1, 1, -1, -1, 0, 1]
    assert lay.mask_packed.dtype == np.uint64 and lay.cu_seqlens.dtype == np.int32


def test_tree_input_forms_agree(marginals):
    plan = specplan.plan_tree(marginals, c=5, n_max=20, mode="fixed")
    forms = [plan, plan.tree, (plan.tokens.astype(np.int64), plan.parents.tolist()),
             {"tokens": plan.tokens.tolist(), "parents": plan.parents}]
    want = specplan.ragged_layout([plan.tree], [5])
    for f in forms:
        got = specplan.ragged_layout([f], np.array([5], np.int32))
        assert got == want  # field by field, arrays by value
        assert all((getattr(got, k) == getattr(want, k)).all() for k in want._fields
                   if isinstance(getattr(want, k), np.ndarray))


def test_empty_batch():
    lay = specplan.ragged_layout([], [])
    assert lay.cu_seqlens.tolist() == [0] and lay.total_tokens == 0


@pytest.mark.parametrize("trees,ctx,kwargs,exc,words", [
    ([TREE, ([1, 2, 3, 4], [-1, 0, 1, 3])], [1, 2], {}, specplan.InvalidArgumentError,
     ["trees[1].parents[3] = 3", "[0, 3)"]),
    ([TREE, ([1, 2], [0, 0])], [1, 2], {}, specplan.InvalidArgumentError, ["trees[1].parents[0] = 0"]),
    ([TREE, ([1, 2], [-1])], [1, 2], {}, specplan.InvalidArgumentError, ["trees[1].parents", "1 entries"]),
    ([TREE, ([], [])], [1, 2], {}, specplan.InvalidArgumentError, ["trees[1].tokens: empty"]),
    ([TREE, ([1.0, 2.0], [-1, 0])], [1, 2], {}, specplan.ArgumentTypeError,
     ["trees[1].tokens", "float64"]),
    ([TREE, ([1, 2], [-1, 0], [0])], [1, 2], {}, specplan.InvalidArgumentError,
     ["trees[1]", "(tokens, parents) pair"]),
    ([TREE, 5], [1, 2], {}, specplan.ArgumentTypeError, ["trees[1]", "int"]),
    ([TREE], [1, 2], {}, specplan.InvalidArgumentError, ["context_lens: 2 entries", "1"]),
    ([TREE], [-3], {}, specplan.InvalidArgumentError, ["context_lens[0] = -3"]),
    ([TREE], [[1]], {}, specplan.InvalidArgumentError, ["context_lens: shape (1, 1)"]),
    ([TREE], [1.5], {}, specplan.ArgumentTypeError, ["context_lens: dtype float64"]),
    ([TREE], [1], dict(draft_token_num=3), specplan.InvalidArgumentError, ["draft_token_num", "3"]),
    ([TREE], [1], dict(tree_mask_mode="SPARSE"), specplan.InvalidArgumentError,
     ["tree_mask_mode", "SPARSE"]),
    ([TREE], [1], dict(tree_mask_mode=7), specplan.InvalidArgumentError, ["tree_mask_mode = 7"]),
    ([TREE], [1], dict(tree_mask_mode=1.5), specplan.ArgumentTypeError, ["tree_mask_mode", "float"]),
    # Bit packing asked for explicitly (the default falls back to QLEN_ONLY past 32 slots).
    ([(list(range(40)), [-1] + list(range(39)))], [1],
     dict(tree_mask_mode="QLEN_ONLY_BITPACKING"), specplan.InvalidArgumentError,
     ["QLEN_ONLY_BITPACKING", "32"]),
])
def test_layout_errors(trees, ctx, kwargs, exc, words):
    with pytest.raises(exc) as e:
        specplan.sglang_layout(trees, ctx, **kwargs)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_ragged_errors():
    with pytest.raises(specplan.ArgumentTypeError, match="trees: got str"):
        specplan.ragged_layout("tree", [1])
    with pytest.raises(specplan.InvalidArgumentError, match=r"trees\[0\].parents\[2\] = 5"):
        specplan.ragged_layout([([1, 2, 3], [-1, 0, 5])], [0])


def test_enum_like_mode():
    class Mode:
        name = "QLEN_ONLY"
    assert specplan.sglang_layout([TREE], [0], tree_mask_mode=Mode()).tree_mask_mode == "QLEN_ONLY"
