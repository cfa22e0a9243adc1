#include "cli/cost_flags.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/command_util.h"
#include "cli/remote.h"
#include "costmodel/cost_spec.h"
#include "costmodel/profile/engines.h"
#include "ops/validate.h"

namespace specplan::cli {

absl::Status CostErrorInFlags(const absl::Status& status) {
  if (status.ok()) return status;
  const absl::Status named = costmodel::CostErrorInNames(status, ops::CostRequestFlagNames());
  if (named.message() != status.message()) return named;
  // "<field>: rest" -> "<flag>: rest" (an enum's "dtype: unknown value 'x' (known: ...)").
  const absl::string_view msg = status.message();
  for (const costmodel::CostFieldName& n : ops::CostRequestFlagNames()) {
    const std::string lead = absl::StrCat(n.field, ": ");
    if (absl::StartsWith(msg, lead)) {
      return absl::Status(status.code(), absl::StrCat(n.name, msg.substr(lead.size() - 2)));
    }
  }
  return status;
}

absl::StatusOr<CostFlags::Parsed> CostFlags::Parse(double t_draft_ms) const {
  auto parsed = ops::CostRequest::Parse(t_draft_ms);
  if (!parsed.ok()) return CostErrorInFlags(parsed.status());
  return parsed;
}

absl::Status CostFlags::CheckRemote() const {
  if (cuda_graphs != "engine" || !cuda_graph_sizes.empty() || cuda_graph_max != 0 ||
      eager_launch_us >= 0) {
    return absl::InvalidArgumentError(
        "--cuda-graphs, --cuda-graph-sizes, --cuda-graph-max and --eager-launch-us are local; with "
        "--server the server prices the engine's default CUDA-graph ladder");
  }
  if (profile.empty() && latency_model.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "--profile and --latency-model are local; with --server the server's stored profile for "
      "--gpu/--model/--dtype and its default model are used");
}

absl::StatusOr<RemoteCost> CostFlags::ToRemoteCost(costmodel::DType dtype,
                                                   const costmodel::DrafterCost& drafter,
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
    if (!host_file.empty()) {
      auto base = ops::ReadHostFile(host_file);
      if (!base.ok()) return CostErrorInFlags(base.status());
      step.host_base = *std::move(base);
    }
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

CLI::Option* AddModelOption(CLI::App* cmd, std::string* model) {
  return cmd->add_option("--model", *model,
                         "Target model: built-in name (e.g. qwen3-8b) or path to a HF config.json");
}

CLI::Option* AddGpuOption(CLI::App* cmd, std::string* gpu) {
  return cmd->add_option("--gpu", *gpu, "GPU: registry name (e.g. h100) or path to a JSON spec");
}

CLI::Option* AddDTypeOption(CLI::App* cmd, std::string* dtype) {
  return cmd->add_option("--dtype", *dtype, "Element type: bf16, fp16, fp32, fp8")
      ->capture_default_str();
}

CostFlagOptions AddCostFlags(CLI::App* cmd, CostFlags* f) {
  CostFlagOptions o;
  o.model = AddModelOption(cmd, &f->model);
  o.gpu = AddGpuOption(cmd, &f->gpu);
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
  AddDTypeOption(cmd, &f->dtype);
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
                  "eagle3's draft vocabulary (default 32000, as the released heads)")
      ->check(CLI::Range(int64_t{0}, ops::kMaxVocab));
  cmd->add_option("--host-file", f->host_file,
                  "Host terms from `specplan step fit --out` (instead of the engine's defaults; "
                  "the --host-*-ms and --sample-ms flags still override single terms)");
  cmd->add_option("--host-step-ms", f->host_step_ms,
                  "Engine host work per step, ms (default: the engine's, docs/step-model.md)")
      ->check(FiniteRange(0, 1000, "ms"));
  cmd->add_option("--host-per-seq-ms", f->host_per_seq_ms,
                  "Engine host work per sequence per step, ms (default: the engine's)")
      ->check(FiniteRange(0, 1000, "ms"));
  cmd->add_option("--host-per-draft-ms", f->host_per_draft_ms,
                  "Engine host work per drafter forward, ms (default: the engine's)")
      ->check(FiniteRange(0, 1000, "ms"));
  cmd->add_option("--sample-ms", f->sample_ms,
                  "One sampling call (the target's, and each drafter forward's), ms (default: the "
                  "engine's)")
      ->check(FiniteRange(0, 1000, "ms"));
  cmd->add_option("--t-aux-ms", f->t_aux_ms, "Tree construction/sampling overhead, ms")
      ->check(MsRange());
  cmd->add_option("--cuda-graphs", f->cuda_graphs,
                  "CUDA graphs of the target's pass (docs/step-model.md): engine (read each pass "
                  "at the engine's captured size, eager above the largest), eager (no graphs: "
                  "every pass pays its launches), off (price passes at their exact size)")
      ->check(CLI::IsMember({"engine", "eager", "off"}))
      ->capture_default_str();
  cmd->add_flag_callback(
      "--enforce-eager,--disable-cuda-graph", [f] { f->cuda_graphs = "eager"; },
      "Same as --cuda-graphs eager (vLLM's and SGLang's names)");
  cmd->add_option("--cuda-graph-sizes,--cudagraph-capture-sizes,--cuda-graph-bs",
                  f->cuda_graph_sizes,
                  "Captured sizes, ascending, comma-separated: vLLM's in tokens "
                  "(cudagraph_capture_sizes), SGLang's in requests (cuda_graph_bs); default: the "
                  "engine's ladder")
      ->delimiter(',');
  cmd->add_option("--cuda-graph-max,--max-cudagraph-capture-size,--cuda-graph-max-bs",
                  f->cuda_graph_max,
                  "Largest captured size: vLLM's max_cudagraph_capture_size (tokens; default "
                  "min(max_num_seqs x (1 + K) x 2, 512)), SGLang's cuda_graph_max_bs (requests; "
                  "default from the GPU's memory)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--eager-launch-us", f->eager_launch_us,
                  "Host microseconds per launched op of a pass run without graphs (default 10, "
                  "docs/step-model.md)")
      ->check(FiniteRange(0, 1000, "us"));
  return o;
}

}  // namespace specplan::cli
