// Conversions between the specplan.v1 protos and the library types, with validation that names the
// field path (e.g. "marginals.probs[2][1]") and applies the server's limits: marginals, trees,
// plans and their outputs, latency grids, policy configs, the batch plan request and reply
// (PlanBatch, with engine layouts), and the what-if request and report (each section is marked).
// One file (over 500 lines) so that the client and the server share exactly one definition of
// every field's meaning.

#include "service/convert.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodel/profile/engines.h"
#include "costmodel/step/host_time.h"
#include "ops/validate.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::service {
namespace {

absl::Status Invalid(std::string msg) { return absl::InvalidArgumentError(std::move(msg)); }

template <class RepeatedIn, class VecOut>
void AssignRepeated(const RepeatedIn& in, VecOut* out) {
  out->assign(in.begin(), in.end());
}

// A curve's points as the wire's columns: AppendColumns(points, &Point::a, column_a, &Point::b,
// column_b, ...) appends each point's field a to column_a (a repeated field, its room reserved
// first), and so on.
template <class Point>
void AppendColumns(const std::vector<Point>& /*points*/) {}

template <class Point, class T, class Column, class... Rest>
void AppendColumns(const std::vector<Point>& points, T Point::*field, Column* column,
                   Rest... rest) {
  column->Reserve(static_cast<int>(points.size()));
  for (const Point& p : points) column->Add(p.*field);
  AppendColumns(points, rest...);
}

// The tree's arrays as they are on the wire (no checks).
void AssignTree(const v1::Tree& in, planner::Tree* out) {
  AssignRepeated(in.tokens(), &out->tokens);
  AssignRepeated(in.parents(), &out->parents);
  AssignRepeated(in.depths(), &out->depths);
  AssignRepeated(in.path_probs(), &out->path_probs);
}

}  // namespace

absl::Status ValidateLimits(const ServiceLimits& l) {
  if (l.max_gamma < 1 || l.max_gamma > planner::kMaxMarginalsGamma) {
    return Invalid(absl::StrCat("--max-gamma = ", l.max_gamma, ": must be in [1, ",
                                planner::kMaxMarginalsGamma, "]"));
  }
  if (l.max_k < 1 || l.max_k > planner::kMaxMarginalsK) {
    return Invalid(
        absl::StrCat("--max-k = ", l.max_k, ": must be in [1, ", planner::kMaxMarginalsK, "]"));
  }
  if (l.max_n < 0 || l.max_n > planner::kMaxTreeNodes - 1) {
    return Invalid(
        absl::StrCat("--max-n = ", l.max_n, ": must be in [0, ", planner::kMaxTreeNodes - 1, "]"));
  }
  if (l.max_batch_requests < 1 || l.max_batch_requests > planner::kMaxBatchRequests) {
    return Invalid(absl::StrCat("--max-batch-requests = ", l.max_batch_requests,
                                ": must be in [1, ", planner::kMaxBatchRequests, "]"));
  }
  if (l.max_sessions < 1 || l.max_sessions > kMaxSessions) {
    return Invalid(
        absl::StrCat("--max-sessions = ", l.max_sessions, ": must be in [1, ", kMaxSessions, "]"));
  }
  if (l.max_batch_nodes < 0 || l.max_batch_nodes > planner::kMaxBatchNodes) {
    return Invalid(absl::StrCat("--max-batch-nodes = ", l.max_batch_nodes, ": must be in [0, ",
                                planner::kMaxBatchNodes, "]"));
  }
  return absl::OkStatus();
}

absl::Status Prefixed(absl::string_view field, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(field, ".", status.message()));
}

absl::Status MarginalsFromProto(const v1::Marginals& in, const ServiceLimits& limits,
                                absl::string_view field, planner::Marginals* out) {
  if (in.gamma() > limits.max_gamma) {
    return absl::ResourceExhaustedError(absl::StrCat(field, ".gamma = ", in.gamma(),
                                                     ": exceeds the server limit ",
                                                     limits.max_gamma, " (--max-gamma)"));
  }
  if (in.k() > limits.max_k) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ".k = ", in.k(), ": exceeds the server limit ", limits.max_k, " (--max-k)"));
  }
  if (in.gamma() >= 1 && in.k() >= 1) {
    const int64_t want = int64_t{in.gamma()} * in.k();
    if (in.tokens_size() != want) {
      return Invalid(absl::StrCat(field, ".tokens: ", in.tokens_size(),
                                  " entries, expected gamma * k = ", in.gamma(), " * ", in.k(),
                                  " = ", want, " (ragged or truncated rows)"));
    }
    if (in.probs_size() != want) {
      return Invalid(absl::StrCat(field, ".probs: ", in.probs_size(),
                                  " entries, expected gamma * k = ", in.gamma(), " * ", in.k(),
                                  " = ", want, " (ragged or truncated rows)"));
    }
  }
  out->root_token = in.root_token();
  out->gamma = in.gamma();
  out->k = in.k();
  AssignRepeated(in.tokens(), &out->tokens);
  AssignRepeated(in.probs(), &out->probs);
  return Prefixed(field, planner::ValidateMarginals(*out));
}

absl::Status TreeFromProto(const v1::Tree& in, const ServiceLimits& limits, absl::string_view field,
                           planner::Tree* out) {
  if (in.tokens_size() > int64_t{limits.max_n} + 1) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ".tokens: ", in.tokens_size(), " nodes (", in.tokens_size() - 1,
        " draft nodes) exceed the server limit of ", limits.max_n, " draft nodes (--max-n)"));
  }
  AssignTree(in, out);
  if (in.depths_size() == 0) {
    // Depths from parents where they are topological; ValidateTree reports the first bad parent.
    out->depths.assign(out->parents.size(), 0);
    for (size_t i = 1; i < out->parents.size(); ++i) {
      const int32_t p = out->parents[i];
      if (p >= 0 && static_cast<size_t>(p) < i) out->depths[i] = out->depths[p] + 1;
    }
  }
  return Prefixed(field, planner::ValidateTree(*out));
}

void MarginalsToProto(const planner::Marginals& in, v1::Marginals* out) {
  out->set_root_token(in.root_token);
  out->set_gamma(in.gamma);
  out->set_k(in.k);
  out->mutable_tokens()->Assign(in.tokens.begin(), in.tokens.end());
  out->mutable_probs()->Assign(in.probs.begin(), in.probs.end());
}

void DrafterCostToProto(const costmodel::DrafterCost& in, v1::DrafterCost* out) {
  out->set_drafter_class(costmodel::DrafterClassName(in.cls));
  out->set_gamma(in.gamma);
  out->set_t_net_s(in.t_net_s);
  out->set_t_head_s(in.t_head_s);
  out->set_t_light_s(in.t_light_s);
  out->set_batch_growth(in.batch_growth);
}

absl::Status StepOptionsFromProto(const v1::DrafterCost& in, const std::string& engine,
                                  double draft_s, absl::string_view field,
                                  costmodel::StepOptions* out) {
  costmodel::StepOptions o;
  o.drafter = in.architecture();
  o.draft_steps = in.has_draft_steps() ? in.draft_steps() : -1;
  if (in.has_draft_steps() && in.draft_steps() < 0) {
    return Invalid(absl::StrCat(field, ".drafter.draft_steps = ", in.draft_steps(),
                                ": must be >= 0 when has_draft_steps (unset: the chain's s - 1)"));
  }
  o.topk = in.topk() == 0 ? 1 : in.topk();
  if (in.draft_vocab() < 0) {
    return Invalid(absl::StrCat(field, ".drafter.draft_vocab = ", in.draft_vocab(),
                                ": must be >= 0 (0 = 32000)"));
  }
  o.drafter_options.draft_vocab = in.draft_vocab();
  if (draft_s > 0) o.draft_s = draft_s;
  // The base: host_base's terms when given (a step fit file's), else the engine's defaults.
  std::optional<costmodel::HostTime> base;
  if (in.has_host_base()) {
    const v1::HostTime& b = in.host_base();
    if (b.provenance().size() > 256) {
      return Invalid(absl::StrCat(field, ".drafter.host_base.provenance: ", b.provenance().size(),
                                  " bytes: at most 256"));
    }
    base = HostTimeFromProto(b);
    SPECPLAN_RETURN_IF_ERROR(
        costmodel::ValidateHostTime(*base, absl::StrCat(field, ".drafter.host_base.")));
    if (base->provenance.empty()) base->provenance = "given in the request (host_base)";
    o.host = base;
  }
  if (in.has_host()) {
    const v1::HostTimeOverrides& h = in.host();
    if (h.provenance().size() > 256) {
      return Invalid(absl::StrCat(field, ".drafter.host.provenance: ", h.provenance().size(),
                                  " bytes: at most 256"));
    }
    auto host =
        base ? absl::StatusOr<costmodel::HostTime>(*base) : costmodel::DefaultHostTime(engine);
    if (!host.ok()) return StepErrorInFields(host.status(), field);
    const struct {
      bool given;
      double value;
      double* to;
    } overrides[] = {
        {h.has_step_s(), h.step_s(), &host->step_s},
        {h.has_per_sequence_s(), h.per_sequence_s(), &host->per_sequence_s},
        {h.has_per_draft_forward_s(), h.per_draft_forward_s(), &host->per_draft_forward_s},
        {h.has_sample_call_s(), h.sample_call_s(), &host->sample_call_s}};
    bool overridden = false;
    for (const auto& [given, value, to] : overrides) {
      if (!given) continue;
      *to = value;
      overridden = true;
    }
    if (overridden) {
      host->provenance =
          absl::StrCat(h.provenance().empty() ? "given in the request" : h.provenance(), ", over ",
                       host->provenance);
      o.host = *host;
    }
  }
  SPECPLAN_RETURN_IF_ERROR(StepErrorInFields(costmodel::ValidateStepOptions(o), field));
  *out = std::move(o);
  return absl::OkStatus();
}

absl::Status StepErrorInFields(const absl::Status& status, absl::string_view field) {
  if (status.ok()) return status;
  const absl::string_view msg = status.message();
  constexpr absl::string_view kDrafter = "drafter = ";
  if (absl::StartsWith(msg, kDrafter)) {
    return absl::Status(
        status.code(),
        absl::StrCat(field, ".drafter.architecture = ", msg.substr(kDrafter.size())));
  }
  constexpr absl::string_view kDraftS = "draft_s = ";
  if (absl::StartsWith(msg, kDraftS)) {
    return absl::Status(status.code(),
                        absl::StrCat(field, ".drafter.t_net_s + t_head_s + t_light_s = ",
                                     msg.substr(kDraftS.size()), " (T_draft by hand)"));
  }
  for (absl::string_view name : {"draft_steps = ", "topk = ", "host."}) {
    if (absl::StartsWith(msg, name)) {
      return absl::Status(status.code(), absl::StrCat(field, ".drafter.", msg));
    }
  }
  return Prefixed(absl::StrCat(field, ".drafter"), status);
}

void StepBreakdownToProto(const costmodel::StepBreakdown& in, const std::string& draft_priced_by,
                          v1::StepBreakdown* out) {
  out->set_verify_s(in.verify_s);
  out->set_draft_s(in.draft_s);
  out->set_sample_s(in.sample_s);
  out->set_host_s(in.host_s);
  out->set_step_s(in.step_s());
  out->set_draft_forwards(in.draft_forwards);
  out->set_draft_priced_by(draft_priced_by);
}

costmodel::StepBreakdown StepBreakdownFromProto(const v1::StepBreakdown& in) {
  costmodel::StepBreakdown out;
  out.verify_s = in.verify_s();
  out.draft_s = in.draft_s();
  out.sample_s = in.sample_s();
  out.host_s = in.host_s();
  out.draft_forwards = in.draft_forwards();
  return out;
}

// Field by field through costmodel::HostTimeTerms(): the proto names its fields as the terms are
// named (proto/specplan/v1/planner.proto HostTime), which tests/service/step_rpc_test.cc checks by
// round-tripping every term.
namespace {
// v1.HostTime's field of each term, in HostTimeTerms() order, looked up once.
const std::vector<const google::protobuf::FieldDescriptor*>& HostTimeFields() {
  static const auto* fields = [] {
    auto* f = new std::vector<const google::protobuf::FieldDescriptor*>(
        costmodel::HostTimeTerms().size());
    for (size_t i = 0; i < f->size(); ++i) {
      const char* name = costmodel::HostTimeTerms()[i].name;
      (*f)[i] = v1::HostTime::descriptor()->FindFieldByName(name);
      SPECPLAN_CHECK((*f)[i] != nullptr &&
                         (*f)[i]->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE,
                     "v1.HostTime lacks a double field named as a costmodel::HostTimeTerms() term");
    }
    return f;
  }();
  return *fields;
}
}  // namespace

void HostTimeToProto(const costmodel::HostTime& in, v1::HostTime* out) {
  const google::protobuf::Reflection& r = *out->GetReflection();
  for (size_t i = 0; i < HostTimeFields().size(); ++i) {
    r.SetDouble(out, HostTimeFields()[i], in.*costmodel::HostTimeTerms()[i].member);
  }
  out->set_provenance(in.provenance);
}

costmodel::HostTime HostTimeFromProto(const v1::HostTime& in) {
  costmodel::HostTime out;
  const google::protobuf::Reflection& r = *in.GetReflection();
  for (size_t i = 0; i < HostTimeFields().size(); ++i) {
    out.*costmodel::HostTimeTerms()[i].member = r.GetDouble(in, HostTimeFields()[i]);
  }
  out.provenance = in.provenance();
  return out;
}

void TreeToProto(const planner::Tree& in, v1::Tree* out) {
  out->mutable_tokens()->Assign(in.tokens.begin(), in.tokens.end());
  out->mutable_parents()->Assign(in.parents.begin(), in.parents.end());
  out->mutable_depths()->Assign(in.depths.begin(), in.depths.end());
  out->mutable_path_probs()->Assign(in.path_probs.begin(), in.path_probs.end());
}

absl::Status BudgetModeFromProto(int mode, absl::string_view field, planner::BudgetMode* out) {
  switch (mode) {
    case v1::BUDGET_MODE_UNSPECIFIED:
    case v1::BUDGET_MODE_CONTROLLER:
      *out = planner::BudgetMode::kController;
      return absl::OkStatus();
    case v1::BUDGET_MODE_FIXED:
      *out = planner::BudgetMode::kFixed;
      return absl::OkStatus();
    case v1::BUDGET_MODE_SCAN:
      *out = planner::BudgetMode::kScan;
      return absl::OkStatus();
    default:
      return Invalid(
          absl::StrCat(field, " = ", mode, ": unknown BudgetMode (use CONTROLLER, FIXED or SCAN)"));
  }
}

v1::BudgetMode BudgetModeToProto(planner::BudgetMode mode) {
  switch (mode) {
    case planner::BudgetMode::kFixed:
      return v1::BUDGET_MODE_FIXED;
    case planner::BudgetMode::kController:
      return v1::BUDGET_MODE_CONTROLLER;
    case planner::BudgetMode::kScan:
      return v1::BUDGET_MODE_SCAN;
  }
  return v1::BUDGET_MODE_UNSPECIFIED;
}

absl::Status CheckContext(int64_t c, const ServiceLimits& limits, absl::string_view field) {
  return ops::CheckContext(std::string_view(field.data(), field.size()), c, limits.max_context);
}

absl::Status CheckNMax(int64_t n_max, const ServiceLimits& limits, absl::string_view field) {
  if (n_max < 0) return Invalid(absl::StrCat(field, " = ", n_max, ": must be >= 0"));
  if (n_max > limits.max_n) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, " = ", n_max, ": exceeds the server limit ", limits.max_n, " (--max-n)"));
  }
  return absl::OkStatus();
}

absl::Status CheckSeconds(double value, absl::string_view field) {
  if (!(std::isfinite(value) && value >= 0 && value <= kMaxSeconds)) {
    return Invalid(absl::StrCat(field, " = ", value, ": must be a number of seconds in [0, ",
                                kMaxSeconds, "]"));
  }
  return absl::OkStatus();
}

Outputs OutputsFromProto(bool has_selection, const v1::OutputSelection& sel) {
  Outputs o;
  if (!has_selection) return o;
  o.positions = sel.positions();
  o.parents = sel.parents();
  o.retrieve = sel.retrieve();
  o.packed_mask = sel.packed_mask();
  o.dense_mask = sel.dense_mask();
  o.curve = sel.curve();
  return o;
}

planner::TreeOutputOptions TreeOutputOptionsFor(const Outputs& o, int64_t position_offset) {
  planner::TreeOutputOptions opt;
  opt.position_offset = position_offset;
  opt.packed_mask = o.packed_mask;
  opt.dense_mask = o.dense_mask;
  opt.retrieve = o.retrieve;
  return opt;
}

void TreeOutputsToProto(const planner::TreeOutputs& in, const Outputs& o, v1::TreeOutputs* out) {
  out->set_size(in.size);
  out->set_max_depth(in.max_depth);
  if (o.positions) out->mutable_positions()->Assign(in.positions.begin(), in.positions.end());
  if (o.parents) out->mutable_parents()->Assign(in.parents.begin(), in.parents.end());
  if (o.packed_mask) {
    out->set_mask_words(in.mask_words);
    out->mutable_mask_packed()->Assign(in.mask_packed.begin(), in.mask_packed.end());
  }
  if (o.dense_mask) {
    out->set_mask_dense(reinterpret_cast<const char*>(in.mask_dense.data()), in.mask_dense.size());
  }
  if (o.retrieve) {
    out->set_num_leaves(in.num_leaves);
    out->set_retrieve_width(in.retrieve_width);
    out->mutable_retrieve()->Assign(in.retrieve.begin(), in.retrieve.end());
  }
}

void PlanToProto(const planner::BestFirstPlan& in, const Outputs& o, v1::Plan* out) {
  TreeToProto(in.tree, out->mutable_tree());
  out->set_n(in.n);
  out->set_expected_accepted(in.expected_accepted);
  out->set_cycle_s(in.cycle_s);
  out->set_speedup(in.speedup);
  out->set_l_ar_s(in.l_ar_s);
  out->set_lattice_exhausted(in.lattice_exhausted);
  if (o.curve) {
    using P = planner::CurvePoint;
    v1::Curve* c = out->mutable_curve();
    AppendColumns(in.curve, &P::n, c->mutable_n(), &P::expected_accepted,
                  c->mutable_expected_accepted(), &P::cycle_s, c->mutable_cycle_s(), &P::speedup,
                  c->mutable_speedup());
  }
}

void TreeOutputsFromProto(const v1::TreeOutputs& in, planner::TreeOutputs* out) {
  out->size = in.size();
  out->max_depth = in.max_depth();
  out->mask_words = in.mask_words();
  out->num_leaves = in.num_leaves();
  out->retrieve_width = in.retrieve_width();
  AssignRepeated(in.positions(), &out->positions);
  AssignRepeated(in.parents(), &out->parents);
  AssignRepeated(in.mask_packed(), &out->mask_packed);
  out->mask_dense.assign(in.mask_dense().begin(), in.mask_dense().end());
  AssignRepeated(in.retrieve(), &out->retrieve);
}

void PlanFromProto(const v1::Plan& in, planner::BestFirstPlan* out) {
  AssignTree(in.tree(), &out->tree);
  out->n = in.n();
  out->expected_accepted = in.expected_accepted();
  out->cycle_s = in.cycle_s();
  out->speedup = in.speedup();
  out->l_ar_s = in.l_ar_s();
  out->lattice_exhausted = in.lattice_exhausted();
  out->curve.clear();
  const v1::Curve& curve = in.curve();
  for (int i = 0; i < curve.n_size(); ++i) {
    out->curve.push_back(
        {curve.n(i), curve.expected_accepted(i), curve.cycle_s(i), curve.speedup(i)});
  }
}

void MergedTreeFromProto(const v1::MergeTreesResponse& in, planner::MergedTree* out) {
  AssignTree(in.tree(), &out->tree);
  AssignRepeated(in.phi_a(), &out->phi_a);
  AssignRepeated(in.phi_b(), &out->phi_b);
  out->source.clear();
  for (int s : in.source()) out->source.push_back(static_cast<planner::MergeSource>(s));
}

absl::StatusOr<std::shared_ptr<const costmodel::GridLatency>> LatencyGridFromProto(
    const v1::LatencyGrid& in, const ServiceLimits& limits, absl::string_view field) {
  if (in.s_size() == 0) return Invalid(absl::StrCat(field, ".s: empty (at least one point)"));
  if (in.s_size() > limits.max_grid_points) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ".s: ", in.s_size(), " points exceed the server limit ", limits.max_grid_points));
  }
  if (in.seconds_size() != in.s_size()) {
    return Invalid(absl::StrCat(field, ".seconds: ", in.seconds_size(), " entries, expected ",
                                in.s_size(), " (one per s)"));
  }
  for (int i = 0; i < in.s_size(); ++i) {
    if (in.s(i) < 1 || in.s(i) > limits.max_s) {
      return Invalid(
          absl::StrCat(field, ".s[", i, "] = ", in.s(i), ": must be in [1, ", limits.max_s, "]"));
    }
    if (i > 0 && in.s(i) <= in.s(i - 1)) {
      return Invalid(absl::StrCat(field, ".s[", i, "] = ", in.s(i), ": must be > s[", i - 1,
                                  "] = ", in.s(i - 1), " (strictly increasing)"));
    }
    SPECPLAN_RETURN_IF_ERROR(CheckSeconds(in.seconds(i), absl::StrCat(field, ".seconds[", i, "]")));
  }
  return std::make_shared<const costmodel::GridLatency>(
      std::vector<int64_t>(in.s().begin(), in.s().end()),
      std::vector<double>(in.seconds().begin(), in.seconds().end()),
      costmodel::GridSource::kCaller);
}

absl::Status NodeDistributionsFromProto(const v1::NodeDistributions& in,
                                        planner::NodeDistributions* out) {
  out->k = in.k();
  AssignRepeated(in.nodes(), &out->nodes);
  AssignRepeated(in.tokens(), &out->tokens);
  AssignRepeated(in.probs(), &out->probs);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// PlanBatch

absl::Status BatchRequestsFromProto(const v1::PlanBatchRequest& in, const ServiceLimits& limits,
                                    std::vector<planner::Marginals>* marginals,
                                    std::vector<planner::BatchRequest>* out) {
  const int B = in.requests_size();
  if (B == 0) return Invalid("requests: empty (at least one request)");
  if (B > limits.max_batch_requests) {
    return absl::ResourceExhaustedError(
        absl::StrCat("requests: ", B, " requests exceed the server limit ",
                     limits.max_batch_requests, " (--max-batch-requests)"));
  }
  marginals->resize(static_cast<size_t>(B));
  out->resize(static_cast<size_t>(B));
  for (int i = 0; i < B; ++i) {
    const v1::BatchEntry& r = in.requests(i);
    const std::string at = absl::StrCat("requests[", i, "]");
    if (!r.has_marginals()) return Invalid(absl::StrCat(at, ".marginals: required"));
    SPECPLAN_RETURN_IF_ERROR(
        MarginalsFromProto(r.marginals(), limits, at + ".marginals", &(*marginals)[i]));
    SPECPLAN_RETURN_IF_ERROR(CheckContext(r.context_tokens(), limits, at + ".context_tokens"));
    planner::BatchRequest& b = (*out)[i];
    b.marginals = &(*marginals)[i];
    b.c = r.context_tokens();
    if (r.has_n_max()) {
      SPECPLAN_RETURN_IF_ERROR(CheckNMax(r.n_max(), limits, at + ".n_max"));
      b.n_max = r.n_max();
    } else {
      b.n_max = limits.max_n < planner::kMaxTreeNodes - 1 ? limits.max_n : -1;
    }
    if (r.weight() == 0) {
      b.weight = 1.0;
    } else if (!(std::isfinite(r.weight()) && r.weight() > 0)) {
      return Invalid(
          absl::StrCat(at, ".weight = ", r.weight(), ": must be a finite number > 0 (0 = 1)"));
    } else {
      b.weight = r.weight();
    }
  }
  return absl::OkStatus();
}

absl::Status BatchOptionsFromProto(const v1::PlanBatchRequest& in, const ServiceLimits& limits,
                                   planner::BatchPlanOptions* out) {
  SPECPLAN_RETURN_IF_ERROR(BudgetModeFromProto(in.mode(), "mode", &out->mode));
  if (in.n_max() < 0) return Invalid(absl::StrCat("n_max = ", in.n_max(), ": must be >= 0"));
  if (in.n_max() > limits.max_batch_nodes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("n_max = ", in.n_max(), ": exceeds the server limit ", limits.max_batch_nodes,
                     " draft nodes over the batch "
                     "(--max-batch-nodes)"));
  }
  out->n_max = in.n_max();
  switch (in.objective()) {
    case v1::BATCH_OBJECTIVE_UNSPECIFIED:
    case v1::BATCH_OBJECTIVE_GOODPUT:
      out->objective = planner::BatchObjective::kGoodput;
      out->max_seconds_per_token = 0;
      if (in.max_seconds_per_token() != 0) {
        return Invalid(absl::StrCat("max_seconds_per_token = ", in.max_seconds_per_token(),
                                    ": only with objective = LATENCY_BOUND"));
      }
      break;
    case v1::BATCH_OBJECTIVE_LATENCY_BOUND: {
      const double x = in.max_seconds_per_token();
      if (!(std::isfinite(x) && x > 0 && x <= kMaxSeconds)) {
        return Invalid(absl::StrCat("max_seconds_per_token = ", x,
                                    ": must be a number of seconds in (0, ", kMaxSeconds,
                                    "] with objective = LATENCY_BOUND"));
      }
      out->objective = planner::BatchObjective::kLatencyBound;
      out->max_seconds_per_token = x;
      break;
    }
    default:
      return Invalid(absl::StrCat("objective = ", in.objective(),
                                  ": unknown BatchObjective (use GOODPUT or LATENCY_BOUND)"));
  }
  SPECPLAN_RETURN_IF_ERROR(
      AcceptanceScaleFromProto(in.acceptance_scale(), "acceptance_scale", &out->acceptance_scale));
  out->validate = false;
  return absl::OkStatus();
}

absl::Status AcceptanceScaleFromProto(double in, const std::string& field, double* out) {
  if (in == 0) {
    *out = 1.0;
    return absl::OkStatus();
  }
  if (!(in > 0 && in <= planner::kMaxAcceptanceScale)) {
    return Invalid(absl::StrCat(field, " = ", in, ": must be 0 (uncalibrated) or in (0, ",
                                planner::kMaxAcceptanceScale, "]"));
  }
  *out = in;
  return absl::OkStatus();
}

absl::Status EngineFromProto(const std::string& in, absl::string_view field, std::string* out) {
  if (in.empty()) {
    out->clear();
    return absl::OkStatus();
  }
  auto engine = costmodel::ParseEngine(in);
  if (!engine.ok()) {
    return Invalid(absl::StrCat(field, " = '", in, "': unknown engine (known: ",
                                absl::StrJoin(costmodel::KnownEngines(), ", "), ")"));
  }
  *out = *std::move(engine);
  return absl::OkStatus();
}

absl::Status SglangOptionsFromProto(const v1::PlanBatchRequest& in,
                                    planner::SglangLayoutOptions* out) {
  using planner::SglangTreeMaskMode;
  const std::string& name = in.tree_mask_mode();
  if (name.empty()) {
    out->mode = SglangTreeMaskMode::kQlenOnly;
  } else {
    bool known = false;
    for (const auto m : {SglangTreeMaskMode::kFullMask, SglangTreeMaskMode::kQlenOnly,
                         SglangTreeMaskMode::kQlenOnlyBitpacking}) {
      if (name == planner::SglangTreeMaskModeName(m)) {
        out->mode = m;
        known = true;
      }
    }
    if (!known) {
      std::string shown;
      for (char ch : name.substr(0, 64)) shown.push_back(ch >= 0x20 && ch < 0x7f ? ch : '?');
      return Invalid(absl::StrCat("tree_mask_mode = '", shown,
                                  "': unknown (FULL_MASK, QLEN_ONLY or QLEN_ONLY_BITPACKING)"));
    }
  }
  if (in.draft_token_num() < 0 || in.draft_token_num() > planner::kMaxTreeNodes) {
    return Invalid(absl::StrCat("draft_token_num = ", in.draft_token_num(), ": must be in [0, ",
                                planner::kMaxTreeNodes, "] (0 = the largest tree's size)"));
  }
  out->draft_token_num = in.draft_token_num();
  return absl::OkStatus();
}

void BatchRequestToProto(const std::vector<planner::BatchRequest>& requests,
                         const planner::BatchPlanOptions& options, v1::PlanBatchRequest* out) {
  out->mutable_requests()->Reserve(static_cast<int>(requests.size()));
  for (const planner::BatchRequest& r : requests) {
    v1::BatchEntry* e = out->add_requests();
    MarginalsToProto(*r.marginals, e->mutable_marginals());
    e->set_context_tokens(r.c);
    e->set_has_n_max(r.n_max >= 0);
    e->set_n_max(r.n_max >= 0 ? r.n_max : 0);
    e->set_weight(r.weight);
  }
  out->set_mode(BudgetModeToProto(options.mode));
  out->set_n_max(options.n_max);
  if (options.objective == planner::BatchObjective::kLatencyBound) {
    out->set_objective(v1::BATCH_OBJECTIVE_LATENCY_BOUND);
    out->set_max_seconds_per_token(options.max_seconds_per_token);
  } else {
    out->set_objective(v1::BATCH_OBJECTIVE_GOODPUT);
  }
  out->set_acceptance_scale(options.acceptance_scale);
}

void BatchPlanToProto(const planner::BatchPlan& in,
                      const std::vector<planner::TreeOutputs>& outputs, const Outputs& o,
                      v1::PlanBatchResponse* out) {
  const int B = static_cast<int>(in.trees.size());
  out->mutable_requests()->Reserve(B);
  for (int i = 0; i < B; ++i) {
    v1::BatchPlanEntry* e = out->add_requests();
    TreeToProto(in.trees[i], e->mutable_tree());
    e->set_n(in.n[i]);
    e->set_expected_accepted(in.expected_accepted[i]);
    e->set_price(in.price[i]);
    TreeOutputsToProto(outputs[i], o, e->mutable_outputs());
  }
  out->set_n_total(in.n_total);
  out->set_weighted_accepted(in.weighted_accepted);
  out->set_cycle_s(in.cycle_s);
  out->set_goodput(in.goodput);
  out->set_ar_goodput(in.ar_goodput);
  out->set_speculation_pays(in.speculation_pays);
  out->set_bound_met(in.bound_met);
  out->set_lattice_exhausted(in.lattice_exhausted);
  if (o.curve) {
    using P = planner::BatchCurvePoint;
    v1::BatchCurve* c = out->mutable_curve();
    AppendColumns(in.curve, &P::n, c->mutable_n(), &P::expected_accepted,
                  c->mutable_expected_accepted(), &P::weighted_accepted,
                  c->mutable_weighted_accepted(), &P::cycle_s, c->mutable_cycle_s(), &P::goodput,
                  c->mutable_goodput());
  }
}

void BatchPlanFromProto(const v1::PlanBatchResponse& in, planner::BatchPlan* out,
                        std::vector<planner::TreeOutputs>* outputs) {
  const int B = in.requests_size();
  out->trees.resize(static_cast<size_t>(B));
  out->n.resize(static_cast<size_t>(B));
  out->expected_accepted.resize(static_cast<size_t>(B));
  out->price.resize(static_cast<size_t>(B));
  if (outputs != nullptr) outputs->resize(static_cast<size_t>(B));
  for (int i = 0; i < B; ++i) {
    const v1::BatchPlanEntry& e = in.requests(i);
    AssignTree(e.tree(), &out->trees[i]);
    out->n[i] = e.n();
    out->expected_accepted[i] = e.expected_accepted();
    out->price[i] = e.price();
    if (outputs != nullptr) TreeOutputsFromProto(e.outputs(), &(*outputs)[i]);
  }
  out->n_total = in.n_total();
  out->weighted_accepted = in.weighted_accepted();
  out->cycle_s = in.cycle_s();
  out->goodput = in.goodput();
  out->ar_goodput = in.ar_goodput();
  out->speculation_pays = in.speculation_pays();
  out->bound_met = in.bound_met();
  out->lattice_exhausted = in.lattice_exhausted();
  out->curve.clear();
  const v1::BatchCurve& curve = in.curve();
  for (int i = 0; i < curve.n_size(); ++i) {
    out->curve.push_back({curve.n(i), curve.expected_accepted(i), curve.weighted_accepted(i),
                          curve.cycle_s(i), curve.goodput(i)});
  }
}

void RaggedBatchToProto(const planner::BatchLayout& in, v1::RaggedBatch* out) {
  out->mutable_cu_seqlens()->Assign(in.cu_seqlens.begin(), in.cu_seqlens.end());
  out->mutable_tokens()->Assign(in.tokens.begin(), in.tokens.end());
  out->mutable_positions()->Assign(in.positions.begin(), in.positions.end());
  out->mutable_parents()->Assign(in.parents.begin(), in.parents.end());
  out->mutable_mask_words()->Assign(in.mask_words.begin(), in.mask_words.end());
  out->mutable_mask_offsets()->Assign(in.mask_offsets.begin(), in.mask_offsets.end());
  out->mutable_mask_packed()->Assign(in.mask_packed.begin(), in.mask_packed.end());
  out->mutable_num_leaves()->Assign(in.num_leaves.begin(), in.num_leaves.end());
  out->mutable_retrieve_width()->Assign(in.retrieve_width.begin(), in.retrieve_width.end());
  out->mutable_retrieve_offsets()->Assign(in.retrieve_offsets.begin(), in.retrieve_offsets.end());
  out->mutable_retrieve()->Assign(in.retrieve.begin(), in.retrieve.end());
}

void SglangBatchToProto(const planner::SglangLayout& in, v1::SglangBatch* out) {
  out->set_draft_token_num(in.draft_token_num);
  out->set_tree_mask_mode(planner::SglangTreeMaskModeName(in.mode));
  out->set_tree_mask_bytes_per_row(in.tree_mask_bytes_per_row);
  out->mutable_draft_tokens()->Assign(in.draft_tokens.begin(), in.draft_tokens.end());
  out->mutable_positions()->Assign(in.positions.begin(), in.positions.end());
  out->mutable_retrive_index()->Assign(in.retrive_index.begin(), in.retrive_index.end());
  out->mutable_retrive_next_token()->Assign(in.retrive_next_token.begin(),
                                            in.retrive_next_token.end());
  out->mutable_retrive_next_sibling()->Assign(in.retrive_next_sibling.begin(),
                                              in.retrive_next_sibling.end());
  out->set_tree_mask(reinterpret_cast<const char*>(in.tree_mask.data()), in.tree_mask.size());
  out->mutable_tree_mask_offsets()->Assign(in.tree_mask_offsets.begin(),
                                           in.tree_mask_offsets.end());
}

// ---------------------------------------------------------------------------------------------
// Policy configs

namespace {

template <class T>
T Or(T value, T fallback) {
  return value == T{} ? fallback : value;
}

}  // namespace

planner::DynaTreeOptions DynaTreeOptionsFromProto(const v1::DynaTreeConfig& c) {
  planner::DynaTreeOptions d;
  d.b_min = Or(c.b_min(), d.b_min);
  d.b_mid = Or(c.b_mid(), d.b_mid);
  d.b_max = Or(c.b_max(), d.b_max);
  d.tau_h = Or(c.tau_h(), d.tau_h);
  d.tau_l = Or(c.tau_l(), d.tau_l);
  d.d0 = Or(c.d0(), d.d0);
  d.d_max = Or(c.d_max(), d.d_max);
  d.rho_stop = Or(c.rho_stop(), d.rho_stop);
  d.rho_deep = Or(c.rho_deep(), d.rho_deep);
  d.tau = Or(c.tau(), d.tau);
  d.n_max = Or(c.n_max(), d.n_max);
  d.history_adaptation = !c.disable_history_adaptation();
  return d;
}

planner::FixedTreeOptions FixedTreeOptionsFromProto(const v1::FixedTreeConfig& c) {
  planner::FixedTreeOptions f;
  f.depth = Or(c.depth(), f.depth);
  f.branch = Or(c.branch(), f.branch);
  f.tau = c.tau();
  f.max_nodes = Or(c.max_nodes(), f.max_nodes);
  return f;
}

// ---------------------------------------------------------------------------------------------
// WhatIf

namespace {

void SummaryToProto(const whatif::ControllerSummary& in, v1::WhatIfControllerSummary* out) {
  out->set_found(in.found);
  out->set_speedup(in.speedup);
  out->set_accepted_per_step(in.accepted_per_step);
  out->set_mean_tree_size(in.mean_tree_size);
  out->set_ratio_to_oracle(in.ratio_to_oracle);
}

whatif::ControllerSummary SummaryFromProto(const v1::WhatIfControllerSummary& in) {
  whatif::ControllerSummary out;
  out.found = in.found();
  out.speedup = in.speedup();
  out.accepted_per_step = in.accepted_per_step();
  out.mean_tree_size = in.mean_tree_size();
  out.ratio_to_oracle = in.ratio_to_oracle();
  return out;
}

absl::StatusOr<whatif::Strategy> StrategyFromProto(const std::string& name,
                                                   absl::string_view field) {
  auto s = whatif::ParseStrategy(name);
  // ParseStrategy's message starts with the quoted name: "'x': unknown strategy (known: ...)".
  if (!s.ok()) return Invalid(absl::StrCat(field, " = ", s.status().message()));
  return *s;
}

}  // namespace

absl::Status WhatIfOptionsFromProto(const v1::WhatIfRequest& in, const ServiceLimits& limits,
                                    whatif::WhatIfOptions* out) {
  if (in.budgets_size() > limits.max_whatif_budgets) {
    return absl::ResourceExhaustedError(absl::StrCat("budgets: ", in.budgets_size(),
                                                     " entries exceed the server limit ",
                                                     limits.max_whatif_budgets, " per request"));
  }
  if (in.budgets_size() > 0) {
    out->budgets.clear();
    for (int i = 0; i < in.budgets_size(); ++i) {
      const int b = in.budgets(i);
      const std::string field = absl::StrCat("budgets[", i, "]");
      if (b < 1) return Invalid(absl::StrCat(field, " = ", b, ": must be >= 1 draft node"));
      SPECPLAN_RETURN_IF_ERROR(CheckNMax(b, limits, field));
      if (std::find(out->budgets.begin(), out->budgets.end(), b) != out->budgets.end()) {
        return Invalid(absl::StrCat(field, " = ", b, ": repeated"));
      }
      out->budgets.push_back(b);
    }
    std::sort(out->budgets.begin(), out->budgets.end());
  } else {
    for (size_t i = 0; i < out->budgets.size(); ++i) {  // the defaults against --max-n
      SPECPLAN_RETURN_IF_ERROR(
          CheckNMax(out->budgets[i], limits, absl::StrCat("budgets (default)[", i, "]")));
    }
  }
  if (in.strategies_size() > 0) {
    out->strategies.clear();
    for (int i = 0; i < in.strategies_size(); ++i) {
      const std::string field = absl::StrCat("strategies[", i, "]");
      SPECPLAN_ASSIGN_OR_RETURN(whatif::Strategy s, StrategyFromProto(in.strategies(i), field));
      if (std::find(out->strategies.begin(), out->strategies.end(), s) != out->strategies.end()) {
        return Invalid(absl::StrCat(field, " = '", in.strategies(i), "': repeated"));
      }
      out->strategies.push_back(s);
    }
  } else {
    out->strategies = whatif::AllStrategies();
  }
  SPECPLAN_RETURN_IF_ERROR(CheckNMax(in.n_max(), limits, "n_max"));
  out->n_max = in.n_max();
  SPECPLAN_RETURN_IF_ERROR(CheckSeconds(in.policy_forward_s(), "policy_forward_s"));
  out->policy_forward_s = in.policy_forward_s();

  // dynatree.n_max and fixed_tree.max_nodes are replaced by the budget: the defaults stay.
  out->dynatree = DynaTreeOptionsFromProto(in.dynatree());
  out->dynatree.n_max = planner::DynaTreeOptions().n_max;
  out->fixed_tree = FixedTreeOptionsFromProto(in.fixed_tree());
  out->fixed_tree.max_nodes = planner::FixedTreeOptions().max_nodes;
  out->per_step = in.per_step();
  out->calibrate = in.calibrate();
  out->validate_trace = true;
  return absl::OkStatus();
}

absl::Status WhatIfOptionsToProto(const whatif::WhatIfOptions& o, v1::WhatIfRequest* out) {
  out->mutable_budgets()->Assign(o.budgets.begin(), o.budgets.end());
  out->clear_strategies();
  for (whatif::Strategy s : o.strategies) out->add_strategies(whatif::StrategyName(s));
  out->set_n_max(o.n_max);
  out->set_policy_forward_s(o.policy_forward_s);
  out->set_calibrate(o.calibrate);

  const planner::DynaTreeOptions& d = o.dynatree;
  const planner::DynaTreeOptions def;
  auto unsent = [](const char* name) {
    return Invalid(absl::StrCat("dynatree.", name,
                                ": differs from the default and is not carried by the WhatIf "
                                "request (DynaTreeConfig)"));
  };
  if (d.prune_mode != def.prune_mode) return unsent("prune_mode");
  if (d.window != def.window) return unsent("window");
  if (d.target_acceptance != def.target_acceptance) return unsent("target_acceptance");
  if (d.eta_d != def.eta_d) return unsent("eta_d");
  if (d.eta_h != def.eta_h) return unsent("eta_h");
  if (d.eta_l != def.eta_l) return unsent("eta_l");
  if (d.statistic != def.statistic) return unsent("statistic");
  auto zero = [](const char* name) {
    return Invalid(absl::StrCat("dynatree.", name,
                                " = 0: not expressible in a WhatIf request (0 means the default)"));
  };
  v1::DynaTreeConfig* c = out->mutable_dynatree();
  if (d.b_min == 0) return zero("b_min");
  if (d.b_mid == 0) return zero("b_mid");
  if (d.b_max == 0) return zero("b_max");
  if (d.tau_h == 0) return zero("tau_h");
  if (d.tau_l == 0) return zero("tau_l");
  if (d.d0 == 0) return zero("d0");
  if (d.d_max == 0) return zero("d_max");
  if (d.rho_stop == 0) return zero("rho_stop");
  if (d.rho_deep == 0) return zero("rho_deep");
  if (d.tau == 0) return zero("tau");
  c->set_b_min(d.b_min);
  c->set_b_mid(d.b_mid);
  c->set_b_max(d.b_max);
  c->set_tau_h(d.tau_h);
  c->set_tau_l(d.tau_l);
  c->set_d0(d.d0);
  c->set_d_max(d.d_max);
  c->set_rho_stop(d.rho_stop);
  c->set_rho_deep(d.rho_deep);
  c->set_tau(d.tau);
  c->set_n_max(0);  // the budget
  c->set_disable_history_adaptation(!d.history_adaptation);

  const planner::FixedTreeOptions& f = o.fixed_tree;
  if (f.depth == 0) {
    return Invalid("fixed_tree.depth = 0: not expressible in a WhatIf request (0 means 8)");
  }
  if (f.branch == 0) {
    return Invalid("fixed_tree.branch = 0: not expressible in a WhatIf request (0 means 3)");
  }
  v1::FixedTreeConfig* ft = out->mutable_fixed_tree();
  ft->set_depth(f.depth);
  ft->set_branch(f.branch);
  ft->set_tau(f.tau);
  ft->set_max_nodes(0);  // the budget
  out->set_per_step(o.per_step);
  return absl::OkStatus();
}

void WhatIfReportToProto(const whatif::WhatIfReport& r, v1::WhatIfResponse* out) {
  v1::WhatIfTraceSummary* t = out->mutable_trace();
  t->set_target(r.target);
  t->set_draft(r.draft);
  t->set_vocab(r.vocab);
  t->set_steps(r.steps);
  t->set_steps_with_marginals(r.steps_with_marginals);
  t->set_steps_with_nodes(r.steps_with_nodes);
  t->set_prompts(r.prompts);
  out->set_latency_model(r.latency_model);
  out->mutable_budgets()->Assign(r.budgets.begin(), r.budgets.end());
  out->clear_strategies();
  for (whatif::Strategy s : r.strategies) out->add_strategies(whatif::StrategyName(s));
  out->set_n_max(r.n_max);
  DrafterCostToProto(r.drafter, out->mutable_drafter());
  out->set_policy_forward_s(r.policy_forward_s);
  out->set_t_aux_s(r.t_aux_s);
  out->set_calibrate(r.calibrate);
  out->clear_rows();
  out->mutable_rows()->Reserve(static_cast<int>(r.rows.size()));
  for (const whatif::WhatIfRow& row : r.rows) {
    v1::WhatIfRow* w = out->add_rows();
    w->set_strategy(whatif::StrategyName(row.strategy));
    w->set_budget(row.budget);
    w->set_params(row.params);
    w->set_steps_used(row.steps_used);
    w->set_steps_skipped(row.steps_skipped);
    w->set_accepted_per_step(row.accepted_per_step);
    w->set_predicted_accepted_per_step(row.predicted_accepted_per_step);
    w->set_mean_tree_size(row.mean_tree_size);
    w->set_cycle_s(row.cycle_s);
    w->set_t_ar_s(row.t_ar_s);
    w->set_speedup(row.speedup);
    w->set_predicted_speedup(row.predicted_speedup);
    w->set_pearson(row.pearson);
    if (!row.per_step.empty()) {
      v1::WhatIfSteps* ps = w->mutable_per_step();
      for (const whatif::StepResult& s : row.per_step) {
        ps->add_step(s.step);
        ps->add_n(s.n);
        ps->add_accepted(s.accepted);
        ps->add_predicted_accepted(s.predicted_accepted);
        ps->add_cycle_s(s.cycle_s);
        ps->add_t_ar_s(s.t_ar_s);
        ps->add_speedup(s.speedup);
      }
    }
  }
  v1::WhatIfOracle* o = out->mutable_oracle();
  o->set_found(r.oracle.found);
  o->set_budget(r.oracle.budget);
  o->set_speedup(r.oracle.speedup);
  o->set_accepted_per_step(r.oracle.accepted_per_step);
  SummaryToProto(r.controller, out->mutable_controller());
  SummaryToProto(r.scan, out->mutable_scan());
  const whatif::SurrogateQuality& q = r.surrogate;
  v1::WhatIfSurrogate* sq = out->mutable_surrogate();
  sq->set_steps(q.steps);
  sq->set_chain_pearson(q.chain_pearson);
  sq->set_chain_spearman(q.chain_spearman);
  sq->set_chain_predicted_mean(q.chain_predicted_mean);
  sq->set_chain_accepted_mean(q.chain_accepted_mean);
  sq->set_controller_pearson(q.controller_pearson);
  sq->set_controller_spearman(q.controller_spearman);
}

absl::StatusOr<whatif::WhatIfReport> WhatIfReportFromProto(const v1::WhatIfResponse& in) {
  whatif::WhatIfReport r;
  const v1::WhatIfTraceSummary& t = in.trace();
  r.target = t.target();
  r.draft = t.draft();
  r.vocab = t.vocab();
  r.steps = t.steps();
  r.steps_with_marginals = t.steps_with_marginals();
  r.steps_with_nodes = t.steps_with_nodes();
  r.prompts = t.prompts();
  r.latency_model = in.latency_model();
  r.budgets.assign(in.budgets().begin(), in.budgets().end());
  for (int i = 0; i < in.strategies_size(); ++i) {
    SPECPLAN_ASSIGN_OR_RETURN(
        whatif::Strategy s,
        StrategyFromProto(in.strategies(i), absl::StrCat("strategies[", i, "]")));
    r.strategies.push_back(s);
  }
  r.n_max = in.n_max();
  const v1::DrafterCost& d = in.drafter();
  auto cls = costmodel::ParseDrafterClass(d.drafter_class());
  if (!cls.ok()) {
    return Invalid(absl::StrCat("drafter.drafter_class = '", d.drafter_class(),
                                "': ", cls.status().message()));
  }
  r.drafter.cls = *cls;
  r.drafter.gamma = d.gamma();
  r.drafter.t_net_s = d.t_net_s();
  r.drafter.t_head_s = d.t_head_s();
  r.drafter.t_light_s = d.t_light_s();
  r.policy_forward_s = in.policy_forward_s();
  r.t_aux_s = in.t_aux_s();
  r.calibrate = in.calibrate();
  r.rows.reserve(in.rows_size());
  for (int i = 0; i < in.rows_size(); ++i) {
    const v1::WhatIfRow& w = in.rows(i);
    const std::string field = absl::StrCat("rows[", i, "]");
    whatif::WhatIfRow row;
    SPECPLAN_ASSIGN_OR_RETURN(row.strategy,
                              StrategyFromProto(w.strategy(), absl::StrCat(field, ".strategy")));
    row.budget = w.budget();
    row.params = w.params();
    row.steps_used = w.steps_used();
    row.steps_skipped = w.steps_skipped();
    row.accepted_per_step = w.accepted_per_step();
    row.predicted_accepted_per_step = w.predicted_accepted_per_step();
    row.mean_tree_size = w.mean_tree_size();
    row.cycle_s = w.cycle_s();
    row.t_ar_s = w.t_ar_s();
    row.speedup = w.speedup();
    row.predicted_speedup = w.predicted_speedup();
    row.pearson = w.pearson();
    const v1::WhatIfSteps& ps = w.per_step();
    const int m = ps.step_size();
    if (ps.n_size() != m || ps.accepted_size() != m || ps.predicted_accepted_size() != m ||
        ps.cycle_s_size() != m || ps.t_ar_s_size() != m || ps.speedup_size() != m) {
      return Invalid(
          absl::StrCat(field, ".per_step: arrays of different lengths (step has ", m, " entries)"));
    }
    row.per_step.resize(m);
    for (int k = 0; k < m; ++k) {
      whatif::StepResult& s = row.per_step[k];
      s.step = ps.step(k);
      s.n = ps.n(k);
      s.accepted = ps.accepted(k);
      s.predicted_accepted = ps.predicted_accepted(k);
      s.cycle_s = ps.cycle_s(k);
      s.t_ar_s = ps.t_ar_s(k);
      s.speedup = ps.speedup(k);
    }
    r.rows.push_back(std::move(row));
  }
  const v1::WhatIfOracle& o = in.oracle();
  r.oracle.found = o.found();
  r.oracle.budget = o.budget();
  r.oracle.speedup = o.speedup();
  r.oracle.accepted_per_step = o.accepted_per_step();
  r.controller = SummaryFromProto(in.controller());
  r.scan = SummaryFromProto(in.scan());
  const v1::WhatIfSurrogate& q = in.surrogate();
  r.surrogate.steps = q.steps();
  r.surrogate.chain_pearson = q.chain_pearson();
  r.surrogate.chain_spearman = q.chain_spearman();
  r.surrogate.chain_predicted_mean = q.chain_predicted_mean();
  r.surrogate.chain_accepted_mean = q.chain_accepted_mean();
  r.surrogate.controller_pearson = q.controller_pearson();
  r.surrogate.controller_spearman = q.controller_spearman();
  return r;
}

}  // namespace specplan::service
