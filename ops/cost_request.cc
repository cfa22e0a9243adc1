#include "ops/cost_request.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "costmodel/step/host_fit.h"
#include "costmodel/step/host_time.h"
#include "ops/validate.h"
#include "util/file.h"
#include "util/json_error.h"
#include "util/status_macros.h"

namespace specplan::ops {

const std::vector<costmodel::CostFieldName>& CostRequestFlagNames() {
  static const auto* names = new std::vector<costmodel::CostFieldName>{
      {"model", "--model"},
      {"gpu", "--gpu"},
      {"engine", "--engine"},
      {"tp", "--tp"},
      {"dtype", "--dtype"},
      {"latency_model", "--latency-model"},
      {"profile_path", "--profile"},
      {"profile", "--profile"},
      {"drafter", "--drafter"},
      {"draft_steps", "--draft-steps"},
      {"topk", "--topk"},
      {"draft_vocab", "--draft-vocab"},
      {"draft_s", "--t-draft-ms"},
      {"t_draft_ms", "--t-draft-ms"},
      {"host_file", "--host-file"},
      {"host_step_ms", "--host-step-ms"},
      {"host_per_seq_ms", "--host-per-seq-ms"},
      {"host_per_draft_ms", "--host-per-draft-ms"},
      {"sample_ms", "--sample-ms"},
      {"t_aux_ms", "--t-aux-ms"},
      {"cuda_graphs", "--cuda-graphs"},
      {"cuda_graph_max", "--cuda-graph-max"},
      {"eager_launch_us", "--eager-launch-us"},
      {"s", "--s"},
      {"c", "--c"},
      {"b", "--b"},
      {"gamma", "--gamma"},
      {"t_net_ms", "--t-net-ms"},
      {"t_head_ms", "--t-head-ms"},
      {"t_light_ms", "--t-light-ms"},
      {"n_max", "--n-max"},
      {"max_ms_per_token", "--max-ms-per-token"},
      {"draft_batch_growth", "--draft-batch-growth"},
  };
  return *names;
}

CycleTerms PriceCycle(const CostView& cost, int gamma, int64_t c) {
  CycleTerms t;
  t.drafter = cost.drafter;
  t.t_aux_s = cost.t_aux_s;
  if (cost.step == nullptr) {
    if (t.drafter.gamma <= 0) t.drafter.gamma = gamma;
    return t;
  }
  const costmodel::PlannerStepTerms terms = costmodel::PlannerTermsFor(*cost.step, gamma, c);
  t.drafter = terms.drafter;
  t.t_aux_s += terms.t_aux_s;
  t.l_ar_s = terms.l_ar_s;
  return t;
}

bool CostRequest::DrafterIsCostClass() const { return costmodel::ParseDrafterClass(drafter).ok(); }

absl::StatusOr<CostRequest::Parsed> CostRequest::Parse(double t_draft_ms) const {
  // Every number in its physical range first (ops/validate.h): NaN, infinities, 1e308 ms.
  if (absl::Status st = CheckCostRequestNumbers(*this); !st.ok()) return st;
  if (absl::Status st = CheckMs("t_draft_ms", t_draft_ms); !st.ok()) return st;
  // An architecture is priced by the step model; its planner cost starts as a block cost of
  // t_draft_ms.
  costmodel::DrafterClass cls = costmodel::DrafterClass::kParallelBlock;
  if (DrafterIsCostClass()) {
    cls = *costmodel::ParseDrafterClass(drafter);
  } else if (absl::Status st = costmodel::CheckDrafterName(drafter); !st.ok()) {
    // "drafter = 'x': unknown (known: ...)"
    return absl::InvalidArgumentError(
        absl::StrCat(st.message(), "; or a cost class: ar, parallel, causal"));
  }
  auto parsed_dtype = costmodel::ParseDType(dtype);  // "dtype: unknown value 'x' (known: ...)"
  if (!parsed_dtype.ok()) return parsed_dtype.status();
  Parsed parsed{{}, *parsed_dtype};
  parsed.drafter.cls = cls;
  parsed.drafter.t_net_s = t_draft_ms * 1e-3;
  return parsed;
}

absl::StatusOr<costmodel::HostTime> ReadHostFile(const std::string& path) {
  // "host_file = 'PATH': <why>"
  const std::string field = absl::StrCat("host_file = '", path, "': ");
  auto text = ReadFileToString(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat(field, text.status().message()));
  auto j = json_util::ParseJson(*text, path);
  if (!j.ok()) return absl::InvalidArgumentError(absl::StrCat(field, j.status().message()));
  auto read = costmodel::HostTimeFromJson(*j);
  if (!read.ok()) return absl::InvalidArgumentError(absl::StrCat(field, read.status().message()));
  return read;
}

absl::StatusOr<std::optional<costmodel::HostTime>> HostTermsFor(
    const std::string& engine, const std::string& host_file,
    const costmodel::HostOverridesMs& given, const std::array<const char*, 4>& names,
    const std::string& who) {
  const bool from_file = !host_file.empty();
  auto base = from_file ? ReadHostFile(host_file) : costmodel::DefaultHostTime(engine);
  if (!base.ok()) return base.status();
  auto with = costmodel::OverrideHostTime(*base, given, names, who);
  if (!with.ok()) return with.status();
  if (!from_file && with->provenance == base->provenance) return std::nullopt;
  return *std::move(with);
}

absl::StatusOr<costmodel::StepOptions> CostRequest::StepOptionsFor(const std::string& engine,
                                                                   double draft_s) const {
  costmodel::StepOptions o;
  o.drafter = DrafterIsCostClass() ? "" : drafter;
  o.draft_steps = draft_steps;
  o.topk = topk;
  o.drafter_options.draft_vocab = draft_vocab;
  if (draft_s > 0) o.draft_s = draft_s;
  auto opt = [](double ms) { return ms >= 0 ? std::optional<double>(ms) : std::nullopt; };
  auto host = HostTermsFor(
      engine, host_file,
      {opt(host_step_ms), opt(host_per_seq_ms), opt(host_per_draft_ms), opt(sample_ms)},
      {"host_step_ms", "host_per_seq_ms", "host_per_draft_ms", "sample_ms"},
      "given on the command line");
  if (!host.ok()) return host.status();
  o.host = *std::move(host);
  // "draft_steps = ...", "topk = ...", "draft_s = ...", "draft_vocab = ..."
  if (absl::Status st = costmodel::ValidateStepOptions(o); !st.ok()) return st;
  return o;
}

absl::StatusOr<std::optional<costmodel::CudaGraphs>> CostRequest::GraphsFor(
    const std::string& engine, double gpu_mem_bytes) const {
  if (cuda_graphs != "engine" && cuda_graphs != "eager" && cuda_graphs != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda_graphs = '", cuda_graphs, "': must be engine, eager or off"));
  }
  if (std::isnan(eager_launch_us) || eager_launch_us > 1000) {  // < 0 = the default
    return absl::InvalidArgumentError(
        absl::StrCat("eager_launch_us = ", eager_launch_us, ": must be in [0, 1000] microseconds"));
  }
  costmodel::CudaGraphs g;
  if (cuda_graphs == "off" || !costmodel::DefaultCudaGraphs(engine, gpu_mem_bytes, &g)) {
    return std::optional<costmodel::CudaGraphs>();
  }
  g.enabled = cuda_graphs == "engine";
  g.sizes = cuda_graph_sizes;
  g.max_size = cuda_graph_max;
  if (graph_max_num_seqs > 0) g.max_num_seqs = graph_max_num_seqs;
  if (graph_max_num_batched_tokens > 0) g.max_num_batched_tokens = graph_max_num_batched_tokens;
  g.speculative = !drafter.empty() && !DrafterIsCostClass();
  if (eager_launch_us >= 0) g.eager_launch_s = eager_launch_us * 1e-6;
  // Errors in the request's own words: "cuda_graph_sizes[1] = 0: ...".
  SPECPLAN_RETURN_IF_ERROR(costmodel::ValidateCudaGraphs(g, "cuda_graph_sizes", "cuda_graph_max"));
  return std::optional<costmodel::CudaGraphs>(std::move(g));
}

std::optional<costmodel::CudaGraphs> DefaultGraphs(const std::string& engine, double gpu_mem_bytes,
                                                   const costmodel::StepOptions& options) {
  CostRequest req;
  req.drafter = options.drafter;
  auto g = req.GraphsFor(engine, gpu_mem_bytes);
  return g.ok() ? *std::move(g) : std::nullopt;
}

absl::StatusOr<costmodel::StepModel> CostRequest::Step(
    const costmodel::ResolvedLatencyModel& resolved, double draft_s) const {
  auto o = StepOptionsFor(resolved.engine, draft_s);
  if (!o.ok()) return o.status();
  auto graphs = GraphsFor(resolved.engine, resolved.gpu_spec.mem_bytes);
  if (!graphs.ok()) return graphs.status();
  o->graphs = *std::move(graphs);
  return costmodel::StepModel::Create(resolved.model.get(), resolved.model_spec, resolved.gpu_spec,
                                      &resolved.drafters, resolved.engine, *o);
}

absl::Status CostRequest::PriceDrafter(const costmodel::ResolvedLatencyModel& resolved, int gamma,
                                       int64_t c, costmodel::DrafterCost* d, double* t_aux_s,
                                       double* l_ar_s) const {
  *l_ar_s = 0;
  if (DrafterIsCostClass()) return absl::OkStatus();
  auto step = Step(resolved, d->t_net_s);  // the operation's by-hand T_draft, when it has one
  if (!step.ok()) return step.status();
  CostView view;
  view.latency = resolved.model.get();
  view.step = &*step;
  const CycleTerms terms = PriceCycle(view, gamma, c);
  *d = terms.drafter;
  *t_aux_s += terms.t_aux_s;
  *l_ar_s = terms.l_ar_s;
  return absl::OkStatus();
}

bool CostRequest::AnyCostGiven() const {
  return !model.empty() || !gpu.empty() || !engine.empty() || !profile.empty() ||
         !latency_model.empty();
}

costmodel::CostSpec CostRequest::ToCostSpec(costmodel::DType parsed_dtype) const {
  costmodel::CostSpec spec;
  spec.model = model;
  spec.gpu = gpu;
  spec.engine = engine;
  spec.profile_path = profile;
  spec.latency_model = latency_model;
  spec.dtype = parsed_dtype;
  spec.tp = tp;
  if (!calib_dir.empty()) spec.calib_dir = calib_dir;
  return spec;
}

absl::StatusOr<costmodel::ResolvedLatencyModel> CostRequest::ResolveSpec(
    costmodel::DType parsed_dtype) const {
  // A calib_dir that is not a directory is named (not a silent fall-back to the roofline).
  if (std::error_code ec; !calib_dir.empty() && !std::filesystem::is_directory(calib_dir, ec)) {
    return absl::NotFoundError(absl::StrCat(
        "calib_dir = '", calib_dir,
        "': ", std::filesystem::exists(calib_dir, ec) ? "not a directory" : "no such directory"));
  }
  return costmodel::ResolveCost(ToCostSpec(parsed_dtype));
}

absl::StatusOr<ResolvedCost> CostRequest::Resolve(double t_draft_ms, double draft_s) const {
  auto parsed = Parse(t_draft_ms);
  if (!parsed.ok()) return parsed.status();
  auto resolved = ResolveSpec(parsed->dtype);
  if (!resolved.ok()) return resolved.status();
  ResolvedCost out;
  out.resolved = std::make_shared<costmodel::ResolvedLatencyModel>(*std::move(resolved));
  out.parsed = *parsed;
  out.t_aux_s = t_aux_ms * 1e-3;
  if (!DrafterIsCostClass()) {
    auto step = Step(*out.resolved, draft_s);
    if (!step.ok()) return step.status();
    out.step.emplace(*std::move(step));
  }
  return out;
}

absl::StatusOr<std::optional<ResolvedCost>> CostRequest::ResolveIfNeeded(bool needed,
                                                                         double t_draft_ms) const {
  if (needed) {
    SPECPLAN_ASSIGN_OR_RETURN(ResolvedCost resolved, Resolve(t_draft_ms, t_draft_ms * 1e-3));
    return std::optional<ResolvedCost>(std::move(resolved));
  }
  SPECPLAN_RETURN_IF_ERROR(Parse(t_draft_ms).status());
  return std::optional<ResolvedCost>();
}

CostView ResolvedCost::View() const {
  CostView v;
  v.latency = resolved->model.get();
  v.step = step ? &*step : nullptr;
  v.drafter = parsed.drafter;
  v.drafter.gamma = 0;
  v.t_aux_s = t_aux_s;
  v.latency_kind = resolved->model->Kind();
  v.profile_id = resolved->profile_id;
  return v;
}

}  // namespace specplan::ops
