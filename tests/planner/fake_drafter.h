// Test-only fakes for the drafter side of TreePolicy (planner/policies/policy.h), shared by the
// policy tests: a deterministic hash-based drafter, a scripted drafter and a path-probability
// check; and a path-independent DistributionProvider (planner/policies/path_conditioned.h) over
// marginals; and CreateOk, a policy's Create that must succeed.
#ifndef SPECPLAN_TESTS_PLANNER_FAKE_DRAFTER_H_
#define SPECPLAN_TESTS_PLANNER_FAKE_DRAFTER_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/path_conditioned.h"
#include "planner/policies/policy.h"
#include "planner/tree/tree.h"

namespace specplan::planner::testing {

// Deterministic fake drafter (a seam fake): the row of node u depends only on the token path
// root..u, through a hash. Tokens in a row are distinct; probs are sorted, sum to < 1, and are
// optionally quantized to multiples of 1/levels (to create ties).
inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t PathHash(const Tree& tree, int node, uint64_t seed) {
  uint64_t h = Mix(seed);
  for (int v = node; v >= 0; v = tree.parents[v]) h = Mix(h ^ Mix(tree.tokens[v] + 0x1234));
  return h;
}

inline double Unit(uint64_t h) { return static_cast<double>((h >> 11) + 1) / 9007199254740993.0; }

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
inline DrafterFn Scripted(int k, std::function<Row(const Tree&, int)> row_fn) {
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

// path_probs never increase from a parent to its child (each edge multiplies rho by a draft
// probability in [0, 1]). Does not recompute the products themselves.
inline void ExpectPathProbsConsistent(const Tree& tree) {
  for (int i = 1; i < tree.size(); ++i) {
    EXPECT_LE(tree.path_probs[i], tree.path_probs[tree.parents[i]]) << "node " << i;
  }
}

// Path-independent provider: q(. | path(u)) = row depth(u) of the marginals (so a path-conditioned
// planner must reproduce the marginals planner). Records the depths of each call's nodes.
class MarginalsProvider : public DistributionProvider {
 public:
  explicit MarginalsProvider(const Marginals& m) : m_(m) {}
  absl::Status Expand(const Tree& tree, absl::Span<const int32_t> nodes, int k,
                      absl::Span<TokenProb> out, absl::Span<int32_t> counts) override {
    std::vector<int> depths;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int d = tree.depths[nodes[i]];
      depths.push_back(d);
      counts[i] = std::min(k, m_.k);
      for (int r = 0; r < counts[i]; ++r) out[i * k + r] = {m_.token(d, r), m_.prob(d, r)};
    }
    request_depths.push_back(depths);
    return absl::OkStatus();
  }
  std::vector<std::vector<int>> request_depths;  // per Expand call, the depth of each node

 private:
  const Marginals& m_;
};

// Policy::Create(options), which must succeed (nullptr, with a failure, when it does not).
template <typename Policy, typename Options>
std::unique_ptr<Policy> CreateOk(const Options& options) {
  auto p = Policy::Create(options);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : nullptr;
}

}  // namespace specplan::planner::testing

#endif  // SPECPLAN_TESTS_PLANNER_FAKE_DRAFTER_H_
