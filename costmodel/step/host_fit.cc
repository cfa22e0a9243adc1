#include "costmodel/step/host_fit.h"

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::costmodel {
namespace {

absl::Status At(const std::string& source, int line, int column, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ":", column, ": ", what));
}

// The fitted terms, in the order of the design matrix's columns.
struct Term {
  const char* name;
  double HostTime::*field;
};
constexpr Term kTerms[] = {{"step_s", &HostTime::step_s},
                           {"per_sequence_s", &HostTime::per_sequence_s},
                           {"per_draft_forward_s", &HostTime::per_draft_forward_s},
                           {"verify_per_token_s", &HostTime::verify_per_token_s}};
constexpr int kNumTerms = 4;

}  // namespace

absl::StatusOr<std::vector<StepPoint>> ParseStepPoints(const std::string& csv,
                                                       const std::string& source) {
  std::vector<std::string> lines = absl::StrSplit(csv, '\n');
  std::map<std::string, int> col;
  std::vector<StepPoint> out;
  int line_no = 0;
  for (std::string& raw : lines) {
    ++line_no;
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells = absl::StrSplit(line, ',');
    for (std::string& c : cells) c = std::string(absl::StripAsciiWhitespace(c));
    if (col.empty()) {
      for (size_t i = 0; i < cells.size(); ++i) col[cells[i]] = static_cast<int>(i);
      for (const char* need : {"batch", "k", "context"}) {
        if (!col.count(need)) {
          return At(source, line_no, 1,
                    absl::StrCat("header: no \"", need,
                                 "\" column (need batch, k, context and step_ms, or tokens_per_s "
                                 "with acceptance_length)"));
        }
      }
      if (!col.count("step_ms") && !col.count("tokens_per_s")) {
        return At(source, line_no, 1, "header: need a step_ms or a tokens_per_s column");
      }
      continue;
    }
    auto cell = [&](const std::string& name, double* v, bool* present) -> absl::Status {
      *present = false;
      const auto it = col.find(name);
      if (it == col.end() || static_cast<size_t>(it->second) >= cells.size() ||
          cells[static_cast<size_t>(it->second)].empty()) {
        return absl::OkStatus();
      }
      int column = 1;
      for (int i = 0; i < it->second; ++i)
        column += static_cast<int>(cells[static_cast<size_t>(i)].size()) + 1;
      const std::string& text = cells[static_cast<size_t>(it->second)];
      if (!absl::SimpleAtod(text, v) || !std::isfinite(*v) || *v < 0) {
        return At(source, line_no, column,
                  absl::StrCat(name, " = '", text, "': must be a finite number >= 0"));
      }
      *present = true;
      return absl::OkStatus();
    };
    StepPoint p;
    p.line = line_no;
    double b = 0, k = 0, c = 0, step_ms = 0, tps = 0, acc = 0;
    bool has_b, has_k, has_c, has_step, has_tps, has_acc;
    SPECPLAN_RETURN_IF_ERROR(cell("batch", &b, &has_b));
    SPECPLAN_RETURN_IF_ERROR(cell("k", &k, &has_k));
    SPECPLAN_RETURN_IF_ERROR(cell("context", &c, &has_c));
    SPECPLAN_RETURN_IF_ERROR(cell("step_ms", &step_ms, &has_step));
    SPECPLAN_RETURN_IF_ERROR(cell("tokens_per_s", &tps, &has_tps));
    SPECPLAN_RETURN_IF_ERROR(cell("acceptance_length", &acc, &has_acc));
    if (!has_b || !has_k || !has_c || b < 1 || b != std::floor(b) || k != std::floor(k) || k > 64) {
      return At(source, line_no, 1,
                "batch (an integer >= 1), k (an integer in [0, 64]) and context are required");
    }
    p.b = static_cast<int64_t>(b);
    p.k = static_cast<int>(k);
    p.c = static_cast<int64_t>(c);
    if (has_step) {
      p.step_s = step_ms * 1e-3;
    } else if (has_tps && tps > 0) {
      double tokens_per_step = 1;
      if (p.k > 0) {
        if (!has_acc || acc < 1 || acc > p.k + 1) {
          return At(source, line_no, 1,
                    absl::StrCat("acceptance_length = ", acc, ": with k = ", p.k,
                                 " and tokens_per_s it must be in [1, ", p.k + 1,
                                 "] (tokens per step, bonus included)"));
        }
        tokens_per_step = acc;
      }
      p.step_s = static_cast<double>(p.b) * tokens_per_step / tps;
    } else {
      return At(source, line_no, 1, "needs step_ms, or tokens_per_s > 0");
    }
    if (!(p.step_s > 0)) return At(source, line_no, 1, "the step time must be > 0");
    out.push_back(p);
  }
  if (col.empty()) return At(source, 1, 1, "empty: no header");
  return out;
}

absl::StatusOr<HostFit> FitHostTime(const LatencyModel* verify, const ModelSpec& target,
                                    const GpuSpec& gpu,
                                    const std::map<std::string, DrafterProfile>* drafters,
                                    const std::string& engine, const StepOptions& options,
                                    const std::vector<StepPoint>& points) {
  if (points.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("points: ", points.size(), " given; the fit needs at least 2"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(const StepModel defaults,
                            StepModel::Create(verify, target, gpu, drafters, engine, options));
  // The kernels and the sampling calls alone: every fitted term at 0.
  StepOptions bare = options;
  bare.draft_steps = -1;
  bare.host = HostTime{};
  bare.host->sample_call_s = defaults.host().sample_call_s;
  // The n-gram proposal is a fraction of the verify pass, not seconds the least squares could
  // fit beside the others: it keeps its default and is priced with the kernels.
  bare.host->ngram_verify_fraction = defaults.host().ngram_verify_fraction;
  SPECPLAN_ASSIGN_OR_RETURN(const StepModel kernels,
                            StepModel::Create(verify, target, gpu, drafters, engine, bare));
  const int n = static_cast<int>(points.size());
  Eigen::MatrixXd x(n, kNumTerms);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) {
    const StepPoint& p = points[static_cast<size_t>(i)];
    if (p.k > 0 && !kernels.has_drafter()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", p.line, ": k = ", p.k, " but no drafter is named"));
    }
    const StepBreakdown r = p.k == 0 ? kernels.ArStep(p.b, p.c) : kernels.Step(p.b, p.k + 1, p.c);
    const double priced = r.step_s();
    if (priced >= p.step_s) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "line %d: the measured step (%.4f ms at batch %d, k %d) is not above what the kernels "
          "alone take (%.4f ms): the profile does not describe this engine and GPU",
          p.line, p.step_s * 1e3, p.b, p.k, priced * 1e3));
    }
    y(i) = p.step_s - priced;
    x(i, 0) = 1;
    x(i, 1) = static_cast<double>(p.b);
    x(i, 2) = r.draft_forwards;
    // An n-gram proposal is a fraction of the whole verify term, so each verified token's engine
    // time also grows the proposal by that fraction.
    const bool proposes = p.k > 0 && kernels.draft_priced_by() == "host only";
    x(i, 3) = static_cast<double>(p.b * (p.k + 1)) *
              (proposes ? 1 + kernels.host().ngram_verify_fraction : 1.0);
  }
  // The best non-negative least-squares solution among the subsets of columns of full rank.
  double best_rss = std::numeric_limits<double>::infinity();
  int best_mask = -1;
  Eigen::VectorXd best_beta;
  for (int mask = 1; mask < (1 << kNumTerms); ++mask) {
    std::vector<int> cols;
    for (int j = 0; j < kNumTerms; ++j) {
      if (mask & (1 << j)) cols.push_back(j);
    }
    Eigen::MatrixXd xs(n, static_cast<int>(cols.size()));
    for (size_t j = 0; j < cols.size(); ++j) xs.col(static_cast<int>(j)) = x.col(cols[j]);
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(xs);
    if (qr.rank() < static_cast<int>(cols.size())) continue;
    const Eigen::VectorXd beta = qr.solve(y);
    if ((beta.array() < 0).any()) continue;
    const double rss = (xs * beta - y).squaredNorm();
    // Fewer terms win unless more explain clearly more (1e-12 relative).
    if (rss < best_rss * (1 - 1e-9)) {
      best_rss = rss;
      best_mask = mask;
      best_beta = beta;
    }
  }
  HostFit fit;
  fit.host = defaults.host();
  if (best_mask < 0) {
    return absl::InvalidArgumentError("points: no non-negative fit of the host terms exists");
  }
  int used = 0;
  for (int j = 0; j < kNumTerms; ++j) {
    const bool identifiable = x.col(j).cwiseAbs().maxCoeff() > 0;
    if (best_mask & (1 << j)) {
      fit.host.*kTerms[j].field = best_beta(used++);
      fit.fitted.push_back(kTerms[j].name);
    } else if (identifiable) {
      fit.host.*kTerms[j].field = 0;
      fit.fitted.push_back(absl::StrCat(kTerms[j].name, " (0: no better non-negative fit)"));
    } else {
      fit.kept.push_back(
          absl::StrCat(kTerms[j].name, " (no point runs a drafter forward, so none measures it)"));
    }
  }
  if (defaults.draft_priced_by() == "host only") {
    fit.kept.push_back(
        "ngram_verify_fraction (a fraction of the verify pass, not fitted: priced with the kernels "
        "at its default)");
  }
  fit.host.provenance = absl::StrCat("fitted to ", n, " measured steps (specplan step fit) over ",
                                     engine.empty() ? "no engine's" : engine + "'s",
                                     " defaults: ", defaults.host().provenance);
  // What the fitted model predicts for each point.
  StepOptions refit = options;
  refit.draft_steps = -1;
  refit.host = fit.host;
  SPECPLAN_ASSIGN_OR_RETURN(const StepModel m,
                            StepModel::Create(verify, target, gpu, drafters, engine, refit));
  double sum = 0;
  for (const StepPoint& p : points) {
    const double pred = p.k == 0 ? m.ArStep(p.b, p.c).step_s() : m.Step(p.b, p.k + 1, p.c).step_s();
    fit.predicted_s.push_back(pred);
    sum += std::abs(pred - p.step_s) / p.step_s;
  }
  fit.mape = sum / n;
  return fit;
}

absl::StatusOr<HostTime> HostTimeFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("host: expected an object");
  HostTime h;
  for (const HostTimeTerm& t : HostTimeTerms()) {
    const char* name = t.name;
    if (!j.contains(name) || !j[name].is_number() || !(j[name].get<double>() >= 0) ||
        j[name].get<double>() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "host.", name, ": ", j.contains(name) ? json_util::Quote(j[name]) : "missing",
          t.fraction ? ": expected a fraction in [0, 1] of the verify time"
                     : ": expected seconds in [0, 1]"));
    }
    h.*t.member = j[name].get<double>();
  }
  if (j.contains("provenance") && j["provenance"].is_string()) {
    h.provenance = j["provenance"].get<std::string>();
  }
  return h;
}

nlohmann::json HostFitToJson(const HostFit& fit) {
  return {{"host", HostTimeToJson(fit.host)},
          {"fitted", fit.fitted},
          {"kept", fit.kept},
          {"mape", fit.mape},
          {"predicted_s", fit.predicted_s}};
}

}  // namespace specplan::costmodel
