#include "service/plan_session.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "planner/policies/best_first.h"
#include "planner/policies/dynatree.h"
#include "planner/policies/eagle2.h"
#include "planner/policies/fixed_tree.h"
#include "planner/policies/linear_chain.h"
#include "util/enum_names.h"
#include "util/status_macros.h"

namespace specplan::service {
namespace {

absl::Status Invalid(std::string msg) { return absl::InvalidArgumentError(std::move(msg)); }

template <class T>
T Or(T value, T fallback) {
  return value == T{} ? fallback : value;
}

// Policy::Create(options) once its node budget `options.*budget` (field
// `policy_field.budget_field`) is within the server limit; Create's errors are prefixed with
// `policy_field`.
template <class Policy, class Options>
absl::StatusOr<std::unique_ptr<planner::TreePolicy>> CreatePolicy(const Options& options,
                                                                  int32_t Options::*budget,
                                                                  const ServiceLimits& limits,
                                                                  absl::string_view policy_field,
                                                                  absl::string_view budget_field) {
  SPECPLAN_RETURN_IF_ERROR(
      CheckNMax(options.*budget, limits, absl::StrCat(policy_field, ".", budget_field)));
  auto p = Policy::Create(options);
  if (!p.ok()) return Prefixed(policy_field, p.status());
  return std::unique_ptr<planner::TreePolicy>(*std::move(p));
}

// The tree policy `start` names: fixed, linear, dynatree or eagle2 (best_first is not a
// TreePolicy; the driver runs it itself).
absl::StatusOr<std::unique_ptr<planner::TreePolicy>> TreePolicyFromProto(
    const v1::SessionStart& start, const ServiceLimits& limits) {
  switch (start.policy_case()) {
    case v1::SessionStart::kFixed:
      return CreatePolicy<planner::FixedTreePolicy>(FixedTreeOptionsFromProto(start.fixed()),
                                                    &planner::FixedTreeOptions::max_nodes, limits,
                                                    "start.fixed", "max_nodes");
    case v1::SessionStart::kLinear: {
      planner::LinearChainOptions o;
      o.k = Or(start.linear().k(), o.k);
      return CreatePolicy<planner::LinearChainPolicy>(o, &planner::LinearChainOptions::k, limits,
                                                      "start.linear", "k");
    }
    case v1::SessionStart::kDynatree:
      return CreatePolicy<planner::DynaTreePolicy>(DynaTreeOptionsFromProto(start.dynatree()),
                                                   &planner::DynaTreeOptions::n_max, limits,
                                                   "start.dynatree", "n_max");
    case v1::SessionStart::kEagle2: {
      const v1::Eagle2Config& c = start.eagle2();
      planner::Eagle2Options o;
      o.top_k = Or(c.top_k(), o.top_k);
      o.depth = Or(c.depth(), o.depth);
      o.total_tokens = Or(c.total_tokens(), o.total_tokens);
      return CreatePolicy<planner::Eagle2Policy>(o, &planner::Eagle2Options::total_tokens, limits,
                                                 "start.eagle2", "total_tokens");
    }
    case v1::SessionStart::kBestFirst:
    case v1::SessionStart::POLICY_NOT_SET:
      break;
  }
  return Invalid("start.policy: required (fixed, linear, dynatree, eagle2 or best_first)");
}

}  // namespace

PlanSessionDriver::PlanSessionDriver(const CostResolver* costs) : costs_(costs) {}

absl::Status PlanSessionDriver::Handle(const v1::SessionClientMessage& in,
                                       v1::SessionServerMessage* out) {
  switch (in.msg_case()) {
    case v1::SessionClientMessage::kStart:
      return Start(in.start(), out);
    case v1::SessionClientMessage::kDistributions:
      return Distributions(in.distributions(), out);
    case v1::SessionClientMessage::kObserveAcceptedLength:
      return Observe(in.observe_accepted_length(), out);
    case v1::SessionClientMessage::kNextStepRootToken:
      if (kind_ == Kind::kNone) {
        return absl::FailedPreconditionError("next_step_root_token: send start first");
      }
      if (in.next_step_root_token() < 0) {
        return Invalid(absl::StrCat("next_step_root_token = ", in.next_step_root_token(),
                                    ": token ids must be >= 0"));
      }
      ++step_;
      return BeginStep(in.next_step_root_token(), out);
    case v1::SessionClientMessage::MSG_NOT_SET:
      break;
  }
  return Invalid(
      "msg: empty client message (set start, distributions, observe_accepted_length "
      "or next_step_root_token)");
}

absl::Status PlanSessionDriver::Start(const v1::SessionStart& start,
                                      v1::SessionServerMessage* out) {
  if (kind_ != Kind::kNone) {
    return absl::FailedPreconditionError(
        "start: the session has already started (send next_step_root_token for the next step)");
  }
  if (start.root_token() < 0) {
    return Invalid(
        absl::StrCat("start.root_token = ", start.root_token(), ": token ids must be >= 0"));
  }
  const ServiceLimits& limits = costs_->limits();
  SPECPLAN_RETURN_IF_ERROR(CheckContext(start.context_tokens(), limits, "start.context_tokens"));
  position_offset_ = start.context_tokens();
  outputs_ = OutputsFromProto(start.has_outputs(), start.outputs());

  if (start.policy_case() != v1::SessionStart::kBestFirst) {
    SPECPLAN_ASSIGN_OR_RETURN(policy_, TreePolicyFromProto(start, limits));
    name_ = policy_->Name();
    kind_ = Kind::kPolicy;
    step_ = 0;
    return BeginStep(start.root_token(), out);
  }
  const v1::BestFirstConfig& c = start.best_first();
  planner::PathConditionedOptions& o = pc_options_;
  SPECPLAN_RETURN_IF_ERROR(BudgetModeFromProto(c.mode(), "start.best_first.mode", &o.budget.mode));
  SPECPLAN_RETURN_IF_ERROR(CheckNMax(c.n_max(), limits, "start.best_first.n_max"));
  o.budget.n_max = c.n_max();
  if (!std::isfinite(c.l_ar_s())) {
    return Invalid(absl::StrCat("start.best_first.l_ar_s = ", c.l_ar_s(), ": must be finite"));
  }
  o.budget.l_ar_s = c.l_ar_s();
  o.gamma = Or(c.gamma(), 16);
  o.k = Or(c.k(), 8);
  if (o.gamma < 0 || o.k < 0) {
    return Invalid(absl::StrCat("start.best_first.", o.gamma < 0 ? "gamma = " : "k = ",
                                o.gamma < 0 ? o.gamma : o.k, ": must be >= 1"));
  }
  if (o.gamma > limits.max_gamma) {
    return absl::ResourceExhaustedError(absl::StrCat("start.best_first.gamma = ", o.gamma,
                                                     ": exceeds the server limit ",
                                                     limits.max_gamma, " (--max-gamma)"));
  }
  if (o.k > limits.max_k) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "start.best_first.k = ", o.k, ": exceeds the server limit ", limits.max_k, " (--max-k)"));
  }
  const bool has_source = c.has_cost() && c.cost().source_case() != v1::CostSpec::SOURCE_NOT_SET;
  if (o.budget.mode != planner::BudgetMode::kFixed && !has_source) {
    return Invalid(
        "start.best_first.cost: required in CONTROLLER and SCAN modes (set "
        "cost.profile or cost.inline_model)");
  }
  if (has_source) {
    SPECPLAN_ASSIGN_OR_RETURN(cost_, costs_->Resolve(c.cost(), o.gamma, "start.best_first.cost"));
    // A drafter architecture: its whole step priced into the cycle and L_AR (a given l_ar_s
    // > 0 stands), as PlanTree does.
    cost_->PriceStep(cost_->drafter.gamma, cost_->context);
    if (cost_->l_ar_s > 0 && o.budget.l_ar_s <= 0) o.budget.l_ar_s = cost_->l_ar_s;
    position_offset_ = cost_->context;
  }
  name_ = absl::StrCat("bestfirst(", EnumName(planner::kBudgetModeNames, o.budget.mode),
                       ", n_max=", o.budget.n_max, ", gamma=", o.gamma, ", k=", o.k, ")");
  kind_ = Kind::kBestFirst;
  step_ = 0;
  return BeginStep(start.root_token(), out);
}

absl::Status PlanSessionDriver::BeginStep(int32_t root_token, v1::SessionServerMessage* out) {
  round_ = 0;
  final_ = false;
  observed_ = false;
  if (kind_ == Kind::kPolicy) {
    policy_->Begin(root_token);
  } else {
    SPECPLAN_RETURN_IF_ERROR(Prefixed(
        "start.best_first", pc_.Begin(root_token, pc_options_, cost_ ? &*cost_->cycle : nullptr)));
  }
  return Emit(out);
}

absl::Status PlanSessionDriver::Emit(v1::SessionServerMessage* out) {
  if (kind_ == Kind::kPolicy) {
    const std::vector<int32_t>& pending = policy_->PendingExpansions();
    if (!pending.empty()) {
      v1::ExpandRequest* e = out->mutable_expand();
      e->set_step(step_);
      e->set_round(round_);
      e->mutable_nodes()->Assign(pending.begin(), pending.end());
      TreeToProto(policy_->tree(), e->mutable_tree());
      return absl::OkStatus();
    }
    const planner::Tree& tree = policy_->tree();
    v1::SessionPlan* f = out->mutable_final_plan();
    f->set_step(step_);
    f->set_policy(name_);
    f->set_forwards(round_);
    v1::Plan* plan = f->mutable_plan();
    TreeToProto(tree, plan->mutable_tree());
    plan->set_n(tree.num_draft());
    double a_hat = 1.0;
    for (int i = 1; i < tree.size(); ++i) a_hat += tree.path_probs[i];
    plan->set_expected_accepted(a_hat);
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    plan->set_cycle_s(kNaN);
    plan->set_speedup(kNaN);
    plan->set_l_ar_s(kNaN);
    planner::ComputeTreeOutputs(tree, TreeOutputOptionsFor(outputs_, position_offset_),
                                &tree_outputs_);
    TreeOutputsToProto(tree_outputs_, outputs_, f->mutable_outputs());
    final_ = true;
    return absl::OkStatus();
  }
  if (!pc_.done()) {
    const planner::PathRequest& req = pc_.NextRequest();
    v1::ExpandRequest* e = out->mutable_expand();
    e->set_step(step_);
    e->set_round(round_);
    e->mutable_nodes()->Assign(req.nodes.begin(), req.nodes.end());
    e->set_k(req.k);
    TreeToProto(*req.tree, e->mutable_tree());
    return absl::OkStatus();
  }
  SPECPLAN_RETURN_IF_ERROR(pc_.Finish(&plan_));
  v1::SessionPlan* f = out->mutable_final_plan();
  f->set_step(step_);
  f->set_policy(name_);
  f->set_forwards(round_);
  PlanToProto(plan_, outputs_, f->mutable_plan());
  planner::ComputeTreeOutputs(plan_.tree, TreeOutputOptionsFor(outputs_, position_offset_),
                              &tree_outputs_);
  TreeOutputsToProto(tree_outputs_, outputs_, f->mutable_outputs());
  final_depth_ = tree_outputs_.max_depth;
  final_ = true;
  return absl::OkStatus();
}

absl::Status PlanSessionDriver::Distributions(const v1::NodeDistributions& d,
                                              v1::SessionServerMessage* out) {
  if (kind_ == Kind::kNone) return absl::FailedPreconditionError("distributions: send start first");
  if (final_) {
    return absl::FailedPreconditionError(
        "distributions: no expansion is pending (the step's tree is final; send "
        "next_step_root_token)");
  }
  SPECPLAN_RETURN_IF_ERROR(NodeDistributionsFromProto(d, &dists_));
  if (kind_ == Kind::kPolicy) {
    SPECPLAN_RETURN_IF_ERROR(Prefixed("distributions", policy_->Provide(dists_)));
    ++round_;
    return Emit(out);
  }
  const planner::PathRequest& req = pc_.NextRequest();
  expected_nodes_.assign(req.nodes.begin(), req.nodes.end());
  SPECPLAN_RETURN_IF_ERROR(
      Prefixed("distributions", planner::ValidateNodeDistributions(dists_, expected_nodes_)));
  const int m = dists_.num_nodes();
  const int k = req.k;
  const int used = std::min(dists_.k, k);
  reply_.assign(static_cast<size_t>(m) * k, planner::TokenProb{});
  reply_counts_.assign(m, 0);
  for (int i = 0; i < m; ++i) {
    int count = 0;
    for (int j = 0; j < used; ++j) {
      const int32_t tok = dists_.token(i, j);
      if (tok < 0) break;  // trailing padding
      reply_[static_cast<size_t>(i) * k + j] = {tok, dists_.prob(i, j)};
      ++count;
    }
    reply_counts_[i] = count;
  }
  SPECPLAN_RETURN_IF_ERROR(
      Prefixed("distributions",
               pc_.Provide(absl::MakeConstSpan(reply_), absl::MakeConstSpan(reply_counts_))));
  ++round_;
  return Emit(out);
}

absl::Status PlanSessionDriver::Observe(int32_t accepted, v1::SessionServerMessage* out) {
  if (kind_ == Kind::kNone) {
    return absl::FailedPreconditionError("observe_accepted_length: send start first");
  }
  v1::SessionObserved* o = out->mutable_observed();
  if (kind_ == Kind::kPolicy) {
    SPECPLAN_RETURN_IF_ERROR(
        Prefixed("observe_accepted_length", policy_->ObserveAcceptance(accepted)));
    o->set_observed_steps(policy_->stats().observed_steps);
    o->set_mean_accepted(policy_->stats().mean_accepted());
    return absl::OkStatus();
  }
  if (!final_ || observed_) {
    return absl::FailedPreconditionError(
        observed_ ? "observe_accepted_length: already observed for this step"
                  : "observe_accepted_length: the step's tree is not final");
  }
  if (accepted < 0 || accepted > final_depth_) {
    return Invalid(absl::StrCat("observe_accepted_length = ", accepted, ": must be in [0, ",
                                final_depth_, "] (depth of the final tree)"));
  }
  observed_ = true;
  ++bf_observed_steps_;
  bf_accepted_ += accepted;
  o->set_observed_steps(bf_observed_steps_);
  o->set_mean_accepted(static_cast<double>(bf_accepted_) / bf_observed_steps_);
  return absl::OkStatus();
}

}  // namespace specplan::service
