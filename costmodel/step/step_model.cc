#include "costmodel/step/step_model.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/latency/table_latency.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::costmodel {
namespace {

constexpr int kMaxDraftSteps = 64;
constexpr int kMaxTopk = 64;

BatchShape Uniform(int64_t b, int64_t s, int64_t c) {
  BatchShape shape;
  shape.Reserve(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) shape.Add(s, c);
  return shape;
}

// Calls fn(forward) for each forward of DraftForwards(arch, b, s, c, d, topk) (drafter_arch.h),
// in its order, without building its vector: a step is priced on the planners' hot path, where
// that allocation cost a third of a b = 1 step. tests/costmodel/step_model_test.cc checks the two
// agree over a grid.
template <typename Fn>
void ForEachDraftForward(const DrafterArch& arch, int64_t b, int64_t s, int64_t c, int d, int topk,
                         Fn&& fn) {
  if (!arch.has_network() || d <= 0) return;
  if (arch.kind == DrafterKind::kBlock) {
    fn(DraftForward{b, d, c, 1});
    return;
  }
  fn(DraftForward{b, s, c, 1});
  if (d > 1) fn(DraftForward{b * std::max(topk, 1), 1, c + s, d - 1});
}

// The forwards DraftForwards runs (ForEachDraftForward's counts), without pricing them.
int DraftForwardCount(const DrafterArch& arch, int d) {
  if (!arch.has_network() || d <= 0) return 0;
  return arch.kind == DrafterKind::kBlock ? 1 : d;
}

const DrafterProfile* FindDrafter(const std::map<std::string, DrafterProfile>* drafters,
                                  const std::string& name) {
  if (drafters == nullptr) return nullptr;
  const auto it = drafters->find(name);
  return it == drafters->end() ? nullptr : &it->second;
}

// StepModel::DraftSeconds (T_draft of b sequences at (s, c) drafting d positions; *forwards = the
// forwards run), given the batch b x (s, c) in `uniform` when the caller built it (b > 1), else
// null: the extend forward of a uniform batch then prices the batch the target's pass read.
double DraftTime(const StepModel& m, const LatencyModel* draft, const DrafterArch& arch, int64_t b,
                 int64_t s, int64_t c, int d, const BatchShape* uniform, int* forwards) {
  *forwards = 0;
  if (!m.has_drafter()) return 0;
  const std::optional<double>& given = m.options().draft_s;
  double t = 0;
  ForEachDraftForward(arch, b, s, c, d, m.options().topk, [&](const DraftForward& f) {
    *forwards += f.count;
    if (given) return;
    const bool same =
        uniform != nullptr && draft != nullptr && f.batch == b && f.tokens == s && f.context == c;
    t += f.count * (same ? draft->VerifyBatchSeconds(*uniform)
                         : m.DraftForwardSeconds(f.batch, f.tokens, f.context));
  });
  return given ? *given : t;
}

}  // namespace

absl::Status ValidateStepOptions(const StepOptions& o) {
  if (o.draft_steps < -1 || o.draft_steps > kMaxDraftSteps) {
    return absl::InvalidArgumentError(absl::StrCat(
        "draft_steps = ", o.draft_steps, ": must be in [0, ", kMaxDraftSteps, "] (or -1: s - 1)"));
  }
  if (o.topk < 1 || o.topk > kMaxTopk) {
    return absl::InvalidArgumentError(
        absl::StrCat("topk = ", o.topk, ": must be in [1, ", kMaxTopk, "]"));
  }
  if (o.draft_s && (!(*o.draft_s >= 0) || *o.draft_s > 10)) {
    return absl::InvalidArgumentError(
        absl::StrCat("draft_s = ", *o.draft_s, ": must be in [0, 10] seconds"));
  }
  if (o.host) SPECPLAN_RETURN_IF_ERROR(ValidateHostTime(*o.host, "host."));
  if (o.graphs) SPECPLAN_RETURN_IF_ERROR(ValidateCudaGraphs(*o.graphs));
  return absl::OkStatus();
}

nlohmann::json StepBreakdownToJson(const StepBreakdown& b) {
  return {{"verify_s", b.verify_s}, {"draft_s", b.draft_s}, {"sample_s", b.sample_s},
          {"host_s", b.host_s},     {"step_s", b.step_s()}, {"draft_forwards", b.draft_forwards}};
}

absl::StatusOr<StepModel> StepModel::Create(const LatencyModel* verify, const ModelSpec& target,
                                            const GpuSpec& gpu,
                                            const std::map<std::string, DrafterProfile>* drafters,
                                            const std::string& engine, const StepOptions& options) {
  SPECPLAN_CHECK(verify != nullptr);
  SPECPLAN_RETURN_IF_ERROR(ValidateStepOptions(options));
  StepModel m;
  m.verify_ = verify;
  m.options_ = options;
  m.engine_ = engine;
  m.layers_ = target.layers;
  if (options.graphs) m.graphs_ = std::make_shared<const GraphBuckets>(*options.graphs);
  if (options.host) {
    m.host_ = *options.host;
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(m.host_, DefaultHostTime(engine));
  }
  if (options.drafter.empty()) return m;
  SPECPLAN_ASSIGN_OR_RETURN(m.arch_,
                            DrafterArchFor(options.drafter, target, options.drafter_options));
  if (options.draft_s) {
    m.draft_priced_by_ = "given";
  } else if (!m.arch_.has_network()) {
    m.draft_priced_by_ = "host only";
  } else if (const DrafterProfile* table = FindDrafter(drafters, options.drafter);
             table != nullptr && options.drafter_options.draft_vocab == 0) {
    m.draft_ =
        std::make_shared<TableLatency>(RooflineLatency(table->arch.layers, gpu), table->table);
    m.draft_priced_by_ = "kernel tables";
  } else {
    m.draft_ = std::make_shared<RooflineLatency>(m.arch_.layers, gpu);
    m.draft_priced_by_ = "roofline";
  }
  return m;
}

double StepModel::DraftForwardSeconds(int64_t b, int64_t s, int64_t c) const {
  if (draft_ == nullptr) return 0;
  return b == 1 ? draft_->VerifySeconds(s, c) : draft_->VerifyBatchSeconds(Uniform(b, s, c));
}

double StepModel::DraftForwardSeconds(const BatchShape& batch) const {
  if (draft_ == nullptr || batch.empty()) return 0;
  return draft_->VerifyBatchSeconds(batch);
}

void StepModel::AddHost(int64_t b, int d, StepBreakdown* r) const {
  const double bd = static_cast<double>(b);
  // The drafter's own host work is part of drafting (unless drafting was given by hand, which
  // then is the whole of it): per forward, or, for a drafter without a network (ngram, suffix)
  // that drafts, its proposal as a fraction of the verify pass.
  if (!options_.draft_s) {
    r->draft_s += host_.per_draft_forward_s * r->draft_forwards;
    if (d > 0 && has_drafter() && !arch_.has_network()) {
      r->draft_s += host_.ngram_verify_fraction * r->verify_s;
    }
  }
  r->sample_s = host_.sample_call_s * (1 + r->draft_forwards);
  r->host_s = host_.step_s + host_.per_sequence_s * bd;
}

double StepModel::DraftSeconds(int64_t b, int64_t s, int64_t c, int d, int* forwards) const {
  return DraftTime(*this, draft_.get(), arch_, b, s, c, d, nullptr, forwards);
}

absl::StatusOr<StepModel> StepModel::WithTopk(int topk) const {
  StepOptions options = options_;
  options.topk = topk;
  SPECPLAN_RETURN_IF_ERROR(ValidateStepOptions(options));
  StepModel m = *this;
  m.options_ = std::move(options);
  m.verify_table_ = nullptr;
  m.draft_table_ = nullptr;
  return m;
}

bool StepModel::TabulateDraft() {
  verify_table_ = dynamic_cast<const TableLatency*>(verify_);
  if (verify_table_ == nullptr || draft_ == nullptr || options_.draft_s) {
    verify_table_ = nullptr;
    return false;
  }
  const LatencyTable& grid = verify_table_->table();
  auto layer = [&](int64_t b, const std::vector<int64_t>& sg, const std::vector<int64_t>& cg) {
    std::vector<std::vector<double>> out(cg.size(), std::vector<double>(sg.size()));
    int forwards;
    for (size_t ci = 0; ci < cg.size(); ++ci) {
      for (size_t si = 0; si < sg.size(); ++si) {
        out[ci][si] = DraftSeconds(b, sg[si], cg[ci], DraftStepsFor(sg[si]), &forwards);
      }
    }
    return out;
  };
  auto table = std::make_shared<LatencyTable>();
  table->s_grid = grid.s_grid;
  table->c_grid = grid.c_grid;
  table->b_grid = grid.b_grid;
  table->batch_s_grid = grid.batch_s_grid;
  table->batch_c_grid = grid.batch_c_grid;
  table->seconds = layer(1, grid.s_grid, grid.c_grid);
  for (size_t k = 0; k < grid.b_grid.size(); ++k) {
    table->batch_seconds.push_back(
        layer(grid.b_grid[k], grid.layer_s_grid(k + 1), grid.layer_c_grid(k + 1)));
  }
  draft_table_ = std::move(table);
  return true;
}

StepBreakdown StepModel::Step(int64_t b, int64_t s, int64_t c) const {
  SPECPLAN_CHECK(b >= 1 && s >= 1 && c >= 0);
  StepBreakdown r;
  TableLatency::GridPoint point;
  if (draft_table_ != nullptr && verify_table_->Locate(b, s, c, &point)) {
    r.verify_s = Graphed(b, s, TableLatency::ReadAt(verify_table_->table(), point)) +
                 host_.verify_per_token_s * static_cast<double>(b * s);
    r.draft_s = TableLatency::ReadAt(*draft_table_, point);
    r.draft_forwards = DraftForwardCount(arch_, DraftStepsFor(s));
    AddHost(b, DraftStepsFor(s), &r);
    return r;
  }
  // The uniform batch is built once (b adds): the target's pass and the drafter's extend forward
  // both price it.
  std::optional<BatchShape> uniform;
  if (b > 1) uniform = Uniform(b, s, c);
  r.verify_s =
      Graphed(b, s, b == 1 ? verify_->VerifySeconds(s, c) : verify_->VerifyBatchSeconds(*uniform)) +
      host_.verify_per_token_s * static_cast<double>(b * s);
  const int d = DraftStepsFor(s);
  r.draft_s = DraftTime(*this, draft_.get(), arch_, b, s, c, d, uniform ? &*uniform : nullptr,
                        &r.draft_forwards);
  AddHost(b, d, &r);
  return r;
}

StepBreakdown StepModel::Step(const BatchShape& batch) const {
  SPECPLAN_CHECK(!batch.empty());
  StepBreakdown r;
  r.verify_s = VerifyPassSeconds(batch) + host_.verify_per_token_s * batch.totals().tokens;
  const int64_t b = batch.size();
  const PassTotals& t = batch.totals();
  // The drafter's forwards at the batch's mean sequence (its table prices a batch by its mean).
  const int64_t s_mean = std::max<int64_t>(1, static_cast<int64_t>(t.tokens / b + 0.5));
  const int64_t c_mean = static_cast<int64_t>(t.context / b + 0.5);
  const int d =
      options_.draft_steps >= 0 ? options_.draft_steps : static_cast<int>(batch.max_s() - 1);
  r.draft_s = DraftSeconds(b, s_mean, c_mean, d, &r.draft_forwards);
  AddHost(b, d, &r);
  return r;
}

StepBreakdown StepModel::ArStep(int64_t b, int64_t c) const {
  SPECPLAN_CHECK(b >= 1 && c >= 0);
  StepBreakdown r;
  TableLatency::GridPoint point;
  if (verify_table_ != nullptr && verify_table_->Locate(b, 1, c, &point)) {  // tabulated
    r.verify_s = TableLatency::ReadAt(verify_table_->table(), point);
  } else {
    r.verify_s =
        b == 1 ? verify_->VerifySeconds(1, c) : verify_->VerifyBatchSeconds(Uniform(b, 1, c));
  }
  r.verify_s = Graphed(b, 1, r.verify_s) + host_.verify_per_token_s * static_cast<double>(b);
  r.sample_s = host_.sample_call_s;
  r.host_s = host_.step_s + host_.per_sequence_s * static_cast<double>(b);
  return r;
}

StepBreakdown StepModel::ArStep(const BatchShape& batch) const {
  SPECPLAN_CHECK(!batch.empty());
  BatchShape plain;
  plain.Reserve(static_cast<size_t>(batch.size()));
  for (const SequenceShape& q : batch.sequences()) plain.Add(1, q.c);
  StepBreakdown r;
  r.verify_s = VerifyPassSeconds(plain) + host_.verify_per_token_s * batch.size();
  r.sample_s = host_.sample_call_s;
  r.host_s = host_.step_s + host_.per_sequence_s * static_cast<double>(batch.size());
  return r;
}

StepBreakdown StepModel::TreeStep(int64_t b, int64_t n, int depth, int64_t c,
                                  int block_positions) const {
  SPECPLAN_CHECK(b >= 1 && n >= 0 && depth >= 0 && depth <= n && c >= 0);
  if (n == 0) return ArStep(b, c);  // no tree: nothing is drafted
  StepBreakdown r;
  const int64_t s = n + 1;
  std::optional<BatchShape> uniform;
  if (b > 1) uniform = Uniform(b, s, c);
  r.verify_s =
      Graphed(b, s, b == 1 ? verify_->VerifySeconds(s, c) : verify_->VerifyBatchSeconds(*uniform)) +
      host_.verify_per_token_s * static_cast<double>(b * s);
  // A block drafter drafts its positions in one forward whatever the tree; a level drafter's
  // extend reads the depth + 1 tokens a tree of that depth can accept, then drafts level by level.
  const bool block = arch_.kind == DrafterKind::kBlock;
  const int d = block ? std::max(block_positions, 1) : depth;
  const int64_t s_draft = block ? s : depth + 1;
  r.draft_s = DraftTime(*this, draft_.get(), arch_, b, s_draft, c, d,
                        uniform && s_draft == s ? &*uniform : nullptr, &r.draft_forwards);
  AddHost(b, d, &r);
  return r;
}

double StepModel::PassAtNoContext(int64_t b, int64_t s) const {
  TableLatency::GridPoint point;
  if (verify_table_ != nullptr && verify_table_->Locate(b, s, 0, &point))
    return TableLatency::ReadAt(verify_table_->table(), point);
  return b == 1 ? verify_->VerifySeconds(s, 0) : verify_->VerifyBatchSeconds(Uniform(b, s, 0));
}

double StepModel::Graphed(int64_t b, int64_t s, double exact) const {
  if (graphs_ == nullptr) return exact;
  const GraphPass p = graphs_->PadDecodeBatch(b, s);
  if (!p.graphed) return std::max(exact, graphs_->EagerLaunchSeconds(layers_));
  if (p.padded == b) return exact;
  return exact + PassAtNoContext(p.padded, s) - PassAtNoContext(b, s);
}

double StepModel::GraphedBatch(const BatchShape& batch, double exact) const {
  if (graphs_ == nullptr || batch.empty()) return exact;
  int64_t s_min = batch.sequences().front().s;
  bool uniform = true;
  for (const SequenceShape& q : batch.sequences()) {
    uniform = uniform && q.s == s_min;
    s_min = std::min(s_min, q.s);
  }
  if (uniform) return Graphed(batch.size(), s_min, exact);
  const int64_t tokens = static_cast<int64_t>(batch.totals().tokens + 0.5);
  const GraphPass p = graphs_->PadRaggedPass(tokens, s_min);
  if (!p.graphed) return std::max(exact, graphs_->EagerLaunchSeconds(layers_));
  if (p.padded == tokens) return exact;
  return exact + PassAtNoContext(1, p.padded) - PassAtNoContext(1, tokens);
}

double StepModel::VerifyPassSeconds(const BatchShape& batch) const {
  return GraphedBatch(batch, verify_->VerifyBatchSeconds(batch));
}

bool DraftsByLevel(const StepOptions& o) {
  if (o.draft_s) return false;
  const std::string& d = o.drafter;
  return d == "eagle" || d == "eagle3" || d == "mtp" || absl::StartsWith(d, "draft:");
}

bool StepModel::DraftsByLevel() const {
  const bool by_level = has_drafter() && !options_.draft_s && arch_.has_network() &&
                        arch_.kind != DrafterKind::kBlock;
  SPECPLAN_CHECK(by_level == costmodel::DraftsByLevel(options_));
  return by_level;
}

PlannerStepTerms PlannerTermsFor(const StepModel& step, int gamma, int64_t c) {
  PlannerStepTerms t;
  gamma = std::max(gamma, 1);
  const HostTime& h = step.host();
  // One step's drafting of a tree of depth d for b sequences: the drafter's forwards with their
  // host work (TreeStep's draft term) and a sampling call per forward (its sample term past the
  // target's one call). A chain of depth d prices it (TreeStep needs n >= depth; the drafting does
  // not depend on n but for ngram/suffix, which are priced at depth gamma only).
  auto draft = [&](int64_t b, int d) {
    const StepBreakdown r = step.TreeStep(b, std::max(d, 1), d, c, gamma);
    return d == 0 ? 0.0 : r.draft_s + h.sample_call_s * r.draft_forwards;
  };
  auto growth = [](double one, double many) {
    return one > 0 ? std::max(0.0, (many / one - 1) / 15) : 0.0;
  };
  t.drafter.cls = DrafterClass::kParallelBlock;
  t.drafter.gamma = gamma;
  const double one = draft(1, gamma);
  t.drafter.t_net_s = one;
  t.drafter.batch_growth = growth(one, draft(16, gamma));
  if (step.DraftsByLevel()) {
    t.drafter.depth_s.resize(static_cast<size_t>(gamma) + 1);
    t.drafter.depth_growth.resize(static_cast<size_t>(gamma) + 1);
    for (int d = 0; d <= gamma; ++d) {
      const double one_d = d == gamma ? one : draft(1, d);
      t.drafter.depth_s[d] = one_d;
      t.drafter.depth_growth[d] = d == gamma ? t.drafter.batch_growth : growth(one_d, draft(16, d));
    }
  }
  // Per step: the target's sampling call and the host's step work; per sequence and per verified
  // token: the cycle's own terms (DrafterCost), so a batch of B pays them B times and a tree of n
  // nodes (n + 1) times. (An n-gram drafter's proposal is in T_draft: its fraction of the verify
  // pass of gamma + 1 tokens.)
  t.drafter.per_sequence_s = h.per_sequence_s;
  t.drafter.per_token_s = h.verify_per_token_s;
  t.drafter.plain_step_s = h.step_s + h.sample_call_s;
  t.t_aux_s = h.sample_call_s + h.step_s;
  t.l_ar_s = step.ArStep(1, c).step_s();
  return t;
}

}  // namespace specplan::costmodel
