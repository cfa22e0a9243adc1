// Tree JSON -> ParseTreeJson (one tree) or TreeFromJson on each element of a two-element array
// [A, B] -> MergeTrees (plain / dedup, with and without a budget) -> AcceptGreedy and
// ComputeTreeOutputs on the inputs and on every merged tree. Checks the merge's promises.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "planner/acceptance/acceptance.h"
#include "planner/tree/merge.h"
#include "planner/tree/tree.h"
#include "planner/tree/tree_choices.h"
#include "planner/tree/tree_json.h"
#include "planner/tree/tree_outputs.h"

namespace specplan::fuzz {
namespace {

using planner::Tree;

// A small valid tree rooted at `root_token`, with path_probs.
Tree SmallTree(int32_t root_token) {
  Tree t;
  t.ResetRoot(root_token);
  t.AddNode(0, 5, 0.6);
  t.AddNode(0, 6, 0.3);
  t.AddNode(1, 7, 0.4);
  return t;
}

// Deterministic "target argmax" per node: the token of some node, so that some edges match.
void FakeArgmax(const Tree& t, std::vector<int32_t>* argmax) {
  argmax->resize(t.size());
  for (int i = 0; i < t.size(); ++i) {
    (*argmax)[i] = t.tokens[(static_cast<size_t>(i) * 7 + 1) % t.size()];
  }
}

void CheckAccept(const Tree& t) {
  std::vector<int32_t> argmax;
  FakeArgmax(t, &argmax);
  planner::GreedyAcceptWorkspace ws;
  planner::AcceptResult r;
  planner::AcceptGreedy(t, argmax, &ws, &r);
  SPECPLAN_CHECK(!r.accepted_nodes.empty() && r.accepted_nodes[0] == 0);
  SPECPLAN_CHECK(r.accepted_length + 1 == static_cast<int>(r.accepted_nodes.size()));
  for (size_t i = 1; i < r.accepted_nodes.size(); ++i) {
    const int32_t node = r.accepted_nodes[i];
    const int32_t parent = r.accepted_nodes[i - 1];
    SPECPLAN_CHECK(node > 0 && node < t.size() && t.parents[node] == parent);
    SPECPLAN_CHECK(t.tokens[node] == argmax[parent]);
  }
  SPECPLAN_CHECK(r.bonus_token == argmax[r.accepted_nodes.back()]);
  planner::StepAcceptance step = planner::MakeStepAcceptance(t, r);
  planner::AcceptanceStats stats;
  stats.Add(step);
  (void)stats.ConditionalAcceptanceRate(step.proposed_depth);
}

void CheckOutputs(const Tree& t) {
  planner::TreeOutputs out;
  planner::TreeOutputOptions options;
  options.dense_mask = t.size() <= 512;
  planner::ComputeTreeOutputs(t, options, &out);
  SPECPLAN_CHECK(out.size == t.size() && out.num_leaves >= 1);
  for (int l = 0; l < out.num_leaves; ++l) {
    SPECPLAN_CHECK(out.retrieve[static_cast<size_t>(l) * out.retrieve_width] == 0);
  }
}

void CheckMerge(const Tree& a, const Tree& b) {
  planner::MergeWorkspace ws;
  planner::MergedTree out;
  for (bool dedup : {false, true}) {
    for (int n_max : {-1, 0, 1, 3, 50}) {
      planner::MergeOptions options;
      options.dedup = dedup;
      options.n_max = n_max;
      const absl::Status st = planner::MergeTrees(a, b, options, &ws, &out);
      if (!st.ok()) continue;
      CheckOk(planner::ValidateTree(out.tree), "merged tree");
      SPECPLAN_CHECK(out.phi_a.size() == a.tokens.size() && out.phi_b.size() == b.tokens.size());
      SPECPLAN_CHECK(static_cast<int>(out.source.size()) == out.tree.size());
      SPECPLAN_CHECK(out.phi_a[0] == 0 && out.phi_b[0] == 0);
      if (n_max >= 0) SPECPLAN_CHECK(out.tree.num_draft() <= n_max);
      if (n_max < 0 && !dedup) SPECPLAN_CHECK(out.tree.size() == a.size() + b.size() - 1);
      for (size_t i = 0; i < out.phi_a.size(); ++i) {
        const int32_t m = out.phi_a[i];
        if (m < 0) continue;
        SPECPLAN_CHECK(m < out.tree.size() && out.tree.tokens[m] == a.tokens[i]);
        SPECPLAN_CHECK(out.tree.depths[m] == a.depths[i]);
      }
      for (size_t i = 0; i < out.phi_b.size(); ++i) {
        const int32_t m = out.phi_b[i];
        if (m < 0) continue;
        SPECPLAN_CHECK(m < out.tree.size() && out.tree.tokens[m] == b.tokens[i]);
        SPECPLAN_CHECK(out.tree.depths[m] == b.depths[i]);
      }
      CheckAccept(out.tree);
      CheckOutputs(out.tree);
    }
  }
}

void CheckOne(const Tree& t) {
  CheckOk(planner::ValidateTree(t), "parsed tree");
  auto again = planner::TreeFromJson(planner::TreeToJson(t));
  CheckOk(again.status(), "TreeFromJson(TreeToJson)");
  SPECPLAN_CHECK(again->tokens == t.tokens && again->parents == t.parents);
  CheckAccept(t);
  CheckOutputs(t);
  planner::TreeChoices choices;
  planner::ExportTreeChoices(t, &choices);
  Tree imported;
  CheckOk(planner::ImportTreeChoices(choices, &imported), "ImportTreeChoices(ExportTreeChoices)");
  SPECPLAN_CHECK(imported.size() == t.size());
}

void FuzzTreeJson(std::string_view text) {
  auto tree = planner::ParseTreeJson(text);
  if (tree.ok()) {
    CheckOne(*tree);
    CheckMerge(*tree, *tree);
    CheckMerge(*tree, SmallTree(tree->tokens[0]));
    CheckMerge(SmallTree(tree->tokens[0]), *tree);
    return;
  }
  const nlohmann::json j = ParseJsonNoThrow(text);
  if (!j.is_array() || j.size() != 2) return;
  auto a = planner::TreeFromJson(j[0]);
  auto b = planner::TreeFromJson(j[1]);
  if (a.ok()) CheckOne(*a);
  if (b.ok()) CheckOne(*b);
  if (a.ok() && b.ok()) CheckMerge(*a, *b);
}

}  // namespace

SPECPLAN_TEXT_FUZZER(FuzzTreeJson)

}  // namespace specplan::fuzz
