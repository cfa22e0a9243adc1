#include "planner/tree/merge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "planner/acceptance/acceptance.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using TokenPath = std::vector<int32_t>;

// Random tree with `n` nodes, tokens in [0, vocab), path_probs = product of random edge probs
// (so non-increasing along paths). A small vocab makes shared prefixes and duplicate siblings.
Tree RandomTree(std::mt19937_64& rng, int n, int vocab, int32_t root_token) {
  Tree t;
  t.ResetRoot(root_token);
  for (int i = 1; i < n; ++i) {
    // Bias towards recent parents so trees get some depth.
    const int parent =
        (rng() % 2) ? static_cast<int>(rng() % i) : std::max(0, i - 1 - int(rng() % 3));
    const double edge = 0.05 + 0.95 * static_cast<double>(rng() % 1000) / 1000.0;
    t.AddNode(parent, static_cast<int32_t>(rng() % vocab), t.path_probs[parent] * edge);
  }
  return t;
}

TokenPath PathOf(const Tree& t, int node) {
  TokenPath path;
  for (int u = node; u > 0; u = t.parents[u]) path.push_back(t.tokens[u]);
  std::reverse(path.begin(), path.end());
  return path;
}

std::set<TokenPath> AllPaths(const Tree& t) {
  std::set<TokenPath> paths;
  for (int i = 0; i < t.size(); ++i) paths.insert(PathOf(t, i));
  return paths;
}

bool IsAncestorOrSelf(const Tree& t, int anc, int node) {
  for (int u = node; u >= 0; u = t.parents[u]) {
    if (u == anc) return true;
  }
  return false;
}

// Checks the verifier outputs of a merged tree: mask = ancestor relation, block structure, root
// column, positions = depth, retrieve rows = root-to-leaf paths covering every leaf once.
void CheckOutputs(const MergedTree& m) {
  const Tree& t = m.tree;
  TreeOutputs out;
  TreeOutputOptions options;
  options.dense_mask = true;
  ComputeTreeOutputs(t, options, &out);
  const int s = t.size();
  for (int i = 0; i < s; ++i) {
    EXPECT_EQ(out.positions[i], t.depths[i]) << i;
    EXPECT_EQ(out.mask_dense[static_cast<size_t>(i) * s + 0], 1) << "root column, row " << i;
    for (int j = 0; j < s; ++j) {
      const bool bit = out.mask_dense[static_cast<size_t>(i) * s + j] != 0;
      ASSERT_EQ(bit, IsAncestorOrSelf(t, j, i)) << i << "," << j;
      ASSERT_EQ(bit, out.MaskBit(i, j));
      // Block structure: an A-only node never attends to a B-only node and vice versa.
      if (m.source[i] != MergeSource::kBoth && m.source[j] != MergeSource::kBoth &&
          m.source[i] != m.source[j]) {
        ASSERT_FALSE(bit) << "cross attention " << i << " -> " << j;
      }
    }
  }
  std::vector<int> children(s, 0);
  for (int i = 1; i < s; ++i) ++children[t.parents[i]];
  std::set<int> leaves_seen;
  for (int r = 0; r < out.num_leaves; ++r) {
    const int32_t* row = out.retrieve.data() + static_cast<size_t>(r) * out.retrieve_width;
    ASSERT_EQ(row[0], 0);
    int last = 0;
    int k = 1;
    for (; k < out.retrieve_width && row[k] >= 0; ++k) {
      ASSERT_EQ(t.parents[row[k]], row[k - 1]) << "row " << r << " col " << k;
      last = row[k];
    }
    for (; k < out.retrieve_width; ++k) ASSERT_EQ(row[k], -1);
    EXPECT_EQ(children[last], 0) << "row " << r << " does not end at a leaf";
    EXPECT_TRUE(leaves_seen.insert(last).second);
  }
  EXPECT_EQ(static_cast<int>(leaves_seen.size()),
            static_cast<int>(std::count(children.begin(), children.end(), 0)));
}

TEST(MergeTest, NoteWorkedExample) {
  // Figure 1 of the note: n_1 = 3, so B's 1, 2, 3 map to 4, 5, 6.
  Tree a, b;
  a.ResetRoot(9);
  a.AddNode(0, 10, 0.5);
  a.AddNode(0, 11, 0.3);
  a.AddNode(1, 12, 0.2);
  b.ResetRoot(9);
  b.AddNode(0, 20, 0.6);
  b.AddNode(1, 21, 0.4);
  b.AddNode(1, 22, 0.1);
  absl::StatusOr<MergedTree> m = MergeTrees(a, b);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->tree.tokens, ElementsAre(9, 10, 11, 12, 20, 21, 22));
  EXPECT_THAT(m->tree.parents, ElementsAre(-1, 0, 0, 1, 0, 4, 4));
  EXPECT_THAT(m->tree.depths, ElementsAre(0, 1, 1, 2, 1, 2, 2));
  EXPECT_THAT(m->phi_a, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(m->phi_b, ElementsAre(0, 4, 5, 6));
  EXPECT_THAT(m->tree.path_probs, ElementsAre(1.0, 0.5, 0.3, 0.2, 0.6, 0.4, 0.1));
  using S = MergeSource;
  EXPECT_THAT(m->source, ElementsAre(S::kBoth, S::kA, S::kA, S::kA, S::kB, S::kB, S::kB));
  TreeOutputs out;
  TreeOutputOptions options;
  options.dense_mask = true;
  ComputeTreeOutputs(m->tree, options, &out);
  const std::vector<uint8_t> want = {
      1, 0, 0, 0, 0, 0, 0,  //
      1, 1, 0, 0, 0, 0, 0,  //
      1, 0, 1, 0, 0, 0, 0,  //
      1, 1, 0, 1, 0, 0, 0,  //
      1, 0, 0, 0, 1, 0, 0,  //
      1, 0, 0, 0, 1, 1, 0,  //
      1, 0, 0, 0, 1, 0, 1,  //
  };
  EXPECT_EQ(out.mask_dense, want);
  CheckOutputs(*m);
}

TEST(MergeTest, PlainUnionRandomTrees) {
  std::mt19937_64 rng(1);
  for (int na : {1, 2, 5, 17, 40}) {
    for (int nb : {1, 3, 16, 33}) {
      for (int rep = 0; rep < 3; ++rep) {
        const Tree a = RandomTree(rng, na, 4, 3);
        const Tree b = RandomTree(rng, nb, 4, 3);
        absl::StatusOr<MergedTree> m = MergeTrees(a, b);
        ASSERT_TRUE(m.ok()) << m.status();
        const Tree& t = m->tree;
        ASSERT_TRUE(ValidateTree(t).ok());
        ASSERT_EQ(t.size(), na + nb - 1);
        for (int i = 0; i < na; ++i) {
          ASSERT_EQ(m->phi_a[i], i);
          ASSERT_EQ(t.tokens[i], a.tokens[i]);
          ASSERT_EQ(t.depths[i], a.depths[i]);
          if (i > 0) {
            ASSERT_EQ(t.parents[m->phi_a[i]], m->phi_a[a.parents[i]]);
          }
          ASSERT_EQ(m->source[i], i == 0 ? MergeSource::kBoth : MergeSource::kA);
        }
        for (int i = 0; i < nb; ++i) {
          const int j = m->phi_b[i];
          ASSERT_EQ(j, i == 0 ? 0 : na - 1 + i);
          ASSERT_EQ(t.tokens[j], b.tokens[i]);
          ASSERT_EQ(t.depths[j], b.depths[i]);
          ASSERT_EQ(t.path_probs[j], i == 0 ? 1.0 : b.path_probs[i]);
          if (i > 0) {
            ASSERT_EQ(t.parents[j], m->phi_b[b.parents[i]]);
            ASSERT_EQ(m->source[j], MergeSource::kB);
          }
        }
        CheckOutputs(*m);
      }
    }
  }
}

TEST(MergeTest, DedupIsTheTokenPathTrieOfBoth) {
  std::mt19937_64 rng(2);
  for (int na : {1, 4, 12, 40}) {
    for (int nb : {1, 6, 25, 60}) {
      for (int vocab : {2, 3, 6}) {
        const Tree a = RandomTree(rng, na, vocab, 1);
        const Tree b = RandomTree(rng, nb, vocab, 1);
        MergeOptions options;
        options.dedup = true;
        absl::StatusOr<MergedTree> m = MergeTrees(a, b, options);
        ASSERT_TRUE(m.ok()) << m.status();
        const Tree& t = m->tree;
        ASSERT_TRUE(ValidateTree(t).ok());
        // Same candidate set of root-to-node token paths, one node per path.
        std::set<TokenPath> want = AllPaths(a);
        const std::set<TokenPath> pb = AllPaths(b);
        want.insert(pb.begin(), pb.end());
        EXPECT_EQ(AllPaths(t), want);
        EXPECT_EQ(t.size(), static_cast<int>(want.size()));
        // No two siblings share a token.
        std::set<std::pair<int32_t, int32_t>> edges;
        for (int i = 1; i < t.size(); ++i) {
          ASSERT_TRUE(edges.insert({t.parents[i], t.tokens[i]}).second)
              << "duplicate sibling " << i;
        }
        // phi maps each node to the node with the same token path, parents preserved, and the
        // source bits say who contributed; path_probs is the max over contributors.
        std::vector<uint8_t> bits(t.size(), 0);
        std::vector<double> best(t.size(), 0.0);
        for (int pass = 0; pass < 2; ++pass) {
          const Tree& src = pass == 0 ? a : b;
          const std::vector<int32_t>& phi = pass == 0 ? m->phi_a : m->phi_b;
          ASSERT_EQ(static_cast<int>(phi.size()), src.size());
          for (int i = 0; i < src.size(); ++i) {
            ASSERT_EQ(PathOf(t, phi[i]), PathOf(src, i));
            if (i > 0) {
              ASSERT_EQ(t.parents[phi[i]], phi[src.parents[i]]);
            }
            bits[phi[i]] |= pass == 0 ? 1 : 2;
            best[phi[i]] = std::max(best[phi[i]], src.path_probs[i]);
          }
        }
        for (int i = 0; i < t.size(); ++i) {
          EXPECT_EQ(static_cast<int>(m->source[i]), i == 0 ? 3 : bits[i]) << i;
          EXPECT_EQ(t.path_probs[i], best[i]) << i;
        }
        // A-originated nodes come first: every node whose first contributor is A precedes all
        // B-only nodes.
        int first_b_only = t.size();
        for (int i = 1; i < t.size(); ++i) {
          if (m->source[i] == MergeSource::kB) {
            first_b_only = i;
            break;
          }
        }
        for (int i = first_b_only; i < t.size(); ++i) EXPECT_EQ(m->source[i], MergeSource::kB);
        CheckOutputs(*m);
      }
    }
  }
}

TEST(MergeTest, DedupKeepsAIndicesWhenASiblingsAreDistinct) {
  Tree a, b;
  a.ResetRoot(0);
  a.AddNode(0, 1, 0.5);  // 1: [1]
  a.AddNode(0, 2, 0.4);  // 2: [2]
  a.AddNode(1, 3, 0.3);  // 3: [1 3]
  b.ResetRoot(0);
  b.AddNode(0, 2, 0.7);  // [2]     shared with A's 2
  b.AddNode(1, 5, 0.6);  // [2 5]   new
  b.AddNode(0, 1, 0.2);  // [1]     shared with A's 1
  b.AddNode(3, 3, 0.1);  // [1 3]   shared with A's 3
  b.AddNode(3, 4, 0.1);  // [1 4]   new
  MergeOptions options;
  options.dedup = true;
  absl::StatusOr<MergedTree> m = MergeTrees(a, b, options);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->phi_a, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(m->phi_b, ElementsAre(0, 2, 4, 1, 3, 5));
  EXPECT_THAT(m->tree.tokens, ElementsAre(0, 1, 2, 3, 5, 4));
  EXPECT_THAT(m->tree.parents, ElementsAre(-1, 0, 0, 1, 2, 1));
  EXPECT_THAT(m->tree.path_probs, ElementsAre(1.0, 0.5, 0.7, 0.3, 0.6, 0.1));
  using S = MergeSource;
  EXPECT_THAT(m->source, ElementsAre(S::kBoth, S::kBoth, S::kBoth, S::kBoth, S::kB, S::kB));
}

// Reference for the budget: the n_max best nodes of the unbudgeted union by (score desc, index
// asc). With scores non-increasing along paths this set is prefix-closed and equals best-first.
std::vector<int> ReferenceKept(const Tree& full, int n_max) {
  std::vector<int> order;
  for (int i = 1; i < full.size(); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return full.path_probs[x] > full.path_probs[y]; });
  order.resize(std::min<size_t>(order.size(), n_max));
  order.push_back(0);
  std::sort(order.begin(), order.end());
  return order;
}

TEST(MergeTest, BudgetKeepsBestFirstPrefixClosedSet) {
  std::mt19937_64 rng(3);
  MergeWorkspace ws;  // reused across calls on purpose
  MergedTree m;
  for (bool dedup : {false, true}) {
    for (int na : {1, 8, 30}) {
      for (int nb : {1, 9, 40}) {
        for (int n_max : {0, 1, 3, 10, 25, 100}) {
          const Tree a = RandomTree(rng, na, 3, 2);
          const Tree b = RandomTree(rng, nb, 3, 2);
          MergeOptions unbudgeted;
          unbudgeted.dedup = dedup;
          absl::StatusOr<MergedTree> full = MergeTrees(a, b, unbudgeted);
          ASSERT_TRUE(full.ok());
          MergeOptions options = unbudgeted;
          options.n_max = n_max;
          ASSERT_TRUE(MergeTrees(a, b, options, &ws, &m).ok());
          const Tree& t = m.tree;
          ASSERT_TRUE(ValidateTree(t).ok());
          const std::vector<int> kept = ReferenceKept(full->tree, n_max);
          ASSERT_EQ(t.size(), static_cast<int>(kept.size()));
          // Kept nodes in their original order; parents/tokens/scores/sources carried over.
          std::vector<int> new_of(full->tree.size(), -1);
          for (int k = 0; k < static_cast<int>(kept.size()); ++k) new_of[kept[k]] = k;
          for (int k = 0; k < t.size(); ++k) {
            const int f = kept[k];
            ASSERT_EQ(t.tokens[k], full->tree.tokens[f]);
            ASSERT_EQ(t.path_probs[k], full->tree.path_probs[f]);
            ASSERT_EQ(t.depths[k], full->tree.depths[f]);
            ASSERT_EQ(m.source[k], full->source[f]);
            if (k > 0) {
              ASSERT_GE(new_of[full->tree.parents[f]], 0) << "not prefix-closed";
              ASSERT_EQ(t.parents[k], new_of[full->tree.parents[f]]);
            }
          }
          for (int i = 0; i < a.size(); ++i) ASSERT_EQ(m.phi_a[i], new_of[full->phi_a[i]]);
          for (int i = 0; i < b.size(); ++i) ASSERT_EQ(m.phi_b[i], new_of[full->phi_b[i]]);
          CheckOutputs(m);
        }
      }
    }
  }
}

TEST(MergeTest, BudgetIsPrefixClosedEvenWhenScoresIncreaseAlongPaths) {
  // Child scored above its parent: best-first must still take the parent first.
  Tree a, b;
  a.ResetRoot(0);
  a.AddNode(0, 1, 0.1);
  a.AddNode(1, 2, 0.9);
  b.ResetRoot(0);
  b.AddNode(0, 3, 0.5);
  MergeOptions options;
  options.n_max = 2;
  absl::StatusOr<MergedTree> m = MergeTrees(a, b, options);
  ASSERT_TRUE(m.ok());
  // Frontier {a1: 0.1, b1: 0.5} -> b1; frontier {a1} -> a1. a2 (0.9) is not reachable in time.
  EXPECT_THAT(m->tree.tokens, ElementsAre(0, 1, 3));
  EXPECT_THAT(m->phi_a, ElementsAre(0, 1, -1));
  EXPECT_THAT(m->phi_b, ElementsAre(0, 2));
  options.n_max = 3;
  m = MergeTrees(a, b, options);
  ASSERT_TRUE(m.ok());
  EXPECT_THAT(m->tree.tokens, ElementsAre(0, 1, 2, 3));
}

TEST(MergeTest, DedupBudgetTakesSharedPathOnceWithMaxScore) {
  Tree a, b;
  a.ResetRoot(0);
  a.AddNode(0, 1, 0.2);  // [1] weak in A
  a.AddNode(0, 2, 0.5);
  b.ResetRoot(0);
  b.AddNode(0, 1, 0.9);  // [1] strong in B
  b.AddNode(0, 3, 0.4);
  MergeOptions options;
  options.dedup = true;
  options.n_max = 2;
  absl::StatusOr<MergedTree> m = MergeTrees(a, b, options);
  ASSERT_TRUE(m.ok());
  EXPECT_THAT(m->tree.tokens, ElementsAre(0, 1, 2));
  EXPECT_THAT(m->tree.path_probs, ElementsAre(1.0, 0.9, 0.5));
  EXPECT_THAT(m->phi_b, ElementsAre(0, 1, -1));
  EXPECT_EQ(m->source[1], MergeSource::kBoth);
}

// A deterministic "verifier": its argmax after a token path is a hash of the path, so nodes with
// the same token path get the same prediction in any tree.
int32_t ArgmaxAfter(const TokenPath& path, int vocab) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : path) h = (h ^ static_cast<uint64_t>(t + 1)) * 1099511628211ull;
  return static_cast<int32_t>((h >> 17) % vocab);
}

std::vector<int32_t> ArgmaxFor(const Tree& t, int vocab) {
  std::vector<int32_t> argmax(t.size());
  for (int i = 0; i < t.size(); ++i) argmax[i] = ArgmaxAfter(PathOf(t, i), vocab);
  return argmax;
}

TEST(MergeTest, GreedyAcceptanceOnTheUnionIsTheBestOfBothTrees) {
  // The point of merging: one verification of the union accepts as much as the better of the two
  // trees verified separately, and the accepted path maps back to one of them.
  std::mt19937_64 rng(6);
  for (bool dedup : {false, true}) {
    for (int trial = 0; trial < 200; ++trial) {
      const int vocab = 2 + static_cast<int>(rng() % 2);
      const Tree a = RandomTree(rng, 1 + rng() % 30, vocab, 0);
      const Tree b = RandomTree(rng, 1 + rng() % 30, vocab, 0);
      MergeOptions options;
      options.dedup = dedup;
      absl::StatusOr<MergedTree> m = MergeTrees(a, b, options);
      ASSERT_TRUE(m.ok());
      const AcceptResult ra = AcceptGreedy(a, ArgmaxFor(a, vocab));
      const AcceptResult rb = AcceptGreedy(b, ArgmaxFor(b, vocab));
      const AcceptResult rm = AcceptGreedy(m->tree, ArgmaxFor(m->tree, vocab));
      ASSERT_EQ(rm.accepted_length, std::max(ra.accepted_length, rb.accepted_length));
      const TokenPath accepted = PathOf(m->tree, rm.accepted_nodes.back());
      const TokenPath pa = PathOf(a, ra.accepted_nodes.back());
      const TokenPath pb = PathOf(b, rb.accepted_nodes.back());
      ASSERT_TRUE(accepted == pa || accepted == pb);
      // A fully matching token path is forced token by token, so equal lengths mean equal paths.
      if (ra.accepted_length >= rb.accepted_length) {
        ASSERT_EQ(accepted, pa);
      }
    }
  }
}

TEST(MergeTest, WorkspaceReuseGivesIdenticalResults) {
  std::mt19937_64 rng(4);
  MergeWorkspace ws;
  MergedTree reused;
  for (int trial = 0; trial < 30; ++trial) {
    const Tree a = RandomTree(rng, 1 + rng() % 50, 5, 0);
    const Tree b = RandomTree(rng, 1 + rng() % 50, 5, 0);
    MergeOptions options;
    options.dedup = trial % 2;
    options.n_max = trial % 3 == 0 ? -1 : static_cast<int>(rng() % 40);
    ASSERT_TRUE(MergeTrees(a, b, options, &ws, &reused).ok());
    absl::StatusOr<MergedTree> fresh = MergeTrees(a, b, options);
    ASSERT_TRUE(fresh.ok());
    EXPECT_EQ(reused.tree.tokens, fresh->tree.tokens);
    EXPECT_EQ(reused.tree.parents, fresh->tree.parents);
    EXPECT_EQ(reused.tree.path_probs, fresh->tree.path_probs);
    EXPECT_EQ(reused.phi_a, fresh->phi_a);
    EXPECT_EQ(reused.phi_b, fresh->phi_b);
    EXPECT_EQ(reused.source, fresh->source);
  }
}

TEST(MergeTest, MergedWithoutPathProbsWhenOneInputLacksThem) {
  Tree a, b;
  a.ResetRoot(4);
  a.AddNode(0, 1, 0.5);
  b.tokens = {4, 7};
  b.parents = {-1, 0};
  absl::StatusOr<MergedTree> m = MergeTrees(a, b);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->tree.path_probs.empty());
  EXPECT_THAT(m->tree.depths, ElementsAre(0, 1, 1));
}

TEST(MergeTest, ErrorsNameTheField) {
  Tree a, b;
  a.ResetRoot(5);
  a.AddNode(0, 1, 0.5);
  b.ResetRoot(7);
  absl::StatusOr<MergedTree> m = MergeTrees(a, b);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("a.tokens[0] = 5 and b.tokens[0] = 7"));

  b.ResetRoot(5);
  b.AddNode(0, 2, 0.5);
  b.parents[1] = 3;
  m = MergeTrees(a, b);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("b.parents[1] = 3"));

  b.parents[1] = 0;
  a.path_probs[1] = 2.0;
  m = MergeTrees(a, b);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("a.path_probs[1] = 2"));

  a.path_probs.clear();
  MergeOptions options;
  options.n_max = 1;
  m = MergeTrees(a, b, options);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("a.path_probs: required"));
}

TEST(MergeTest, RejectsUnionAboveTheNodeLimitUnlessBudgeted) {
  Tree a, b;
  a.ResetRoot(0);
  b.ResetRoot(0);
  for (int i = 1; i < kMaxTreeNodes; ++i) {
    a.AddNode(i - 1, 1, 0.5);
    b.AddNode(i - 1, 2, 0.5);
  }
  absl::StatusOr<MergedTree> m = MergeTrees(a, b);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("merged tree"));
  MergeOptions options;
  options.n_max = 100;
  m = MergeTrees(a, b, options);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->tree.size(), 101);
}

}  // namespace
}  // namespace specplan::planner
