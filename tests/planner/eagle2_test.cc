#include "planner/eagle2.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "planner/policy.h"
#include "planner/tree.h"

namespace specplan::planner {
namespace {

// Deterministic fake drafter (a seam fake): the row of node u depends only on the token path
// root..u, through a hash. Tokens in a row are distinct; probs are sorted, sum to < 1, and are
// optionally quantized to multiples of 1/levels (to create ties).
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t PathHash(const Tree& tree, int node, uint64_t seed) {
  uint64_t h = Mix(seed);
  for (int v = node; v >= 0; v = tree.parents[v]) h = Mix(h ^ Mix(tree.tokens[v] + 0x1234));
  return h;
}

double Unit(uint64_t h) { return static_cast<double>((h >> 11) + 1) / 9007199254740993.0; }

struct HashDrafter {
  int k = 4;
  int vocab = 1009;  // prime, so (base + j * stride) % vocab is distinct for j < vocab
  uint64_t seed = 1;
  int levels = 0;  // > 0: quantize probs down to multiples of 1/levels

  // Row of `node`: k (token, prob) pairs sorted by descending prob.
  void Row(const Tree& tree, int node, std::vector<int32_t>& tokens,
           std::vector<float>& probs) const {
    const uint64_t h = PathHash(tree, node, seed);
    tokens.clear();
    probs.clear();
    std::vector<double> w(k);
    double total = 0;
    for (int j = 0; j < k; ++j) {
      // Skewed weights so confidences spread over (0, 1).
      const double u = Unit(Mix(h + 17 * j + 1));
      w[j] = u * u * u;
      total += w[j];
    }
    std::sort(w.begin(), w.end(), std::greater<double>());
    const double mass = 0.6 + 0.39 * Unit(Mix(h + 999));
    const int base = static_cast<int>(h % vocab);
    for (int j = 0; j < k; ++j) {
      tokens.push_back((base + j * 37) % vocab);
      double p = w[j] / total * mass;
      if (levels > 0) p = std::floor(p * levels) / levels;
      probs.push_back(static_cast<float>(p));
    }
  }

  absl::Status operator()(const Tree& tree, NodeDistributions& d) const {
    d.ResizeRows(k);
    std::vector<int32_t> t;
    std::vector<float> p;
    for (int r = 0; r < d.num_nodes(); ++r) {
      Row(tree, d.nodes[r], t, p);
      for (int j = 0; j < k; ++j) d.Set(r, j, t[j], p[j]);
    }
    return absl::OkStatus();
  }
};

// Scripted drafter: row_fn(tree, node) gives the (token, prob) row (descending), padded to k.
using Row = std::vector<std::pair<int32_t, float>>;
DrafterFn Scripted(int k, std::function<Row(const Tree&, int)> row_fn) {
  return [k, row_fn](const Tree& tree, NodeDistributions& d) {
    d.ResizeRows(k);
    for (int r = 0; r < d.num_nodes(); ++r) {
      const Row row = row_fn(tree, d.nodes[r]);
      for (size_t j = 0; j < row.size() && static_cast<int>(j) < k; ++j) {
        d.Set(r, static_cast<int>(j), row[j].first, row[j].second);
      }
    }
    return absl::OkStatus();
  };
}

// Product of draft probs recomputed along the path must equal path_probs (up to rounding).
void ExpectPathProbsConsistent(const Tree& tree) {
  for (int i = 1; i < tree.size(); ++i) {
    EXPECT_LE(tree.path_probs[i], tree.path_probs[tree.parents[i]]) << "node " << i;
  }
}

std::unique_ptr<Eagle2Policy> MakeEagle(int top_k, int depth, int total) {
  Eagle2Options o;
  o.top_k = top_k;
  o.depth = depth;
  o.total_tokens = total;
  auto p = Eagle2Policy::Create(o);
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

// (rho desc, index asc) over all of `ids`, fully sorted.
void SortByScore(const Tree& t, std::vector<int>& ids) {
  std::sort(ids.begin(), ids.end(), [&t](int a, int b) {
    return t.path_probs[a] != t.path_probs[b] ? t.path_probs[a] > t.path_probs[b] : a < b;
  });
}

// Reference candidate tree, straight from the description.
Tree ReferenceCandidates(const HashDrafter& drafter, int32_t root, int top_k, int depth) {
  Tree c;
  c.ResetRoot(root);
  std::vector<int> frontier = {0};
  std::vector<int32_t> toks;
  std::vector<float> probs;
  for (int level = 0; level < depth && !frontier.empty(); ++level) {
    const int begin = c.size();
    for (int u : frontier) {
      drafter.Row(c, u, toks, probs);
      for (int j = 0; j < top_k && j < static_cast<int>(toks.size()); ++j) {
        c.AddNode(u, toks[j], c.path_probs[u] * probs[j]);
      }
    }
    std::vector<int> ids(c.size() - begin);
    std::iota(ids.begin(), ids.end(), begin);
    SortByScore(c, ids);
    if (static_cast<int>(ids.size()) > top_k) ids.resize(top_k);
    std::sort(ids.begin(), ids.end());
    frontier = ids;
  }
  return c;
}

TEST(Eagle2Test, HandWorkedRerankWithTieBreakByIndex) {
  // root -> a (1/2), b (1/4); a -> aa (1/2), ab (1/4); b -> ba (3/4), bb (1/8).
  auto drafter = Scripted(2, [](const Tree& t, int u) -> Row {
    if (u == 0) return {{1, 0.5f}, {2, 0.25f}};
    if (t.tokens[u] == 1) return {{11, 0.5f}, {12, 0.25f}};
    if (t.tokens[u] == 2) return {{21, 0.75f}, {22, 0.125f}};
    return {};
  });
  {
    auto policy = MakeEagle(2, 2, 3);
    auto tree = RunPolicy(*policy, 0, drafter);
    ASSERT_TRUE(tree.ok()) << tree.status();
    // rho: a .5, b .25, aa .25, ab .125, ba .1875, bb .03125. b and aa tie; b has the lower index.
    EXPECT_EQ((*tree)->tokens, (std::vector<int32_t>{0, 1, 2, 11}));
    EXPECT_EQ((*tree)->parents, (std::vector<int32_t>{-1, 0, 0, 1}));
    EXPECT_EQ(policy->kept(), (std::vector<int32_t>{0, 1, 2, 3}));
    EXPECT_EQ(policy->candidates().num_draft(), 6);
    EXPECT_EQ(policy->stats().drafted_nodes, 6);
    EXPECT_EQ(policy->stats().tree_nodes, 3);
    EXPECT_EQ(policy->stats().forwards, 2);
  }
  {
    auto policy = MakeEagle(2, 2, 4);
    auto tree = RunPolicy(*policy, 0, drafter);
    ASSERT_TRUE(tree.ok());
    // + ba (0.1875): candidate index 5 becomes final index 4, child of b (final index 2).
    EXPECT_EQ((*tree)->tokens, (std::vector<int32_t>{0, 1, 2, 11, 21}));
    EXPECT_EQ((*tree)->parents, (std::vector<int32_t>{-1, 0, 0, 1, 2}));
    EXPECT_EQ(policy->kept(), (std::vector<int32_t>{0, 1, 2, 3, 5}));
    EXPECT_DOUBLE_EQ((*tree)->path_probs[4], 0.1875);
  }
}

TEST(Eagle2Test, MatchesBruteForceOverGrid) {
  int cases = 0;
  for (int top_k : {1, 2, 3, 4}) {
    for (int depth : {1, 2, 3, 5}) {
      for (int total : {1, 4, 15, 1000}) {
        for (int levels : {0, 8}) {  // 8: coarse probs, many exact ties
          HashDrafter drafter;
          drafter.k = 1 + cases % 5;
          drafter.seed = 77 + cases;
          drafter.levels = levels;
          auto policy = MakeEagle(top_k, depth, total);
          auto tree = RunPolicy(*policy, 3, drafter);
          ASSERT_TRUE(tree.ok()) << tree.status();
          const Tree& t = **tree;
          ASSERT_TRUE(ValidateTree(t).ok()) << ValidateTree(t);
          ExpectPathProbsConsistent(**tree);

          const Tree cand = ReferenceCandidates(drafter, 3, top_k, depth);
          ASSERT_EQ(policy->candidates().tokens, cand.tokens) << policy->Name();
          ASSERT_EQ(policy->candidates().parents, cand.parents);
          ASSERT_EQ(policy->candidates().path_probs, cand.path_probs);

          // Brute force: the kept set is the N best candidates by (rho desc, index asc).
          std::vector<int> ids(cand.num_draft());
          std::iota(ids.begin(), ids.end(), 1);
          SortByScore(cand, ids);
          if (static_cast<int>(ids.size()) > total) ids.resize(total);
          std::sort(ids.begin(), ids.end());
          ids.insert(ids.begin(), 0);
          ASSERT_EQ(policy->kept(), std::vector<int32_t>(ids.begin(), ids.end()));

          // The final tree is the kept candidates, reindexed.
          const std::vector<int32_t>& kept = policy->kept();
          ASSERT_EQ(t.size(), static_cast<int>(kept.size()));
          for (int i = 1; i < t.size(); ++i) {
            EXPECT_EQ(t.tokens[i], cand.tokens[kept[i]]);
            EXPECT_EQ(kept[t.parents[i]], cand.parents[kept[i]]);
            EXPECT_EQ(t.path_probs[i], cand.path_probs[kept[i]]);
            EXPECT_EQ(t.depths[i], cand.depths[kept[i]]);
          }
          EXPECT_EQ(policy->stats().drafted_nodes, cand.num_draft());
          EXPECT_LE(policy->stats().forwards, depth);
          ++cases;
        }
      }
    }
  }
}

TEST(Eagle2Test, ReusesItsPolicyAcrossSteps) {
  auto policy = MakeEagle(4, 4, 20);
  NodeDistributions ws;
  for (int step = 0; step < 6; ++step) {
    HashDrafter drafter;
    drafter.seed = step;
    auto tree = RunPolicy(*policy, step, drafter, &ws);
    ASSERT_TRUE(tree.ok());
    EXPECT_TRUE(ValidateTree(**tree).ok());
    EXPECT_EQ((*tree)->num_draft(), 20);
    EXPECT_EQ(policy->stats().last_forwards, 4);
    ASSERT_TRUE(policy->ObserveAcceptance(1).ok());
  }
  EXPECT_EQ(policy->stats().tree_nodes, 6 * 20);
  EXPECT_EQ(policy->stats().drafted_nodes, 6 * (4 + 3 * 16));
  EXPECT_EQ(policy->stats().expansions, 6 * (1 + 3 * 4));
}

TEST(Eagle2Test, RejectsBadOptions) {
  Eagle2Options o;
  o.top_k = 0;
  EXPECT_NE(Eagle2Policy::Create(o).status().message().find("top_k = 0"), absl::string_view::npos);
  o = Eagle2Options();
  o.depth = 0;
  EXPECT_NE(Eagle2Policy::Create(o).status().message().find("depth = 0"), absl::string_view::npos);
  o = Eagle2Options();
  o.total_tokens = 0;
  EXPECT_NE(Eagle2Policy::Create(o).status().message().find("total_tokens = 0"),
            absl::string_view::npos);
  o = Eagle2Options();
  o.top_k = 256;
  o.depth = 256;
  EXPECT_NE(Eagle2Policy::Create(o).status().message().find("candidates exceed"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace specplan::planner
