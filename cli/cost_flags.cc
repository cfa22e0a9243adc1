#include "cli/cost_flags.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/remote.h"
#include "costmodel/cost_spec.h"
#include "costmodel/engines.h"
#include "costmodel/step/host_fit.h"
#include "util/file.h"
#include "util/json_error.h"

namespace specplan::cli {
namespace {

// A step-model error that names the drafter ("drafter = 'x': ...") in the flag's words
// ("--drafter x: ..."); others as they are.
absl::Status DrafterError(const absl::Status& st) {
  constexpr absl::string_view kPrefix = "drafter = '";
  const absl::string_view msg = st.message();
  const size_t end = msg.find("': ");
  if (!absl::StartsWith(msg, kPrefix) || end == absl::string_view::npos) return st;
  return absl::Status(
      st.code(), absl::StrCat("--drafter ", msg.substr(kPrefix.size(), end - kPrefix.size()), ": ",
                              msg.substr(end + 3)));
}

}  // namespace

bool CostFlags::DrafterIsCostClass() const { return costmodel::ParseDrafterClass(drafter).ok(); }

absl::StatusOr<CostFlags::Parsed> CostFlags::Parse(double t_draft_ms) const {
  // An architecture is priced by the step model (PriceDrafter); its planner cost starts as a
  // block cost of --t-draft-ms.
  auto cls = DrafterIsCostClass()
                 ? costmodel::ParseDrafterClass(drafter)
                 : absl::StatusOr<costmodel::DrafterClass>(costmodel::DrafterClass::kParallelBlock);
  if (!cls.ok())
    return absl::Status(cls.status().code(), "--" + std::string(cls.status().message()));
  if (!DrafterIsCostClass()) {
    if (absl::Status st = costmodel::CheckDrafterName(drafter); !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(DrafterError(st).message(), "; or a cost class: ar, parallel, causal"));
    }
  }
  auto parsed_dtype = costmodel::ParseDType(dtype);
  if (!parsed_dtype.ok()) {
    return absl::Status(parsed_dtype.status().code(),
                        "--" + std::string(parsed_dtype.status().message()));
  }
  Parsed parsed{{}, *parsed_dtype};
  parsed.drafter.cls = *cls;
  parsed.drafter.t_net_s = t_draft_ms * 1e-3;
  return parsed;
}

absl::StatusOr<costmodel::StepOptions> CostFlags::StepOptionsFor(const std::string& engine,
                                                                 double draft_s) const {
  costmodel::StepOptions o;
  o.drafter = DrafterIsCostClass() ? "" : drafter;
  o.draft_steps = draft_steps;
  o.topk = topk;
  o.drafter_options.draft_vocab = draft_vocab;
  if (draft_s > 0) o.draft_s = draft_s;
  auto host = costmodel::DefaultHostTime(engine);
  if (!host.ok()) return host.status();
  bool overridden = false;
  if (!host_file.empty()) {
    auto text = ReadFileToString(host_file);
    if (!text.ok())
      return absl::NotFoundError(absl::StrCat("--host-file ", text.status().message()));
    auto j = json_util::ParseJson(*text, host_file);
    if (!j.ok())
      return absl::InvalidArgumentError(absl::StrCat("--host-file ", j.status().message()));
    auto read = costmodel::HostTimeFromJson(*j);
    if (!read.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--host-file ", host_file, ": ", read.status().message()));
    }
    host = *std::move(read);
    overridden = true;
  }
  auto opt = [](double ms) { return ms >= 0 ? std::optional<double>(ms) : std::nullopt; };
  const costmodel::HostOverridesMs given{opt(host_step_ms), opt(host_per_seq_ms),
                                         opt(host_per_draft_ms), opt(sample_ms)};
  auto with = costmodel::OverrideHostTime(
      *host, given, {"--host-step-ms", "--host-per-seq-ms", "--host-per-draft-ms", "--sample-ms"},
      "given on the command line");
  if (!with.ok()) return with.status();
  if (overridden || with->provenance != host->provenance) o.host = *with;
  if (absl::Status st = costmodel::ValidateStepOptions(o); !st.ok()) {
    const std::string msg(st.message());
    for (const auto& [field, flag] :
         {std::pair<std::string, std::string>{"draft_steps", "--draft-steps"},
          {"topk", "--topk"},
          {"draft_s", "--t-draft-ms"},
          {"draft_vocab", "--draft-vocab"}}) {
      if (msg.rfind(field + " = ", 0) == 0) {
        return absl::InvalidArgumentError(flag + " " + msg.substr(field.size() + 3));
      }
    }
    return st;
  }
  return o;
}

absl::StatusOr<costmodel::StepModel> CostFlags::Step(
    const costmodel::ResolvedLatencyModel& resolved, double draft_s) const {
  auto o = StepOptionsFor(resolved.engine, draft_s);
  if (!o.ok()) return o.status();
  auto step =
      costmodel::StepModel::Create(resolved.model.get(), resolved.model_spec, resolved.gpu_spec,
                                   &resolved.drafters, resolved.engine, *o);
  if (!step.ok()) return DrafterError(step.status());
  return step;
}

absl::Status CostFlags::PriceDrafter(const costmodel::ResolvedLatencyModel& resolved, int gamma,
                                     int64_t c, costmodel::DrafterCost* d, double* t_aux_s,
                                     double* l_ar_s) const {
  *l_ar_s = 0;
  if (DrafterIsCostClass()) return absl::OkStatus();
  auto step = Step(resolved, d->t_net_s);  // --t-draft-ms, when the command has one
  if (!step.ok()) return step.status();
  const costmodel::PlannerStepTerms terms = costmodel::PlannerTermsFor(*step, gamma, c);
  *d = terms.drafter;
  *t_aux_s += terms.t_aux_s;
  *l_ar_s = terms.l_ar_s;
  return absl::OkStatus();
}

costmodel::CostSpec CostFlags::ToCostSpec(costmodel::DType dtype) const {
  // CostSpec's fields in order: model, gpu, engine, profile_path, latency_model, dtype, tp.
  return costmodel::CostSpec{model, gpu, engine, profile, latency_model, dtype, tp};
}

absl::StatusOr<costmodel::ResolvedLatencyModel> CostFlags::Resolve(costmodel::DType dtype) const {
  auto resolved = costmodel::ResolveCost(ToCostSpec(dtype));
  if (!resolved.ok()) return CostErrorInFlags(resolved.status());
  return resolved;
}

absl::Status CostErrorInFlags(const absl::Status& status) {
  return costmodel::CostErrorInNames(status, costmodel::kCostFlagNames);
}

bool CostFlags::AnyCostGiven() const {
  return !model.empty() || !gpu.empty() || !engine.empty() || !profile.empty() ||
         !latency_model.empty();
}

absl::Status CostFlags::CheckRemote() const {
  if (profile.empty() && latency_model.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "--profile and --latency-model are local; with --server the server's stored profile for "
      "--gpu/--model/--dtype and its default model are used");
}

RemoteCost CostFlags::ToRemoteCost(costmodel::DType dtype, const costmodel::DrafterCost& drafter,
                                   int64_t context) const {
  RemoteCost rc;
  rc.model = model;
  rc.gpu = gpu;
  rc.dtype = dtype;
  rc.drafter = drafter;
  rc.t_aux_s = t_aux_ms * 1e-3;
  rc.context = context;
  rc.tp = tp == 0 ? 1 : tp;
  rc.engine = engine;
  // The step the server prices (the same options StepOptionsFor gives in-process; the server
  // applies the host overrides over its profile's engine defaults).
  if (!DrafterIsCostClass()) {
    client::StepRequest& step = rc.step;
    step.architecture = this->drafter;
    step.draft_steps = draft_steps;
    step.topk = topk;
    step.draft_vocab = draft_vocab;
    const struct {
      double ms;
      std::optional<double>* to;
    } overrides[] = {{host_step_ms, &step.host_step_s},
                     {host_per_seq_ms, &step.host_per_sequence_s},
                     {host_per_draft_ms, &step.host_per_draft_forward_s},
                     {sample_ms, &step.sample_call_s}};
    for (const auto& [ms, to] : overrides) {
      if (ms >= 0) *to = ms * 1e-3;
    }
    step.host_provenance = "given on the command line";
  }
  return rc;
}

std::string DescribeEngine(const std::string& engine, const std::string& engine_version) {
  if (engine.empty()) return "";
  return absl::StrCat("engine ", engine, engine_version.empty() ? "" : " ", engine_version);
}

std::string DescribeProfile(const std::string& profile, const std::string& engine,
                            const std::string& engine_version) {
  if (profile.empty() || engine.empty()) return profile;
  return absl::StrCat(profile, " (", DescribeEngine(engine, engine_version), ")");
}

UsedEngine RemoteProfileEngine(const std::string& server, const std::string& id) {
  UsedEngine used;
  if (id.empty()) return used;
  if (auto profiles = RemoteProfiles(server); profiles.ok()) {
    for (const auto& [listed, profile] : *profiles) {
      if (listed != id) continue;
      used.engine = profile.engine;
      used.version = profile.engine_version;
      return used;
    }
  }
  const size_t at = id.rfind('@');
  used.engine = at == std::string::npos ? costmodel::kRuntimeEngine : id.substr(at + 1);
  return used;
}

CostFlagOptions AddCostFlags(CLI::App* cmd, CostFlags* f) {
  CostFlagOptions o;
  o.model =
      cmd->add_option("--model", f->model,
                      "Target model: built-in name (e.g. qwen3-8b) or path to a HF config.json");
  o.gpu = cmd->add_option("--gpu", f->gpu, "GPU: registry name (e.g. h100) or path to a JSON spec");
  cmd->add_option("--engine", f->engine,
                  "Whose kernels the costs describe: sglang, vllm, trtllm (engine-grade profiles "
                  "composed from the engine's kernel timings) or specplan (profiles measured on "
                  "specplan's own runtime); default: the first of sglang, vllm, trtllm, specplan "
                  "with a bundled profile for --gpu x --model");
  cmd->add_option("--profile", f->profile,
                  "Calibrated profile JSON (default: the bundled "
                  "calib/<gpu>/<model>-<dtype>[@<engine>].json, see --engine; with no --engine and "
                  "none bundled, the bare roofline)");
  cmd->add_option(
      "--latency-model", f->latency_model,
      "Latency model of the profile to use instead of its default: roofline, linear, per_term, "
      "overlap, kernel_sum or table (local only)");
  cmd->add_option("--tp", f->tp,
                  "Tensor parallelism: split the model over N GPUs (per-GPU roofline plus two "
                  "all-reduces per layer; default: the profile's, else 1)");
  cmd->add_option("--dtype", f->dtype, "Element type: bf16, fp16, fp32, fp8")
      ->capture_default_str();
  o.drafter =
      cmd->add_option("--drafter", f->drafter,
                      "Drafter architecture, priced from the profile's kernel tables: eagle, "
                      "eagle3, mtp, draft:MODEL, block:MODEL, ngram, suffix; or a cost class (ar, "
                      "parallel, causal) priced only by the --t-*-ms flags")
          ->capture_default_str();
  cmd->add_option("--draft-steps", f->draft_steps,
                  "Positions the drafter drafts per step (D; default: the chain's s - 1)");
  cmd->add_option("--topk", f->topk, "Beams per draft forward (SGLang-style trees)")
      ->capture_default_str();
  cmd->add_option("--draft-vocab", f->draft_vocab,
                  "eagle3's draft vocabulary (default 32000, as the released heads)");
  cmd->add_option("--host-file", f->host_file,
                  "Host terms from `specplan step fit --out` (instead of the engine's defaults; "
                  "the --host-*-ms and --sample-ms flags still override single terms)");
  cmd->add_option("--host-step-ms", f->host_step_ms,
                  "Engine host work per step, ms (default: the engine's, docs/step-model.md)")
      ->check(CLI::Range(0.0, 1000.0));
  cmd->add_option("--host-per-seq-ms", f->host_per_seq_ms,
                  "Engine host work per sequence per step, ms (default: the engine's)")
      ->check(CLI::Range(0.0, 1000.0));
  cmd->add_option("--host-per-draft-ms", f->host_per_draft_ms,
                  "Engine host work per drafter forward, ms (default: the engine's)")
      ->check(CLI::Range(0.0, 1000.0));
  cmd->add_option("--sample-ms", f->sample_ms,
                  "One sampling call (the target's, and each drafter forward's), ms (default: the "
                  "engine's)")
      ->check(CLI::Range(0.0, 1000.0));
  cmd->add_option("--t-aux-ms", f->t_aux_ms, "Tree construction/sampling overhead, ms")
      ->check(CLI::NonNegativeNumber);
  return o;
}

}  // namespace specplan::cli
