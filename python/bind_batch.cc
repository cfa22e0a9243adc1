// specplan.plan_batch / plan_batch_arrays and specplan.BatchPlan: one tree budget over the B
// requests an engine verifies in one ragged pass (planner/batch/batch_plan.h).
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "batch.h"
#include "layouts.h"
#include "ops/plan_batch.h"
#include "planner/tree/tree_outputs.h"
#include "record.h"

namespace specplan::python {
namespace {

using planner::BudgetMode;

struct BatchCurveTag {};  // specplan.BatchCurve

// Reads one request of the list form into ws slot i; `keep` holds the Python marginals alive
// while the GIL is released.
void ReadRequest(py::object item, size_t i, BatchWorkspace* ws, std::vector<py::object>* keep) {
  const std::string arg = absl::StrCat("requests[", i, "]");
  py::object marginals, c, n_max = py::none(), weight = py::none();
  if (py::isinstance<py::tuple>(item) || py::isinstance<py::list>(item)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(item);
    if (seq.size() < 2 || seq.size() > 4) {
      ThrowInvalid(absl::StrCat(arg, ": a sequence of ", seq.size(),
                                " items, expected (marginals, c[, n_max[, weight]])"));
    }
    marginals = seq[0];
    c = seq[1];
    if (seq.size() > 2) n_max = seq[2];
    if (seq.size() > 3) weight = seq[3];
  } else if (py::isinstance<py::dict>(item)) {
    py::dict d = py::reinterpret_borrow<py::dict>(item);
    for (auto kv : d) {
      const std::string key = py::str(kv.first).cast<std::string>();
      if (key != "marginals" && key != "c" && key != "n_max" && key != "weight") {
        ThrowInvalid(
            absl::StrCat(arg, ".", key, ": unknown field (known: marginals, c, n_max, weight)"));
      }
    }
    if (!d.contains("marginals")) ThrowInvalid(arg + ".marginals: missing");
    if (!d.contains("c")) ThrowInvalid(arg + ".c: missing");
    marginals = d["marginals"];
    c = d["c"];
    if (d.contains("n_max")) n_max = d["n_max"];
    if (d.contains("weight")) weight = d["weight"];
  } else if (py::hasattr(item, "marginals") && py::hasattr(item, "c")) {
    marginals = item.attr("marginals");
    c = item.attr("c");
    if (py::hasattr(item, "n_max")) n_max = item.attr("n_max");
    if (py::hasattr(item, "weight")) weight = item.attr("weight");
  } else {
    ThrowWrongType(arg, item,
                   "specplan.Request, a (marginals, c) tuple or a dict with "
                   "marginals and c");
  }
  planner::BatchRequest& r = ws->requests[i];
  r = planner::BatchRequest{};
  r.marginals = &ReadMarginals(marginals, arg + ".marginals", &ws->marginals[i]);
  keep->push_back(marginals);
  r.c = ReadInt(c, arg + ".c");
  if (r.c < 0 || r.c > (int64_t{1} << 40)) {
    ThrowInvalid(absl::StrCat(arg, ".c = ", r.c, ": must be >= 0 (cached tokens)"));
  }
  if (!n_max.is_none()) {
    const int64_t v = ReadInt(n_max, arg + ".n_max");
    if (v < -1 || v >= planner::kMaxTreeNodes) {
      ThrowInvalid(absl::StrCat(arg, ".n_max = ", v, ": must be in [0, ",
                                planner::kMaxTreeNodes - 1, "], or -1 / None for no cap"));
    }
    r.n_max = static_cast<int>(v);
  }
  if (!weight.is_none()) r.weight = ReadFloat(weight, arg + ".weight");
}

std::string BatchRepr(const PyBatchPlan& p) {
  std::string cost;
  if (!std::isnan(p.plan.cycle_s)) {
    cost = absl::StrFormat(", cycle_s=%.6g, goodput=%.1f, ar_goodput=%.1f", p.plan.cycle_s,
                           p.plan.goodput, p.plan.ar_goodput);
  }
  return absl::StrFormat("specplan.BatchPlan(mode=%s, B=%d, n_total=%d, speculation_pays=%s%s)",
                         BudgetModeName(p.mode), p.b, p.plan.n_total,
                         p.plan.speculation_pays ? "True" : "False", cost);
}

// `specplan plan-batch --json`'s form: ops::ToJson of the operation's request and result, each
// request's outputs computed here (the plan call leaves them out).
py::object BatchToDict(const PyBatchPlan& p) {
  ops::PlanBatchRequest req;
  req.requests.resize(static_cast<size_t>(p.b));
  for (size_t i = 0; i < req.requests.size(); ++i) req.requests[i].c = p.c[i];
  req.options.mode = static_cast<BudgetMode>(p.mode);
  req.options.n_max = p.n_max;
  req.options.objective =
      p.latency_bound ? planner::BatchObjective::kLatencyBound : planner::BatchObjective::kGoodput;
  ops::PlanBatchResult result;
  result.plan = p.plan;
  result.outputs.resize(req.requests.size());
  for (size_t i = 0; i < req.requests.size(); ++i) {
    planner::TreeOutputOptions o;
    o.position_offset = p.c[i];
    o.packed_mask = false;
    planner::ComputeTreeOutputs(p.plan.trees[i], o, &result.outputs[i]);
  }
  result.priced = !p.latency_model.empty();
  result.latency_model = p.latency_model;
  result.profile = p.profile;
  return JsonToPy(ops::ToJson(req, result));
}

// (tokens, parents) of request i: views of the planner's own tree.
py::tuple TreeViews(py::handle self, const PyBatchPlan& p, int i) {
  const planner::Tree& t = p.plan.trees[static_cast<size_t>(i)];
  return py::make_tuple(View(t.tokens, self), View(t.parents, self));
}

// The getter of a per-request property (n, expected_accepted, price): a [B] view of that
// vector of the plan.
template <class T>
auto PerRequest(std::vector<T> planner::BatchPlan::*column) {
  return [column](py::object self) {
    const auto& p = self.cast<const PyBatchPlan&>();
    return View<T>((p.plan.*column).data(), {p.b}, self);
  };
}

// The getter of a flat array property (tokens, parents, depths, path_probs, offsets): a view of
// that vector of the result, filled on the first read of any of them.
template <class T>
auto FlatColumn(std::vector<T> BatchBuffers::*column) {
  return [column](py::object self) {
    auto& p = self.cast<PyBatchPlan&>();
    p.Flatten();
    return View(p.*column, self);
  };
}

const char* kBatchKwargsDoc = R"doc(
Keywords (both forms): cost: specplan.Cost (required unless mode='fixed');
n_max: total draft nodes over the batch (the budget in 'fixed', the search's upper end otherwise);
mode: 'controller' (first decrease of the goodput G(N) = sum w_i Â_i / C(N)), 'scan' (argmax over
N = 0..n_max; use with measured, stepped costs) or 'fixed' (exactly n_max nodes, the best
sum w_i Â_i); max_ms_per_token: maximise G(N) subject to C(N) / Â_i <= X for every request (not
with 'fixed'); drafter 'ar'|'parallel'|'causal', t_draft_ms (one draft forward of one sequence),
draft_batch_growth (fraction of one sequence's draft time each further sequence adds), t_aux_ms;
acceptance_scale: s of Â' = 1 + s (Â - 1); validate: check every request's marginals first;
layout: None, 'ragged' or 'sglang' (computed in the same call, GIL released; see BatchPlan.layout)
with tree_mask_mode, draft_token_num (None = the largest tree) and pad_token for 'sglang'.
In the cost-aware modes a plan that drafts must beat plain decoding, else every n_i = 0 and
speculation_pays is False (run a plain decoding step). Returns a BatchPlan.)doc";

}  // namespace

void ReadBatchArrays(py::handle root_tokens, py::handle tokens, py::handle probs,
                     py::handle context_lens, py::handle request_n_max, py::handle weights,
                     BatchWorkspace* ws) {
  const py::array_t<int32_t> t = IntArray32(tokens, "tokens");
  CheckNdim(t, 3, "tokens", "[B, gamma, k]");
  const py::array_t<float> p = FloatArray32(probs, "probs");
  CheckNdim(p, 3, "probs", "[B, gamma, k]");
  for (int dim = 0; dim < 3; ++dim) {
    if (p.shape(dim) != t.shape(dim)) {
      ThrowInvalid(
          absl::StrCat("probs: shape ", ShapeString(p), " differs from tokens' ", ShapeString(t)));
    }
  }
  const py::ssize_t b = t.shape(0), gamma = t.shape(1), k = t.shape(2);
  if (b < 1 || b > planner::kMaxBatchRequests) {
    ThrowInvalid(absl::StrCat("tokens: shape ", ShapeString(t), ": B = ", b,
                              " requests, expected 1..", planner::kMaxBatchRequests));
  }
  if (gamma > planner::kMaxMarginalsGamma || k > planner::kMaxMarginalsK) {
    ThrowInvalid(absl::StrCat("tokens: shape ", ShapeString(t), ": gamma and k at most ",
                              planner::kMaxMarginalsGamma, " and ", planner::kMaxMarginalsK));
  }
  const py::array_t<int64_t> roots = IntArray64(root_tokens, "root_tokens");
  const py::array_t<int64_t> ctx = IntArray64(context_lens, "context_lens");
  auto check_b = [b](const py::array& a, const char* name) {
    CheckNdim(a, 1, name, "[B]");
    if (a.shape(0) != b) {
      ThrowInvalid(absl::StrCat(name, ": ", a.shape(0), " entries, tokens has B = ", b));
    }
  };
  check_b(roots, "root_tokens");
  check_b(ctx, "context_lens");
  std::optional<py::array_t<int64_t>> caps;
  std::optional<py::array_t<double>> w;
  if (!request_n_max.is_none()) {
    caps = IntArray64(request_n_max, "request_n_max");
    check_b(*caps, "request_n_max");
  }
  if (!weights.is_none()) {
    w = FloatArray64(weights, "weights");
    check_b(*w, "weights");
  }
  ws->Resize(static_cast<size_t>(b));
  const size_t row = static_cast<size_t>(gamma * k);
  for (py::ssize_t i = 0; i < b; ++i) {
    const int64_t root = roots.data()[i];
    if (root < 0 || root > INT32_MAX) {
      ThrowInvalid(absl::StrCat("root_tokens[", i, "] = ", root, ": must be in [0, 2147483647]"));
    }
    if (ctx.data()[i] < 0) {
      ThrowInvalid(absl::StrCat("context_lens[", i, "] = ", ctx.data()[i], ": must be >= 0"));
    }
    planner::Marginals& mg = ws->marginals[static_cast<size_t>(i)];
    mg.root_token = static_cast<int32_t>(root);
    mg.gamma = static_cast<int>(gamma);
    mg.k = static_cast<int>(k);
    mg.tokens.assign(t.data() + i * row, t.data() + (i + 1) * row);
    mg.probs.assign(p.data() + i * row, p.data() + (i + 1) * row);
    planner::BatchRequest& r = ws->requests[static_cast<size_t>(i)];
    r = planner::BatchRequest{};
    r.marginals = &mg;
    r.c = ctx.data()[i];
    if (caps) {
      const int64_t v = caps->data()[i];
      if (v < -1 || v >= planner::kMaxTreeNodes) {
        ThrowInvalid(absl::StrCat("request_n_max[", i, "] = ", v, ": must be in [-1, ",
                                  planner::kMaxTreeNodes - 1, "] (-1 = no cap)"));
      }
      r.n_max = static_cast<int>(v);
    }
    if (w) r.weight = w->data()[i];
  }
}

void BindBatch(py::module_& m) {
  BindRecord<BatchCurveTag>(
      m, "BatchCurve", "The figures of a batch plan per evaluated N (BatchPlan.curve), as arrays.",
      {{"n", "int32 [points] N, draft nodes over the batch"},
       {"expected_accepted", "float64 [points] sum Â_i"},
       {"weighted_accepted", "float64 [points] sum w_i Â'_i, the objective's numerator"},
       {"cycle_s", "float64 [points] C(N) seconds"},
       {"goodput", "float64 [points] tokens/s"}});
  py::class_<PyBatchPlan>(m, "BatchPlan", R"doc(
The result of plan_batch: one tree per request (request i's tree is nodes offsets[i] ..
offsets[i+1] - 1 of the flat arrays, node 0 of it the root; n[i] = 0: request i does not
speculate this step), the per-request figures and the batch's cost figures. Arrays are NumPy
views of the result's own buffers (no copies).)doc")
      .def_property_readonly(
          "trees",
          [](py::object self) {
            const auto& p = self.cast<const PyBatchPlan&>();
            py::list out;
            for (int i = 0; i < p.b; ++i) out.append(TreeViews(self, p, i));
            return out;
          },
          "[B] (tokens int32 [n_i + 1], parents int32 [n_i + 1]) per request (views)")
      .def(
          "tree",
          [](py::object self, int i) {
            const auto& p = self.cast<const PyBatchPlan&>();
            if (i < 0) i += p.b;
            if (i < 0 || i >= p.b) {
              throw py::index_error(
                  absl::StrCat("i = ", i, ": out of range for ", p.b, " requests"));
            }
            return TreeViews(self, p, i);
          },
          py::arg("i"), "(tokens, parents) of request i (views)")
      .def_property_readonly(
          "tokens", FlatColumn(&BatchBuffers::tokens),
          "int32 [T], all trees back to back (request i: offsets[i] .. offsets[i+1] - 1)")
      .def_property_readonly("parents", FlatColumn(&BatchBuffers::parents),
                             "int32 [T], local indices, -1 for a root")
      .def_property_readonly("depths", FlatColumn(&BatchBuffers::depths), "int32 [T]")
      .def_property_readonly("path_probs", FlatColumn(&BatchBuffers::path_probs), "float64 [T]")
      .def_property_readonly(
          "offsets", FlatColumn(&BatchBuffers::offsets),
          "int64 [B+1]: request i is nodes offsets[i]..offsets[i+1]-1 of the flat arrays")
      .def_property_readonly("n", PerRequest(&planner::BatchPlan::n),
                             "int32 [B] draft nodes per request (0 = do not speculate)")
      .def_property_readonly("c", MemberView<PyBatchPlan>(&PyBatchPlan::c),
                             "int64 [B] context lengths")
      .def_property_readonly("expected_accepted",
                             PerRequest(&planner::BatchPlan::expected_accepted),
                             "float64 [B] Â_i, root included")
      .def_property_readonly("price", PerRequest(&planner::BatchPlan::price),
                             "float64 [B] κ_i used in the order")
      .def_property_readonly(
          "n_total", [](const PyBatchPlan& p) { return p.plan.n_total; }, "N* = sum n_i")
      .def_property_readonly("weighted_accepted",
                             [](const PyBatchPlan& p) { return p.plan.weighted_accepted; })
      .def_property_readonly(
          "cycle_s", [](const PyBatchPlan& p) { return Nullable(p.plan.cycle_s); },
          "C(N*) seconds; None without a cost")
      .def_property_readonly(
          "goodput", [](const PyBatchPlan& p) { return Nullable(p.plan.goodput); },
          "tokens/s at N*; None without a cost")
      .def_property_readonly(
          "ar_goodput", [](const PyBatchPlan& p) { return Nullable(p.plan.ar_goodput); },
          "plain decoding tokens/s, B / T_AR")
      .def_property_readonly("speculation_pays",
                             [](const PyBatchPlan& p) { return p.plan.speculation_pays; })
      .def_property_readonly("bound_met", [](const PyBatchPlan& p) { return p.plan.bound_met; })
      .def_property_readonly("lattice_exhausted",
                             [](const PyBatchPlan& p) { return p.plan.lattice_exhausted; })
      .def_property_readonly("mode", [](const PyBatchPlan& p) { return BudgetModeName(p.mode); })
      .def_property_readonly("n_max", [](const PyBatchPlan& p) { return p.n_max; })
      .def_property_readonly("latency_model", [](const PyBatchPlan& p) { return p.latency_model; })
      .def_property_readonly("profile", [](const PyBatchPlan& p) { return p.profile; })
      .def_property_readonly(
          "curve",
          [](const PyBatchPlan& p) {
            using P = planner::BatchCurvePoint;
            return ColumnsRecord<BatchCurveTag>(p.plan.curve, "n", &P::n, "expected_accepted",
                                                &P::expected_accepted, "weighted_accepted",
                                                &P::weighted_accepted, "cycle_s", &P::cycle_s,
                                                "goodput", &P::goodput);
          },
          "BatchCurve: arrays n, expected_accepted (sum Â_i), weighted_accepted (sum w_i Â'_i, "
          "the objective's numerator), cycle_s, goodput (sum Â'_i / C, tokens/s) per evaluated N "
          "(from 0); empty in 'fixed'")
      .def_property_readonly(
          "layout",
          [](py::object self) -> py::object {
            auto& p = self.cast<PyBatchPlan&>();
            // Views of the result's buffers; not cached (a cached dict would be a reference
            // cycle through the arrays' base, which Python cannot collect).
            if (p.layout == LayoutKind::kRagged) return RaggedViews(p.ragged, self);
            if (p.layout == LayoutKind::kSglang) return SglangViews(p.sglang, self);
            return py::none();
          },
          "The layout asked for with layout='ragged' or 'sglang' (a RaggedLayout or SglangLayout "
          "of views, as ragged_layout / sglang_layout return), else None")
      .def("to_dict", &BatchToDict,
           "The same keys as `specplan plan-batch --json` (lists, None for NaN).")
      .def("__len__", [](const PyBatchPlan& p) { return p.b; })
      .def("__repr__", &BatchRepr);

  static const std::string kPlanBatchDoc =
      std::string(R"doc(One tree budget across a batch of requests verified in one ragged pass
(specplan plan-batch; planner/batch/batch_plan.h).

requests: a list of specplan.Request(marginals, c, n_max=-1, weight=1.0), (marginals, c[, n_max[,
weight]]) tuples or dicts {marginals, c[, n_max, weight]}; marginals a specplan.Marginals (read
in place) or a dict {root_token, tokens [gamma][k], probs [gamma][k]}; c the request's cached
tokens; n_max a cap on its draft nodes (-1 = none); weight w_i > 0.
)doc") +
      kBatchKwargsDoc;
  static const std::string kPlanBatchArraysDoc =
      std::string(R"doc(plan_batch over dense arrays, the form a drafter's batched output has:
root_tokens int [B], tokens int32 [B, gamma, k], probs float32 [B, gamma, k] (read in place when
C-contiguous int32 / float32), context_lens int64 [B]; optional request_n_max int [B] (-1 = no
cap) and weights float [B]. Same plan as plan_batch with the same requests.
)doc") +
      kBatchKwargsDoc;
#define SPECPLAN_BATCH_KWARGS                                                               \
  py::kw_only(), py::arg("n_max") = 256, py::arg("mode") = "controller",                    \
                 py::arg("max_ms_per_token") = py::none(), py::arg("drafter") = "parallel", \
                 py::arg("t_draft_ms") = 0.0, py::arg("t_aux_ms") = 0.0,                    \
                 py::arg("draft_batch_growth") = 0.0, py::arg("acceptance_scale") = 1.0,    \
                 py::arg("validate") = true, py::arg("layout") = py::none(),                \
                 py::arg("tree_mask_mode") = "QLEN_ONLY_BITPACKING",                        \
                 py::arg("draft_token_num") = py::none(), py::arg("pad_token") = 0
  m.def(
      "plan_batch",
      [](py::object requests, py::object cost, int n_max, const std::string& mode,
         py::object max_ms, const std::string& drafter, double t_draft_ms, double t_aux_ms,
         double growth, double scale, bool validate, py::object layout, py::object mask_mode,
         py::object d, int64_t pad) {
        const BatchArgs args = ParseBatchArgs(n_max, mode, max_ms, drafter, t_draft_ms, t_aux_ms,
                                              growth, scale, validate, layout, mask_mode, d, pad);
        if (!py::isinstance<py::sequence>(requests) || py::isinstance<py::str>(requests)) {
          ThrowWrongType("requests", requests, "a list of requests");
        }
        py::sequence seq = py::reinterpret_borrow<py::sequence>(requests);
        const size_t b = seq.size();
        if (b == 0 || b > static_cast<size_t>(planner::kMaxBatchRequests)) {
          ThrowInvalid(
              absl::StrCat("requests: ", b, " requests: expected 1..", planner::kMaxBatchRequests));
        }
        const PyCost* c = ReadCost(cost);
        BatchWorkspace& ws = ThreadBatchWorkspace();
        ws.Resize(b);
        std::vector<py::object> keep;
        keep.reserve(b);
        for (size_t i = 0; i < b; ++i) ReadRequest(seq[i], i, &ws, &keep);
        return RunBatch(&ws, c, args);
      },
      py::arg("requests"), py::arg("cost") = py::none(), SPECPLAN_BATCH_KWARGS,
      kPlanBatchDoc.c_str());

  m.def(
      "plan_batch_arrays",
      [](py::object root_tokens, py::object tokens, py::object probs, py::object context_lens,
         py::object cost, py::object request_n_max, py::object weights, int n_max,
         const std::string& mode, py::object max_ms, const std::string& drafter, double t_draft_ms,
         double t_aux_ms, double growth, double scale, bool validate, py::object layout,
         py::object mask_mode, py::object d, int64_t pad) {
        const BatchArgs args = ParseBatchArgs(n_max, mode, max_ms, drafter, t_draft_ms, t_aux_ms,
                                              growth, scale, validate, layout, mask_mode, d, pad);
        BatchWorkspace& ws = ThreadBatchWorkspace();
        ReadBatchArrays(root_tokens, tokens, probs, context_lens, request_n_max, weights, &ws);
        const PyCost* c = ReadCost(cost);
        return RunBatch(&ws, c, args);
      },
      py::arg("root_tokens"), py::arg("tokens"), py::arg("probs"), py::arg("context_lens"),
      py::arg("cost") = py::none(), py::arg("request_n_max") = py::none(),
      py::arg("weights") = py::none(), SPECPLAN_BATCH_KWARGS, kPlanBatchArraysDoc.c_str());
#undef SPECPLAN_BATCH_KWARGS
}

}  // namespace specplan::python
