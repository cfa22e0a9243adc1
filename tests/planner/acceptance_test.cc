// Greedy and exact-sampling acceptance over trees, with their distribution tests. Over 500 lines
// because the sampling tests share the empirical-distribution helpers; each acceptance rule's
// tests are a block.
#include "planner/acceptance/acceptance.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace specplan::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tree RandomTree(std::mt19937_64& rng, int n, int vocab) {
  Tree t;
  t.ResetRoot(static_cast<int32_t>(rng() % vocab));
  for (int i = 1; i < n; ++i) {
    const int parent = (rng() % 2) ? static_cast<int>(rng() % i)
                                   : std::max(0, i - 1 - static_cast<int>(rng() % 3));
    t.AddNode(parent, static_cast<int32_t>(rng() % vocab), 0.5 * t.path_probs[parent]);
  }
  return t;
}

Tree TreeFromParents(const std::vector<int32_t>& parents, const std::vector<int32_t>& tokens) {
  Tree t;
  t.ResetRoot(tokens[0]);
  for (size_t i = 1; i < parents.size(); ++i) t.AddNode(parents[i], tokens[i], 1.0);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Greedy
// ---------------------------------------------------------------------------------------------

// Brute force over all root-to-node paths: longest fully matching path, ties to the
// lexicographically smallest index sequence.
std::vector<int32_t> BruteForceGreedy(const Tree& t, const std::vector<int32_t>& argmax) {
  std::vector<int32_t> best = {0};
  for (int v = 1; v < t.size(); ++v) {
    std::vector<int32_t> path;
    for (int u = v; u >= 0; u = t.parents[u]) path.push_back(u);
    std::reverse(path.begin(), path.end());
    bool ok = true;
    for (size_t k = 1; k < path.size(); ++k) ok &= t.tokens[path[k]] == argmax[path[k - 1]];
    if (!ok) continue;
    if (path.size() > best.size() || (path.size() == best.size() && path < best)) best = path;
  }
  return best;
}

TEST(GreedyAcceptTest, HandExample) {
  // Nodes as index:token. Root 0 has children 1:5, 2:6, 3:5; 1:5 -> 4:8; 3:5 -> 5:9 -> 6:1.
  const Tree t = TreeFromParents({-1, 0, 0, 0, 1, 3, 5}, {0, 5, 6, 5, 8, 9, 1});
  // Target: after root -> 5; after either 5 -> 9; after 9 -> 1; after 1 -> 42.
  std::vector<int32_t> argmax = {5, 9, 0, 9, 0, 1, 42};
  AcceptResult r = AcceptGreedy(t, argmax);
  EXPECT_THAT(r.accepted_nodes, ElementsAre(0, 3, 5, 6));
  EXPECT_EQ(r.accepted_length, 3);
  EXPECT_EQ(r.bonus_token, 42);
  // Nothing matches: only the root, bonus = argmax at the root.
  argmax = {7, 0, 0, 0, 0, 0, 0};
  r = AcceptGreedy(t, argmax);
  EXPECT_THAT(r.accepted_nodes, ElementsAre(0));
  EXPECT_EQ(r.accepted_length, 0);
  EXPECT_EQ(r.bonus_token, 7);
}

TEST(GreedyAcceptTest, TieBetweenSiblingsSharingATokenGoesToTheFirst) {
  // Siblings 1 and 2 both carry token 5; both children match at equal length.
  const Tree t = TreeFromParents({-1, 0, 0, 2, 1}, {0, 5, 5, 8, 8});
  const std::vector<int32_t> argmax = {5, 8, 8, 3, 4};
  const AcceptResult r = AcceptGreedy(t, argmax);
  EXPECT_THAT(r.accepted_nodes, ElementsAre(0, 1, 4));
  EXPECT_EQ(r.bonus_token, 4);
  // Unless the later sibling leads to a longer match.
  const Tree t2 = TreeFromParents({-1, 0, 0, 2}, {0, 5, 5, 8});
  const AcceptResult r2 = AcceptGreedy(t2, std::vector<int32_t>{5, 7, 8, 1});
  EXPECT_THAT(r2.accepted_nodes, ElementsAre(0, 2, 3));
}

TEST(GreedyAcceptTest, MatchesBruteForceOnRandomTrees) {
  std::mt19937_64 rng(11);
  GreedyAcceptWorkspace ws;
  AcceptResult r;
  for (int n : {1, 2, 3, 7, 20, 60}) {
    for (int vocab : {2, 3, 5}) {
      for (int rep = 0; rep < 40; ++rep) {
        const Tree t = RandomTree(rng, n, vocab);
        std::vector<int32_t> argmax(n);
        for (int32_t& x : argmax) x = static_cast<int32_t>(rng() % vocab);
        AcceptGreedy(t, argmax, &ws, &r);
        const std::vector<int32_t> want = BruteForceGreedy(t, argmax);
        ASSERT_EQ(r.accepted_nodes, want) << "n=" << n << " vocab=" << vocab;
        ASSERT_EQ(r.accepted_length, static_cast<int>(want.size()) - 1);
        ASSERT_EQ(r.bonus_token, argmax[want.back()]);
      }
    }
  }
}

TEST(GreedyAcceptTest, BatchIsEachTreeOnItsOwnRowsInBothLayouts) {
  // AcceptGreedyBatch over ragged rows and over padded slots equals brute force per tree, with the
  // flattened nodes and emitted tokens at the shared offsets.
  std::mt19937_64 rng(12);
  GreedyAcceptWorkspace ws;
  BatchAcceptResult r;
  for (int rep = 0; rep < 30; ++rep) {
    const int b = 1 + static_cast<int>(rng() % 6);
    std::vector<Tree> trees;
    for (int i = 0; i < b; ++i)
      trees.push_back(RandomTree(rng, 1 + static_cast<int>(rng() % 9), 3));
    for (const std::optional<int64_t> slot :
         {std::optional<int64_t>(), std::optional<int64_t>(9)}) {
      int64_t total = 0;
      for (const Tree& t : trees) total += slot ? *slot : t.size();
      std::vector<int32_t> argmax(static_cast<size_t>(total));
      for (int32_t& x : argmax) x = static_cast<int32_t>(rng() % 3);
      auto rows = BatchArgmaxRows(trees, slot, total);
      ASSERT_TRUE(rows.ok()) << rows.status();
      AcceptGreedyBatch(trees, argmax, *rows, &ws, &r);
      ASSERT_EQ(r.offsets.size(), static_cast<size_t>(b + 1));
      for (int i = 0; i < b; ++i) {
        const std::vector<int32_t> row(argmax.begin() + (*rows)[i],
                                       argmax.begin() + (*rows)[i] + trees[i].size());
        const std::vector<int32_t> want = BruteForceGreedy(trees[i], row);
        const std::vector<int32_t> got(r.accepted_nodes.begin() + r.offsets[i],
                                       r.accepted_nodes.begin() + r.offsets[i + 1]);
        ASSERT_EQ(got, want) << "request " << i;
        EXPECT_EQ(r.accepted_length[i], static_cast<int>(want.size()) - 1);
        EXPECT_EQ(r.bonus_token[i], row[want.back()]);
        EXPECT_EQ(r.emitted[r.offsets[i + 1] - 1], r.bonus_token[i]);
        for (size_t k = 1; k < want.size(); ++k) {
          EXPECT_EQ(r.emitted[r.offsets[i] + k - 1], trees[i].tokens[want[k]]);
        }
      }
    }
  }
}

TEST(GreedyAcceptTest, BatchRowsErrorsNameTheArgument) {
  const std::vector<Tree> trees = {TreeFromParents({-1, 0}, {1, 2}),
                                   TreeFromParents({-1, 0, 1}, {1, 2, 3})};
  EXPECT_THAT(BatchArgmaxRows(trees, 2, 4).status().message(),
              HasSubstr("draft_token_num = 2: trees[1] has 3 nodes"));
  EXPECT_THAT(BatchArgmaxRows(trees, 0, 4).status().message(),
              HasSubstr("draft_token_num = 0: must be >= 1"));
  EXPECT_THAT(BatchArgmaxRows(trees, std::nullopt, 4).status().message(),
              HasSubstr("argmax: 4 entries, expected 5 (the trees' nodes back to back)"));
  EXPECT_THAT(BatchArgmaxRows(trees, 4, 6).status().message(),
              HasSubstr("argmax: 6 entries, expected 8 (B = 2 x draft_token_num = 4)"));
  auto rows = BatchArgmaxRows(trees, 3, 6);
  ASSERT_TRUE(rows.ok());
  EXPECT_THAT(*rows, ElementsAre(0, 3, 6));
}

// ---------------------------------------------------------------------------------------------
// ApplySampling
// ---------------------------------------------------------------------------------------------

TEST(SampleAcceptTest, ApplySamplingSoftmaxTemperature) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f};
  for (float temp : {0.5f, 1.0f, 2.0f}) {
    absl::StatusOr<std::vector<float>> p = ApplySampling(logits, temp, 0, 1.0f);
    ASSERT_TRUE(p.ok()) << p.status();
    double z = 0;
    for (float l : logits) z += std::exp(l / temp);
    for (size_t v = 0; v < logits.size(); ++v) {
      EXPECT_NEAR((*p)[v], std::exp(logits[v] / temp) / z, 1e-6) << temp << " " << v;
    }
  }
}

TEST(SampleAcceptTest, ApplySamplingTopKTopPAndGreedy) {
  const std::vector<float> logits = {std::log(0.1f), std::log(0.4f), std::log(0.2f), std::log(0.3f),
                                     -INFINITY};
  // top-k 2 keeps {1: 0.4, 3: 0.3}.
  absl::StatusOr<std::vector<float>> p = ApplySampling(logits, 1.0f, 2, 1.0f);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR((*p)[1], 0.4 / 0.7, 1e-6);
  EXPECT_NEAR((*p)[3], 0.3 / 0.7, 1e-6);
  EXPECT_EQ((*p)[0], 0.0f);
  EXPECT_EQ((*p)[2], 0.0f);
  EXPECT_EQ((*p)[4], 0.0f);
  // top-p 0.75: 0.4 + 0.3 = 0.7 < 0.75, so 0.2 joins -> {1, 3, 2}.
  p = ApplySampling(logits, 1.0f, 0, 0.75f);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR((*p)[1], 0.4 / 0.9, 1e-6);
  EXPECT_NEAR((*p)[2], 0.2 / 0.9, 1e-6);
  EXPECT_EQ((*p)[0], 0.0f);
  // top-p 0.3: the top token alone reaches it.
  p = ApplySampling(logits, 1.0f, 0, 0.3f);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(*p, ElementsAre(0.0f, 1.0f, 0.0f, 0.0f, 0.0f));
  // top-k then top-p relative to the top-k mass: top-2 = {0.4, 0.3}/0.7; 0.6 needs both.
  p = ApplySampling(logits, 1.0f, 2, 0.6f);
  ASSERT_TRUE(p.ok());
  EXPECT_GT((*p)[3], 0.0f);
  EXPECT_EQ((*p)[2], 0.0f);
  // Temperature 0: one-hot at the argmax; first index on ties.
  p = ApplySampling(std::vector<float>{1.0f, 3.0f, 3.0f}, 0.0f, 0, 1.0f);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(*p, ElementsAre(0.0f, 1.0f, 0.0f));
  // Ties at the top-k boundary go to the lower token id.
  p = ApplySampling(std::vector<float>{1.0f, 1.0f, 1.0f}, 1.0f, 2, 1.0f);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(*p, ElementsAre(0.5f, 0.5f, 0.0f));
}

TEST(SampleAcceptTest, ApplySamplingMatchesReferenceOnRandomLogits) {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> probs;
  std::vector<int32_t> order;
  for (int trial = 0; trial < 200; ++trial) {
    const int vocab = 1 + static_cast<int>(rng() % 12);
    std::vector<float> logits(vocab);
    for (float& l : logits) l = normal(rng);
    const float temp = 0.3f + static_cast<float>(rng() % 100) / 50.0f;
    const int top_k = static_cast<int>(rng() % (vocab + 2));
    const float top_p = 0.05f + 0.95f * static_cast<float>(rng() % 101) / 100.0f;
    probs.resize(vocab);
    ASSERT_TRUE(ApplySampling(logits, temp, top_k, top_p, absl::MakeSpan(probs), &order).ok());
    // Reference: full sort, softmax, cut, renormalise.
    std::vector<double> p(vocab);
    double z = 0;
    const float mx = *std::max_element(logits.begin(), logits.end());
    for (int v = 0; v < vocab; ++v) z += p[v] = std::exp((logits[v] - mx) / temp);
    for (double& x : p) x /= z;
    std::vector<int> idx(vocab);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int x, int y) { return p[x] > p[y]; });
    const int k = (top_k > 0 && top_k < vocab) ? top_k : vocab;
    double kmass = 0;
    for (int j = 0; j < k; ++j) kmass += p[idx[j]];
    int keep = k;
    if (top_p < 1.0f) {
      keep = 0;
      double cum = 0;
      while (keep < k) {
        cum += p[idx[keep++]];
        if (cum >= top_p * kmass) break;
      }
    }
    double kept = 0;
    for (int j = 0; j < keep; ++j) kept += p[idx[j]];
    std::vector<double> want(vocab, 0.0);
    for (int j = 0; j < keep; ++j) want[idx[j]] = p[idx[j]] / kept;
    double total = 0;
    for (int v = 0; v < vocab; ++v) {
      ASSERT_NEAR(probs[v], want[v], 1e-5) << "trial " << trial << " v " << v;
      total += probs[v];
    }
    ASSERT_NEAR(total, 1.0, 1e-5);
  }
}

TEST(SampleAcceptTest, ApplySamplingErrorsNameTheParameter) {
  const std::vector<float> ok = {0.0f, 1.0f};
  auto message = [](const absl::StatusOr<std::vector<float>>& r) {
    return std::string(r.status().message());
  };
  EXPECT_THAT(message(ApplySampling(ok, -1.0f, 0, 1.0f)), HasSubstr("temperature = -1"));
  EXPECT_THAT(message(ApplySampling(ok, 1.0f, 0, 0.0f)), HasSubstr("top_p = 0"));
  EXPECT_THAT(message(ApplySampling(ok, 1.0f, 0, 1.5f)), HasSubstr("top_p = 1.5"));
  EXPECT_THAT(message(ApplySampling(std::vector<float>{0.0f, NAN}, 1.0f, 0, 1.0f)),
              HasSubstr("logits[1] = nan"));
  EXPECT_THAT(message(ApplySampling(std::vector<float>{-INFINITY, -INFINITY}, 1.0f, 0, 1.0f)),
              HasSubstr("every entry is -inf"));
  EXPECT_THAT(message(ApplySampling(std::vector<float>{}, 1.0f, 0, 1.0f)),
              HasSubstr("logits: empty"));
}

// ---------------------------------------------------------------------------------------------
// Rejection sampling: distribution tests
// ---------------------------------------------------------------------------------------------

// Upper tail of the chi-square distribution, Q(df/2, x/2) (Numerical Recipes gammq).
double ChiSquareSurvival(double x, int df) {
  const double a = 0.5 * df;
  const double z = 0.5 * x;
  if (z <= 0) return 1.0;
  const double log_prefix = -z + a * std::log(z) - std::lgamma(a);
  if (z < a + 1) {  // series for P
    double sum = 1.0 / a, term = sum;
    for (int n = 1; n < 1000; ++n) {
      term *= z / (a + n);
      sum += term;
      if (term < sum * 1e-15) break;
    }
    return 1.0 - sum * std::exp(log_prefix);
  }
  // Continued fraction for Q (modified Lentz).
  double b = z + 1 - a, c = 1e300, d = 1 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return std::exp(log_prefix) * h;
}

// Pearson chi-square goodness of fit p-value. Categories with zero expected probability must have
// zero counts (returns 0 otherwise); categories with expected count < 5 are pooled.
double GoodnessOfFitPValue(const std::vector<int64_t>& counts, const std::vector<double>& probs) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  double psum = 0;
  for (double p : probs) psum += p;
  double stat = 0, pooled_obs = 0, pooled_exp = 0;
  int bins = 0;
  for (size_t v = 0; v < counts.size(); ++v) {
    const double e = n * probs[v] / psum;
    if (probs[v] <= 0) {
      if (counts[v] != 0) return 0.0;
      continue;
    }
    if (e < 5) {
      pooled_obs += counts[v];
      pooled_exp += e;
      continue;
    }
    stat += (counts[v] - e) * (counts[v] - e) / e;
    ++bins;
  }
  if (pooled_exp > 0) {
    stat += (pooled_obs - pooled_exp) * (pooled_obs - pooled_exp) / pooled_exp;
    ++bins;
  }
  if (bins <= 1) return 1.0;
  return ChiSquareSurvival(stat, bins - 1);
}

constexpr double kAlpha = 1e-4;

TEST(SampleAcceptTest, ChiSquareHelperIsCalibratedAndHasPower) {
  // Known quantiles: P(chi2_1 > 3.841) = 0.05, P(chi2_5 > 25.745) = 1e-4, P(chi2_10 > 2) ~ 0.9963.
  EXPECT_NEAR(ChiSquareSurvival(3.841459, 1), 0.05, 1e-5);
  EXPECT_NEAR(ChiSquareSurvival(25.7448, 5), 1e-4, 2e-6);
  EXPECT_NEAR(ChiSquareSurvival(2.0, 10), 0.99634, 1e-4);
  // Samples of q tested against a different p must be rejected.
  std::mt19937_64 rng(9);
  const std::vector<double> p = {0.3, 0.25, 0.2, 0.15, 0.1};
  const std::vector<double> q = {0.25, 0.25, 0.2, 0.15, 0.15};
  std::discrete_distribution<int> from_q(q.begin(), q.end());
  std::discrete_distribution<int> from_p(p.begin(), p.end());
  std::vector<int64_t> cq(5, 0), cp(5, 0);
  for (int i = 0; i < 30000; ++i) {
    ++cq[from_q(rng)];
    ++cp[from_p(rng)];
  }
  EXPECT_LT(GoodnessOfFitPValue(cq, p), kAlpha);
  EXPECT_GT(GoodnessOfFitPValue(cp, p), kAlpha);
}

std::vector<double> RandomDistribution(std::mt19937_64& rng, int vocab, int zeros) {
  std::gamma_distribution<double> gamma(0.7, 1.0);
  std::vector<double> p(vocab);
  double sum = 0;
  for (double& x : p) sum += x = gamma(rng) + 1e-3;
  for (int z = 0; z < zeros; ++z) {
    const int v = static_cast<int>(rng() % vocab);
    sum -= p[v];
    p[v] = 0;
  }
  if (sum <= 0) {
    p[0] = 1;
    sum = 1;
  }
  for (double& x : p) x /= sum;
  return p;
}

int SampleFrom(std::mt19937_64& rng, const std::vector<double>& w) {
  std::discrete_distribution<int> d(w.begin(), w.end());
  return d(rng);
}

enum class Shape { kChain, kWide, kBushy };

// Shape of the tree as parents only; tokens are filled per trial.
std::vector<int32_t> ShapeParents(Shape shape) {
  switch (shape) {
    case Shape::kChain:
      return {-1, 0, 1, 2};
    case Shape::kWide:
      return {-1, 0, 0, 0, 0};
    case Shape::kBushy:
      return {-1, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4};
  }
  return {};
}

struct Scenario {
  Shape shape;
  DraftMode mode;
  int vocab;
  int target_zeros;  // zero entries forced into the target rows (top-k/top-p like)
  int draft_zeros;   // zero entries forced into the draft rows (only with replacement)
};

void PrintTo(const Scenario& sc, std::ostream* os) {
  const char* shapes[] = {"chain", "wide", "bushy"};
  const char* modes[] = {"point-mass", "with-replacement", "without-replacement"};
  *os << shapes[static_cast<int>(sc.shape)] << "/" << modes[static_cast<int>(sc.mode)]
      << "/V=" << sc.vocab << "/target_zeros=" << sc.target_zeros
      << "/draft_zeros=" << sc.draft_zeros;
}

// The target at a non-root node depends only on its token (as if context = last token), and the
// draft likewise; the root has its own rows. Returns the counts of the first emitted token and,
// for a chosen first token, the counts of the second emitted token given that the first was an
// accepted draft token.
struct Outcome {
  std::vector<int64_t> first;
  std::vector<std::vector<int64_t>> second_given_first;  // [vocab][vocab]
};

Outcome RunScenario(const Scenario& sc, uint64_t seed, int trials, std::vector<double>* p_root,
                    std::vector<std::vector<double>>* p_next) {
  std::mt19937_64 rng(seed);
  const int V = sc.vocab;
  *p_root = RandomDistribution(rng, V, sc.target_zeros);
  const std::vector<double> q_root = RandomDistribution(rng, V, sc.draft_zeros);
  p_next->clear();
  std::vector<std::vector<double>> q_next;
  for (int x = 0; x < V; ++x) {
    p_next->push_back(RandomDistribution(rng, V, sc.target_zeros));
    q_next.push_back(RandomDistribution(rng, V, sc.draft_zeros));
  }
  const std::vector<int32_t> parents = ShapeParents(sc.shape);
  const int s = static_cast<int>(parents.size());
  Tree tree = TreeFromParents(parents, std::vector<int32_t>(s, 0));
  std::vector<float> target(static_cast<size_t>(s) * V), draft(static_cast<size_t>(s) * V);
  // Fixed point-mass drafts: token (i * 3) % V, which repeats tokens among siblings for wide
  // trees with small vocabularies.
  SampleAcceptWorkspace ws;
  AcceptResult r;
  Outcome out;
  out.first.assign(V, 0);
  out.second_given_first.assign(V, std::vector<int64_t>(V, 0));
  for (int trial = 0; trial < trials; ++trial) {
    // Draw the tree tokens as the DraftMode says (children of u from u's draft row).
    for (int u = 0; u < s; ++u) {
      const std::vector<double>& q = u == 0 ? q_root : q_next[tree.tokens[u]];
      std::vector<double> left = q;
      for (int c = u + 1; c < s; ++c) {
        if (parents[c] != u) continue;
        int x;
        if (sc.mode == DraftMode::kPointMass) {
          x = (c * 3) % V;
        } else {
          x = SampleFrom(rng, sc.mode == DraftMode::kWithoutReplacement ? left : q);
          left[x] = 0;
        }
        tree.tokens[c] = x;
      }
    }
    for (int u = 0; u < s; ++u) {
      const std::vector<double>& p = u == 0 ? *p_root : (*p_next)[tree.tokens[u]];
      const std::vector<double>& q = u == 0 ? q_root : q_next[tree.tokens[u]];
      for (int v = 0; v < V; ++v) {
        target[static_cast<size_t>(u) * V + v] = static_cast<float>(p[v]);
        draft[static_cast<size_t>(u) * V + v] = static_cast<float>(q[v]);
      }
    }
    AcceptSampling(tree, V, target, draft, sc.mode, rng, &ws, &r);
    const int first = r.accepted_length >= 1 ? tree.tokens[r.accepted_nodes[1]] : r.bonus_token;
    ++out.first[first];
    if (r.accepted_length >= 1) {
      const int second = r.accepted_length >= 2 ? tree.tokens[r.accepted_nodes[2]] : r.bonus_token;
      ++out.second_given_first[first][second];
    }
  }
  return out;
}

class SampleAcceptDistributionTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(SampleAcceptDistributionTest, FirstTokenFollowsTheTarget) {
  const Scenario sc = GetParam();
  std::vector<double> p_root;
  std::vector<std::vector<double>> p_next;
  for (uint64_t seed : {101u, 202u}) {
    const Outcome o = RunScenario(sc, seed, 20000, &p_root, &p_next);
    const double pv = GoodnessOfFitPValue(o.first, p_root);
    EXPECT_GT(pv, kAlpha) << "seed " << seed;
    // Second token, conditioned on the first being an accepted draft token x: ~ p_next[x].
    for (int x = 0; x < sc.vocab; ++x) {
      int64_t n = 0;
      for (int64_t c : o.second_given_first[x]) n += c;
      if (n < 2000 || sc.shape == Shape::kWide) continue;  // wide trees have no depth 2
      EXPECT_GT(GoodnessOfFitPValue(o.second_given_first[x], p_next[x]), kAlpha)
          << "seed " << seed << " first token " << x << " (n = " << n << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    SampleAcceptScenarios, SampleAcceptDistributionTest,
    ::testing::Values(Scenario{Shape::kChain, DraftMode::kPointMass, 6, 0, 0},
                      Scenario{Shape::kWide, DraftMode::kPointMass, 6, 0, 0},
                      Scenario{Shape::kBushy, DraftMode::kPointMass, 8, 2, 0},
                      Scenario{Shape::kChain, DraftMode::kWithReplacement, 6, 0, 0},
                      Scenario{Shape::kWide, DraftMode::kWithReplacement, 6, 2, 2},
                      Scenario{Shape::kBushy, DraftMode::kWithReplacement, 8, 0, 3},
                      Scenario{Shape::kWide, DraftMode::kWithoutReplacement, 6, 0, 0},
                      Scenario{Shape::kBushy, DraftMode::kWithoutReplacement, 8, 2, 0},
                      Scenario{Shape::kChain, DraftMode::kWithoutReplacement, 7, 1, 0}));

TEST(SampleAcceptTest, SecondTokenConditionalIsExercised) {
  // Makes sure the conditional check above actually ran on enough samples for one case.
  const Scenario sc{Shape::kBushy, DraftMode::kWithReplacement, 6, 0, 0};
  std::vector<double> p_root;
  std::vector<std::vector<double>> p_next;
  const Outcome o = RunScenario(sc, 303, 40000, &p_root, &p_next);
  int tested = 0;
  for (int x = 0; x < sc.vocab; ++x) {
    int64_t n = 0;
    for (int64_t c : o.second_given_first[x]) n += c;
    if (n < 2000) continue;
    ++tested;
    EXPECT_GT(GoodnessOfFitPValue(o.second_given_first[x], p_next[x]), kAlpha) << x;
  }
  EXPECT_GE(tested, 1);
}

TEST(SampleAcceptTest, IgnoringTheResidualIsDetected) {
  // Negative control for the test's power: resampling the bonus from the original p (instead of
  // the residual) after a rejection biases the first token; the chi-square check must see it.
  std::mt19937_64 rng(77);
  const int V = 6;
  const std::vector<double> p = RandomDistribution(rng, V, 0);
  const std::vector<double> q = RandomDistribution(rng, V, 0);
  std::vector<int64_t> counts(V, 0);
  std::uniform_real_distribution<double> u01(0, 1);
  for (int t = 0; t < 20000; ++t) {
    const int x = SampleFrom(rng, q);
    if (u01(rng) < std::min(1.0, p[x] / q[x])) {
      ++counts[x];
    } else {
      ++counts[SampleFrom(rng, p)];  // wrong: should be normalize(max(0, p - q))
    }
  }
  EXPECT_LT(GoodnessOfFitPValue(counts, p), kAlpha);
}

TEST(SampleAcceptTest, PointMassWithCertainTargetAcceptsDeterministically) {
  // p puts all mass on token 2 everywhere: a chain of 2s is always fully accepted.
  const Tree t = TreeFromParents({-1, 0, 1, 2}, {9, 2, 2, 2});
  const int V = 4;
  std::vector<float> target(4 * V, 0.0f);
  for (int u = 0; u < 4; ++u) target[u * V + 2] = 1.0f;
  std::mt19937_64 rng(1);
  SampleAcceptWorkspace ws;
  AcceptResult r;
  for (int i = 0; i < 100; ++i) {
    AcceptSampling(t, V, target, {}, DraftMode::kPointMass, rng, &ws, &r);
    ASSERT_THAT(r.accepted_nodes, ElementsAre(0, 1, 2, 3));
    ASSERT_EQ(r.bonus_token, 2);
  }
  // A sibling with probability 0 is never accepted; the next sibling is tried.
  const Tree w = TreeFromParents({-1, 0, 0}, {9, 1, 2});
  std::vector<float> tw(3 * V, 0.0f);
  for (int u = 0; u < 3; ++u) tw[u * V + 2] = 1.0f;
  for (int i = 0; i < 100; ++i) {
    AcceptSampling(w, V, tw, {}, DraftMode::kPointMass, rng, &ws, &r);
    ASSERT_THAT(r.accepted_nodes, ElementsAre(0, 2));
  }
}

TEST(SampleAcceptTest, CallerUniformIsUsedReproducibly) {
  const Tree t = TreeFromParents({-1, 0, 0, 1}, {0, 1, 2, 3});
  const int V = 4;
  std::vector<float> target(4 * V, 0.25f);
  std::vector<double> sequence = {0.9, 0.1, 0.2, 0.05};
  size_t next = 0;
  auto uniform = [&]() { return sequence[next++ % sequence.size()]; };
  SampleAcceptWorkspace ws;
  AcceptResult r;
  // Root: child 1 (token 1): u = 0.9 >= 0.25 reject; p(1) = 0, renormalised p(2) = 1/3;
  // child 2 (token 2): u = 0.1 < 1/3 accept. Node 2 is a leaf: bonus from uniform target with
  // u = 0.2 -> token 0.
  AcceptSampling(t, V, target, {}, DraftMode::kPointMass, Uniform01(uniform), &ws, &r);
  EXPECT_THAT(r.accepted_nodes, ElementsAre(0, 2));
  EXPECT_EQ(r.bonus_token, 0);
  EXPECT_EQ(next, 3u);
}

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------

TEST(SampleAcceptTest, StatsAggregatePerDepth) {
  const Tree chain3 = TreeFromParents({-1, 0, 1, 2}, {0, 1, 2, 3});
  const Tree wide = TreeFromParents({-1, 0, 0}, {0, 1, 2});
  AcceptResult r;
  AcceptanceStats stats;
  r.accepted_length = 2;  // chain3: depths 1, 2 accepted, 3 rejected
  StepAcceptance step = MakeStepAcceptance(chain3, r);
  EXPECT_EQ(step.num_draft, 3);
  EXPECT_EQ(step.proposed_depth, 3);
  EXPECT_TRUE(step.accepted(2));
  EXPECT_FALSE(step.accepted(3));
  EXPECT_TRUE(step.proposed(3));
  EXPECT_FALSE(step.proposed(4));
  stats.Add(step);
  r.accepted_length = 0;  // chain3: nothing accepted
  stats.Add(MakeStepAcceptance(chain3, r));
  r.accepted_length = 1;  // wide: depth 1 accepted
  stats.Add(MakeStepAcceptance(wide, r));
  EXPECT_EQ(stats.steps, 3);
  EXPECT_EQ(stats.drafted_tokens, 8);
  EXPECT_EQ(stats.accepted_tokens, 3);
  EXPECT_DOUBLE_EQ(stats.MeanAcceptedLength(), 1.0);
  EXPECT_DOUBLE_EQ(stats.AcceptedFraction(), 3.0 / 8.0);
  EXPECT_THAT(stats.proposed_at_depth, ElementsAre(0, 3, 2, 2));
  EXPECT_THAT(stats.accepted_at_depth, ElementsAre(0, 2, 1, 0));
  EXPECT_THAT(stats.reached_at_depth, ElementsAre(0, 3, 1, 1));
  EXPECT_DOUBLE_EQ(stats.AcceptanceRate(1), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(stats.AcceptanceRate(2), 0.5);
  EXPECT_DOUBLE_EQ(stats.ConditionalAcceptanceRate(2), 1.0);
  EXPECT_DOUBLE_EQ(stats.ConditionalAcceptanceRate(3), 0.0);
  EXPECT_DOUBLE_EQ(stats.AcceptanceRate(7), 0.0);
  // Tree without depths gives the same record.
  Tree no_depths = chain3;
  no_depths.depths.clear();
  EXPECT_EQ(MakeStepAcceptance(no_depths, r).proposed_depth, 3);
  stats.Reset();
  EXPECT_EQ(stats.steps, 0);
  EXPECT_DOUBLE_EQ(stats.MeanAcceptedLength(), 0.0);
}

TEST(SampleAcceptTest, StatsFromGreedyAcceptance) {
  std::mt19937_64 rng(12);
  AcceptanceStats stats;
  GreedyAcceptWorkspace ws;
  AcceptResult r;
  int64_t total = 0;
  for (int step = 0; step < 200; ++step) {
    const Tree t = RandomTree(rng, 1 + rng() % 20, 3);
    std::vector<int32_t> argmax(t.size());
    for (int32_t& x : argmax) x = static_cast<int32_t>(rng() % 3);
    AcceptGreedy(t, argmax, &ws, &r);
    total += r.accepted_length;
    stats.Add(MakeStepAcceptance(t, r));
  }
  EXPECT_DOUBLE_EQ(stats.MeanAcceptedLength(), total / 200.0);
  for (size_t d = 1; d < stats.accepted_at_depth.size(); ++d) {
    EXPECT_LE(stats.accepted_at_depth[d], stats.reached_at_depth[d]);
    EXPECT_LE(stats.reached_at_depth[d], stats.proposed_at_depth[d]);
    if (d > 1) {
      EXPECT_LE(stats.accepted_at_depth[d], stats.accepted_at_depth[d - 1]);
    }
  }
}

}  // namespace
}  // namespace specplan::planner
