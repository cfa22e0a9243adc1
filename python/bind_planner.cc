// specplan.Marginals, specplan.TreePlan and plan_tree: best-first trees over a parallel drafter's
// marginals (planner/policies/best_first.h), with the outputs a verifier needs
// (planner/tree/tree_outputs.h).
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common.h"
#include "layouts.h"
#include "ops/plan_tree.h"
#include "ops/validate.h"
#include "planner/marginals/marginals.h"
#include "planner/policies/best_first.h"
#include "planner/tree/tree_outputs.h"
#include "record.h"

namespace specplan::python {
namespace {

using planner::BudgetMode;

struct TreeCurveTag {};  // specplan.TreeCurve

// The planner's result (tree = T_{n*}) with the verifier's outputs and the call's arguments.
struct PyTreePlan : planner::BestFirstPlan {
  planner::TreeOutputs outputs;
  int mode = 0;
  int n_max = 0;
  int64_t c = 0;
  std::string latency_model, profile;  // "" without a cost
};

// The getter of a TreePlan property viewing one of its outputs' row-major matrices (retrieve,
// the packed mask): `matrix` as [outputs.*rows, outputs.*cols].
template <class T>
auto OutputsMatrix(std::vector<T> planner::TreeOutputs::*matrix, int planner::TreeOutputs::*rows,
                   int planner::TreeOutputs::*cols) {
  return [matrix, rows, cols](py::object self) {
    const planner::TreeOutputs& o = self.cast<const PyTreePlan&>().outputs;
    return View<T>((o.*matrix).data(), {o.*rows, o.*cols}, self);
  };
}

// A read-only view (for objects Python must not mutate).
template <class T>
py::array_t<T> ReadOnly(py::array_t<T> a) {
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

// The getter of a Marginals property viewing one of its [gamma, k] matrices (tokens, probs),
// read-only.
template <class T>
auto MarginalsMatrix(std::vector<T> planner::Marginals::*matrix) {
  return [matrix](py::object self) {
    const planner::Marginals& x = self.cast<const planner::Marginals&>();
    return ReadOnly(View<T>((x.*matrix).data(), {x.gamma, x.k}, self));
  };
}

py::object CurveRecord(const std::vector<planner::CurvePoint>& curve) {
  using P = planner::CurvePoint;
  return ColumnsRecord<TreeCurveTag>(curve, "n", &P::n, "expected_accepted", &P::expected_accepted,
                                     "cycle_s", &P::cycle_s, "speedup", &P::speedup);
}

// `specplan plan --json`'s form: ops::ToJson of the operation's request and result.
py::object TreePlanDict(const PyTreePlan& p) {
  ops::PlanTreeRequest req;
  req.c = p.c;
  req.options.mode = static_cast<BudgetMode>(p.mode);
  req.options.n_max = p.n_max;
  ops::PlanTreeResult result;
  result.plan = p;
  result.outputs = p.outputs;
  result.priced = !p.latency_model.empty();
  result.latency_model = p.latency_model;
  result.profile = p.profile;
  return JsonToPy(ops::ToJson(req, result));
}

planner::Marginals MakeMarginals(py::object root_token, py::object tokens, py::object probs,
                                 bool validate) {
  planner::Marginals m;
  FillMarginals(root_token, tokens, probs, "marginals", &m);
  if (validate) {
    if (absl::Status st = planner::ValidateMarginals(m); !st.ok()) {
      ThrowStatus(absl::Status(st.code(), absl::StrCat("marginals.", st.message())));
    }
  }
  return m;
}

py::object PlanTree(py::object marginals, py::object cost_obj, int64_t c, int n_max,
                    const std::string& mode, const std::string& drafter, double t_draft_ms,
                    double t_aux_ms, double l_ar_ms, double acceptance_scale, bool validate) {
  thread_local planner::Marginals scratch;
  const bool prevalidated = py::isinstance<planner::Marginals>(marginals);
  const planner::Marginals& m = ReadMarginals(marginals, "marginals", &scratch);
  const PyCost* cost = ReadCost(cost_obj);
  if (c < 0) ThrowInvalid(absl::StrCat("c = ", c, ": must be >= 0 (cached tokens)"));
  if (n_max < 0 || n_max >= planner::kMaxTreeNodes) {
    ThrowInvalid(absl::StrCat("n_max = ", n_max, ": must be in [0, ", planner::kMaxTreeNodes - 1,
                              "] (draft nodes)"));
  }
  // The times in their physical range (ops/validate.h: finite, [0, 1e4] ms), as the CLI checks
  // them.
  ThrowIfError(ops::CheckMs("l_ar_ms", l_ar_ms));
  ThrowIfError(ops::CheckMs("t_aux_ms", t_aux_ms));
  ThrowIfError(ops::CheckMs("t_draft_ms", t_draft_ms));
  planner::BestFirstOptions o;
  o.mode = static_cast<BudgetMode>(ParseBudgetMode(mode));
  o.n_max = n_max;
  o.l_ar_s = l_ar_ms * 1e-3;
  o.acceptance_scale = acceptance_scale;
  o.validate = false;
  if (cost == nullptr && o.mode != BudgetMode::kFixed) {
    ThrowInvalid(absl::StrCat("cost = None: mode '", mode,
                              "' prices every n; pass cost=specplan.Cost(gpu=..., model=...) or "
                              "mode='fixed'"));
  }
  if (validate && !prevalidated) {
    if (absl::Status st = planner::ValidateMarginals(m); !st.ok()) {
      ThrowStatus(absl::Status(st.code(), absl::StrCat("marginals.", st.message())));
    }
  }
  // ops::PlanTree over this Cost (the CLI's `specplan plan`): the cycle priced by
  // ops::PriceCycle (a drafter architecture's whole step into the cycle and L_AR; a given l_ar_ms
  // stands), the planner, the verifier's outputs at positions c + depth.
  const DrafterArgs da{drafter, t_draft_ms, t_aux_ms, 0};
  std::shared_ptr<const costmodel::StepModel> hold;
  std::optional<ops::CostView> view;
  if (cost != nullptr) {
    view = CostViewOf(*cost, da, m.gamma, &hold);
  } else {
    MakeDrafter(da, m.gamma);  // the drafter keywords are checked without a cost too
  }
  ops::PlanTreeRequest req;
  req.marginals = &m;
  req.c = c;
  req.options = o;
  req.t_draft_ms = t_draft_ms;
  req.outputs = planner::TreeOutputOptions{};  // packed mask and retrieve rows, as TreePlan reads

  auto out = std::make_unique<PyTreePlan>();
  absl::Status st;
  {
    py::gil_scoped_release release;
    thread_local planner::BestFirstPlanner planner;
    thread_local ops::PlanTreeResult result;
    st = ops::PlanTreeInto(req, view ? &*view : nullptr, &planner, &result);
    if (st.ok()) {
      static_cast<planner::BestFirstPlan&>(*out) = result.plan;
      out->outputs = result.outputs;
    }
  }
  ThrowIfError(st);
  out->mode = static_cast<int>(o.mode);
  out->n_max = n_max;
  out->c = c;
  if (view) {
    out->latency_model = view->latency_kind;
    out->profile = view->profile_id;
  }
  return py::cast(std::move(out));
}

}  // namespace

int ParseBudgetMode(const std::string& mode) {
  for (const EnumEntry<BudgetMode>& e : planner::kBudgetModeNames) {
    if (mode == e.name) return static_cast<int>(e.value);
  }
  ThrowInvalid(absl::StrCat("mode = '", mode,
                            "': unknown (known: ", EnumKnownNames(planner::kBudgetModeNames), ")"));
}

const char* BudgetModeName(int mode) {
  return EnumName(planner::kBudgetModeNames, static_cast<BudgetMode>(mode));
}

void BindPlanner(py::module_& m) {
  BindRecord<TreeCurveTag>(
      m, "TreeCurve", "The figures of a tree plan per evaluated n (TreePlan.curve), as arrays.",
      {{"n", "int32 [points] draft nodes"},
       {"expected_accepted", "float64 [points] Â(n), root included"},
       {"cycle_s", "float64 [points] C(n) seconds"},
       {"speedup", "float64 [points] S(n)"}});
  py::class_<planner::Marginals>(m, "Marginals", R"doc(
A parallel drafter's marginals: for each of gamma future positions the top-k candidate tokens
with their draft probabilities, each row sorted by descending probability (row d holds the
candidates for depth d + 1). Validated when built; plan_tree and plan_batch take it without
copying or validating again (they also take a dict {"root_token", "tokens", "probs"}).

    m = specplan.Marginals(1, [[5, 6], [7, 8]], [[0.6, 0.3], [0.5, 0.4]])
    m = specplan.Marginals.load("examples/marginals.json"))doc")
      .def(py::init(&MakeMarginals), py::arg("root_token"), py::arg("tokens"), py::arg("probs"),
           py::kw_only(), py::arg("validate") = true,
           "root_token: int >= 0; tokens: int [gamma, k] (int32 read in place); probs: float "
           "[gamma, k] in [0, 1], rows non-increasing, row sums <= 1. Errors name the field "
           "(\"marginals.probs[2][0] = 1.3: ...\").")
      .def_static(
          "load",
          [](const std::string& path) { return ValueOrThrow(planner::LoadMarginalsFile(path)); },
          py::arg("path"),
          "Reads the JSON form {root_token, tokens, probs} (specplan plan --marginals).")
      .def_static(
          "from_json",
          [](const std::string& text) {
            return ValueOrThrow(planner::ParseMarginalsJsonText(text));
          },
          py::arg("text"), "Parses the JSON text form.")
      .def_property_readonly("root_token", [](const planner::Marginals& x) { return x.root_token; })
      .def_property_readonly("gamma", [](const planner::Marginals& x) { return x.gamma; })
      .def_property_readonly("k", [](const planner::Marginals& x) { return x.k; })
      .def_property_readonly("tokens", MarginalsMatrix(&planner::Marginals::tokens),
                             "int32 [gamma, k], read-only view")
      .def_property_readonly("probs", MarginalsMatrix(&planner::Marginals::probs),
                             "float32 [gamma, k], read-only view")
      .def(
          "to_dict",
          [](const planner::Marginals& x) {
            py::dict d;
            d["root_token"] = x.root_token;
            py::list t, p;
            for (int r = 0; r < x.gamma; ++r) {
              t.append(std::vector<int32_t>(x.tokens.begin() + r * x.k,
                                            x.tokens.begin() + (r + 1) * x.k));
              p.append(
                  std::vector<float>(x.probs.begin() + r * x.k, x.probs.begin() + (r + 1) * x.k));
            }
            d["tokens"] = t;
            d["probs"] = p;
            return d;
          },
          "The JSON form as a dict of lists.")
      .def("__repr__", [](const planner::Marginals& x) {
        return absl::StrFormat("specplan.Marginals(root_token=%d, gamma=%d, k=%d)", x.root_token,
                               x.gamma, x.k);
      });

  py::class_<PyTreePlan>(m, "TreePlan", R"doc(
The result of plan_tree: the selected tree T_{n*} in pop order (node 0 = the root, the pending
bonus token; parents[0] = -1, parents[i] < i) with the verifier's outputs and the cost figures.
Arrays are NumPy views of the result's own buffers (no copies).)doc")
      .def_property_readonly(
          "n", [](const PyTreePlan& p) { return p.n; }, "n*: draft nodes (root excluded)")
      .def_property_readonly(
          "s", [](const PyTreePlan& p) { return p.n + 1; }, "tokens verified = n + 1")
      .def_property_readonly("tokens", TreeColumn<PyTreePlan>(&planner::Tree::tokens), "int32 [s]")
      .def_property_readonly("parents", TreeColumn<PyTreePlan>(&planner::Tree::parents),
                             "int32 [s], -1 for the root")
      .def_property_readonly("depths", TreeColumn<PyTreePlan>(&planner::Tree::depths), "int32 [s]")
      .def_property_readonly("path_probs", TreeColumn<PyTreePlan>(&planner::Tree::path_probs),
                             "float64 [s], rho (1 for the root)")
      .def_property_readonly(
          "positions",
          MemberView<PyTreePlan>(&PyTreePlan::outputs, &planner::TreeOutputs::positions),
          "int64 [s], c + depth")
      .def_property_readonly(
          "retrieve",
          OutputsMatrix(&planner::TreeOutputs::retrieve, &planner::TreeOutputs::num_leaves,
                        &planner::TreeOutputs::retrieve_width),
          "int32 [leaves, max depth + 1]: root-to-leaf node indices, -1 padded")
      .def_property_readonly(
          "mask",
          OutputsMatrix(&planner::TreeOutputs::mask_packed, &planner::TreeOutputs::size,
                        &planner::TreeOutputs::mask_words),
          "uint64 [s, ceil(s / 64)]: bit j of row i set iff j is i or an ancestor of i")
      .def_property_readonly(
          "tree",
          [](py::object self) {
            const auto& p = self.cast<const PyTreePlan&>();
            return py::make_tuple(View(p.tree.tokens, self), View(p.tree.parents, self));
          },
          "(tokens, parents), as sglang_layout and accept_greedy take it")
      .def_property_readonly(
          "expected_accepted", [](const PyTreePlan& p) { return p.expected_accepted; },
          "Â(n*), root included")
      .def_property_readonly(
          "cycle_s", [](const PyTreePlan& p) { return Nullable(p.cycle_s); },
          "C(n*) seconds; None without a cost")
      .def_property_readonly(
          "speedup", [](const PyTreePlan& p) { return Nullable(p.speedup); },
          "S(n*); None without a cost")
      .def_property_readonly(
          "l_ar_s", [](const PyTreePlan& p) { return Nullable(p.l_ar_s); },
          "L_AR seconds; None without a cost")
      .def_property_readonly("lattice_exhausted",
                             [](const PyTreePlan& p) { return p.lattice_exhausted; })
      .def_property_readonly("mode", [](const PyTreePlan& p) { return BudgetModeName(p.mode); })
      .def_property_readonly("n_max", [](const PyTreePlan& p) { return p.n_max; })
      .def_property_readonly("c", [](const PyTreePlan& p) { return p.c; })
      .def_property_readonly("latency_model", [](const PyTreePlan& p) { return p.latency_model; })
      .def_property_readonly("profile", [](const PyTreePlan& p) { return p.profile; })
      .def_property_readonly(
          "curve", [](const PyTreePlan& p) { return CurveRecord(p.curve); },
          "TreeCurve: arrays n, expected_accepted, cycle_s, speedup per evaluated n (from 0); "
          "empty in mode 'fixed'")
      .def("to_dict", &TreePlanDict,
           "The same keys as `specplan plan --json` (lists, None for NaN).")
      .def(
          "sglang_layout",
          [](const PyTreePlan& p, int draft_token_num, py::object mode, int64_t pad) {
            return SglangLayoutRecord({&p.tree, 1}, {&p.c, 1}, mode, draft_token_num, pad);
          },
          py::kw_only(), py::arg("draft_token_num") = 0, py::arg("tree_mask_mode") = py::none(),
          py::arg("pad_token") = 0,
          "This tree as a batch of one in SGLang's layout (see specplan.sglang_layout; "
          "tree_mask_mode None = QLEN_ONLY_BITPACKING when the tree fits 32 slots, else "
          "QLEN_ONLY).")
      .def("__len__", [](const PyTreePlan& p) { return p.tree.size(); })
      .def("__repr__", [](const PyTreePlan& p) {
        std::string cost = std::isnan(p.speedup) ? ""
                                                 : absl::StrFormat(", cycle_s=%.6g, speedup=%.4g",
                                                                   p.cycle_s, p.speedup);
        return absl::StrFormat(
            "specplan.TreePlan(mode=%s, n=%d, depth=%d, leaves=%d, expected_accepted=%.4f%s)",
            BudgetModeName(p.mode), p.n, p.outputs.max_depth, p.outputs.num_leaves,
            p.expected_accepted, cost);
      });

  m.def("plan_tree", &PlanTree, py::arg("marginals"), py::arg("cost") = py::none(),
        py::arg("c") = 0, py::kw_only(), py::arg("n_max") = 64, py::arg("mode") = "controller",
        py::arg("drafter") = "parallel", py::arg("t_draft_ms") = 0.0, py::arg("t_aux_ms") = 0.0,
        py::arg("l_ar_ms") = 0.0, py::arg("acceptance_scale") = 1.0, py::arg("validate") = true,
        R"doc(Best-first draft tree over marginals (specplan plan; BASTION Alg. 1).

marginals: specplan.Marginals or dict {root_token, tokens [gamma][k], probs [gamma][k]}.
cost: specplan.Cost (required unless mode='fixed'); c: cached tokens (positions are c + depth).
mode: 'controller' stops at the first n with S(n+1) < S(n) over n = 0..n_max; 'scan' takes the
argmax over every n <= n_max (measured, stepped costs); 'fixed' takes exactly
min(n_max, lattice size) draft nodes. drafter 'ar'|'parallel'|'causal' with t_draft_ms (one
draft forward) and t_aux_ms price the cycle C(n) = T_draft + T_aux + T_verify(n + 1, c);
l_ar_ms: L_AR (0 = T_verify(1, c)); acceptance_scale: s of Â' = 1 + s (Â - 1)
(AcceptanceEstimator.surrogate_scale). The GIL is released while planning.
Returns a TreePlan.)doc");
}

}  // namespace specplan::python
