// specplan.Cost (a resolved latency model), specplan.Profile (a profile file's contents),
// list_profiles, load_profile, compose_profile, and the registries.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common.h"
#include "costmodel/compose/compose.h"
#include "costmodel/compose/kernel_tables.h"
#include "costmodel/cost_spec.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/batch_shape.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/engines.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "costmodel/step/drafter_arch.h"
#include "costmodel/step/host_time.h"
#include "costmodel/step/step_model.h"
#include "ops/compose_op.h"
#include "ops/cost_request.h"
#include "ops/estimate.h"
#include "ops/validate.h"
#include "planner/policies/best_first.h"
#include "record.h"

namespace specplan::python {
namespace {

using costmodel::DType;

// The record classes of this file (record.h).
struct EstimateTag {};
struct CycleTag {};
struct StepTag {};
struct HostTag {};
struct ProfileInfoTag {};

DType ReadDType(const std::string& dtype) { return ValueOrThrow(costmodel::ParseDType(dtype)); }

int64_t CheckedTp(int64_t tp) {
  if (tp < 0) ThrowInvalid(absl::StrCat("tp = ", tp, ": must be >= 0 (0 = the profile's, else 1)"));
  return tp;
}

// Cost(...)'s step keywords: the drafter architecture and what the step model takes with it.
struct StepArgs {
  std::string drafter = "eagle3";
  int draft_steps = -1;
  int topk = 1;
  int64_t draft_vocab = 0;
  py::object host_step_ms = py::none(), host_per_seq_ms = py::none(),
             host_per_draft_ms = py::none(), sample_ms = py::none();
  std::string host_file;  // host terms as `specplan step fit --out` writes them; "" = defaults
  // CUDA graphs (ops::CostRequest::GraphsFor): engine | eager | off, the captured sizes, the
  // largest, the host microseconds per launch without graphs (None = 10).
  std::string cuda_graphs = "engine";
  std::vector<int64_t> cuda_graph_sizes;
  int64_t cuda_graph_max = 0;
  py::object eager_launch_us = py::none();
};

// A step-model error in Cost's keywords: "draft_s = X" is a planning call's t_draft_ms.
absl::Status StepErrorInKeywords(const absl::Status& st) {
  constexpr absl::string_view kDraftS = "draft_s = ";
  if (!absl::StartsWith(st.message(), kDraftS)) return st;
  return absl::Status(st.code(), absl::StrCat("t_draft_ms (T_draft by hand, seconds) = ",
                                              st.message().substr(kDraftS.size())));
}

// The step model of `a` over c's latency model, tables and engine (null for drafter "").
void AttachStep(PyCost* c, const StepArgs& a) {
  if (a.drafter.empty()) return;
  if (costmodel::ParseDrafterClass(a.drafter).ok()) {
    ThrowInvalid(absl::StrCat(
        "drafter = '", a.drafter,
        "': a cost class; Cost(drafter=...) names an architecture (eagle, eagle3, mtp, "
        "draft:MODEL, block:MODEL, ngram, suffix) or \"\" for none (then plan_tree's drafter= "
        "class and t_draft_ms price drafting)"));
  }
  costmodel::StepOptions o;
  o.drafter = a.drafter;
  o.draft_steps = a.draft_steps;
  o.topk = a.topk;
  if (a.draft_vocab < 0) {
    ThrowInvalid(absl::StrCat("draft_vocab = ", a.draft_vocab, ": must be >= 0 (0 = 32000)"));
  }
  o.drafter_options.draft_vocab = a.draft_vocab;
  auto ms = [](const py::object& v, const char* name) {
    return v.is_none() ? std::optional<double>() : std::optional<double>(ReadFloat(v, name));
  };
  const costmodel::HostOverridesMs given{
      ms(a.host_step_ms, "host_step_ms"), ms(a.host_per_seq_ms, "host_per_seq_ms"),
      ms(a.host_per_draft_ms, "host_per_draft_ms"), ms(a.sample_ms, "sample_ms")};
  // The one rule of the front ends (ops::HostTermsFor): host_file's terms, else the engine's
  // defaults, with the given terms over them.
  o.host = ValueOrThrow(
      ops::HostTermsFor(c->engine, a.host_file, given,
                        {"host_step_ms", "host_per_seq_ms", "host_per_draft_ms", "sample_ms"},
                        "given to specplan.Cost"));
  // The engine's CUDA-graph ladder: the CLI's rule (ops::CostRequest::GraphsFor) over these
  // keywords.
  ops::CostRequest graphs;
  graphs.drafter = a.drafter;
  graphs.cuda_graphs = a.cuda_graphs;
  graphs.cuda_graph_sizes = a.cuda_graph_sizes;
  graphs.cuda_graph_max = a.cuda_graph_max;
  if (!a.eager_launch_us.is_none())
    graphs.eager_launch_us = ReadFloat(a.eager_launch_us, "eager_launch_us");
  o.graphs = ValueOrThrow(graphs.GraphsFor(c->engine, c->gpu_spec.mem_bytes));
  ThrowIfError(costmodel::ValidateStepOptions(o));
  c->step = std::make_shared<const costmodel::StepModel>(ValueOrThrow(costmodel::StepModel::Create(
      c->model.get(), c->model_spec, c->gpu_spec, c->drafters.get(), c->engine, o)));
}

py::dict StepFields(const costmodel::StepBreakdown& b, const std::string& draft_priced_by) {
  py::dict d;
  d["verify_s"] = b.verify_s;
  d["draft_s"] = b.draft_s;
  d["sample_s"] = b.sample_s;
  d["host_s"] = b.host_s;
  d["step_s"] = b.step_s();
  d["draft_forwards"] = b.draft_forwards;
  d["draft_priced_by"] = draft_priced_by;
  return d;
}

// The records of ops::ToJson(EstimateRequest, EstimateResult): cycle, step (with host), ar_step.
py::object EstimateRecord(const nlohmann::json& j) {
  py::dict out = JsonToPy(j).cast<py::dict>();
  out["cycle"] = MakeRecord<CycleTag>(out["cycle"].cast<py::dict>());
  if (out.contains("step")) {
    py::dict st = out["step"].cast<py::dict>();
    st["host"] = MakeRecord<HostTag>(st["host"].cast<py::dict>());
    out["step"] = MakeRecord<StepTag>(st);
    out["ar_step"] = MakeRecord<StepTag>(out["ar_step"].cast<py::dict>());
  }
  return MakeRecord<EstimateTag>(out);
}

py::object StepRecord(const costmodel::StepBreakdown& b, const std::string& draft_priced_by) {
  return MakeRecord<StepTag>(StepFields(b, draft_priced_by));
}

// HostTime's record fields: its terms (costmodel::HostTimeTerms), then the provenance.
std::vector<RecordField> HostRecordFields() {
  std::vector<RecordField> fields;
  for (const costmodel::HostTimeTerm& t : costmodel::HostTimeTerms()) {
    fields.push_back({t.name, t.what});
  }
  fields.push_back({"provenance", "where the figures come from"});
  return fields;
}

py::object HostRecord(const costmodel::HostTime& h) {
  py::dict d;
  for (const costmodel::HostTimeTerm& t : costmodel::HostTimeTerms()) d[t.name] = h.*t.member;
  d["provenance"] = h.provenance;
  return MakeRecord<HostTag>(d);
}

}  // namespace

costmodel::HostTime HostFromRecord(py::handle record, const std::string& arg) {
  costmodel::HostTime h;
  for (const costmodel::HostTimeTerm& t : costmodel::HostTimeTerms()) {
    if (!py::hasattr(record, t.name)) {
      ThrowInvalid(absl::StrCat(arg, ": expected a HostTime (Cost.host), got an object without '",
                                t.name, "'"));
    }
    h.*t.member = ReadFloat(record.attr(t.name), absl::StrCat(arg, ".", t.name));
  }
  if (py::hasattr(record, "provenance")) h.provenance = py::str(record.attr("provenance"));
  return h;
}

namespace {

const costmodel::StepModel& StepOrThrow(const PyCost& c, const char* method) {
  if (c.step == nullptr) {
    ThrowInvalid(absl::StrCat("Cost.", method,
                              ": this cost prices no drafter (Cost(..., drafter=\"\")); pass "
                              "drafter=\"eagle3\" or another architecture"));
  }
  return *c.step;
}

PyCost FromResolved(costmodel::ResolvedLatencyModel r) {
  PyCost c;
  c.model = std::shared_ptr<const costmodel::LatencyModel>(std::move(r.model));
  c.model_spec = std::move(r.model_spec);
  c.gpu_spec = std::move(r.gpu_spec);
  c.profile_path = std::move(r.profile_path);
  c.profile_id = std::move(r.profile_id);
  c.provenance = std::move(r.provenance);
  c.engine = std::move(r.engine);
  c.engine_version = std::move(r.engine_version);
  c.drafters = std::make_shared<const std::map<std::string, costmodel::DrafterProfile>>(
      std::move(r.drafters));
  return c;
}

// The package's own profiles directory ("" = none); set once at import, read under the GIL.
std::string& PackageCalibDir() {
  static auto* dir = new std::string();
  return *dir;
}

// The search path CalibDir walks, as (where, directory) pairs.
std::vector<std::pair<std::string, std::string>> CalibSearchPath() {
  std::vector<std::pair<std::string, std::string>> out;
  if (const char* env = std::getenv("SPECPLAN_CALIB_DIR"); env != nullptr && env[0] != '\0') {
    out.emplace_back("SPECPLAN_CALIB_DIR", env);
  }
  if (!PackageCalibDir().empty()) out.emplace_back("package", PackageCalibDir());
  if (out.empty() || out.front().first != "SPECPLAN_CALIB_DIR") {
    out.emplace_back("library", costmodel::DefaultCalibDir());
  }
  return out;
}

PyCost Resolve(const std::string& gpu, const std::string& model, const std::string& engine,
               const std::string& dtype, int64_t tp, const std::string& profile,
               const std::string& latency_model, const std::string& calib_dir,
               const std::string& drafter, int draft_steps, int topk, int64_t draft_vocab,
               py::object host_step_ms, py::object host_per_seq_ms, py::object host_per_draft_ms,
               py::object sample_ms, const std::string& host_file, const std::string& cuda_graphs,
               const std::vector<int64_t>& cuda_graph_sizes, int64_t cuda_graph_max,
               py::object eager_launch_us) {
  ops::CostRequest req;  // the operations' cost request (ops/cost_request.h), as the CLI's
  req.gpu = gpu;
  req.model = model;
  req.engine = engine;
  req.tp = CheckedTp(tp);
  req.profile = profile;
  req.latency_model = latency_model;
  req.calib_dir = CalibDir(calib_dir);
  const costmodel::DType parsed_dtype = ReadDType(dtype);
  if (gpu.empty() && model.empty() && profile.empty()) {
    ThrowInvalid(
        "gpu, model, profile: give gpu and model (e.g. gpu=\"h100\", model=\"qwen3-8b\"), "
        "or a profile file");
  }
  // ResolveCost's errors name the CostSpec field and value ("engine = 'foo': ..."), which are
  // these keywords, but for profile_path, which is `profile` here.
  absl::StatusOr<costmodel::ResolvedLatencyModel> resolved = req.ResolveSpec(parsed_dtype);
  if (!resolved.ok()) {
    const std::string message = absl::StrReplaceAll(
        resolved.status().message(),
        {{"(or set profile_path)", "(or pass profile=PATH)"}, {"profile_path = ", "profile = "}});
    ThrowStatus(absl::Status(resolved.status().code(), message));
  }
  PyCost c = FromResolved(*std::move(resolved));
  AttachStep(&c, StepArgs{drafter, draft_steps, topk, draft_vocab, std::move(host_step_ms),
                          std::move(host_per_seq_ms), std::move(host_per_draft_ms),
                          std::move(sample_ms), host_file, cuda_graphs, cuda_graph_sizes,
                          cuda_graph_max, std::move(eager_launch_us)});
  return c;
}

PyCost CostOfProfile(const costmodel::Profile& p, const std::string& latency_model,
                     const std::string& path) {
  PyCost c;
  c.model = std::shared_ptr<const costmodel::LatencyModel>(
      ValueOrThrow(costmodel::MakeLatencyModel(p, latency_model)));
  c.model_spec = p.model_spec;
  c.gpu_spec = p.gpu_spec;
  c.profile_path = path;
  c.profile_id = costmodel::ProfileId(p.gpu, p.model, p.dtype,
                                      std::max<int64_t>(1, p.model_spec.tp), p.engine);
  c.provenance = p.provenance;
  c.engine = p.engine;
  c.engine_version = p.engine_version;
  c.drafters = std::make_shared<const std::map<std::string, costmodel::DrafterProfile>>(p.drafters);
  AttachStep(&c, StepArgs{});
  return c;
}

// The operations' bounds (ops::CheckPassShape, as estimate() checks them): s in [1, 2^20],
// c in [0, 2^24], b in [1, 65536].
void CheckShape(int64_t s, int64_t c, int64_t b) { ThrowIfError(ops::CheckPassShape(s, c, b)); }

double PassSeconds(const PyCost& cost, int64_t b, int64_t s, int64_t c) {
  if (b == 1) return cost.model->VerifySeconds(s, c);
  costmodel::BatchShape pass;
  pass.Reserve(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) pass.Add(s, c);
  return cost.model->VerifyBatchSeconds(pass);
}

std::string CostRepr(const PyCost& c) {
  return absl::StrFormat(
      "specplan.Cost(model=%s, gpu=%s, dtype=%s, tp=%d, kind=%s, profile=%s%s, drafter=%s)",
      c.model_spec.name, c.gpu_spec.name, costmodel::DTypeName(c.model_spec.dtype), c.model_spec.tp,
      c.model->Kind(), c.profile_id.empty() ? "None" : "'" + c.profile_id + "'",
      c.engine.empty()
          ? ""
          : ", engine=" + c.engine + (c.engine_version.empty() ? "" : " " + c.engine_version),
      c.step ? c.step->options().drafter + " (" + c.step->draft_priced_by() + ")" : "None");
}

py::object ProfileSummary(const std::string& path, const costmodel::Profile& p) {
  py::dict d;
  d["path"] = path;
  d["id"] = costmodel::ProfileId(p.gpu, p.model, p.dtype, std::max<int64_t>(1, p.model_spec.tp),
                                 p.engine);
  d["gpu"] = p.gpu;
  d["model"] = p.model;
  d["dtype"] = costmodel::DTypeName(p.dtype);
  d["tp"] = std::max<int64_t>(1, p.model_spec.tp);
  d["engine"] = p.engine;
  d["engine_version"] = p.engine_version;
  d["default_model"] = p.default_model;
  d["provenance"] = p.provenance;
  return MakeRecord<ProfileInfoTag>(d);
}

// The kinds a profile holds, in LatencyModelKinds() order.
std::vector<std::string> ProfileKinds(const costmodel::Profile& p) {
  std::vector<std::string> out;
  for (const std::string& k : costmodel::LatencyModelKinds()) {
    if (costmodel::MakeLatencyModel(p, k).ok()) out.push_back(k);
  }
  return out;
}

struct PyProfile {
  costmodel::Profile profile;
  std::string path;  // "" when composed in memory and not saved
};

}  // namespace

std::string CalibDir(const std::string& given) {
  if (!given.empty()) return given;
  return CalibSearchPath().front().second;
}

costmodel::DrafterCost MakeDrafter(const DrafterArgs& a, int gamma) {
  costmodel::DrafterCost d;
  auto cls = costmodel::ParseDrafterClass(a.drafter);
  if (!cls.ok()) {
    ThrowInvalid(
        absl::StrCat("drafter = '", a.drafter, "': unknown (known: ar, parallel, causal)"));
  }
  auto check = [](double v, const char* name) {
    if (!std::isfinite(v) || v < 0) ThrowInvalid(absl::StrCat(name, " = ", v, ": must be >= 0"));
  };
  check(a.t_draft_ms, "t_draft_ms");
  check(a.t_aux_ms, "t_aux_ms");
  check(a.draft_batch_growth, "draft_batch_growth");
  d.cls = *cls;
  d.gamma = gamma;
  d.t_net_s = a.t_draft_ms * 1e-3;
  d.batch_growth = a.draft_batch_growth;
  return d;
}

std::shared_ptr<const costmodel::StepModel> StepWithDraft(const PyCost& cost, double draft_s) {
  if (cost.step == nullptr || !(draft_s > 0)) return cost.step;
  costmodel::StepOptions o = cost.step->options();
  o.draft_s = draft_s;
  absl::StatusOr<costmodel::StepModel> step = costmodel::StepModel::Create(
      cost.model.get(), cost.model_spec, cost.gpu_spec, cost.drafters.get(), cost.engine, o);
  if (!step.ok()) ThrowStatus(StepErrorInKeywords(step.status()));
  return std::make_shared<const costmodel::StepModel>(*std::move(step));
}

ops::CostView CostViewOf(const PyCost& cost, const DrafterArgs& args, int gamma,
                         std::shared_ptr<const costmodel::StepModel>* hold) {
  ops::CostView view;
  view.latency = cost.model.get();
  view.drafter = MakeDrafter(args, gamma);
  view.t_aux_s = args.t_aux_ms * 1e-3;
  view.latency_kind = cost.model->Kind();
  view.profile_id = cost.profile_id;
  if (cost.step != nullptr && view.drafter.cls == costmodel::DrafterClass::kParallelBlock) {
    *hold = StepWithDraft(cost, view.drafter.t_net_s);
    view.step = hold->get();
  }
  return view;
}

const PyCost* ReadCost(py::handle obj) {
  if (obj.is_none()) return nullptr;
  if (!py::isinstance<PyCost>(obj)) {
    ThrowType(absl::StrCat("cost: got ",
                           py::str(obj.get_type().attr("__name__")).cast<std::string>(),
                           ", expected specplan.Cost (specplan.Cost(gpu=..., model=...)) or None"));
  }
  return &obj.cast<const PyCost&>();
}

void BindCost(py::module_& m) {
  BindRecord<HostTag>(
      m, "HostTime",
      "The engine's host time per step a step model charges (seconds; ngram_verify_fraction a "
      "fraction).",
      HostRecordFields());
  BindRecord<StepTag>(
      m, "StepBreakdown",
      "One engine step (Cost.step, Cost.ar_step, Estimate.step): its terms in seconds.",
      {{"verify_s", "the verification pass"},
       {"draft_s", "drafting (0 for a plain step)"},
       {"sample_s", "sampling"},
       {"host_s", "the engine's host work"},
       {"step_s", "their sum"},
       {"draft_forwards", "draft forwards in the step"},
       {"draft_priced_by", "\"kernel tables\", \"roofline\", \"host only\" or \"none\""},
       {"drafter", "the drafter architecture (Estimate.step only, else None)"},
       {"draft_steps", "draft steps D (Estimate.step only, else None)"},
       {"topk", "beams per draft forward (Estimate.step only, else None)"},
       {"host", "the HostTime used (Estimate.step only, else None)"}});
  BindRecord<CycleTag>(m, "CycleBreakdown",
                       "One speculation cycle C(n) = T_draft + T_aux + T_verify (Estimate.cycle).",
                       {{"n", "draft nodes (s - 1)"},
                        {"drafter", "the cost class or architecture that priced drafting"},
                        {"draft_s", "T_draft seconds"},
                        {"aux_s", "T_aux seconds (sampling, host work, t_aux_ms)"},
                        {"verify_s", "T_verify seconds"},
                        {"cycle_s", "the cycle, seconds"}});
  BindRecord<EstimateTag>(
      m, "Estimate",
      "What `specplan estimate --json` reports for one pass (Cost.estimate, specplan.estimate).",
      {{"model", "model registry name"},
       {"gpu", "GPU registry name"},
       {"dtype", "bf16, fp16, fp32 or fp8"},
       {"tp", "tensor parallelism"},
       {"s", "tokens verified per sequence"},
       {"c", "cached tokens per sequence"},
       {"b", "sequences in the pass"},
       {"predicted_s", "the whole pass, seconds"},
       {"per_sequence_s", "predicted_s / b"},
       {"per_token_s", "predicted_s / (b s)"},
       {"latency_model", "the latency model kind"},
       {"profile", "the profile file, None for the bare roofline"},
       {"engine", "whose kernels the profile describes, None without a profile"},
       {"engine_version", "the engine's version, None when unknown"},
       {"cycle", "the CycleBreakdown of n = s - 1 draft nodes"},
       {"step", "the engine's whole StepBreakdown with a drafter architecture, else None"},
       {"ar_step", "the plain decoding StepBreakdown with a drafter architecture, else None"},
       {"ar_step_s", "ar_step.step_s, else None"},
       {"flops", "the roofline of the whole pass: FLOPs"},
       {"bytes", "bytes moved"},
       {"bound", "'compute' or 'memory'"},
       {"compute_s", "FLOPs / peak FLOP/s"},
       {"memory_s", "bytes / memory bandwidth"},
       {"comm_s", "tensor-parallel all-reduces"},
       {"roofline_s", "max(compute_s, memory_s) + comm_s"},
       {"flops_terms", "dict: attention_proj, attention_score, attention, ffn, lm_head"},
       {"bytes_terms", "dict: weights, kv_cache, activations"},
       {"allreduces", "all-reduces in the pass"},
       {"allreduce_bytes", "their bytes"},
       {"experts_streamed", "MoE: distinct experts read, else None"}});
  BindRecord<ProfileInfoTag>(
      m, "ProfileInfo",
      "One profile file list_profiles found: where it is, what it prices (gpu, model, dtype, tp, "
      "engine) and where its figures come from.",
      {{"path", "the file"},
       {"id", "\"h100-sxm/qwen3-8b-bf16@sglang\""},
       {"gpu", "GPU name"},
       {"model", "model name"},
       {"dtype", "bf16, fp16, fp32 or fp8"},
       {"tp", "tensor parallelism it was fitted at"},
       {"engine", "sglang, vllm, trtllm or specplan"},
       {"engine_version", "the engine's version"},
       {"default_model", "the latency model kind used by default"},
       {"provenance", "measured, composed or derived, and from what"}});
  py::class_<PyCost>(m, "Cost", R"doc(
A verification-latency model T(b, s, c), resolved as the CLI's cost flags resolve it
(costmodel::ResolveCost): an explicit profile file, else the bundled profile for
gpu x model x dtype [x tp] of the named engine (sglang, vllm, trtllm, specplan), else with no
engine the first of those that ships, else the bare roofline.

    cost = specplan.Cost(gpu="h100", model="qwen3-8b")                 # SGLang's profile
    cost = specplan.Cost(gpu="h100", model="qwen3-8b", engine="specplan")
    cost = specplan.Cost(profile="calib/h100-sxm/qwen3-8b-bf16@vllm.json")
    cost.verify_seconds(64, 1024)      # one sequence, 64 tokens over 1024 cached

Errors name the field and value: NotFoundError for an unknown GPU/model or a missing engine
profile, InvalidArgumentError for a bad dtype, tp or engine name.)doc")
      .def(py::init(&Resolve), py::kw_only(), py::arg("gpu") = "", py::arg("model") = "",
           py::arg("engine") = "", py::arg("dtype") = "bf16", py::arg("tp") = 0,
           py::arg("profile") = "", py::arg("latency_model") = "", py::arg("calib_dir") = "",
           py::arg("drafter") = "eagle3", py::arg("draft_steps") = -1, py::arg("topk") = 1,
           py::arg("draft_vocab") = 0, py::arg("host_step_ms") = py::none(),
           py::arg("host_per_seq_ms") = py::none(), py::arg("host_per_draft_ms") = py::none(),
           py::arg("sample_ms") = py::none(), py::arg("host_file") = "",
           py::arg("cuda_graphs") = "engine", py::arg("cuda_graph_sizes") = std::vector<int64_t>{},
           py::arg("cuda_graph_max") = 0, py::arg("eager_launch_us") = py::none(),
           R"doc(Resolves a cost. gpu, model: registry names ("h100", "qwen3-8b") or JSON spec /
HF config paths; engine: "" (default rule) or sglang|vllm|trtllm|specplan; dtype: bf16|fp16|fp32|fp8;
tp: tensor parallelism (0 = the profile's, else 1); profile: explicit profile JSON; latency_model:
a kind of the profile other than its default (roofline, linear, per_term, overlap, kernel_sum,
table); calib_dir: where bundled profiles live ("" = specplan.default_calib_dir()).
The engine's whole step (as `specplan estimate --drafter`): drafter names the architecture the
step model prices from the profile's kernel tables (eagle, eagle3, mtp, draft:MODEL, block:MODEL,
ngram, suffix; "" = none); draft_steps D (-1 = the chain's s - 1); topk beams per draft forward;
draft_vocab (eagle3's, 0 = 32000); host_step_ms, host_per_seq_ms, host_per_draft_ms, sample_ms
override the engine's host-time defaults (None = the engine's); host_file: host terms as
`specplan step fit --out` writes them, in place of the engine's defaults (those four keywords
still override single terms; NotFoundError / InvalidArgumentError "host_file = 'PATH': ..." when it
cannot be read or is not such a file). cuda_graphs: "engine" (the target's pass read at the
engine's captured CUDA-graph size, eager above the largest), "eager" or "off" (exact sizes), with
cuda_graph_sizes, cuda_graph_max and eager_launch_us as the CLI's --cuda-graph-sizes,
--cuda-graph-max and --eager-launch-us (docs/step-model.md). Planning calls with this cost
price their cycle through the step model (costmodel::PlannerTermsFor), as the CLI does.)doc")
      .def_property_readonly(
          "kind", [](const PyCost& c) { return c.model->Kind(); },
          "Latency model kind: roofline, table, kernel_sum, ...")
      .def_property_readonly(
          "profile_id", [](const PyCost& c) { return c.profile_id; },
          "Id of the profile used (\"h100-sxm/qwen3-8b-bf16@sglang\"); \"\" = bare roofline")
      .def_property_readonly("profile_path", [](const PyCost& c) { return c.profile_path; })
      .def_property_readonly(
          "engine", [](const PyCost& c) { return c.engine; },
          "Whose kernels the profile describes; \"\" without a profile")
      .def_property_readonly("engine_version", [](const PyCost& c) { return c.engine_version; })
      .def_property_readonly("provenance", [](const PyCost& c) { return c.provenance; })
      .def_property_readonly("model", [](const PyCost& c) { return c.model_spec.name; })
      .def_property_readonly("gpu", [](const PyCost& c) { return c.gpu_spec.name; })
      .def_property_readonly(
          "dtype", [](const PyCost& c) { return costmodel::DTypeName(c.model_spec.dtype); })
      .def_property_readonly("tp", [](const PyCost& c) { return c.model_spec.tp; })
      .def_property_readonly(
          "drafter",
          [](const PyCost& c) { return c.step ? c.step->options().drafter : std::string(); },
          "The drafter architecture the step model prices (\"\" = none)")
      .def_property_readonly(
          "draft_priced_by",
          [](const PyCost& c) { return c.step ? c.step->draft_priced_by() : std::string("none"); },
          "How T_draft is priced: \"kernel tables\", \"roofline\", \"host only\" or \"none\"")
      .def_property_readonly(
          "host",
          [](const PyCost& c) {
            return c.step ? HostRecord(c.step->host()) : py::object(py::none());
          },
          "The HostTime the step model uses (seconds, with provenance); None without a drafter")
      .def(
          "step",
          [](const PyCost& c, int64_t b, int64_t s, int64_t ctx) {
            CheckShape(s, ctx, b);
            const costmodel::StepModel& step = StepOrThrow(c, "step");
            return StepRecord(step.Step(b, s, ctx), step.draft_priced_by());
          },
          py::arg("b"), py::arg("s"), py::arg("c"),
          R"doc(The engine's whole speculative step of b sequences, each verifying s tokens over c
cached (costmodel/step/step_model.h): a StepBreakdown of verify_s, draft_s, sample_s, host_s,
step_s (their sum), draft_forwards and draft_priced_by, as `specplan estimate --json` prints
"step".)doc")
      .def(
          "ar_step",
          [](const PyCost& c, int64_t b, int64_t ctx) {
            CheckShape(1, ctx, b);
            return StepRecord(StepOrThrow(c, "ar_step").ArStep(b, ctx), "none");
          },
          py::arg("b"), py::arg("c"),
          "One plain decoding step of b sequences over c cached tokens, host work included: a "
          "StepBreakdown as step() returns (draft_s 0); step_s is `specplan estimate`'s "
          "ar_step_s.")
      .def(
          "verify_seconds",
          [](const PyCost& c, int64_t s, int64_t ctx, int64_t b) {
            CheckShape(s, ctx, b);
            return PassSeconds(c, b, s, ctx);
          },
          py::arg("s"), py::arg("c"), py::arg("b") = 1,
          "T(b, s, c): seconds of one verification pass of b sequences, each verifying s tokens "
          "(draft nodes + 1) over c cached tokens.")
      .def(
          "verify_batch_seconds",
          [](const PyCost& c, py::object s, py::object ctx) {
            const py::array_t<int64_t> sa = IntArray64(s, "s"), ca = IntArray64(ctx, "c");
            CheckNdim(sa, 1, "s", "[B]");
            CheckNdim(ca, 1, "c", "[B]");
            if (sa.shape(0) != ca.shape(0) || sa.shape(0) == 0) {
              ThrowInvalid(absl::StrCat("s, c: ", sa.shape(0), " and ", ca.shape(0),
                                        " entries: expected the same number B >= 1"));
            }
            costmodel::BatchShape pass;
            for (py::ssize_t i = 0; i < sa.shape(0); ++i) {
              if (sa.data()[i] < 1)
                ThrowInvalid(absl::StrCat("s[", i, "] = ", sa.data()[i], ": must be >= 1"));
              if (ca.data()[i] < 0)
                ThrowInvalid(absl::StrCat("c[", i, "] = ", ca.data()[i], ": must be >= 0"));
              pass.Add(sa.data()[i], ca.data()[i]);
            }
            return c.model->VerifyBatchSeconds(pass);
          },
          py::arg("s"), py::arg("c"),
          "Seconds of one ragged pass: sequence i verifies s[i] tokens over c[i] cached ones.")
      .def(
          "estimate",
          [](const PyCost& c, int64_t s, int64_t ctx, int64_t b, const std::string& drafter,
             int gamma, double t_draft_ms, double t_aux_ms) {
            CheckShape(s, ctx, b);
            // ops::Estimate over this Cost, as `specplan estimate` runs it: the drafter class
            // and by-hand times of the call, the Cost's step with a drafter architecture (by
            // hand when t_draft_ms is given; an "ar" / "causal" class prices by class), the
            // memory check, and the CLI's JSON form.
            const DrafterArgs da{drafter, t_draft_ms, t_aux_ms, 0};
            std::shared_ptr<const costmodel::StepModel> hold;
            const ops::CostView view = CostViewOf(c, da, gamma, &hold);
            ops::EstimateRequest req;
            req.s = s;
            req.c = ctx;
            req.b = b;
            req.gamma = gamma;
            req.t_net_ms = t_draft_ms;
            req.cost.t_aux_ms = t_aux_ms;
            req.cost.drafter = drafter;
            if (view.step != nullptr) {
              req.cost.drafter = view.step->options().drafter;
              req.cost.draft_steps = view.step->options().draft_steps;
              req.cost.topk = view.step->options().topk;
            }
            ops::EstimateResult r =
                ValueOrThrow(ops::Estimate(req, view, c.model_spec, c.gpu_spec));
            r.profile = c.profile_path;
            r.engine = c.engine;
            r.engine_version = c.engine_version;
            return EstimateRecord(ops::ToJson(req, r));
          },
          py::arg("s") = 1, py::arg("c") = 0, py::arg("b") = 1, py::kw_only(),
          py::arg("drafter") = "parallel", py::arg("gamma") = 16, py::arg("t_draft_ms") = 0.0,
          py::arg("t_aux_ms") = 0.0,
          R"doc(What `specplan estimate --json` reports for one pass of b sequences of s tokens over
c cached tokens, as an Estimate (to_dict() gives the JSON's dict): predicted_s (the whole
pass), per_sequence_s, per_token_s, latency_model, profile, engine, engine_version, and `cycle` (n = s - 1, drafter, draft_s, aux_s, verify_s, cycle_s); with
a drafter architecture (Cost(drafter=...)) also `step` (the engine's whole step: verify_s, draft_s,
sample_s, host_s, step_s, draft_forwards, draft_priced_by, drafter, draft_steps, topk, host),
`ar_step` and `ar_step_s` (the plain step). t_draft_ms > 0 prices T_draft by hand.)doc")
      .def("__repr__", &CostRepr);

  py::class_<PyProfile>(m, "Profile", R"doc(
A latency profile (calib/<gpu>/<model>-<dtype>[@<engine>].json): specplan.load_profile(path) or
specplan.compose_profile(kernels_dir, model). .cost() turns it into a specplan.Cost.)doc")
      .def_property_readonly("path", [](const PyProfile& p) { return p.path; })
      .def_property_readonly("gpu", [](const PyProfile& p) { return p.profile.gpu; })
      .def_property_readonly("model", [](const PyProfile& p) { return p.profile.model; })
      .def_property_readonly(
          "dtype", [](const PyProfile& p) { return costmodel::DTypeName(p.profile.dtype); })
      .def_property_readonly(
          "tp", [](const PyProfile& p) { return std::max<int64_t>(1, p.profile.model_spec.tp); })
      .def_property_readonly("engine", [](const PyProfile& p) { return p.profile.engine; })
      .def_property_readonly("engine_version",
                             [](const PyProfile& p) { return p.profile.engine_version; })
      .def_property_readonly("default_model",
                             [](const PyProfile& p) { return p.profile.default_model; })
      .def_property_readonly("provenance", [](const PyProfile& p) { return p.profile.provenance; })
      .def_property_readonly("device_name",
                             [](const PyProfile& p) { return p.profile.device_name; })
      .def_property_readonly("timer", [](const PyProfile& p) { return p.profile.timer; })
      .def_property_readonly("created_utc",
                             [](const PyProfile& p) { return p.profile.created_utc; })
      .def_property_readonly("notes", [](const PyProfile& p) { return p.profile.notes; })
      .def_property_readonly(
          "latency_models", [](const PyProfile& p) { return ProfileKinds(p.profile); },
          "The latency model kinds this profile holds")
      .def_property_readonly("id",
                             [](const PyProfile& p) {
                               return costmodel::ProfileId(
                                   p.profile.gpu, p.profile.model, p.profile.dtype,
                                   std::max<int64_t>(1, p.profile.model_spec.tp), p.profile.engine);
                             })
      .def(
          "cost",
          [](const PyProfile& p, const std::string& kind) {
            return CostOfProfile(p.profile, kind, p.path);
          },
          py::arg("latency_model") = "",
          "The profile's latency model (its default, or the kind named).")
      .def(
          "to_json", [](const PyProfile& p) { return costmodel::ProfileToJson(p.profile).dump(2); },
          "The profile file's JSON text.")
      .def(
          "save",
          [](PyProfile& p, const std::string& path) {
            ThrowIfError(costmodel::SaveProfile(p.profile, path));
            p.path = path;
          },
          py::arg("path"), "Writes the profile to `path` atomically.")
      .def("__repr__", [](const PyProfile& p) {
        return absl::StrFormat(
            "specplan.Profile('%s', engine=%s%s, default_model=%s%s)",
            costmodel::ProfileId(p.profile.gpu, p.profile.model, p.profile.dtype,
                                 std::max<int64_t>(1, p.profile.model_spec.tp), p.profile.engine),
            p.profile.engine,
            p.profile.engine_version.empty() ? "" : " " + p.profile.engine_version,
            p.profile.default_model, p.path.empty() ? "" : ", path='" + p.path + "'");
      });

  m.def(
      "load_profile",
      [](const std::string& path) {
        return PyProfile{ValueOrThrow(costmodel::LoadProfile(path)), path};
      },
      py::arg("path"),
      "Loads and validates a profile JSON file (errors name the field and value).");

  m.def(
      "list_profiles",
      [](const std::string& dir_in) {
        namespace fs = std::filesystem;
        const std::string dir = CalibDir(dir_in);
        std::error_code ec;
        if (!fs::is_directory(dir, ec))
          ThrowStatus(absl::NotFoundError(absl::StrCat("calib_dir ", dir, ": not a directory")));
        std::vector<std::string> paths;
        for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
          if (e.is_regular_file() && e.path().extension() == ".json")
            paths.push_back(e.path().string());
        }
        std::sort(paths.begin(), paths.end());
        py::list out;
        for (const std::string& path : paths) {
          auto p = costmodel::LoadProfile(path);
          if (p.ok()) out.append(ProfileSummary(path, *p));
        }
        return out;
      },
      py::arg("calib_dir") = "",
      R"doc(The profiles under calib_dir ("" = specplan.default_calib_dir()), one ProfileInfo per
valid file, sorted by path: path, id, gpu, model, dtype, tp, engine, engine_version,
default_model, provenance. Files that do not load are skipped (`specplan profiles` names them).)doc");

  m.def(
      "compose_profile",
      [](const std::string& kernels, const std::string& model, const std::string& engine,
         const std::string& gpu, int64_t tp, const std::string& dtype, bool unmeasured_terms,
         bool allow_extrapolation, std::vector<int64_t> b_grid, std::vector<int64_t> s_grid,
         std::vector<int64_t> c_grid, std::vector<std::string> drafters, const std::string& out,
         bool force) {
        ops::ComposeRequest req;  // the operation `specplan profiles compose` calls
        req.kernel_dirs = {kernels};
        req.models = {model};
        req.dtype = dtype;
        req.options.engine = engine;
        req.options.gpu = gpu;
        req.options.tp = tp;
        req.options.unmeasured_terms = unmeasured_terms;
        req.options.allow_extrapolation = allow_extrapolation;
        req.options.b_grid = std::move(b_grid);
        req.options.s_grid = std::move(s_grid);
        req.options.c_grid = std::move(c_grid);
        req.options.drafters = std::move(drafters);
        req.out_file = out;
        // The profiles the module reads are not overwritten unless force.
        for (const auto& [where, dir] : CalibSearchPath()) req.protected_dirs.push_back(dir);
        req.force = force;
        ops::ComposeResult r = ValueOrThrow(ops::Compose(req));
        ThrowIfError(ops::Write(r));
        return PyProfile{std::move(r.profiles[0].profile), r.profiles[0].path};
      },
      py::arg("kernels"), py::arg("model"), py::kw_only(), py::arg("engine") = "",
      py::arg("gpu") = "", py::arg("tp") = 1, py::arg("dtype") = "bf16",
      py::arg("unmeasured_terms") = true, py::arg("allow_extrapolation") = true,
      py::arg("b_grid") = std::vector<int64_t>{}, py::arg("s_grid") = std::vector<int64_t>{},
      py::arg("c_grid") = std::vector<int64_t>{}, py::arg("drafters") = std::vector<std::string>{},
      py::arg("out") = "", py::arg("force") = false,
      R"doc(An engine-grade profile composed from an engine's kernel tables, as `specplan profiles
compose --kernels DIR --model M` does (the operation ops::Compose): kernels is a folder such as
data/kernels/h100_sxm/sglang-0.5.14 (aiconfigurator's layout), model a registry name or HF
config.json. engine/gpu default to the folder's; grids default to b 1..256, s 1..256, c 0..32768;
drafters (eagle, eagle3, mtp, draft:MODEL, block:MODEL; ["none"]: none) default to eagle, eagle3,
mtp. With out=PATH the profile is also written there; a path inside a directory of
calib_search_path() is refused unless force=True. Returns a specplan.Profile.)doc");

  m.def(
      "default_calib_dir", [] { return CalibDir(""); },
      "Where bundled profiles are read when a call names no calib_dir: $SPECPLAN_CALIB_DIR, else "
      "the package's own specplan/calib (installed with it), else the library's default (the "
      "source tree's calib/ while it exists, else <prefix>/share/specplan/calib).");
  m.def("calib_search_path", &CalibSearchPath,
        "The (where, directory) pairs default_calib_dir() chooses from, first wins: "
        "('SPECPLAN_CALIB_DIR', $SPECPLAN_CALIB_DIR) when set, ('package', specplan/calib) when "
        "the package carries its profiles, ('library', the library's default) unless the "
        "variable is set.");
  m.def(
      "_set_package_calib_dir", [](const std::string& dir) { PackageCalibDir() = dir; },
      py::arg("dir"),
      "Called once by specplan/__init__.py with the package's calib/ when present.");
  m.def(
      "bundled_profile_path",
      [](const std::string& gpu, const std::string& model, const std::string& dtype, int64_t tp,
         const std::string& engine, const std::string& calib_dir) {
        const std::string e = engine.empty() ? std::string(costmodel::kRuntimeEngine)
                                             : ValueOrThrow(costmodel::ParseEngine(engine));
        // Registry names and aliases as the files use them ("h100" -> "h100-sxm"), as calibrate
        // and specplan fit name the files they write; a file (GPU spec, HF config) is kept.
        auto is_file = [](const std::string& name) {
          return name.find('/') != std::string::npos || absl::EndsWith(name, ".json");
        };
        std::string g = gpu, m = model;
        if (!is_file(gpu)) {
          absl::StatusOr<costmodel::GpuSpec> spec = costmodel::ResolveGpu(gpu);
          if (!spec.ok())
            ThrowInvalid(absl::StrCat("gpu = '", gpu, "': ", spec.status().message()));
          g = spec->name;
        }
        if (!is_file(model)) {
          absl::StatusOr<costmodel::ModelSpec> spec = costmodel::ResolveModel(model);
          if (!spec.ok()) {
            ThrowInvalid(absl::StrCat("model = '", model, "': ", spec.status().message()));
          }
          m = spec->name;
        }
        return costmodel::BundledProfilePath(CalibDir(calib_dir), g, m, ReadDType(dtype), tp, e);
      },
      py::arg("gpu"), py::arg("model"), py::arg("dtype") = "bf16", py::arg("tp") = 1,
      py::arg("engine") = "specplan", py::arg("calib_dir") = "",
      "calib/<gpu>/<model>-<dtype>[-tp<N>][@<engine>].json, the gpu and model made canonical as "
      "the files name them (h100 -> h100-sxm); unknown names raise ValueError naming them.");
  m.def("known_gpus", &costmodel::KnownGpuNames, "GPU registry names (then alias=name entries).");
  m.def("known_models", &costmodel::KnownModelNames, "Model registry names.");
  m.def("known_engines", &costmodel::KnownEngines, "sglang, vllm, trtllm, specplan.");
  m.def("latency_model_kinds", &costmodel::LatencyModelKinds,
        "Every latency model kind a profile can hold.");
}

}  // namespace specplan::python
