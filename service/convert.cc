#include "service/convert.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace specplan::service {
namespace {

absl::Status Invalid(std::string msg) { return absl::InvalidArgumentError(std::move(msg)); }

template <class RepeatedIn, class VecOut>
void AssignRepeated(const RepeatedIn& in, VecOut* out) {
  out->assign(in.begin(), in.end());
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
  AssignRepeated(in.tokens(), &out->tokens);
  AssignRepeated(in.parents(), &out->parents);
  AssignRepeated(in.path_probs(), &out->path_probs);
  if (in.depths_size() > 0) {
    AssignRepeated(in.depths(), &out->depths);
  } else {
    // Depths from parents where they are topological; ValidateTree reports the first bad parent.
    out->depths.assign(out->parents.size(), 0);
    for (size_t i = 1; i < out->parents.size(); ++i) {
      const int32_t p = out->parents[i];
      if (p >= 0 && static_cast<size_t>(p) < i) out->depths[i] = out->depths[p] + 1;
    }
  }
  return Prefixed(field, planner::ValidateTree(*out));
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

absl::Status CheckNMax(int64_t n_max, const ServiceLimits& limits, absl::string_view field) {
  if (n_max < 0) return Invalid(absl::StrCat(field, " = ", n_max, ": must be >= 0"));
  if (n_max > limits.max_n) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, " = ", n_max, ": exceeds the server limit ", limits.max_n, " (--max-n)"));
  }
  return absl::OkStatus();
}

absl::Status CheckNonNegative(double value, absl::string_view field) {
  if (!(std::isfinite(value) && value >= 0)) {
    return Invalid(absl::StrCat(field, " = ", value, ": must be a finite number >= 0"));
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
    v1::Curve* curve = out->mutable_curve();
    const int points = static_cast<int>(in.curve.size());
    curve->mutable_n()->Reserve(points);
    curve->mutable_expected_accepted()->Reserve(points);
    curve->mutable_cycle_s()->Reserve(points);
    curve->mutable_speedup()->Reserve(points);
    for (const planner::CurvePoint& p : in.curve) {
      curve->add_n(p.n);
      curve->add_expected_accepted(p.expected_accepted);
      curve->add_cycle_s(p.cycle_s);
      curve->add_speedup(p.speedup);
    }
  }
}

absl::Status NodeDistributionsFromProto(const v1::NodeDistributions& in,
                                        planner::NodeDistributions* out) {
  out->k = in.k();
  AssignRepeated(in.nodes(), &out->nodes);
  AssignRepeated(in.tokens(), &out->tokens);
  AssignRepeated(in.probs(), &out->probs);
  return absl::OkStatus();
}

}  // namespace specplan::service
