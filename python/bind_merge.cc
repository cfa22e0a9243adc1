// specplan.merge_trees: merged trees of two drafters under one root (ops/merge.h, the Merge
// operation over planner/tree/merge.h).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "common.h"
#include "ops/merge.h"
#include "planner/tree/merge.h"

namespace specplan::python {

void BindMerge(py::module_& m) {
  py::class_<planner::MergedTree>(m, "MergedTree", R"doc(
The union of two drafters' trees under one shared root (merge_trees): an ordinary tree (tokens,
parents, depths, path_probs when both inputs had them), the index maps phi_a / phi_b (input
index -> merged index, -1 when the budget dropped it) and each node's source (1 = a, 2 = b,
3 = both).)doc")
      .def_property_readonly("tokens", TreeColumn<planner::MergedTree>(&planner::Tree::tokens),
                             "int32 [N]")
      .def_property_readonly("parents", TreeColumn<planner::MergedTree>(&planner::Tree::parents),
                             "int32 [N]")
      .def_property_readonly("depths", TreeColumn<planner::MergedTree>(&planner::Tree::depths),
                             "int32 [N]")
      .def_property_readonly("path_probs",
                             TreeColumn<planner::MergedTree>(&planner::Tree::path_probs),
                             "float64 [N], or empty when an input had none")
      .def_property_readonly("phi_a", MemberView<planner::MergedTree>(&planner::MergedTree::phi_a),
                             "int32 [|A|]")
      .def_property_readonly("phi_b", MemberView<planner::MergedTree>(&planner::MergedTree::phi_b),
                             "int32 [|B|]")
      .def_property_readonly(
          "source",
          [](py::object self) {
            const auto& t = self.cast<const planner::MergedTree&>();
            return View<uint8_t>(reinterpret_cast<const uint8_t*>(t.source.data()),
                                 {static_cast<py::ssize_t>(t.source.size())}, self);
          },
          "uint8 [N]: 1 = from a, 2 = from b, 3 = both (the root, shared prefixes)")
      .def_property_readonly(
          "tree",
          [](py::object self) {
            const auto& t = self.cast<const planner::MergedTree&>();
            return py::make_tuple(View(t.tree.tokens, self), View(t.tree.parents, self));
          },
          "(tokens, parents)")
      .def("__len__", [](const planner::MergedTree& t) { return t.tree.size(); })
      .def("__repr__", [](const planner::MergedTree& t) {
        return absl::StrFormat("specplan.MergedTree(nodes=%d, from_a=%d, from_b=%d)", t.tree.size(),
                               static_cast<int>(t.phi_a.size()), static_cast<int>(t.phi_b.size()));
      });

  m.def(
      "merge_trees",
      [](py::object a, py::object b, bool dedup, py::object n_max) {
        planner::Tree ta, tb;
        ReadTree(a, "a", &ta);
        ReadTree(b, "b", &tb);
        planner::MergeOptions o;
        o.dedup = dedup;
        o.n_max = n_max.is_none() ? -1 : static_cast<int>(ReadInt(n_max, "n_max"));
        // ops::Merge (the CLI's `specplan merge`); the verifier outputs are not asked for here.
        ops::MergeRequest req;
        req.a = &ta;
        req.b = &tb;
        req.options = o;
        req.outputs.packed_mask = false;
        req.outputs.retrieve = false;
        auto out = std::make_unique<planner::MergedTree>();
        absl::Status st;
        {
          py::gil_scoped_release release;
          thread_local planner::MergeWorkspace ws;
          thread_local ops::MergeResult result;
          st = ops::MergeInto(req, &ws, &result);
          if (st.ok()) *out = result.merged;
        }
        ThrowIfError(st);
        return out;
      },
      py::arg("a"), py::arg("b"), py::kw_only(), py::arg("dedup") = false,
      py::arg("n_max") = py::none(),
      R"doc(Merges two trees with the same root token (specplan merge): a and b are (tokens,
parents) pairs, TreePlans or dicts (with path_probs for a budget). Plain union: A's nodes, then
B's (phi_b(i) = n_a + i). dedup=True merges equal token prefixes (the token-path trie of both).
n_max=N keeps the N best draft nodes by path score (both inputs need path_probs). Errors name
the field ("a.tokens[0] = 5 and b.tokens[0] = 7: ..."). Returns a MergedTree.)doc");
}

}  // namespace specplan::python
