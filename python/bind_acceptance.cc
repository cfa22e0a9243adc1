// accept_greedy (planner/acceptance/acceptance.h), specplan.AcceptanceEstimator and
// specplan.SpeculationGate (planner/acceptance/speculation_gate.h).
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "batch.h"
#include "common.h"
#include "planner/acceptance/acceptance.h"
#include "planner/acceptance/speculation_gate.h"
#include "record.h"

namespace specplan::python {
namespace {

struct BatchAcceptTag {};   // specplan.BatchAcceptResult
struct GateDecisionTag {};  // specplan.GateDecision
struct GateStatsTag {};     // specplan.GateStats

struct PyAcceptResult {
  planner::AcceptResult result;
  std::vector<int32_t> emitted;  // accepted draft tokens, then the bonus token
  planner::StepAcceptance step;
};

planner::AcceptanceEstimatorOptions EstimatorOptions(double prior_alpha, double prior_weight,
                                                     double forget) {
  if (!(prior_alpha >= 0 && prior_alpha <= 1)) {
    ThrowInvalid(absl::StrCat("prior_alpha = ", prior_alpha, ": must be in [0, 1]"));
  }
  if (!(prior_weight >= 0) || !std::isfinite(prior_weight)) {
    ThrowInvalid(absl::StrCat("prior_weight = ", prior_weight, ": must be >= 0"));
  }
  if (!(forget > 0 && forget <= 1)) {
    ThrowInvalid(absl::StrCat("forget = ", forget, ": must be in (0, 1]"));
  }
  planner::AcceptanceEstimatorOptions o;
  o.prior_alpha = prior_alpha;
  o.prior_weight = prior_weight;
  o.forget = forget;
  return o;
}

// observe(step) with a step given as an AcceptResult or as the three counts.
planner::StepAcceptance ReadStep(py::object first, py::object num_draft,
                                 py::object accepted_length) {
  if (py::isinstance<PyAcceptResult>(first)) return first.cast<const PyAcceptResult&>().step;
  if (num_draft.is_none() || accepted_length.is_none()) {
    ThrowType("observe: pass an AcceptResult, or proposed_depth, num_draft and accepted_length");
  }
  planner::StepAcceptance s;
  s.proposed_depth = static_cast<int32_t>(ReadInt(first, "proposed_depth"));
  s.num_draft = static_cast<int32_t>(ReadInt(num_draft, "num_draft"));
  s.accepted_length = static_cast<int32_t>(ReadInt(accepted_length, "accepted_length"));
  if (s.accepted_length < 0 || s.accepted_length > s.proposed_depth ||
      s.proposed_depth > s.num_draft) {
    ThrowInvalid(absl::StrCat("proposed_depth = ", s.proposed_depth, ", num_draft = ", s.num_draft,
                              ", accepted_length = ", s.accepted_length,
                              ": need 0 <= accepted_length <= proposed_depth <= num_draft"));
  }
  return s;
}

// Defines the `observe` method of the estimator's or the gate's class: one verified step, an
// AcceptResult or observe(proposed_depth, num_draft, accepted_length).
template <class T>
void DefObserve(py::class_<T>& cls, const char* doc) {
  cls.def(
      "observe",
      [](T& x, py::object step, py::object num_draft, py::object accepted) {
        x.Observe(ReadStep(step, num_draft, accepted));
      },
      py::arg("step"), py::arg("num_draft") = py::none(), py::arg("accepted_length") = py::none(),
      doc);
}

py::object DecisionRecord(const planner::GateDecision& d) {
  py::dict out;
  out["depth"] = d.depth;
  out["probe"] = d.probe;
  out["ar_tokens_per_s"] = d.ar_tokens_per_s;
  out["tokens_per_s"] = d.tokens_per_s;
  out["expected_accepted"] = d.expected_accepted;
  return MakeRecord<GateDecisionTag>(out);
}

void CheckDepths(int min_depth, int max_depth) {
  if (min_depth < 1 || max_depth < min_depth || max_depth > 1024) {
    ThrowInvalid(absl::StrCat("min_depth = ", min_depth, ", max_depth = ", max_depth,
                              ": need 1 <= min_depth <= max_depth <= 1024"));
  }
}

double LevelSeconds(py::object draft_level_s) {
  return draft_level_s.is_none() ? -1.0 : ReadFloat(draft_level_s, "draft_level_s");
}

const PyCost& NeedCost(py::object cost) {
  const PyCost* c = ReadCost(cost);
  if (c == nullptr) ThrowInvalid("cost = None: the gate prices T_verify; pass a specplan.Cost");
  return *c;
}

}  // namespace

void BindAcceptance(py::module_& m) {
  BindRecord<BatchAcceptTag>(
      m, "BatchAcceptResult", "What verification accepted for each request (accept_greedy_batch).",
      {{"accepted_length", "int32 [B] accepted draft tokens per request"},
       {"bonus_token", "int32 [B] the target's token after the accepted path"},
       {"accepted_nodes", "int32, request b's accepted nodes (root first) at offsets[b]:"},
       {"emitted", "int32, request b's accepted drafts then its bonus token at offsets[b]:"},
       {"offsets", "int64 [B+1] into accepted_nodes and emitted"}});
  BindRecord<GateDecisionTag>(
      m, "GateDecision",
      "What SpeculationGate.decide / decide_batch chose for the next step: the depth and the "
      "throughputs it compared.",
      {{"depth", "draft levels (0 = plain decoding)"},
       {"probe", "True when this step probes"},
       {"ar_tokens_per_s", "plain decoding tokens/s"},
       {"tokens_per_s", "tokens/s at depth"},
       {"expected_accepted", "expected accepted tokens at depth"}});
  BindRecord<GateStatsTag>(
      m, "GateStats",
      "A SpeculationGate's counters (SpeculationGate.stats): decisions made, how many "
      "were plain steps (depth 0), and probes.",
      {{"decisions", "decide calls"},
       {"undrafted", "decisions of depth 0"},
       {"probes", "probe steps"}});
  py::class_<PyAcceptResult>(m, "AcceptResult", "What verification accepted (accept_greedy).")
      .def_property_readonly("accepted_nodes",
                             MemberView<PyAcceptResult>(&PyAcceptResult::result,
                                                        &planner::AcceptResult::accepted_nodes),
                             "int32 [accepted_length + 1]: node indices, root first")
      .def_property_readonly(
          "accepted_length", [](const PyAcceptResult& r) { return r.result.accepted_length; },
          "accepted draft tokens (root and bonus excluded)")
      .def_property_readonly(
          "bonus_token", [](const PyAcceptResult& r) { return r.result.bonus_token; },
          "the target's token after the last accepted node")
      .def_property_readonly(
          "emitted", MemberView<PyAcceptResult>(&PyAcceptResult::emitted),
          "int32 [accepted_length + 1]: the accepted draft tokens, then the bonus token (what this "
          "step appends)")
      .def_property_readonly("num_draft", [](const PyAcceptResult& r) { return r.step.num_draft; })
      .def_property_readonly("proposed_depth",
                             [](const PyAcceptResult& r) { return r.step.proposed_depth; })
      .def("__repr__", [](const PyAcceptResult& r) {
        return absl::StrFormat(
            "specplan.AcceptResult(accepted_length=%d, bonus_token=%d, num_draft=%d, "
            "proposed_depth=%d)",
            r.result.accepted_length, r.result.bonus_token, r.step.num_draft,
            r.step.proposed_depth);
      });

  m.def(
      "accept_greedy",
      [](py::object tree, py::object argmax) {
        thread_local planner::Tree t;
        ReadTree(tree, "tree", &t);
        const py::array_t<int32_t> a = IntArray32(argmax, "argmax");
        CheckNdim(a, 1, "argmax", "[s]");
        if (a.shape(0) != t.size()) {
          ThrowInvalid(absl::StrCat("argmax: ", a.shape(0), " entries, the tree has ", t.size(),
                                    " nodes (one target argmax per node)"));
        }
        auto out = std::make_unique<PyAcceptResult>();
        {
          py::gil_scoped_release release;
          thread_local planner::GreedyAcceptWorkspace ws;
          planner::AcceptGreedy(t, absl::MakeConstSpan(a.data(), a.shape(0)), &ws, &out->result);
          for (size_t i = 1; i < out->result.accepted_nodes.size(); ++i) {
            out->emitted.push_back(t.tokens[out->result.accepted_nodes[i]]);
          }
          out->emitted.push_back(out->result.bonus_token);
          out->step = planner::MakeStepAcceptance(t, out->result);
        }
        return out;
      },
      py::arg("tree"), py::arg("argmax"),
      R"doc(Greedy (temperature 0) acceptance of a verified tree (planner::AcceptGreedy).

tree: (tokens, parents), a TreePlan, or a dict with tokens and parents; argmax: int [s], the
target's argmax at each node (the token that follows that node's path). Accepts the longest
root-to-node path whose every edge matches (child token == parent's argmax); ties to the
smallest node indices. Returns an AcceptResult: accepted_nodes, accepted_length, bonus_token,
emitted (the tokens this step appends), num_draft and proposed_depth (for the estimators).)doc");

  m.def(
      "accept_greedy_batch",
      [](py::object trees, py::object argmax, py::object draft_token_num) {
        // The trees: a BatchPlan's own (no copy), or a list read like sglang_layout's.
        std::vector<planner::Tree> read;
        const planner::Tree* ts = nullptr;
        size_t b = 0;
        if (py::isinstance<PyBatchPlan>(trees)) {
          const auto& p = trees.cast<const PyBatchPlan&>();
          ts = p.plan.trees.data();
          b = static_cast<size_t>(p.b);
        } else {
          ReadTrees(trees, "a BatchPlan or a list of (tokens, parents) trees", &read);
          ts = read.data();
          b = read.size();
        }
        const py::array_t<int32_t> a = IntArray32(argmax, "argmax");
        CheckNdim(a, 1, "argmax", "[T] (ragged) or [B * D] (SGLang's padded slots)");
        const absl::Span<const planner::Tree> batch(ts, b);
        const std::optional<int64_t> slot =
            draft_token_num.is_none()
                ? std::nullopt
                : std::optional<int64_t>(ReadInt(draft_token_num, "draft_token_num"));
        const std::vector<int64_t> rows =
            ValueOrThrow(planner::BatchArgmaxRows(batch, slot, a.shape(0)));
        planner::BatchAcceptResult r;
        {
          py::gil_scoped_release release;
          thread_local planner::GreedyAcceptWorkspace ws;
          planner::AcceptGreedyBatch(batch, absl::MakeConstSpan(a.data(), a.shape(0)), rows, &ws,
                                     &r);
        }
        py::dict out;
        out["accepted_length"] = Own(std::move(r.accepted_length));
        out["bonus_token"] = Own(std::move(r.bonus_token));
        out["accepted_nodes"] = Own(std::move(r.accepted_nodes));
        out["emitted"] = Own(std::move(r.emitted));
        out["offsets"] = Own(std::move(r.offsets));
        return MakeRecord<BatchAcceptTag>(out);
      },
      py::arg("trees"), py::arg("argmax"), py::arg("draft_token_num") = py::none(),
      R"doc(accept_greedy for every request of a batch in one call (GIL released).

trees: a BatchPlan (its trees, not copied) or a list of trees; argmax: the target's argmax per
verified row, int [T] with the trees' nodes back to back (the ragged layout's order), or, with
draft_token_num=D, int [B * D] over SGLang's padded slots (request b's node i at row b * D + i).
Returns a BatchAcceptResult: accepted_length int32 [B], bonus_token int32 [B], and
accepted_nodes / emitted int32 with offsets int64 [B+1] (request b's accepted nodes, root first, and its emitted tokens,
accepted drafts then the bonus, are entries offsets[b] .. offsets[b+1] - 1 of each; a request
emits accepted_length + 1 tokens, so both arrays share the offsets).)doc");

  py::class_<planner::AcceptanceEstimator> estimator(m, "AcceptanceEstimator", R"doc(
Online acceptance estimate (planner/acceptance/speculation_gate.h): alpha of a truncated geometric chain with
exponential forgetting, the verified width, and the surrogate's calibration surrogate_scale (the
realised / promised draft tokens), which plan_tree / plan_batch take as acceptance_scale.)doc");
  estimator.def(py::init([](double a, double w, double f) {
                  return planner::AcceptanceEstimator(EstimatorOptions(a, w, f));
                }),
                py::kw_only(), py::arg("prior_alpha") = 0.5, py::arg("prior_weight") = 1.0,
                py::arg("forget") = 0.95);
  DefObserve(estimator,
             "One verified step: an AcceptResult, or observe(proposed_depth, num_draft, "
             "accepted_length).");
  estimator
      .def(
          "observe_surrogate",
          [](planner::AcceptanceEstimator& e, double a_hat, int accepted) {
            e.ObserveSurrogate(a_hat, accepted);
          },
          py::arg("expected_accepted"), py::arg("accepted_length"),
          "The planner's Â for the step (root included) and the realised accepted length: updates "
          "kappa and surrogate_scale.")
      .def_property_readonly("alpha", &planner::AcceptanceEstimator::alpha)
      .def("expected_accepted", &planner::AcceptanceEstimator::ExpectedAccepted, py::arg("depth"),
           "A(d) = sum_{k=1..d} alpha^k")
      .def_property_readonly("width", &planner::AcceptanceEstimator::width)
      .def_property_readonly("mean_depth", &planner::AcceptanceEstimator::mean_depth)
      .def_property_readonly("kappa", &planner::AcceptanceEstimator::kappa)
      .def_property_readonly("surrogate_scale", &planner::AcceptanceEstimator::surrogate_scale)
      .def_property_readonly("observed_steps", &planner::AcceptanceEstimator::observed_steps)
      .def_property_readonly("surrogate_steps", &planner::AcceptanceEstimator::surrogate_steps)
      .def("__repr__", [](const planner::AcceptanceEstimator& e) {
        return absl::StrFormat(
            "specplan.AcceptanceEstimator(alpha=%.4f, width=%.3f, surrogate_scale=%.4f, steps=%d)",
            e.alpha(), e.width(), e.surrogate_scale(), e.observed_steps());
      });

  py::class_<planner::SpeculationGate> gate(m, "SpeculationGate", R"doc(
Decides before drafting whether a step drafts and how deep (planner/acceptance/speculation_gate.h):
R(0) = 1 / (T(1) + H) against R(d) = (1 + A(d)) / (d t + T(1 + round(w d)) + H) with t the
measured seconds of one draft level and H the engine's host work per step (host=cost.host: the
step model's step, per-sequence, sampling and per-token terms; default none, as specplan's own
runtime); returns 0 (plain decoding) unless some depth beats AR by more than min_gain, and probes
now and then to refresh its estimates.

    gate = specplan.SpeculationGate()
    d = gate.decide(cost, c=1024, max_depth=8).depth
    ... draft d levels, timing one level ...; gate.observe_draft_level(level_seconds)
    gate.observe(specplan.accept_greedy(tree, argmax)))doc");
  gate.def(py::init([](bool enabled, double min_gain, double time_forget, int probe_interval,
                       int max_probe_interval, int probe_depth, double probe_budget,
                       double prior_alpha, double prior_weight, double forget, py::object host) {
             planner::SpeculationGateOptions o;
             o.enabled = enabled;
             o.acceptance = EstimatorOptions(prior_alpha, prior_weight, forget);
             o.min_gain = min_gain;
             o.time_forget = time_forget;
             o.probe_interval = probe_interval;
             o.max_probe_interval = max_probe_interval;
             o.probe_depth = probe_depth;
             o.probe_budget = probe_budget;
             // A HostTime (Cost.host): the engine's host work per step.
             if (!host.is_none()) o.host = HostFromRecord(host, "host");
             ThrowIfError(planner::ValidateSpeculationGateOptions(o));
             return planner::SpeculationGate(o);
           }),
           py::kw_only(), py::arg("enabled") = true, py::arg("min_gain") = 0.0,
           py::arg("time_forget") = 0.8, py::arg("probe_interval") = 64,
           py::arg("max_probe_interval") = 1024, py::arg("probe_depth") = 2,
           py::arg("probe_budget") = 0.02, py::arg("prior_alpha") = 0.5,
           py::arg("prior_weight") = 1.0, py::arg("forget") = 0.95, py::arg("host") = py::none())
      .def(
          "decide",
          [](planner::SpeculationGate& g, py::object cost, int64_t c, int min_depth, int max_depth,
             py::object level) {
            const PyCost& k = NeedCost(cost);
            if (c < 0) ThrowInvalid(absl::StrCat("c = ", c, ": must be >= 0"));
            CheckDepths(min_depth, max_depth);
            return DecisionRecord(g.Decide(*k.model, c, min_depth, max_depth, LevelSeconds(level)));
          },
          py::arg("cost"), py::arg("c"), py::kw_only(), py::arg("min_depth") = 1,
          py::arg("max_depth") = 8, py::arg("draft_level_s") = py::none(),
          "The depth of the next step of one sequence over c cached tokens: a GateDecision "
          "(depth, 0 = plain AR; probe, ar_tokens_per_s, tokens_per_s, expected_accepted). "
          "draft_level_s: seconds of one draft level (None: the EMA of observe_draft_level).")
      .def(
          "decide_batch",
          [](planner::SpeculationGate& g, py::object cost, py::object contexts, int min_depth,
             int max_depth, py::object level) {
            const PyCost& k = NeedCost(cost);
            const py::array_t<int64_t> cs = IntArray64(contexts, "contexts");
            CheckNdim(cs, 1, "contexts", "[B]");
            if (cs.shape(0) < 1) ThrowInvalid("contexts: empty: expected B >= 1 context lengths");
            for (py::ssize_t i = 0; i < cs.shape(0); ++i) {
              if (cs.data()[i] < 0)
                ThrowInvalid(absl::StrCat("contexts[", i, "] = ", cs.data()[i], ": must be >= 0"));
            }
            CheckDepths(min_depth, max_depth);
            return DecisionRecord(g.DecideBatch(*k.model,
                                                absl::MakeConstSpan(cs.data(), cs.shape(0)),
                                                min_depth, max_depth, LevelSeconds(level)));
          },
          py::arg("cost"), py::arg("contexts"), py::kw_only(), py::arg("min_depth") = 1,
          py::arg("max_depth") = 8, py::arg("draft_level_s") = py::none(),
          "decide for B sequences drafted one after another and verified in one ragged pass "
          "(tokens/s are the batch's).")
      .def("observe_draft_level", &planner::SpeculationGate::ObserveDraftLevel, py::arg("seconds"),
           "Measured seconds of one draft level (> 0; anything else is ignored).")
      .def("observe_probe_seconds", &planner::SpeculationGate::ObserveProbeSeconds,
           py::arg("seconds"), "Measured seconds of the last probe's drafting, catch-up included.");
  DefObserve(gate,
             "After verification: an AcceptResult, or observe(proposed_depth, num_draft, "
             "accepted_length).");
  gate.def_property_readonly(
          "estimator",
          [](planner::SpeculationGate& g) -> planner::AcceptanceEstimator& {
            return g.estimator();
          },
          py::return_value_policy::reference_internal)
      .def_property_readonly("draft_level_s", &planner::SpeculationGate::draft_level_s)
      .def_property_readonly(
          "stats",
          [](const planner::SpeculationGate& g) {
            py::dict d;
            d["decisions"] = g.stats().decisions;
            d["undrafted"] = g.stats().undrafted;
            d["probes"] = g.stats().probes;
            return MakeRecord<GateStatsTag>(d);
          },
          "GateStats: decisions, undrafted, probes so far")
      .def("__repr__", [](const planner::SpeculationGate& g) {
        return absl::StrFormat(
            "specplan.SpeculationGate(decisions=%d, undrafted=%d, probes=%d, alpha=%.4f, "
            "draft_level_s=%.6g)",
            g.stats().decisions, g.stats().undrafted, g.stats().probes, g.estimator().alpha(),
            g.draft_level_s());
      });
}

}  // namespace specplan::python
