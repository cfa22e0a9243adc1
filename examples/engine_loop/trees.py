"""Draft trees as flat arrays, their masks and SGLang's links, one step's plan, and SGLang's
greedy tree acceptance."""

import numpy as np


class Tree:
    """Flat arrays in topological order (DESIGN.md "Tree"): node 0 is the pending root."""

    def __init__(self, tokens, parents):
        self.tokens = [int(t) for t in tokens]
        self.parents = [int(p) for p in parents]
        self.depths = [0] * len(self.tokens)
        for i in range(1, len(self.tokens)):
            self.depths[i] = self.depths[self.parents[i]] + 1

    @property
    def size(self):
        return len(self.tokens)

    def ancestor_dense(self):
        """[s][s] uint8: row i has j set iff j is i or an ancestor of i."""
        s = self.size
        m = np.zeros((s, s), dtype=np.uint8)
        for i in range(s):
            m[i, i] = 1
            if i:
                m[i] |= m[self.parents[i]]
        return m


def accept_greedy_sglang(draft_tokens, next_token, next_sibling, predict):
    """SGLang's verify_tree_greedy for one request: from the root, follow the child whose draft
    token equals the target's argmax at the current node (first child via retrive_next_token,
    then retrive_next_sibling). Returns (accepted node indices root first, bonus token)."""
    accepted = [0]
    cur = 0
    while True:
        child = next_token[cur]
        while child != -1 and draft_tokens[child] != predict[cur]:
            child = next_sibling[child]
        if child == -1:
            return accepted, int(predict[cur])
        accepted.append(child)
        cur = child


def sglang_links(tree):
    """retrive_next_token / retrive_next_sibling of one tree (first child = smallest index;
    next sibling in ascending index; -1 none), SGLang's build_tree_kernel_efficient layout."""
    s = tree.size
    nxt, sib, last = [-1] * s, [-1] * s, [-1] * s
    for i in range(1, s):
        p = tree.parents[i]
        if nxt[p] == -1:
            nxt[p] = i
        else:
            sib[last[p]] = i
        last[p] = i
    return nxt, sib


class SeqPlan:
    """What one request verifies this step: s tokens (node i at cache slot c + i), positions
    c + depth, the [s][s] ancestor mask (None when s == 1), and SGLang's links for acceptance.
    n: draft nodes of the tree (padding slots, in the padded SGLang layout, not counted)."""

    def __init__(self, tokens, positions, mask, next_token, next_sibling, n,
                 expected_accepted=None):
        self.tokens = tokens
        self.positions = positions
        self.mask = mask
        self.next_token = next_token
        self.next_sibling = next_sibling
        self.n = n
        self.expected_accepted = expected_accepted
        self.depth = 0

    @property
    def s(self):
        return len(self.tokens)


def seq_plan_of_tree(tree, c):
    """A SeqPlan computed here from a Tree (the planners that do not use specplan)."""
    nxt, sib = sglang_links(tree)
    p = SeqPlan(tree.tokens, np.asarray(tree.depths, dtype=np.int64) + c,
                tree.ancestor_dense().astype(bool) if tree.size > 1 else None, nxt, sib,
                tree.size - 1)
    p.depth = max(tree.depths)
    return p
