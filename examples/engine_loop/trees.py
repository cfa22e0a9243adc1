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


def accept_greedy_sglang(tree, next_token, next_sibling, predict):
    """SGLang's verify_tree_greedy for one request: from the root, follow the child whose draft
    token equals the target's argmax at the current node (first child via retrive_next_token,
    then retrive_next_sibling). Returns (accepted node indices root first, bonus token)."""
    accepted = [0]
    cur = 0
    while True:
        child = next_token[cur]
        while child != -1 and tree.tokens[child] != predict[cur]:
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


class StepPlan:
    """One step's plan for a batch of B requests: the trees and the arrays the verification
    pass and the acceptance read."""

    def __init__(self, trees, contexts):
        self.trees = trees                                  # B Tree objects
        sizes = [t.size for t in trees]
        self.cu_seqlens = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)  # [B + 1]
        self.positions = np.concatenate(                    # [S] c_b + depth
            [np.asarray(t.depths, dtype=np.int64) + c for t, c in zip(trees, contexts)])
        self.masks = [t.ancestor_dense() for t in trees]    # B x [s_b][s_b] uint8
        links = [sglang_links(t) for t in trees]
        self.next_token = [n for n, _ in links]             # B x [s_b]
        self.next_sibling = [s for _, s in links]           # B x [s_b]
